"""Where a partition's served generation is named: ``CURRENT.json`` in its folder under
``_generations`` (:mod:`rag_pipeline.core.index.generations` writes and reads it with the
tables). :func:`local_published_id` reads the id from a local folder with the standard library
alone: a question answered by a running ``serve`` is checked against it without importing the
table libraries."""

from __future__ import annotations

import json
from pathlib import Path

GENERATIONS = "_generations"
CURRENT = "CURRENT.json"


def generation_dir(chunker: str, model: str) -> str:
    return f"{GENERATIONS}/chunker={chunker}/model={model}"


def local_published_id(folder: Path, chunker: str, model: str) -> str | None:
    """The id of the generation ``folder`` (a local warehouse root) serves for ``chunker`` x
    ``model``; None when none is published (or the pointer cannot be read: a publication
    replacing it reads whole or not at all, so only a damaged file gives None)."""
    try:
        pointer = json.loads((Path(folder) / generation_dir(chunker, model) / CURRENT).read_text(
            encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return pointer.get("id") if isinstance(pointer, dict) else None
