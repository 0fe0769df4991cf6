"""The exports: an OpenVINO export quantised on other calibration texts than its key names is
refused, and a process's first OpenVINO inferences made at once do not deadlock."""

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


_FIRST_INFERENCES_AT_ONCE = """
import sys, threading
import numpy as np
sys.setswitchinterval(1e-6)  # threads switch as often as they can: the race comes at once
from rag_pipeline.core.embedding.bulk import openvino_bulk_transformer
pool, _ = openvino_bulk_transformer(open(sys.argv[1], "rb").read(), 2)
inputs = {"input_ids": np.array([[101, 2054, 102]] * 4, np.int64),
          "attention_mask": np.ones((4, 3), np.int64), "token_type_ids": np.zeros((4, 3), np.int64)}
start, shapes = threading.Barrier(2), []
def call():
    start.wait()
    shapes.append(pool(inputs).shape)
threads = [threading.Thread(target=call) for _ in range(2)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(shapes)
"""


@pytest.mark.slow
def test_a_processs_first_two_inferences_at_once_do_not_deadlock(minilm, tmp_path):
    # Two threads making a process's first OpenVINO inferences at once hung in the binding's
    # numpy set-up (4 of 5 fresh processes here, before InferPool let the first run alone).
    import dataclasses
    import subprocess
    import sys

    from rag_pipeline.core.embedding.embedder import Embedder
    from rag_pipeline.core.embedding.export import ONNX_FILE, onnx_dir
    from rag_pipeline.project_paths import PROJECT_ROOT

    spec = dataclasses.replace(minilm, cache_dir=tmp_path)
    Embedder(spec, bulk="openvino")
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", _FIRST_INFERENCES_AT_ONCE, str(onnx_dir(spec) / ONNX_FILE)],
            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.strip() == "[(4, 3, 384), (4, 3, 384)]"
