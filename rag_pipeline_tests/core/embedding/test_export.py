"""An OpenVINO export quantised on other calibration texts than its key names is refused."""

from __future__ import annotations

import pytest

from rag_pipeline.core.embedding.export import export_dir, verify_export
from rag_pipeline.core.embedding.models import ModelMismatchError, ModelSpec


def test_an_export_quantised_on_other_texts_is_refused(tmp_path):
    import json

    from rag_pipeline.core.embedding.models import Backend, Calibration, Precision

    calibration = Calibration(tmp_path / "texts.jsonl", "a" * 64, 300)
    spec = ModelSpec("m", tmp_path, "0000aaaa", 8, backend=Backend.OPENVINO,
                     precision=Precision.INT8, calibration=calibration, cache_dir=tmp_path / "cache")
    folder = export_dir(spec)
    folder.mkdir(parents=True)
    (folder / "export.json").write_text(json.dumps(
        {"key": spec.key, "calibration_sha256": "a" * 64, "files": {}}))
    verify_export(spec, folder)
    # Planted flaw: the export was quantised on other texts under the same key; must trip
    # verify_export's calibration check (equal keys mean equal weights).
    (folder / "export.json").write_text(json.dumps(
        {"key": spec.key, "calibration_sha256": "b" * 64, "files": {}}))
    with pytest.raises(ModelMismatchError, match=r"m@0000aaaa refuses to load: .* quantised on "
                                                  r"calibration texts with sha256 bbbbbbbbbbbb…, "
                                                  r"the key names aaaaaaaaaaaa…"):
        verify_export(spec, folder)
