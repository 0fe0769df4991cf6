"""The check every table of ``rag_pipeline.toml`` passes first: a table, of known keys only."""

from __future__ import annotations

from collections.abc import Mapping

from rag_pipeline.core.embedding.models import ModelConfigError
from rag_pipeline.core.text.arguments import listed


def check_table(table: object, known: frozenset[str], where: str) -> None:
    """Refuses ``table`` unless it is a table of ``known`` keys, naming the unknown ones.

    Raises:
        ModelConfigError: ``where``, then what is wrong and the keys it takes.
    """
    if not isinstance(table, Mapping):
        raise ModelConfigError(f"{where} must be a table of {listed(sorted(known))}")
    unknown = sorted(set(table) - known)
    if unknown:
        raise ModelConfigError(f"{where}: unknown key(s) {listed(unknown)}; known: "
                               f"{listed(sorted(known))}")
