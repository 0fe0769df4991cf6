"""What a generation of a chunker x model partition contains: one entry per table.

A generation names one file per table in ``GENERATION_TABLES``; each entry says which
partition dimensions the table has (``Scope``) and the table it is built from (its writer
records that input's file in the table's pointer, ``Warehouse.write(..., inputs=...)``). From
this one declaration follow:

- what :func:`rag_pipeline.core.index.generations.publish` requires and how it checks that every
  table was built from the files being published with it (:func:`check_consistent`);
- which files a new generation of a partition would publish now (:func:`latest_tables`) and
  which tables are missing or were built from an input that has moved on (:func:`stale_tables`),
  which is what "the index is current" means to ``rag-pipeline index`` and to the sensor;
- the inputs of the Dagster ``index_generation`` asset (one dependency per entry).

Adding a table to a generation (an approximate-neighbour index file, say):

1. add one ``GenerationTable(name, scope, built_from)`` entry below;
2. write it with ``warehouse.write(name, table, partition, inputs={built_from: <file>})`` in its
   own asset, selected by the job of its scope's stage (a chunker x model table: in
   ``embeddings_job``, :mod:`rag_pipeline.orchestration.automation`; the ``index_generation`` asset then
   depends on it and publishes it), and in
   :func:`rag_pipeline.core.index.partition_build.build_partition`;
3. read ``generation.files[name]`` where the served partition is loaded
   (:func:`rag_pipeline.core.index.store.load_partition`).

Nothing else changes: publication, consistency, currency and the DuckDB views follow.

An ``optional`` table (the ANN index) is published when its latest file was built from the
input being published and left out otherwise; a generation without it still serves (the
loader falls back to what the table adds: the exact dense scan).

A table ``labelled`` by the ``[access]`` rules (``access``: the readers of every chunk) is
built from its input and from the rules: its pointer records their digest under
:data:`RULES_INPUT`, and every function below takes ``rules``, the digest of the rules in force.
With ``rules`` given the table is required and stale once it labels other rules, so a rule edit
makes the index not current and a new generation publishes the same chunks and vectors with a
new ``access`` file. With ``rules=None`` (no ``[access]``) the table is no part of the
generation: never required, never stale, never published.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from rag_pipeline.core.storage.table_names import (
    ACCESS,
    ANN_INDEX,
    BM25_TABLES,
    CHUNKS,
    DOCUMENTS,
    EMBEDDINGS,
)
from rag_pipeline.core.storage.warehouse import Warehouse

CHUNKER = "chunker"
MODEL = "model"
RULES_INPUT = "rules"
"""The input under which a ``labelled`` table's pointer records the ``[access]`` rules' digest."""


class Scope(Enum):
    """The partition dimensions of a generation table."""

    CORPUS = ()
    CHUNKER = ("chunker",)
    CHUNKER_MODEL = ("chunker", "model")

    def partition(self, chunker: str, model: str) -> dict[str, str]:
        """The table's partition within the ``chunker x model`` generation."""
        return {dimension: {CHUNKER: chunker, MODEL: model}[dimension] for dimension in self.value}


@dataclass(frozen=True)
class GenerationTable:
    """One table of a generation: its name, partition scope and the table it is built from
    (``None``: built from the corpus itself); an ``optional`` one may be absent; a ``labelled``
    one is built from the ``[access]`` rules too, and is part of the generation only under
    them."""

    name: str
    scope: Scope
    built_from: str | None
    optional: bool = False
    labelled: bool = False

    def declared(self, rules: str | None) -> bool:
        """Part of the generation under ``rules`` (the digest of ``[access]``, or None)."""
        return not self.labelled or rules is not None

    def required(self, rules: str | None) -> bool:
        """A generation under ``rules`` cannot be published without it."""
        return not self.optional and self.declared(rules)


GENERATION_TABLES: tuple[GenerationTable, ...] = (
    GenerationTable(DOCUMENTS, Scope.CORPUS, None),
    GenerationTable(CHUNKS, Scope.CHUNKER, DOCUMENTS),
    *(GenerationTable(name, Scope.CHUNKER, CHUNKS) for name in BM25_TABLES),
    GenerationTable(EMBEDDINGS, Scope.CHUNKER_MODEL, CHUNKS),
    GenerationTable(ANN_INDEX, Scope.CHUNKER_MODEL, EMBEDDINGS, optional=True),
    GenerationTable(ACCESS, Scope.CHUNKER, CHUNKS, labelled=True),
)


class InconsistentBuildError(Exception):
    """The tables offered for a generation were not built from the same inputs."""


