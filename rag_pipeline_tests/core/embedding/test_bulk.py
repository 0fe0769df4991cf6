"""The bulk path: a torch fp32 model's texts embedded by ONNX Runtime fp32 are the same vector
space (same key), a conversion that drifts is refused, and the ONNX export is cached and checked."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rag_pipeline.core.embedding.bulk import BULK_MIN_COSINE, BulkPath
from rag_pipeline.core.embedding.embedder import Embedder
from rag_pipeline.core.embedding.models import ModelMismatchError, ModelSpec, calibration_set


@pytest.mark.slow
def test_onnx_runtime_gives_torchs_vectors_on_the_bundled_corpus_texts(minilm: ModelSpec, tmp_path):
    # This test holds the decision that the ONNX Runtime bulk path keeps the torch model's key:
    # on the 300 shipped chunk texts of the bundled corpus (calibration_texts.jsonl, spread over
    # the Python reference) every vector is within 1e-5 cosine and 1e-6 per component of torch's.
    spec = dataclasses.replace(minilm, cache_dir=tmp_path)
    fast, torch_path = Embedder(spec), Embedder(spec, bulk="torch")
    assert fast.spec.key == torch_path.spec.key == "all-MiniLM-L6-v2@53aa5117"
    assert dataclasses.replace(fast.bulk_path, min_cosine=None) == BulkPath(
        "onnxruntime-fp32", fast.bulk_path.threads, None)
    assert fast.bulk_path.min_cosine >= BULK_MIN_COSINE
    assert torch_path.bulk_path == BulkPath("torch")
    texts = calibration_set().texts() + ["short", "x " * 400]
    counts = torch_path.wordpieces(texts)
    ours, theirs = fast.embed(texts, wordpieces=counts), torch_path.embed(texts, wordpieces=counts)
    assert ours.shape == theirs.shape == (302, 384) and ours.dtype == np.float32
    assert float(np.min(np.sum(ours * theirs, axis=1))) >= 1 - 1e-5
    assert float(np.abs(ours - theirs).max()) <= 1e-6
    # Batch independence: another batching gives the same vectors.
    other = fast.embed(texts, wordpieces=counts, batch_size=5)
    assert float(np.abs(other - ours).max()) <= 1e-6


@pytest.mark.slow
def test_a_conversion_that_drifts_keeps_torch(minilm: ModelSpec, monkeypatch, tmp_path):
    import copy

    import torch

    from rag_pipeline.core.embedding import export
    from rag_pipeline.core.embedding.export import transformer_of

    convert = export.convert_to_onnx

    def convert_a_nudged_copy(model):
        # Planted flaw: one weight matrix scaled by 1.1 in the converted model, so its vectors
        # are another model's; the bulk path must be refused and torch kept.
        nudged = copy.deepcopy(model)
        layer = transformer_of(nudged).encoder.layer[0].attention.output.dense
        with torch.no_grad():
            layer.weight.mul_(1.1)
        return convert(nudged)

    monkeypatch.setattr(export, "convert_to_onnx", convert_a_nudged_copy)
    embedder = Embedder(dataclasses.replace(minilm, cache_dir=tmp_path))
    assert embedder.bulk_path == BulkPath("torch")
    text = "what does break do to the loop variable of a for loop"
    plain = embedder.model.encode([text], normalize_embeddings=True)
    assert np.array_equal(embedder.embed([text]), plain)


@pytest.mark.slow
def test_the_onnx_export_is_cached_and_a_changed_file_refuses(minilm: ModelSpec, monkeypatch,
                                                              tmp_path):
    from rag_pipeline.core.embedding import export

    spec = dataclasses.replace(minilm, cache_dir=tmp_path)
    Embedder(spec)
    folder = tmp_path / "all-MiniLM-L6-v2@53aa5117.onnx"
    assert sorted(p.name for p in folder.iterdir()) == ["export.json", "model.onnx"]

    def no_second_conversion(model):
        raise AssertionError("converted again although the export is cached")

    monkeypatch.setattr(export, "convert_to_onnx", no_second_conversion)
    assert Embedder(spec).bulk_path.backend == "onnxruntime-fp32"
    with (folder / "model.onnx").open("ab") as handle:
        handle.write(b"\0")  # planted flaw: the cached file changed since it was exported
    with pytest.raises(ModelMismatchError, match=r"the exported .*model\.onnx changed"):
        Embedder(spec)


def test_an_unknown_bulk_path_is_refused(minilm: ModelSpec):
    with pytest.raises(ValueError, match="^bulk must be onnxruntime or torch, got 'tvm'$"):
        Embedder(minilm, verify=False, bulk="tvm")
