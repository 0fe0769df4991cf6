"""Version stamps recorded beside every table row, so stale rows can be recognised."""

from __future__ import annotations

PIPELINE_VERSION = "7"
"""Bump when chunking, tokenising or table layout changes in a way that changes stored rows."""
