"""The configuration ``rag-pipeline init`` writes for a user's folder: its corpus, its data
folder, the production profile and the project's model declarations, written back as TOML; and
the reference configuration (some chunkers and the built-in reference model) that the benchmarks
and the end-to-end tests run."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.parse import parse_config
from rag_pipeline.core.config.schema import (
    DEFAULT_CONFIG,
    ModelDeclaration,
    ModelSource,
    ProjectConfig,
    SourceKind,
)
from rag_pipeline.core.embedding.models import CALIBRATION_TEXTS, ModelConfigError


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))


def declaration_toml(declaration: ModelDeclaration) -> str:
    """One ``[[models]]`` table that parses back to ``declaration`` (not an adapted one: its
    held-out documents come from a gold set of the project's corpus)."""
    source = declaration.source
    if source is None:
        raise ModelConfigError(f"{declaration.name!r} is an adapted model: it is not copied")
    lines = ["[[models]]", f"name = {_toml_value(declaration.name)}",
             f"{source.kind.value} = {_toml_value(source.value)}"]
    if source.revision is not None:
        lines.append(f"revision = {_toml_value(source.revision)}")
    lines += [f"backend = {_toml_value(declaration.backend.value)}",
              f"precision = {_toml_value(declaration.precision.value)}",
              f"window = {declaration.window}", f"batch_size = {declaration.batch_size}"]
    if declaration.default:
        lines.append("default = true")
    if declaration.cut is not None:
        lines.append(f"cut = {declaration.cut!r}")
    if declaration.dimension is not None:
        lines.append(f"dimension = {declaration.dimension}")
    if declaration.calibration is not None and declaration.calibration.path != CALIBRATION_TEXTS:
        lines.append(f"calibration = {{ texts = {_toml_value(declaration.calibration.path)} }}")
    return "\n".join(lines) + "\n"


def _within_or_absolute(path: Path, start: Path) -> str:
    """``path`` relative to ``start`` when it lies below it, else absolute."""
    absolute = path.absolute()
    return str(absolute.relative_to(start.absolute())) if absolute.is_relative_to(
        start.absolute()) else str(absolute)


def _relative(path: Path, start: Path) -> str:
    try:
        return os.path.relpath(path, start)
    except ValueError:
        return str(path)


def folder_config_text(corpus: Path | str, data_dir: Path, at: Path, project: ProjectConfig) -> str:
    """The commented configuration ``rag-pipeline init`` writes at ``at`` for a user's folder:
    its corpus (a folder, or a source URI written as it is), its data folder, the project's
    model cache (an export is keyed by the model and checked on every load, so every folder
    shares the one the project's ``make index`` made: a fresh folder's first index does not
    export the model again), the production profile, and the project's model declarations (so
    the keys are the project's: the lock of a model travels with it, see
    :func:`rag_pipeline.core.config.keys.model_specs`). Paths are relative to the file, but a
    model cache outside its folder, written whole.

    A model declared by ``path`` is written with that path resolved, so the copy finds it."""
    root = at.parent
    models = [replace(m, source=ModelSource(m.source.kind, str(m.source.resolve(project.root))))
              if m.source.kind is SourceKind.PATH else m
              for m in project.models if m.source is not None]
    chunkers = ", ".join(json.dumps(c.value) for c in project.chunkers)
    return f"""# rag_pipeline configuration for the documents in {corpus}
# (written by `rag-pipeline init`; edit freely). Use it with
#     rag-pipeline --config {at} index
# or set RAG_PIPELINE_CONFIG={at} for every command and for the Dagster UI.
# Relative paths are relative to this file.

[index]
# The documents to index: a folder, s3://bucket/prefix or git+file:///repo[@ref]
# (`index --corpus` overrides it).
corpus = {json.dumps(corpus if isinstance(corpus, str) else _relative(corpus, root))}
# Everything the index writes: the Parquet tables, rag.duckdb, the evaluation's files.
data_dir = {json.dumps(_relative(data_dir, root))}
# Exported runtime models (ONNX, OpenVINO), one folder per model key, checked on every load:
# the project's own cache, shared by every folder (a model is exported once, not per folder).
model_cache = {json.dumps(_within_or_absolute(project.model_cache, root))}
# What `rag-pipeline index` builds: "production" is the `header` chunker and the default model
# (one index, what `ask` and `serve` use); "evaluation" is every chunker below x every model,
# for comparing the methods with a gold set of these documents (`rag-pipeline gold draft`).
# `ask` and `serve` use the default model (the first [[models]] below) whatever the profile
# lists: a profile without it leaves that index as it was (`status` says it is behind); give
# them `--model` to use another.
profile = "production"
chunkers = [{chunkers}]
# A file (or a member of an archive or a mail) larger than this fails with its size, unread.
# max_document_bytes = 20_971_520
# A document whose reading takes longer than this (OCR not counted) fails with the limit.
# max_document_seconds = 600

# [profiles.production]
# chunkers = ["header"]
# models = [{json.dumps(project.models[0].name)}]

""" + "\n".join(declaration_toml(m) for m in models)


def reference_config(chunkers: Sequence[str], profile: str = "evaluation") -> str:
    """A configuration of ``chunkers`` and the reference model: the first declaration of the
    built-in default (:data:`~rag_pipeline.core.config.schema.DEFAULT_CONFIG`), written out by
    :func:`declaration_toml` as ``rag-pipeline init`` writes a declaration (so its key is the
    project's, and the project's lock serves it).

    Args:
        chunkers: The chunkers built, each a :class:`ChunkingStrategy` value.
        profile: The profile ``rag-pipeline index`` builds (``"evaluation"``: every chunker
            listed, with every declared model).

    Raises:
        ValueError: If a chunker is not a :class:`ChunkingStrategy` value.
    """
    names = [ChunkingStrategy(c).value for c in chunkers]
    reference = parse_config(DEFAULT_CONFIG, Path(".")).models[0]
    return (f"[index]\nchunkers = {json.dumps(names)}\nprofile = {json.dumps(profile)}\n\n"
            + declaration_toml(reference))
