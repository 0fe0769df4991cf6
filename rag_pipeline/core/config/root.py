"""The project root (the folder of ``pyproject.toml``, where ``rag_pipeline.toml`` and its lock
live) and the configuration file's name. Their own module so that
:mod:`rag_pipeline.project_paths` can name them without importing the configuration's
dependencies (the chunkers, the model declarations)."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[3]

CONFIG_NAME = "rag_pipeline.toml"
"""The configuration file's name, in the project root and beside a folder `init` wrote for."""
