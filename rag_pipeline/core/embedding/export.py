"""A model's transformer converted for another runtime: OpenVINO IR on disk (fp32, or static
int8 quantised by NNCF on fixed calibration texts) and ONNX in memory.

The OpenVINO model is exported on first use from the source folder's weights into
``<model_cache>/<key>/``, with a manifest of its own files (:data:`EXPORT_MANIFEST`) that is
checked on every load (:func:`verify_export`). The OpenVINO precision hint is always set to f32
(:data:`OPENVINO_CONFIG`), so the runtime never picks bf16 on a CPU that has it. The ONNX
conversion serves the question path (:mod:`rag_pipeline.core.embedding.question`).

torch and the converters are imported inside the functions that need them.
"""

from __future__ import annotations

import io
import json
import os
import queue
import shutil
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from rag_pipeline.core.embedding.models import (
    ModelMismatchError,
    ModelSpec,
    Precision,
    file_sha256,
    texts_sha256,
)
from rag_pipeline.core.embedding.openvino_runtime import openvino

__all__ = [
    "EXPORT_MANIFEST", "OPENVINO_CONFIG", "InferPool", "ModelNotExportedError", "Transformer",
    "ONNX_GRAPH", "convert_to_onnx", "convert_to_openvino", "export_dir", "export_onnx",
    "export_openvino", "fused_onnx", "onnx_dir", "onnx_model", "token_inputs",
    "transformer_of", "verify_export",
]

EXPORT_MANIFEST = "export.json"
OPENVINO_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY"}
"""f32 inference precision on purpose: OpenVINO's default on a CPU with AMX/AVX512-BF16 is bf16,
slower here and not the declared precision. An int8 model keeps f32 for the layers left
unquantised."""

Transformer = Callable[[dict[str, np.ndarray]], np.ndarray]
"""Token inputs in, the last hidden state out."""


class ModelNotExportedError(Exception):
    """An OpenVINO model cannot be exported (an int8 model without calibration texts)."""


