"""Specs the tests build for a model folder of their own (no configuration file, no lock)."""

from __future__ import annotations

from pathlib import Path

from rag_pipeline.core.embedding.models import Backend, Manifest, ModelSpec, Precision, model_files


def spec_for_folder(name: str, path: Path, dimension: int, max_tokens: int = 256,
                    backend: Backend = Backend.TORCH, precision: Precision = Precision.FP32,
                    **kwargs) -> ModelSpec:
    """A spec whose fingerprint is computed from the folder now (an unlocked model)."""
    calibration = kwargs.get("calibration")
    manifest = Manifest(model_files(path), backend, precision, max_tokens,
                        calibration.recipe() if calibration else "")
    return ModelSpec(name=name, path=Path(path), fingerprint=manifest.fingerprint(),
                     dimension=dimension, max_tokens=max_tokens, backend=backend,
                     precision=precision, files=tuple(sorted(manifest.files.items())), **kwargs)
