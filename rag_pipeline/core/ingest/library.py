"""Installed library versions, which go into extractor stamps."""

from __future__ import annotations

from functools import cache


@cache
def library_version(distribution: str) -> str:
    """The installed version of a distribution (``pypdf``, ``beautifulsoup4``)."""
    from importlib.metadata import version

    return version(distribution)