class InferPool:
    """OpenVINO infer requests shared by threads: an infer request serves one call at a time.
    ``lanes``: how many batches :meth:`Embedder.embed
    <rag_pipeline.core.embedding.embedder.Embedder.embed>` runs through it at once (the streams
    of a bulk pool; 1 for a model compiled for latency)."""

    _first_call = threading.Lock()
    _bridge_ready = False
    """OpenVINO's Python binding sets up its numpy bridge on a process's first inference, and
    two threads doing that at once deadlock in it (seen: two batches begun together on a pool
    whose load ran no inference hung an index's embeddings run). So a process's first
    inference runs alone."""

    def __init__(self, compiled, size: int, lanes: int = 1) -> None:
        self._free: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(size):
            self._free.put(compiled.create_infer_request())
        self.lanes = lanes

    def __call__(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        request = self._free.get()
        try:
            if InferPool._bridge_ready:
                return np.array(request.infer(inputs)[0], copy=True)
            with InferPool._first_call:
                hidden = np.array(request.infer(inputs)[0], copy=True)
                InferPool._bridge_ready = True
                return hidden
        finally:
            self._free.put(request)


def transformer_of(model) -> object:
    """The transformer module of a loaded ``SentenceTransformer`` (its first module's model)."""
    first = model[0]
    return first.auto_model if hasattr(first, "auto_model") else first.model


def token_inputs(features) -> dict[str, np.ndarray]:
    """The transformer's three inputs as int64 arrays, from torch tensors or numpy arrays."""
    return {name: np.asarray(features[name], dtype=np.int64)
            for name in ("input_ids", "attention_mask", "token_type_ids")}


def _staging(folder: Path) -> Path:
    """A temporary folder beside ``folder``, this process's own: a model cache is shared by
    every folder ``init`` configured, so two indexes may export the same key at once (the last
    rename wins; both exports are the same model, checked on every load)."""
    return folder.with_name(f"{folder.name}.tmp-{os.getpid()}")


def export_dir(spec: ModelSpec) -> Path:
    if spec.cache_dir is None:
        raise ModelNotExportedError(f"{spec.key} runs on OpenVINO but no model cache folder "
                                    "is configured ([index] model_cache)")
    return spec.cache_dir / spec.key


def verify_export(spec: ModelSpec, folder: Path) -> None:
    """The exported files must be the ones recorded when they were exported for this key."""
    manifest = json.loads((folder / EXPORT_MANIFEST).read_text(encoding="utf-8"))
    if manifest["key"] != spec.key:
        raise ModelMismatchError(f"{folder} holds an export of {manifest['key']}, not {spec.key}")
    calibrated = spec.calibration.sha256 if spec.calibration else ""
    if manifest.get("calibration_sha256", "") != calibrated:
        raise ModelMismatchError(
            f"{spec.key} refuses to load: {folder} was quantised on calibration texts with sha256 "
            f"{manifest.get('calibration_sha256', '')[:12] or 'none'}…, the key names "
            f"{calibrated[:12] or 'none'}…: delete {folder} to export it again")
    for name, sha in manifest["files"].items():
        path = folder / name
        if not path.is_file() or file_sha256(path) != sha:
            raise ModelMismatchError(
                f"{spec.key} refuses to load: the exported {path} changed since it was exported; "
                f"delete {folder} to export it again")


def export_openvino(spec: ModelSpec, model) -> Path:
    """Converts the transformer to OpenVINO IR (fp32 weights kept, no fp16 compression), and
    for int8 quantises it statically with NNCF on the spec's fixed calibration texts (so the
    same key gives the same weights on any corpus); writes atomically."""
    ov = openvino()
    folder = export_dir(spec)
    calibration = spec.calibration.texts() if spec.calibration else None
    if spec.precision is Precision.INT8 and not calibration:
        raise ModelNotExportedError(f"{spec.key} is int8 but declares no calibration texts")
    ov_model = convert_to_openvino(model)
    calibration_sha = ""
    if spec.precision is Precision.INT8:
        import nncf

        items = [token_inputs(model.preprocess([text])) for text in calibration]
        ov_model = nncf.quantize(ov_model, nncf.Dataset(items), model_type=nncf.ModelType.TRANSFORMER,
                                 subset_size=len(items))
        calibration_sha = texts_sha256(calibration)
    tmp = _staging(folder)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    ov.save_model(ov_model, str(tmp / "model.xml"), compress_to_fp16=False)
    files = {name: file_sha256(tmp / name) for name in ("model.xml", "model.bin")}
    (tmp / EXPORT_MANIFEST).write_text(json.dumps({
        "key": spec.key, "backend": spec.backend.value, "precision": spec.precision.value,
        "openvino": ov.__version__, "calibration_texts": len(calibration or ()),
        "calibration_sha256": calibration_sha, "files": files}, indent=2), encoding="utf-8")
    if folder.exists():
        shutil.rmtree(folder)
    tmp.replace(folder)
    return folder


ONNX_FILE = "model.onnx"
ONNX_GRAPH = "bert-fused"
"""The bulk ONNX graph of a BERT encoder: exported with eager attention and fused by ONNX
Runtime's transformer optimizer (one ``Attention``, ``SkipLayerNormalization`` and ``BiasGelu``
node per layer, ``EmbedLayerNormalization``), fp32 throughout; an export recorded without it
(or under another name) is exported again."""
PLAIN_GRAPH = "plain"
"""The graph of a model the optimizer does not fuse (another architecture): as traced."""


def onnx_dir(spec: ModelSpec) -> Path:
    """``<model_cache>/<key>.onnx/``: beside, never inside, the key's own folder (an adapted
    model's weights live there)."""
    return export_dir(spec).with_name(f"{spec.key}.onnx")


def export_onnx(spec: ModelSpec, model) -> Path:
    """Writes the transformer as fp32 ONNX into :func:`onnx_dir` with its manifest
    (temp folder, then rename), so the next load reads it instead of tracing again."""
    folder = onnx_dir(spec)
    tmp = _staging(folder)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    onnx, graph = fused_onnx(model)
    (tmp / ONNX_FILE).write_bytes(onnx)
    (tmp / EXPORT_MANIFEST).write_text(json.dumps({
        "key": spec.key, "backend": "onnxruntime", "precision": spec.precision.value,
        "graph": graph, "calibration_sha256": "",
        "files": {ONNX_FILE: file_sha256(tmp / ONNX_FILE)}}, indent=2), encoding="utf-8")
    if folder.exists():
        shutil.rmtree(folder)
    tmp.replace(folder)
    return folder


def onnx_model(spec: ModelSpec, model) -> bytes:
    """The transformer as fp32 ONNX: read from the model cache when it was exported for this
    key and its files are unchanged (:func:`verify_export`), else converted (and cached when a
    model cache is configured)."""
    if spec.cache_dir is None:
        return fused_onnx(model)[0]
    folder = onnx_dir(spec)
    if not (folder / EXPORT_MANIFEST).is_file() or not (folder / ONNX_FILE).is_file() or \
            json.loads((folder / EXPORT_MANIFEST).read_text(encoding="utf-8")).get(
                "graph") not in (ONNX_GRAPH, PLAIN_GRAPH):
        export_onnx(spec, model)
    verify_export(spec, folder)
    return (folder / ONNX_FILE).read_bytes()


def fused_onnx(model) -> tuple[bytes, str]:
    """The transformer as fp32 ONNX for bulk embedding, and its graph's name: a BERT encoder
    traced with eager attention (the SDPA trace's NaN guards hide the attention pattern from the
    fuser) and fused by ``onnxruntime.transformers.optimizer`` (measured here: 12 to 13 % fewer
    CPU seconds than the plain graph on the bundled corpus's chunks, vectors within 1.6e-7 per
    component; see :data:`ONNX_GRAPH`); any other model as :func:`convert_to_onnx` gives it
    (:data:`PLAIN_GRAPH`). The loaded model keeps its own attention implementation."""
    transformer = transformer_of(model)
    config = transformer.config
    if getattr(config, "model_type", None) != "bert" or not hasattr(
            transformer, "set_attn_implementation"):
        return convert_to_onnx(model), PLAIN_GRAPH
    import onnx
    from onnxruntime.transformers import optimizer

    own = config._attn_implementation
    transformer.set_attn_implementation("eager")
    try:
        traced = convert_to_onnx(model)
    finally:
        transformer.set_attn_implementation(own)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fused = optimizer.optimize_model(
            onnx.load_from_string(traced), model_type="bert",
            num_heads=config.num_attention_heads, hidden_size=config.hidden_size, opt_level=0)
    counts = fused.get_fused_operator_statistics()
    if counts.get("Attention", 0) != config.num_hidden_layers:
        return traced, PLAIN_GRAPH
    return fused.model.SerializeToString(), ONNX_GRAPH


def _traceable_encoder(model):
    """The model's transformer as a module of the three token inputs giving the last hidden
    state, and an example input of two texts (so batch and length can vary)."""
    import torch

    transformer = transformer_of(model)

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    example = token_inputs(model.preprocess(["an example sentence", "two"]))
    return Encoder().eval(), {k: torch.from_numpy(v) for k, v in example.items()}


@contextmanager
def _quiet_tracing() -> Iterator[None]:
    """Tracing warns about Python branches on shapes in transformers' attention code (they hold
    for every batch shape: checked by the probes and the benchmark's cosines) and about
    transformers' and torch's own deprecations; neither is the user's business."""
    import torch

    with torch.no_grad(), warnings.catch_warnings():
        for category in (torch.jit.TracerWarning, FutureWarning, DeprecationWarning, UserWarning):
            warnings.simplefilter("ignore", category)
        yield


def convert_to_openvino(model):
    """The model's transformer (token ids in, last hidden state out) as an fp32 OpenVINO model
    with dynamic batch and length."""
    ov = openvino()
    encoder, example = _traceable_encoder(model)
    with _quiet_tracing():
        return ov.convert_model(
            encoder, example_input=example,
            input=[(name, ov.PartialShape([-1, -1]), ov.Type.i64) for name in example])


def convert_to_onnx(model) -> bytes:
    """The model's transformer as an fp32 ONNX model (in memory) with dynamic batch and length.
    torch's TorchScript exporter (``dynamo=False``, still shipped by the pinned torch 2.13): it
    needs the ``onnx`` package only, the torch.export-based one onnxscript as well."""
    import torch

    encoder, example = _traceable_encoder(model)
    names = list(example)
    out = io.BytesIO()
    with _quiet_tracing():
        torch.onnx.export(
            encoder, tuple(example[n] for n in names), out, input_names=names,
            output_names=["last_hidden_state"], opset_version=17, dynamo=False,
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]})
    return out.getvalue()
