"""Where a corpus's documents come from: one small interface, one module per kind of source.

``[index] corpus`` and ``--corpus`` name a source: a folder (:mod:`.local`), ``s3://bucket/prefix``
(:mod:`.s3`) or ``git+file:///repo[@ref]`` / ``git+https://...[@ref]`` (:mod:`.git`).
:func:`open_source` turns the name into its :class:`~.base.Source`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from rag_pipeline.core.ingest.sources.base import (
    Entry,
    OriginalGoneError,
    Source,
    SourceError,
    hidden_top,
    unsafe_key_reason,
)
from rag_pipeline.core.ingest.sources.git import GitSource, parse_git_uri
from rag_pipeline.core.ingest.sources.local import LocalSource, discover, stat_fingerprint
from rag_pipeline.core.ingest.sources.s3 import S3Settings, S3Source, parse_s3_uri

__all__ = ["Entry", "GitSource", "LocalSource", "OriginalGoneError", "S3Settings", "S3Source",
           "Source", "SourceError", "SourceSettings", "check_corpus_uri", "discover", "hidden_top",
           "is_corpus_uri", "mirrors_dir", "open_source", "parse_git_uri", "parse_s3_uri",
           "stat_fingerprint", "unsafe_key_reason"]

URI_SCHEMES = ("s3://", "git+")


@dataclass(frozen=True)
class SourceSettings:
    """What opening a source may need besides its name: the object store's settings and where
    remote repositories are mirrored."""

    s3: S3Settings = field(default_factory=S3Settings)
    cache_dir: Path | None = None


def mirrors_dir(data_dir: Path) -> Path:
    """Where a data folder keeps its mirrors of remote git repositories (``SourceSettings.
    cache_dir``): the index fetches into them, the service reads originals from them."""
    return data_dir / "sources"


_ANY_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
"""A URI of any scheme (``ftp://``, ``https://``): never a folder's name, so never read as one."""


def is_corpus_uri(spec: str | Path) -> bool:
    """``spec`` names a source by URI (``s3://``, ``git+...``, or one of a scheme no source
    reads, which :func:`check_corpus_uri` refuses) rather than a folder."""
    return isinstance(spec, str) and (spec.startswith(URI_SCHEMES) or bool(_ANY_URI.match(spec)))


def check_corpus_uri(spec: str) -> str:
    """``spec`` if it parses as a source URI.

    Raises:
        SourceError: With what is wrong in it.
    """
    if spec.startswith("s3://"):
        parse_s3_uri(spec)
    elif spec.startswith("git+"):
        parse_git_uri(spec)
    else:
        raise SourceError(f"{spec}: not a corpus URI (s3://bucket/prefix, git+file:///repo, "
                          "git+https://host/repo)")
    return spec


def open_source(spec: str | Path, settings: SourceSettings | None = None) -> Source:
    """The source ``spec`` names: a URI, else a folder path."""
    settings = settings or SourceSettings()
    if isinstance(spec, str) and spec.startswith("s3://"):
        return S3Source(spec, settings.s3)
    if isinstance(spec, str) and spec.startswith("git+"):
        return GitSource(spec, settings.cache_dir)
    if is_corpus_uri(spec):
        check_corpus_uri(spec)  # another scheme: refused, named
    return LocalSource(Path(spec))
