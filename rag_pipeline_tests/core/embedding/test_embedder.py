"""The model's stamp is checked when it loads (weights and every vector-shaping file), and
word-piece batching gives the vectors of plain ``encode``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rag_pipeline.core.embedding.embedder import Embedder, load_embedder, wordpiece_batches
from rag_pipeline.core.embedding.models import ModelMismatchError, ModelSpec, find_model


def test_batches_are_longest_first_ties_by_position():
    assert wordpiece_batches([5, 9, 5, 2, 9], 2) == [[1, 4], [0, 2], [3]]
    assert wordpiece_batches([], 4) == []
    with pytest.raises(ValueError, match="batch_size must be at least 1, got 0"):
        wordpiece_batches([1], 0)


@pytest.mark.slow
def test_wordpiece_batching_gives_the_vectors_of_plain_encode(minilm: ModelSpec):
    embedder = load_embedder(minilm)
    texts = [("word " * (7 * i % 60 + 1)).strip() for i in range(40)]
    plain = embedder.model.encode(texts, batch_size=32, normalize_embeddings=True)
    batched = embedder.embed(texts, batch_size=8)
    assert np.abs(batched - plain).max() < 1e-6
    assert embedder.wordpieces(["word word", "x " * 400]) == [4, 256]


def test_a_changed_pooling_config_is_refused_under_the_old_key(minilm: ModelSpec, tmp_path):
    import dataclasses
    import shutil


    folder = tmp_path / "model"
    shutil.copytree(minilm.path, folder)
    # Planted flaw: CLS pooling instead of mean pooling, weights untouched (issue 7's case).
    pooling = folder / "1_Pooling" / "config.json"
    pooling.write_text(pooling.read_text().replace('"pooling_mode_cls_token": false',
                                                   '"pooling_mode_cls_token": true'))
    with pytest.raises(ModelMismatchError, match=r"^all-MiniLM-L6-v2@53aa5117 refuses to load: "
                                                 r"in .*, 1_Pooling/config\.json changed "):
        Embedder(dataclasses.replace(minilm, path=folder))


@pytest.mark.slow  # loads the model
def test_a_declared_dimension_the_model_does_not_produce_names_where_it_is_declared(minilm: ModelSpec):
    declared = dataclasses.replace(minilm, dimension=512)
    with pytest.raises(ModelMismatchError) as raised:
        Embedder(declared).model  # noqa: B018 (the load checks it)
    assert str(raised.value) == (
        "all-MiniLM-L6-v2@53aa5117 produces 384 dimensions, declared 512 (the `dimension` of its "
        "[[models]] table in the configuration)")


@pytest.mark.slow  # imports sentence-transformers (torch) before the check
def test_weights_that_do_not_match_the_declared_fingerprint_refuse_to_load(minilm: ModelSpec):
    # Planted flaw (trips the weights-fingerprint refusal): the real weights declared under
    # another fingerprint, as if the files on disk had changed under a declared model.
    declared = dataclasses.replace(minilm, fingerprint="0badf00d")
    with pytest.raises(ModelMismatchError) as raised:
        Embedder(declared)
    assert str(raised.value) == (
        f"weights in {minilm.path} have fingerprint 53aa5117, but the model is declared as "
        "all-MiniLM-L6-v2@0badf00d: declare the new weights as a model of their own")


@pytest.mark.slow  # imports sentence-transformers (torch) before the check
def test_another_models_weights_refuse_under_the_first_models_fingerprint(minilm: ModelSpec,
                                                                         other_minilm: ModelSpec):
    # Planted flaw (trips the weights-fingerprint refusal): nudged weights in the folder of a
    # spec that still declares the official fingerprint.
    with pytest.raises(ModelMismatchError, match=r"have fingerprint [0-9a-f]{8}, but the model is "
                                                 r"declared as all-MiniLM-L6-v2@53aa5117"):
        Embedder(dataclasses.replace(other_minilm, fingerprint=minilm.fingerprint))


def test_an_undeclared_model_key_is_refused(minilm: ModelSpec):
    with pytest.raises(ModelMismatchError, match=r"^model 'all-MiniLM-L6-v2@0badf00d' is not declared; "
                                                 r"declared: all-MiniLM-L6-v2@53aa5117$"):
        find_model("all-MiniLM-L6-v2@0badf00d", (minilm,))


def test_an_adapted_model_not_trained_yet_is_skipped_with_one_line(monkeypatch, capsys):
    from rag_pipeline.core.embedding import embedder
    from rag_pipeline.core.embedding.adaptation.training import ModelNotTrainedError
    from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec

    trained = hashed_spec()
    untrained = dataclasses.replace(trained, name="adapted")

    def load(spec):
        if spec is untrained:
            raise ModelNotTrainedError("adapted@0000feed is not trained yet: run `rag-pipeline adapt`")
        return HashedEmbedder(spec)

    monkeypatch.setattr(embedder, "load_embedder", load)
    loaded = embedder.load_declared([trained, untrained], print)
    assert [e.spec for e in loaded] == [trained]
    assert capsys.readouterr().out == (f"skipped {untrained.key}: an adapted model not trained yet, "
                                       "which nothing needs until `rag-pipeline adapt` trains it\n")
