"""The one check of a configuration table's keys."""

from __future__ import annotations

import pytest

from rag_pipeline.core.config.tables import check_table
from rag_pipeline.core.embedding.models import ModelConfigError

KNOWN = frozenset({"engine", "address"})


def test_a_table_of_known_keys_passes():
    check_table({"engine": "ray"}, KNOWN, "f: [compute]")
    check_table({}, KNOWN, "f: [compute]")


@pytest.mark.parametrize(("table", "message"), [
    ({"engin": 1, "workers": 2}, "f: [compute]: unknown key(s) engin, workers; known: address, engine"),
    (3, "f: [compute] must be a table of address, engine"),
    (["engine"], "f: [compute] must be a table of address, engine"),
])
def test_anything_else_is_one_line_naming_the_keys(table: object, message: str):
    with pytest.raises(ModelConfigError) as refused:
        check_table(table, KNOWN, "f: [compute]")
    assert str(refused.value) == message
