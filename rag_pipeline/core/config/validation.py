"""Checks of the values a user passes (CLI options, HTTP request fields), before any work starts.

Each check returns the value it accepted or raises :class:`InvalidArgumentError` whose message
names the argument, what it must be and what was given, in one line. The CLI and the HTTP
service call the same functions, so both refuse the same values with the same words.
(:class:`InvalidArgumentError` itself lives in :mod:`rag_pipeline.core.text.arguments`, below
every stage, and the partition-value check beside the folders it guards, in
:mod:`rag_pipeline.core.storage.warehouse`.)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.embedding.model_key import ModelKey
from rag_pipeline.core.text.arguments import InvalidArgumentError, listed

__all__ = [
    "COSINE_DISTANCE_RANGE",
    "InvalidArgumentError",
    "check_base_url",
    "check_chunker",
    "check_declared",
    "check_endpoint_url",
    "check_model_folder",
    "check_model_key",
    "check_threshold",
]


COSINE_DISTANCE_RANGE = (0.0, 2.0)
"""Cosine distance is ``1 - cos``: 0 for the same direction, 2 for opposite directions."""

MODEL_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def check_threshold(value: float, name: str = "threshold") -> float:
    """A cosine-distance cut: a finite number in :data:`COSINE_DISTANCE_RANGE`.

    Raises:
        InvalidArgumentError: If ``value`` is NaN, infinite or outside ``[0, 2]``.
    """
    low, high = COSINE_DISTANCE_RANGE
    if not math.isfinite(value) or not low <= value <= high:
        raise InvalidArgumentError(
            f"{name} must be a finite cosine distance in [{low:g}, {high:g}], got {value}")
    return value


def check_base_url(url: str, name: str = "base_url") -> str:
    """A base for citation URLs: ``http(s)://host/...`` or ``file:...``, without query or
    fragment (the document id and the ``#char=`` fragment are appended to it).

    Raises:
        InvalidArgumentError: If ``url`` has another scheme, no host (http), a query or a
            fragment, white space or control characters, or does not parse.
    """
    parts = _split(url, name)
    if parts.scheme not in ("http", "https", "file"):
        raise InvalidArgumentError(f"{name} must be an http(s) or file URL, got {url!r}")
    if parts.scheme != "file" and not parts.hostname:
        raise InvalidArgumentError(f"{name} must name a host, got {url!r}")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise InvalidArgumentError(f"{name} must not carry a query or fragment, got {url!r}")
    return url


def check_endpoint_url(url: str, name: str = "generate_url") -> str:
    """An OpenAI-compatible API root: ``http(s)://host[:port]/...``.

    Raises:
        InvalidArgumentError: If ``url`` is not http(s), names no host, has an invalid port,
            holds white space or control characters, or does not parse.
    """
    parts = _split(url, name)
    if parts.scheme not in ("http", "https"):
        raise InvalidArgumentError(f"{name} must be an http(s) URL, got {url!r}")
    if not parts.hostname:
        raise InvalidArgumentError(f"{name} must name a host, got {url!r}")
    try:
        parts.port  # noqa: B018 -- urllib checks the port range only when it is read
    except ValueError as exc:
        raise InvalidArgumentError(f"{name} has an invalid port ({exc}), got {url!r}") from exc
    return url


def _split(url: str, name: str):
    if not url or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise InvalidArgumentError(f"{name} must be a URL without white space or control "
                                   f"characters, got {url!r}")
    try:
        return urlsplit(url)
    except ValueError as exc:
        raise InvalidArgumentError(f"{name} is not a valid URL ({exc}), got {url!r}") from exc


def check_declared(value: str, declared: Iterable[str], what: str) -> str:
    """``value`` if it is one of the ``declared`` names (a name that becomes a path never comes
    from anywhere else).

    Raises:
        InvalidArgumentError: If ``value`` is not declared; the message lists the declared names.
    """
    names = list(declared)
    if value not in names:
        raise InvalidArgumentError(f"unknown {what} {value!r}; declared: {listed(names)}")
    return value


def check_model_key(key: str, name: str = "model key") -> str:
    """A model key, ``<name>@<8 hex digits>`` (the name letters, digits, ``.``, ``_``, ``-``).

    Raises:
        InvalidArgumentError: If ``key`` does not match that grammar (so it can never name a
            folder outside the data folder).
    """
    if not ModelKey.is_valid(key):
        raise InvalidArgumentError(f"{name} must be <name>@<8 hex digits> (name of letters, "
                                   f"digits, '.', '_', '-'), got {key!r}")
    return key


def check_chunker(name: str) -> ChunkingStrategy:
    """The chunking strategy called ``name``.

    Raises:
        InvalidArgumentError: If no strategy has that name.
    """
    return ChunkingStrategy(check_declared(name, [s.value for s in ChunkingStrategy], "chunker"))


def check_model_folder(path: Path, name: str = "model folder") -> Path:
    """A local model folder: a directory holding ``config.json`` and a weights file.

    Raises:
        InvalidArgumentError: If ``path`` is not a directory or lacks either file.
    """
    if not path.is_dir():
        raise InvalidArgumentError(f"{name} {str(path)!r} is not a folder")
    if not (path / "config.json").is_file():
        raise InvalidArgumentError(f"{name} {str(path)!r} holds no config.json: not a model folder")
    if not any((path / weights).is_file() for weights in MODEL_WEIGHT_FILES):
        raise InvalidArgumentError(f"{name} {str(path)!r} holds no weights "
                                   f"({' or '.join(MODEL_WEIGHT_FILES)})")
    return path
