"""Reading ``rag_pipeline.toml`` (:mod:`rag_pipeline.core.config.schema` shows the file): every
table and key checked, each error one line naming the file, the table and the field at fault;
and the profile ``index`` builds. Pure: no Dagster, no torch.
"""

from __future__ import annotations

import importlib.util
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from enum import StrEnum
from pathlib import Path

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.access import parse_access
from rag_pipeline.core.config.gold_file import GoldFormatError, load_gold_set
from rag_pipeline.core.config.root import CONFIG_NAME, config_path
from rag_pipeline.core.config.schema import (
    ADAPT_KEYS,
    COMPUTE_KEYS,
    DEFAULT_CONFIG,
    EVALUATION,
    INDEX_KEYS,
    MODEL_KEYS,
    PRODUCTION,
    PROFILE_KEYS,
    ModelDeclaration,
    ModelSource,
    Profile,
    ProjectConfig,
    SourceKind,
    package_missing,
)
from rag_pipeline.core.config.tables import check_table
from rag_pipeline.core.embedding.adaptation import AdaptRecipe, held_out_half
from rag_pipeline.core.embedding.compute import ComputeSettings, Engine
from rag_pipeline.core.embedding.models import (
    CALIBRATION_TEXTS,
    SUPPORTED,
    Backend,
    ModelConfigError,
    Precision,
    calibration_set,
)
from rag_pipeline.core.ingest.reading import DEFAULT_MAX_DOCUMENT_BYTES
from rag_pipeline.core.ingest.reading_limits import DEFAULT_MAX_DOCUMENT_SECONDS
from rag_pipeline.core.ingest.sources import SourceError, check_corpus_uri, is_corpus_uri
from rag_pipeline.core.text.arguments import listed, repeated


