"""Manifests, fingerprints and the refusal of a model folder that changed under its key."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rag_pipeline.core.embedding.models import (
    CALIBRATION_TEXTS,
    Backend,
    Calibration,
    Manifest,
    ModelConfigError,
    ModelMismatchError,
    ModelSpec,
    Precision,
    calibration_set,
    find_model,
    folder_dimension,
    manifest_changes,
    model_files,
    verify_model_files,
)
from rag_pipeline_tests.model_specs import spec_for_folder


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
                            precision=Precision.INT8, calibration=calibration_set()).key,
            spec_for_folder("m", folder, 8, backend=Backend.OPENVINO,
                            precision=Precision.INT8, calibration=_texts(folder, 50)).key}
    assert len(keys) == 5


def _texts(folder: Path, n: int, name: str = "texts.jsonl", word: str = "text") -> Calibration:
    path = folder.parent / name
    path.write_text("".join(json.dumps({"text": f"{word} {i}"}) + "\n" for i in range(n)))
    return calibration_set(path)


def test_int8_keys_follow_the_calibration_texts_not_where_they_live(folder: Path, tmp_path: Path):
    def key(calibration: Calibration) -> str:
        return spec_for_folder("m", folder, 8, backend=Backend.OPENVINO, precision=Precision.INT8,
                               calibration=calibration).key

    first = _texts(folder, 20)
    copy = tmp_path / "elsewhere" / "same.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(first.path.read_bytes())
    # The same texts in another folder: the same weights, so the same key.
    assert key(calibration_set(copy)) == key(first)
    # Other texts (another corpus's): other weights, so another key.
    assert key(_texts(folder, 20, "other.jsonl", "words")) != key(first)
    assert first.sha256 == hashlib.sha256("\x00".join(f"text {i}" for i in range(20))
                                          .encode()).hexdigest()
    assert (first.count, first.texts()[:2]) == (20, ["text 0", "text 1"])
    # Planted flaw: the file changes after its digest was taken; must trip Calibration.texts.
    first.path.write_text(json.dumps({"text": "changed"}) + "\n" + first.path.read_text())
    with pytest.raises(ModelMismatchError, match=r"the calibration texts .*texts\.jsonl changed"):
        first.texts()


def test_the_shipped_calibration_set_is_300_texts_with_a_pinned_digest():
    shipped = calibration_set(CALIBRATION_TEXTS)
    assert (shipped.count, shipped.sha256[:16]) == (300, "affce4dc99ea4eea")


@pytest.mark.parametrize(("lines", "message"), [
    (['{"text": ""}'] * 12, r":1: a calibration line must be"),
    (["not json"] * 12, r":1: a calibration line must be"),
    (['{"text": "a"}'] * 3, r"3 calibration texts; at least 10 are needed"),
])
def test_malformed_calibration_files_fail_with_one_line(tmp_path: Path, lines, message):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ModelConfigError, match=message):
        calibration_set(path)


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
                                                 rf"{spec.key}$"):
        find_model("x@0", [spec])
