"""The pairs' digest, recorded in the model cache under the sha256 of what the pairs are made
from (the corpus files' bytes, the code and libraries that read them, the recipe), so that a
configuration load does not extract and chunk the whole corpus again."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
from dataclasses import dataclass
from functools import cache
from importlib import util
from pathlib import Path

from rag_pipeline.core.embedding.adaptation.pairs import (
    PAIRS_VERSION,
    corpus_documents,
    pairs_sha256,
    training_pairs,
)
from rag_pipeline.core.embedding.adaptation.recipe import AdaptRecipe

DIGESTS_FOLDER = "pairs-digests"
"""Under the model cache: one ``<inputs sha256>.json`` per corpus x code x recipe seen."""
READER_LIBRARIES = ("beautifulsoup4", "lxml", "openpyxl", "pypdfium2", "PyStemmer", "python-docx",
                    "webvtt-py")
"""The installed distributions whose versions can change what a document's text reads as."""
CORE_FOLDER = Path(__file__).resolve().parents[2]
"""``rag_pipeline/core``: every source file of it is part of what the pairs are made by."""


@dataclass(frozen=True)
class PairsDigest:
    """The digest of the pairs a recipe makes from a corpus, and where it is recorded.

    Attributes:
        sha256: :func:`pairs_sha256` of the pairs.
        pairs: How many pairs (after the ``max_pairs`` sample).
        available: How many the corpus made before the sample.
        record: The record's file in the model cache (None without a cache).
        computed: True when the pairs were made now, False when read from the record.
    """

    sha256: str
    pairs: int
    available: int
    record: Path | None
    computed: bool


def _hash_file(digest, path: Path) -> None:
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def reader_versions() -> tuple[str, ...]:
    """``name-version`` of each installed reader library, from the names of the ``.dist-info``
    folders on ``sys.path`` (reading each one's metadata, as ``importlib.metadata.version``
    does, cost about 0.35 s of a configuration load)."""
    wanted = {_normalised(name) for name in READER_LIBRARIES}
    found = set()
    for entry in sys.path:
        folder = Path(entry or ".")
        if not folder.is_dir():
            continue
        for info in folder.glob("*.dist-info"):
            name, _, version = info.name.removesuffix(".dist-info").partition("-")
            if _normalised(name) in wanted:
                found.add(f"{_normalised(name)}-{version}")
    return tuple(sorted(found))


@cache
def _code_sha256() -> str:
    """sha256 of every ``.py`` file under ``rag_pipeline/core`` (path and bytes), the Python
    version and the reader libraries' versions: the code that turns a corpus into pairs."""
    digest = hashlib.sha256(sys.version.encode())
    for version in reader_versions():
        digest.update(f"\x00{version}".encode())
    for path in sorted(CORE_FOLDER.rglob("*.py")):
        digest.update(b"\x00" + path.relative_to(CORE_FOLDER).as_posix().encode() + b"\x00")
        _hash_file(digest, path)
    return digest.hexdigest()


def corpus_inputs_sha256(corpus: Path | None, recipe: AdaptRecipe) -> str:
    """sha256 of everything the pairs of ``recipe`` are made from: the recipe, the code
    (:func:`_code_sha256`), and the corpus: the bytes of every regular file
    :func:`~rag_pipeline.core.ingest.discover` lists (by relative path; a symlink by its target,
    another special file by its kind, never read), or for the bundled reference (None) the bytes
    of the ``pydoc_data.topics`` module it is exported from.

    Not covered: external programs a reader runs (the OCR engine of a scanned PDF); training
    recomputes the pairs and drops a record that no longer matches (:func:`train_adapted`).

    Raises:
        FileNotFoundError: ``corpus`` is not a folder.
    """
    digest = hashlib.sha256(f"{PAIRS_VERSION}\x00{recipe.text()}\x00{_code_sha256()}".encode())
    if corpus is None:
        digest.update(b"\x00bundled\x00")
        _hash_file(digest, Path(util.find_spec("pydoc_data.topics").origin))
        return digest.hexdigest()
    from rag_pipeline.core.ingest import discover

    corpus = Path(corpus)
    if not corpus.is_dir():
        raise FileNotFoundError(f"corpus folder not found: {corpus}")
    for path in discover(corpus):
        digest.update(b"\x00" + path.relative_to(corpus).as_posix().encode() + b"\x00")
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            digest.update(b"link:" + os.readlink(path).encode())
        elif stat.S_ISREG(mode):
            _hash_file(digest, path)
        else:
            digest.update(f"special:{stat.S_IFMT(mode)}".encode())
    return digest.hexdigest()


def pairs_digest(corpus: Path | None, recipe: AdaptRecipe, cache_dir: Path | None) -> PairsDigest:
    """The digest of the pairs ``recipe`` makes from ``corpus`` (None: the bundled reference),
    read from the model cache's record when one exists for the same inputs
    (:func:`corpus_inputs_sha256`), else made from the corpus and recorded (a temp file, then
    a rename). A record that cannot be read is made again; a cache that cannot be written
    leaves the digest computed, unrecorded.

    Raises:
        FileNotFoundError: ``corpus`` is not a folder.
    """
    inputs = corpus_inputs_sha256(corpus, recipe)
    record = cache_dir / DIGESTS_FOLDER / f"{inputs}.json" if cache_dir is not None else None
    if record is not None and record.is_file():
        try:
            saved = json.loads(record.read_text(encoding="utf-8"))
            if saved["inputs"] == inputs:
                return PairsDigest(saved["pairs_sha256"], saved["pairs"], saved["available"],
                                   record, computed=False)
        except (ValueError, KeyError, TypeError):
            pass
    pairs, available = training_pairs(corpus_documents(corpus), recipe)
    digest = pairs_sha256(pairs)
    if record is not None:
        try:
            record.parent.mkdir(parents=True, exist_ok=True)
            tmp = record.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"inputs": inputs, "pairs_sha256": digest,
                                       "pairs": len(pairs), "available": available},
                                      sort_keys=True) + "\n", encoding="utf-8")
            tmp.replace(record)
        except OSError:
            record = None
    return PairsDigest(digest, len(pairs), available, record, computed=True)
