"""A declared model's key (``name@fingerprint``) and spec: the locked fingerprint while the lock
matches the declaration, else the fingerprint of the files as they are now; an adapted model's
from its base's key, its recipe and the digest of its training pairs. Pure: no Dagster, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_pipeline.core.config.lock import LockEntry, effective_lock, lock_json
from rag_pipeline.core.config.parse import load_config
from rag_pipeline.core.config.schema import ModelDeclaration, ProjectConfig
from rag_pipeline.core.embedding.adaptation import Adaptation, adapted_fingerprint, pairs_digest
from rag_pipeline.core.embedding.model_key import ModelKey
from rag_pipeline.core.embedding.models import (
    Manifest,
    ModelConfigError,
    ModelSpec,
    folder_dimension,
    model_files,
)


def _settings_match(declaration: ModelDeclaration, entry: LockEntry) -> bool:
    recipe = declaration.calibration.recipe() if declaration.calibration else ""
    return (entry.backend, entry.precision, entry.window, entry.recipe) == (
        declaration.backend, declaration.precision, declaration.window, recipe)


def build_spec(declaration: ModelDeclaration, config: ProjectConfig,
               entries: Sequence[LockEntry] = ()) -> ModelSpec:
    """The spec of a declaration: the key of the first lock entry that matches its settings
    (files are verified at load), otherwise the fingerprint of the files as they are now."""
    if declaration.source is None:
        raise ModelConfigError(f"{declaration.name!r} is an adapted model: see adapted_spec")
    try:
        path = declaration.source.resolve(config.root)
    except ModelConfigError as exc:
        raise ModelConfigError(f"{config.path or 'the default configuration'}: [[models]] "
                               f"{declaration.name!r} `{declaration.source.kind.value}`: "
                               f"{exc}") from None
    dimension = declaration.dimension or folder_dimension(path)
    common = dict(name=declaration.name, path=path, dimension=dimension,
                  max_tokens=declaration.window, backend=declaration.backend,
                  precision=declaration.precision, batch_size=declaration.batch_size,
                  cut=declaration.cut, calibration=declaration.calibration,
                  cache_dir=config.model_cache)
    entry = next((e for e in entries if _settings_match(declaration, e)), None)
    if entry is not None:
        return ModelSpec(fingerprint=entry.fingerprint, files=entry.files, **common)
    manifest = Manifest(model_files(path), declaration.backend, declaration.precision,
                        declaration.window,
                        declaration.calibration.recipe() if declaration.calibration else "")
    return ModelSpec(fingerprint=manifest.fingerprint(),
                     files=tuple(sorted(manifest.files.items())), **common)


def adapted_spec(declaration: ModelDeclaration, config: ProjectConfig, base: ModelSpec) -> ModelSpec:
    """The spec of an adapted model: the pairs its recipe makes from the configuration's corpus
    (``[index] corpus``, else the bundled reference) give the digest in its key, and its folder
    is ``<model cache>/<key>``, trained or not yet (see :mod:`rag_pipeline.core.embedding.adaptation`).
    The digest is read from the model cache's record while the corpus, the code and the recipe
    are unchanged (:func:`~rag_pipeline.core.embedding.adaptation.pairs_digest`)."""
    recipe = declaration.adapt
    if recipe is None:
        raise ModelConfigError(f"{declaration.name!r} is not an adapted model")
    if isinstance(config.corpus, str):
        raise ModelConfigError(f"{declaration.name!r}: an adapted model trains on a corpus folder, "
                               f"not on {config.corpus}: sync it to a folder first")
    digest = pairs_digest(config.corpus, recipe, config.model_cache)
    fingerprint = adapted_fingerprint(base.key, recipe, digest.sha256, declaration.window)
    return ModelSpec(name=declaration.name,
                     path=config.model_cache / str(ModelKey(declaration.name, fingerprint)),
                     fingerprint=fingerprint, dimension=base.dimension,
                     max_tokens=declaration.window, batch_size=declaration.batch_size,
                     cut=declaration.cut, cache_dir=config.model_cache,
                     adaptation=Adaptation(recipe, base, digest.sha256, digest.pairs,
                                           digest.available, digest.record))


def model_specs(config: ProjectConfig) -> tuple[ModelSpec, ...]:
    """Every declared model as a spec, the default first (an adapted model's base is built
    even when the selected profile leaves it out)."""
    lock = effective_lock(config)
    specs = {d.name: build_spec(d, config, lock.get(d.name, ()))
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
            base = build_spec(base_declaration, config, lock.get(base_declaration.name, ()))
        out.append(adapted_spec(declaration, config, base))
    return tuple(out)


def write_lock(config: ProjectConfig) -> tuple[ModelSpec, ...]:
    """Locks every declared model's current files (temp file + rename); returns the specs as
    they are under the new lock."""
    previous = effective_lock(config)
    fresh = tuple(build_spec(d, config) for d in config.models if d.adapt is None)
    tmp = config.lock_path.with_suffix(".tmp")
    tmp.write_text(lock_json(fresh, previous), encoding="utf-8")
    tmp.replace(config.lock_path)
    return model_specs(config)


def declared_models(config: ProjectConfig | None = None) -> tuple[ModelSpec, ...]:
    """The models the project indexes with, from ``rag_pipeline.toml``; the first is the
    default for chunk tokenizing and for questions."""
    return model_specs(config or load_config())
