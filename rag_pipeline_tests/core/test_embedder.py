"""The model's stamp is checked when it loads: weights that are not the declared ones refuse."""

from __future__ import annotations

import dataclasses

import pytest

from rag_pipeline.core.embedder import Embedder, ModelMismatchError, ModelSpec, find_model


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
                                                 r"declared: \['all-MiniLM-L6-v2@53aa5117'\]$"):
        find_model("all-MiniLM-L6-v2@0badf00d", (minilm,))
