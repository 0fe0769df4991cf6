"""ModelKey: ``<name>@<8 hex digits>``, parsed and formatted in one place."""

from __future__ import annotations

import pytest

from rag_pipeline.core.embedding.model_key import InvalidModelKey, ModelKey
from rag_pipeline_tests.fake_embedder import hashed_spec


def test_a_key_round_trips_and_names_its_parts():
    key = ModelKey.parse("all-MiniLM-L6-v2@53aa5117")
    assert (key.name, key.fingerprint, str(key)) == (
        "all-MiniLM-L6-v2", "53aa5117", "all-MiniLM-L6-v2@53aa5117")
    assert ModelKey.parse(str(ModelKey("a.b_c-d", "0123abcd"))) == ModelKey("a.b_c-d", "0123abcd")
    # A spec's key is the same codec's format of its name and fingerprint.
    spec = hashed_spec()
    assert spec.key == str(ModelKey(spec.name, spec.fingerprint)) == "hashed-wordpieces@0000feed"


@pytest.mark.parametrize("text", [
    # Planted: the key that deleted files outside the data folder.
    "all-MiniLM-L6-v2@53aa5117/../../../../victim",
    "m@53AA5117", "m@53aa511", "m@53aa51170", "@53aa5117", "m 1@53aa5117", "m@53aa5117\n", "",
    "m@@53aa5117", "m"])
def test_anything_else_is_refused(text: str):
    assert not ModelKey.is_valid(text)
    with pytest.raises(InvalidModelKey, match=r"^not a model key \(<name>@<8 hex digits>\): "):
        ModelKey.parse(text)