class BuiltTable(Protocol):
    """A written table file as publication sees it (a ``TableVersion`` is one)."""

    @property
    def file(self) -> str: ...

    @property
    def rows(self) -> int: ...

    @property
    def inputs(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class TableFile:
    """A table file that is not (or no longer) its partition's latest version: the documents
    file the chunks were cut from while a newer documents file is already written."""

    file: str
    rows: int
    inputs: dict[str, str] = field(default_factory=dict)


def generation_table(name: str) -> GenerationTable:
    """The declared entry of ``name``."""
    for table in GENERATION_TABLES:
        if table.name == name:
            return table
    raise KeyError(f"{name!r} is not a generation table: {[t.name for t in GENERATION_TABLES]}")


def check_consistent(tables: Mapping[str, BuiltTable], rules: str | None = None) -> None:
    """Every table required under ``rules`` is offered, each was built from the file of its
    input that is offered with it, and a ``labelled`` one under exactly ``rules``; anything
    else would mix corpus states (or rules) in one generation."""
    missing = [t.name for t in GENERATION_TABLES if t.name not in tables and t.required(rules)]
    if missing:
        raise InconsistentBuildError(f"cannot publish without {missing}")
    for table in GENERATION_TABLES:
        if table.name in tables and table.labelled:
            labelled_by = tables[table.name].inputs.get(RULES_INPUT)
            if labelled_by != rules:
                raise InconsistentBuildError(
                    f"{table.name} labels the [access] rules {labelled_by or 'unknown'}, not the "
                    f"rules in force ({rules or 'none declared'}): run `rag-pipeline index` to "
                    "re-label")
        if table.built_from is None or table.name not in tables:
            continue
        built_from = tables[table.name].inputs.get(table.built_from)
        file = tables[table.built_from].file
        if built_from != file:
            raise InconsistentBuildError(
                f"{table.name} was built from {table.built_from} {built_from or 'unknown'}, not "
                f"from the {table.built_from} being published ({file}): run `rag-pipeline index` "
                "to rebuild it")


def stale_tables(warehouse: Warehouse, chunker: str, model: str,
                 rules: str | None = None) -> list[str]:
    """The tables of ``chunker x model`` under ``rules`` (the ``[access]`` digest, None: none
    declared) that are missing (an optional one only counts once written), were built from an
    input file that is no longer that input's latest version, or label other rules, in
    declaration order."""
    stale = []
    for table in GENERATION_TABLES:
        if not table.declared(rules):
            continue
        version = warehouse.version(table.name, table.scope.partition(chunker, model))
        if version is None:
            if not table.optional:
                stale.append(table.name)
            continue
        if table.labelled and version.inputs.get(RULES_INPUT) != rules:
            stale.append(table.name)
            continue
        if table.built_from is not None:
            source = generation_table(table.built_from)
            latest = warehouse.version(source.name, source.scope.partition(chunker, model))
            if latest is None or version.inputs.get(source.name) != latest.file:
                stale.append(table.name)
    return stale


def latest_tables(warehouse: Warehouse, chunker: str, model: str,
                  rules: str | None = None) -> dict[str, BuiltTable]:
    """The files a generation of ``chunker x model`` under ``rules`` (the ``[access]`` digest,
    None: none declared) would publish now: each table nothing else
    is built from at its latest version, and each input at the file its dependents were built
    from (the documents the chunks were cut from, even when newer documents are written).
    Raises ``InconsistentBuildError`` for a missing table or dependents built from different
    files of one input."""
    found: dict[str, BuiltTable] = {}
    for table in reversed(GENERATION_TABLES):
        if not table.declared(rules):
            continue
        partition = table.scope.partition(chunker, model)
        latest = warehouse.version(table.name, partition)
        if table.optional:
            if latest is not None:
                found[table.name] = latest
            continue
        wanted = {found[t.name].inputs.get(table.name) for t in GENERATION_TABLES
                  if t.built_from == table.name and t.name in found and not t.optional}
        if len(wanted) > 1:
            raise InconsistentBuildError(f"the tables built from {table.name} were built from "
                                         f"different files: {sorted(map(str, wanted))}")
        file = next(iter(wanted)) if wanted else (latest.file if latest else None)
        if file is None:
            raise InconsistentBuildError(f"cannot publish without {[table.name]}: run "
                                         "`rag-pipeline index` to build it")
        if latest is not None and latest.file == file:
            found[table.name] = latest
        else:
            rows = warehouse.read_file(file, columns=[]).num_rows
            found[table.name] = TableFile(file=file, rows=rows)
    for table in GENERATION_TABLES:
        # An optional table built from another file of its input than the one published waits
        # for its rebuild; it never holds the rest back.
        if table.optional and table.name in found and \
                found[table.name].inputs.get(table.built_from) != found[table.built_from].file:
            del found[table.name]
    return {t.name: found[t.name] for t in GENERATION_TABLES if t.name in found}
