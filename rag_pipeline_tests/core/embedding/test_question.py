"""The checked question path: a question alone runs on every core and questions side by side on
one each, a fast path is used only when it gives the model's own vectors, and questions are
tokenized directly only when that gives the wrapper's inputs."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from rag_pipeline.core.embedding.embedder import Embedder
from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.core.embedding.question import QueryPath


def test_a_question_alone_runs_alone_and_questions_side_by_side_run_beside():
    import threading

    from rag_pipeline.core.embedding.question import _AloneOrSideBySide

    calls: list[tuple[str, str]] = []
    first_inside, release_first = threading.Event(), threading.Event()

    def runner(name: str):
        def run(inputs):
            calls.append((name, inputs["q"]))
            if inputs["q"] == "first":
                first_inside.set()
                assert release_first.wait(10)
            return np.array([name])
        return run

    dispatch = _AloneOrSideBySide(runner("alone"), runner("beside"))
    first = threading.Thread(target=dispatch, args=({"q": "first"},))
    first.start()
    assert first_inside.wait(10)
    assert dispatch({"q": "second"}).tolist() == ["beside"]  # arrives while "first" runs
    release_first.set()
    first.join(10)
    assert dispatch({"q": "third"}).tolist() == ["alone"]  # nothing else running any more
    assert calls == [("alone", "first"), ("beside", "second"), ("alone", "third")]


def test_a_failing_question_frees_its_place():
    from rag_pipeline.core.embedding.question import _AloneOrSideBySide

    def boom(inputs):
        raise RuntimeError("planted")

    dispatch = _AloneOrSideBySide(boom, lambda inputs: np.array(["beside"]))
    with pytest.raises(RuntimeError, match="planted"):
        dispatch({})
    with pytest.raises(RuntimeError, match="planted"):
        dispatch({})  # alone again: the failed call is not left counted as running


@pytest.mark.slow
@pytest.mark.parametrize(("runtime", "options", "expected"), [
    # ONNX Runtime: one core per question side by side; a question alone on every core unless told.
    ("onnxruntime", {}, QueryPath("onnxruntime-fp32", os.cpu_count(), None, os.cpu_count())),
    ("onnxruntime", {"alone_threads": 1}, QueryPath("onnxruntime-fp32", os.cpu_count(), None, 1)),
    # Asked for 8 streams, OpenVINO gives one per core at most: the path says what it gave.
    ("openvino", {"streams": 8, "requests": 3},
     QueryPath("openvino-fp32", min(8, os.cpu_count()), None, None)),
])
def test_fast_questions_give_the_models_own_vectors(minilm: ModelSpec, runtime, options, expected):
    embedder = Embedder(minilm)
    question = "why does [0] * -5 quietly give me []?"
    own = embedder.embed_query(question)
    assert embedder.query_path == QueryPath("torch", None, None)
    path = embedder.fast_queries(runtime, **options)
    assert dataclasses.replace(path, min_cosine=None) == expected
    assert path.min_cosine >= 0.99999
    fast = embedder.embed_query(question)
    assert fast.dtype == np.float32 and abs(float(np.linalg.norm(fast)) - 1.0) < 1e-6
    assert float(own @ fast) >= 0.99999
    assert np.abs(own - fast).max() < 1e-4
    # Documents still go through the model's own backend.
    assert np.array_equal(embedder.embed([question])[0], own)


@pytest.mark.slow
@pytest.mark.parametrize(("runtime", "converter"), [("onnxruntime", "convert_to_onnx"),
                                                    ("openvino", "convert_to_openvino")])
def test_a_fast_question_path_with_other_vectors_is_refused(minilm: ModelSpec, monkeypatch,
                                                            runtime, converter):
    import copy

    import torch

    from rag_pipeline.core.embedding import question as question_module
    from rag_pipeline.core.embedding.export import transformer_of

    embedder = Embedder(minilm)
    convert = getattr(question_module, converter)

    def convert_a_nudged_copy(model):
        # Planted flaw: the converted transformer has one weight matrix scaled by 1.1, so its
        # vectors are another model's; fast_queries must refuse it and keep the torch path.
        nudged = copy.deepcopy(model)
        layer = transformer_of(nudged).encoder.layer[0].attention.output.dense
        with torch.no_grad():
            layer.weight.mul_(1.1)
        return convert(nudged)

    monkeypatch.setattr(question_module, converter, convert_a_nudged_copy)
    with pytest.raises(question_module.QueryPathMismatchError,
                       match=rf"^all-MiniLM-L6-v2@53aa5117: {runtime} fp32 questions differ from the "
                             r"model.s own vectors \(min cosine 0\.9\d+ < 0\.99999\)"):
        embedder.fast_queries(runtime)
    assert embedder.query_path == QueryPath("torch", None, None)
    question = "what does break do to the loop variable of a for loop"
    assert np.array_equal(embedder.embed_query(question), embedder.embed([question])[0])


def test_an_unknown_runtime_or_thread_count_is_refused():
    embedder = Embedder.__new__(Embedder)  # the checks come before anything is loaded
    with pytest.raises(ValueError, match="^runtime must be one of onnxruntime, openvino, got 'tvm'$"):
        embedder.fast_queries("tvm")
    with pytest.raises(ValueError, match="^alone_threads must be at least 1, got 0$"):
        embedder.fast_queries("onnxruntime", alone_threads=0)


@pytest.mark.slow
def test_questions_are_tokenized_directly_only_when_that_gives_the_wrappers_inputs(
        minilm: ModelSpec, monkeypatch):
    import tokenizers

    def wrapper_inputs(embedder, text):
        encoded = embedder.model.tokenizer([text], padding=True, truncation=True,
                                           max_length=minilm.max_tokens, return_tensors="np")
        return {k: np.asarray(encoded[k], dtype=np.int64)
                for k in ("input_ids", "attention_mask", "token_type_ids")}

    embedder = Embedder(minilm)
    embedder.fast_queries()
    assert embedder._direct_tokenizer is not None
    for text in ["Ünïcode café?", "x " * 400, "def f(*args, **kw): return 1", "a"]:
        direct = embedder._question_inputs(text)
        expected = wrapper_inputs(embedder, text)
        assert {k: v.tolist() for k, v in direct.items()} == {k: v.tolist() for k, v in expected.items()}
    assert embedder._question_inputs("x " * 400)["input_ids"].shape == (1, 256)

    # Planted flaw: a direct tokenizer whose normaliser also turns "e" into "a" gives other
    # word-pieces on the probes, so questions stay on the wrapper.
    from_str = tokenizers.Tokenizer.from_str

    def with_another_normaliser(text):
        copy = from_str(text)
        copy.normalizer = tokenizers.normalizers.Sequence(
            [copy.normalizer, tokenizers.normalizers.Replace("e", "a")])
        return copy

    monkeypatch.setattr(tokenizers.Tokenizer, "from_str", with_another_normaliser)
    other = Embedder(minilm)
    other.fast_queries()
    assert other._direct_tokenizer is None
    assert other._question_inputs("x " * 400)["input_ids"].shape == (1, 256)
