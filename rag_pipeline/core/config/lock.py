"""The lock file, ``rag_pipeline.lock.json`` (written by ``rag-pipeline models --lock`` beside
the config file; the project's own is committed and applies to every config file, see
:func:`effective_lock`): per model name, the fingerprint and the sha256 of every file that shapes
its vectors. A locked model whose files change refuses to load and names the file; a model whose
declared backend, precision, window or recipe differs from its lock, or that is not locked yet,
gets the fingerprint of its current manifest (a new key, so new partitions): see
:mod:`rag_pipeline.core.config.keys`. Pure: no Dagster, no torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.config.root import PROJECT_ROOT
from rag_pipeline.core.config.schema import LOCK_NAME, ProjectConfig
from rag_pipeline.core.embedding.models import (
    Backend,
    Manifest,
    ModelConfigError,
    ModelSpec,
    Precision,
    model_files,
)

LOCK_VERSION = 1


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


def effective_lock(config: ProjectConfig) -> dict[str, tuple[LockEntry, ...]]:
    """The lock entries a configuration's models take their keys from, by model name: the
    entry of the lock beside the configuration file first, then the project's own
    (``rag_pipeline.lock.json`` beside the project's ``rag_pipeline.toml``). So a copied or
    ``init``-written configuration that declares a project model unchanged gets the project's
    key for it (``@53aa5117``), wherever the copy lives, and gets it back after locking other
    settings and then going back to the project's; the first entry whose settings match the
    declaration applies, and the files are verified against it on load."""
    project = load_lock(PROJECT_ROOT / LOCK_NAME)
    own = ({} if config.lock_path.resolve() == (PROJECT_ROOT / LOCK_NAME).resolve()
           else load_lock(config.lock_path))
    return {name: tuple(entry for entry in (own.get(name), project.get(name)) if entry is not None)
            for name in {**project, **own}}


def lock_json(specs: Sequence[ModelSpec], previous: Mapping[str, Sequence[LockEntry]]) -> str:
    """The lock file's text for ``specs``. An entry whose manifest is one locked before keeps
    its fingerprint (a key once minted never moves); others get the fingerprint of the manifest."""
    models = {}
    for spec in specs:
        manifest = Manifest(model_files(spec.path), spec.backend, spec.precision,
                            spec.max_tokens, spec.calibration.recipe() if spec.calibration else "")
        old = next((entry for entry in previous.get(spec.name, ()) if entry.manifest() == manifest),
                   None)
        fingerprint = old.fingerprint if old is not None else manifest.fingerprint()
        models[spec.name] = {"fingerprint": fingerprint, "backend": spec.backend.value,
                             "precision": spec.precision.value, "window": spec.max_tokens,
                             "recipe": manifest.recipe, "files": dict(sorted(manifest.files.items()))}
    return json.dumps({"version": LOCK_VERSION, "models": models}, indent=2) + "\n"