def _installed(package: str) -> bool:
    """Whether ``package`` can be imported (found, not imported: a command that loads no model
    pays nothing for it)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a parent package missing, or an empty name part
        return False


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
                               f"{listed(e.value for e in enum)}; got {value!r}") from None


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
    check_table(table, MODEL_KEYS, where)
    if not isinstance(name, str) or not name or "@" in name or "/" in name or name != name.strip():
        raise ModelConfigError(f"{where}: `name` must be a non-empty string without '@' or '/'")
    sources = [k for k in ("path", "package", "hub") if k in table]
    if "adapt" in table:
        return _adapted_model(table, name, where, sources, root)
    if len(sources) != 1:
        raise ModelConfigError(f"{where}: give exactly one of `path`, `package` or `hub`, "
                               f"got {listed(sources) or 'none'}")
    kind = SourceKind(sources[0])
    value = table[kind.value]
    if not isinstance(value, str) or not value:
        raise ModelConfigError(f"{where}: `{kind.value}` must be a non-empty string")
    if kind is SourceKind.PACKAGE and not _installed(value):
        raise ModelConfigError(f"{where}: `package`: {package_missing(value)}")
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
                               f"remove {listed(sources)}")
    for key in ("backend", "precision", "calibration", "dimension"):
        if key in table:
            raise ModelConfigError(f"{where}: `{key}` is the base model's; an adapted model is "
                                   "torch fp32 with the base's dimension")
    check_table(raw, ADAPT_KEYS, f"{where}: `adapt`")
    base = raw.get("base")
    if not isinstance(base, str) or not base:
        raise ModelConfigError(f"{where}: `adapt.base` must name a declared model")
    chunker = raw.get("chunker", ChunkingStrategy.HEADER.value)
    if chunker not in {s.value for s in ChunkingStrategy}:
        raise ModelConfigError(f"{where}: `adapt.chunker` must be one of "
                               f"{listed(s.value for s in ChunkingStrategy)}; got {chunker!r}")
    rate = raw.get("learning_rate", 2e-5)
    if (isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate)
            or not 0 < rate < 1):
        raise ModelConfigError(f"{where}: `adapt.learning_rate` must be in (0, 1), got {rate!r}")
    seed = _int(raw, "seed", 0, f"{where} adapt", 0, 2**31 - 1)
    held_out: tuple[str, ...] = ()
    gold_file = raw.get("held_out")
    if gold_file is not None:
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
    unknown = sorted(set(data) - {"index", "models", "profiles", "access", "compute"})
    if unknown:
        raise ModelConfigError(f"{label}: unknown table(s) {listed(unknown)}; known: "
                               "access, compute, index, models, profiles")
    access = parse_access(data["access"], label) if "access" in data else None
    index = data.get("index", {})
    check_table(index, INDEX_KEYS, f"{label}: [index]")
    names = index.get("chunkers", [s.value for s in ChunkingStrategy])
    known = [s.value for s in ChunkingStrategy]
    if (not isinstance(names, list) or not names or len(set(names)) != len(names)
            or any(n not in known for n in names)):
        raise ModelConfigError(f"{label}: [index] chunkers must be a non-empty list of distinct "
                               f"names ({listed(known)}); got {names!r}")
    raw_models = data.get("models")
    if not isinstance(raw_models, list) or not raw_models:
        raise ModelConfigError(f"{label}: declare at least one [[models]] table")
    try:
        models = [_model(i, t, root) for i, t in enumerate(raw_models)]
    except ModelConfigError as exc:
        raise ModelConfigError(f"{label}: {exc}") from None
    seen = [m.name for m in models]
    if len(set(seen)) != len(seen):
        raise ModelConfigError(f"{label}: [[models]] names used more than once: "
                               f"{listed(repeated(seen))}")
    for model in models:
        if model.adapt is not None:
            base = next((m for m in models if m.name == model.adapt.base), None)
            if base is None or base.adapt is not None or base.backend is not Backend.TORCH:
                raise ModelConfigError(f"{label}: {model.name!r}: `adapt.base` must name a "
                                       f"declared torch model that is not adapted itself, got "
                                       f"{model.adapt.base!r}")
    defaults = [m.name for m in models if m.default]
    if len(defaults) > 1:
        raise ModelConfigError(f"{label}: only one model can be the default; got {listed(defaults)}")
    default = defaults[0] if defaults else models[0].name
    ordered = tuple(sorted(models, key=lambda m: m.name != default))
    chunkers = tuple(ChunkingStrategy(n) for n in names)
    folders = {}
    for key in ("model_cache", "corpus", "data_dir"):
        value = index.get(key, "data/models" if key == "model_cache" else None)
        if value is not None and (not isinstance(value, str) or not value):
            raise ModelConfigError(f"{label}: [index] {key} must be a folder path")
        if key == "corpus" and value is not None and is_corpus_uri(value):
            try:
                folders[key] = check_corpus_uri(value)
            except SourceError as exc:
                raise ModelConfigError(f"{label}: [index] corpus: {exc}") from None
            continue
        folders[key] = (root / Path(value).expanduser()).resolve() if value else None
    profiles = _profiles(data.get("profiles", {}), label, ordered, chunkers)
    chosen = index.get("profile")
    if chosen is not None and chosen not in {p.name for p in profiles}:
        raise ModelConfigError(f"{label}: [index] profile {chosen!r} is not one of "
                               f"{listed(p.name for p in profiles)}")
    return ProjectConfig(ordered, chunkers, folders["model_cache"], root, path, profiles, chosen,
                         folders["corpus"], folders["data_dir"], access=access,
                         compute=_compute(data.get("compute", {}), label),
                         max_document_bytes=_max_document_bytes(index, label),
                         max_document_seconds=_max_document_seconds(index, label))


def _max_document_bytes(index: dict, label: str) -> int:
    """``[index] max_document_bytes``: a whole number of bytes, at least 1 and at most
    :data:`MAX_DOCUMENT_BYTES_CEILING` (a file is read whole into memory)."""
    value = index.get("max_document_bytes", DEFAULT_MAX_DOCUMENT_BYTES)
    if isinstance(value, bool) or not isinstance(value, int) \
            or not 1 <= value <= MAX_DOCUMENT_BYTES_CEILING:
        raise ModelConfigError(f"{label}: [index] max_document_bytes must be a whole number of "
                               f"bytes from 1 to {MAX_DOCUMENT_BYTES_CEILING:_} (default "
                               f"{DEFAULT_MAX_DOCUMENT_BYTES:_}, 20 MiB), got {value!r}")
    return value


MAX_DOCUMENT_BYTES_CEILING = 1 << 30
"""1 GiB: a document is read whole into memory, its members and text too."""


def _max_document_seconds(index: dict, label: str) -> float:
    """``[index] max_document_seconds``: a number of seconds over 0 and at most
    :data:`MAX_DOCUMENT_SECONDS_CEILING`."""
    value = index.get("max_document_seconds", DEFAULT_MAX_DOCUMENT_SECONDS)
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0 < value <= MAX_DOCUMENT_SECONDS_CEILING:
        raise ModelConfigError(f"{label}: [index] max_document_seconds must be a number of "
                               f"seconds over 0 and at most {MAX_DOCUMENT_SECONDS_CEILING:_} "
                               f"(default {DEFAULT_MAX_DOCUMENT_SECONDS:g}), got {value!r}")
    return float(value)


MAX_DOCUMENT_SECONDS_CEILING = 86_400
"""A day: one document longer than that stops a run for good."""


def _compute(table: object, label: str) -> ComputeSettings:
    """The ``[compute]`` table: ``engine`` (``in_process`` or ``ray``), ``address``
    (``HOST:PORT`` or ``auto``, required for ``ray``), ``shard_texts`` (texts per shard)."""
    engines = [e.value for e in Engine]
    check_table(table, COMPUTE_KEYS, f"{label}: [compute]")
    engine = table.get("engine", Engine.IN_PROCESS.value)
    if engine not in engines:
        raise ModelConfigError(f"{label}: [compute] engine must be one of {listed(engines)}; got {engine!r}")
    address = table.get("address")
    if address is not None and (not isinstance(address, str) or not (
            address == "auto" or address.rpartition(":")[2].isdigit() and address.rpartition(":")[0])):
        raise ModelConfigError(f'{label}: [compute] address must be "HOST:PORT" or "auto", got '
                               f"{address!r}")
    if engine == Engine.RAY and address is None:
        raise ModelConfigError(f'{label}: [compute] engine = "ray" needs an address '
                               '("HOST:PORT" or "auto")')
    shard_texts = table.get("shard_texts", ComputeSettings.shard_texts)
    if isinstance(shard_texts, bool) or not isinstance(shard_texts, int) or shard_texts < 1:
        raise ModelConfigError(f"{label}: [compute] shard_texts must be a whole number >= 1, got "
                               f"{shard_texts!r}")
    return ComputeSettings(Engine(engine), address, shard_texts)


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
        check_table(table, PROFILE_KEYS, where)
        fallback = builtin.get(name, builtin[PRODUCTION])
        wanted = table.get("chunkers", [c.value for c in fallback.chunkers])
        if (not isinstance(wanted, list) or not wanted or len(set(wanted)) != len(wanted)
                or any(c not in known for c in wanted)):
            raise ModelConfigError(f"{where} chunkers must be a non-empty list of distinct names "
                                   f"({listed(known)}); got {wanted!r}")
        chosen = table.get("models", list(fallback.models))
        if (not isinstance(chosen, list) or not chosen or len(set(chosen)) != len(chosen)
                or any(m not in names for m in chosen)):
            raise ModelConfigError(f"{where} models must be a non-empty list of distinct declared "
                                   f"model names ({listed(names)}); got {chosen!r}")
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
        raise ModelConfigError(f"profile {name!r} is not declared; declared: {listed(sorted(by_name))}")
    return by_name[name]


def select_profile(config: ProjectConfig, profile: Profile) -> ProjectConfig:
    """The configuration restricted to what ``profile`` builds (models in declaration order,
    the default first when the profile includes it)."""
    return replace(config, models=tuple(m for m in config.models if m.name in profile.models),
                   chunkers=profile.chunkers, selected=profile.name)


def load_config(path: Path | None = None) -> ProjectConfig:
    """Reads a ``rag_pipeline.toml`` (the built-in default declaration when the project root
    has none).

    Args:
        path: The file; by default :func:`~rag_pipeline.core.config.root.config_path`'s, the
            one ``RAG_PIPELINE_CONFIG`` names, else the project root's.

    Raises:
        ConfigNotFoundError: ``path`` is not given and ``RAG_PIPELINE_CONFIG`` names no file.
        ModelConfigError: The file is not a valid configuration (one line).
    """
    path = Path(path) if path is not None else config_path()
    if not path.is_file():
        return parse_config(DEFAULT_CONFIG, path.parent, None)
    try:
        text = path.read_bytes().decode("utf-8-sig")  # a byte-order mark, as Notepad writes
    except UnicodeDecodeError as exc:
        raise ModelConfigError(f"{path}: not UTF-8 text (byte {exc.start:,} cannot be read as "
                               "UTF-8): TOML is UTF-8; save the file as UTF-8") from None
    return parse_config(text, path.parent, path)


def declared_chunkers(config: ProjectConfig | None = None) -> tuple[ChunkingStrategy, ...]:
    """The chunking strategies the project builds, from ``rag_pipeline.toml``."""
    return (config or load_config()).chunkers
