"""Manifests, fingerprints and the refusal of a model folder that changed under its key."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from rag_pipeline.core.models import (
    Backend,
    Calibration,
    Manifest,
    ModelMismatchError,
    ModelSpec,
    Precision,
    find_model,
    folder_dimension,
    manifest_changes,
    model_files,
    spec_for_folder,
    verify_model_files,
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A miniature sentence-transformers folder: weights, configs, a pooling module, docs."""
    root = tmp_path / "model"
    (root / "1_Pooling").mkdir(parents=True)
    (root / "model.safetensors").write_bytes(b"weights")
    (root / "config.json").write_text('{"hidden_size": 8}')
    (root / "modules.json").write_text("[]")
    (root / "1_Pooling" / "config.json").write_text('{"word_embedding_dimension": 8}')
    (root / "README.md").write_text("docs do not shape vectors")
    (root / "onnx").mkdir()
    (root / "onnx" / "model.onnx").write_bytes(b"another runtime's export")
    return root


def test_model_files_hash_everything_but_docs_and_other_runtimes(folder: Path):
    assert model_files(folder) == {
        "1_Pooling/config.json": _sha(b'{"word_embedding_dimension": 8}'),
        "config.json": _sha(b'{"hidden_size": 8}'),
        "model.safetensors": _sha(b"weights"),
        "modules.json": _sha(b"[]"),
    }
    assert folder_dimension(folder) == 8


def test_manifest_text_and_fingerprint_written_out():
    manifest = Manifest({"b.json": "22", "a.bin": "11"}, Backend.OPENVINO, Precision.INT8, 128,
                        "r")
    text = ("rag_pipeline model manifest v1\nbackend openvino\nprecision int8\nwindow 128\n"
            "recipe r\nfile a.bin 11\nfile b.json 22\n")
    assert manifest.text() == text
    assert manifest.fingerprint() == hashlib.sha256(text.encode()).hexdigest()[:8]


def test_every_setting_changes_the_fingerprint(folder: Path):
    keys = {spec_for_folder("m", folder, 8).key,
            spec_for_folder("m", folder, 8, max_tokens=128).key,
            spec_for_folder("m", folder, 8, backend=Backend.OPENVINO).key,
            spec_for_folder("m", folder, 8, backend=Backend.OPENVINO,
                            precision=Precision.INT8, calibration=Calibration()).key,
            spec_for_folder("m", folder, 8, backend=Backend.OPENVINO,
                            precision=Precision.INT8, calibration=Calibration(samples=50)).key}
    assert len(keys) == 5


def test_changed_pooling_config_is_refused_naming_the_file(folder: Path):
    spec = spec_for_folder("m", folder, 8)
    verify_model_files(spec)
    # Planted flaw: the pooling changes, the weights do not. Must trip verify_model_files.
    (folder / "1_Pooling" / "config.json").write_text('{"word_embedding_dimension": 8, "cls": 1}')
    with pytest.raises(ModelMismatchError, match=r"m@\w{8} refuses to load: in .*, "
                                                 r"1_Pooling/config\.json changed \(sha256 "):
        verify_model_files(spec)


def test_added_and_removed_files_and_settings_are_named():
    locked = Manifest({"a": "1", "b": "2"}, Backend.TORCH, Precision.FP32, 256)
    actual = Manifest({"b": "3", "c": "4"}, Backend.TORCH, Precision.FP32, 128)
    assert manifest_changes(locked, actual) == [
        "a was removed", "b changed (sha256 3…, locked 2…)", "c was added",
        "window changed from 256 to 128"]


def test_unlocked_spec_is_checked_by_its_fingerprint(folder: Path):
    spec = spec_for_folder("m", folder, 8)
    bare = ModelSpec(name="m", path=folder, fingerprint=spec.fingerprint, dimension=8)
    verify_model_files(bare)
    # Planted flaw: new weights under the old fingerprint.
    (folder / "model.safetensors").write_bytes(b"other weights")
    with pytest.raises(ModelMismatchError, match="declared as m@"):
        verify_model_files(bare)


def test_find_model_names_the_declared_keys(folder: Path):
    spec = spec_for_folder("m", folder, 8)
    assert find_model(spec.key, [spec]) is spec
    with pytest.raises(ModelMismatchError, match=rf"model 'x@0' is not declared; declared: "
                                                 rf"\['{spec.key}'\]"):
        find_model("x@0", [spec])
