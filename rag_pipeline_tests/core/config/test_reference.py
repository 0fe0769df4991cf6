"""The configuration reference declares exactly the keys the parser accepts."""

from __future__ import annotations

import pytest

from rag_pipeline.core.config import reference
from rag_pipeline.core.config.access import ACCESS_KEYS, RULE_KEYS
from rag_pipeline.core.config.parse import parse_config
from rag_pipeline.core.config.reference import (
    ACCESS,
    ACCESS_RULES,
    ADAPT,
    COMPUTE,
    INDEX,
    MODELS,
    PROFILES,
    Setting,
    keys_of,
)
from rag_pipeline.core.config.schema import ADAPT_KEYS, COMPUTE_KEYS, INDEX_KEYS, MODEL_KEYS, PROFILE_KEYS
from rag_pipeline.core.embedding.models import ModelConfigError


def test_every_parsed_key_is_declared_and_no_other():
    # Guard: a key added to the parser without a line in the reference (or a line for a key
    # the parser refuses) fails here.
    assert keys_of(INDEX) == INDEX_KEYS
    assert keys_of(MODELS) == MODEL_KEYS
    assert keys_of(ADAPT) == ADAPT_KEYS
    assert keys_of(PROFILES) == PROFILE_KEYS
    assert keys_of(ACCESS) == ACCESS_KEYS
    assert keys_of(ACCESS_RULES) == RULE_KEYS
    assert keys_of(COMPUTE) == COMPUTE_KEYS


def test_every_table_the_parser_accepts_is_declared(tmp_path):
    # The parser names its known tables when it refuses another; a new table there without a
    # section here fails.
    with pytest.raises(ModelConfigError) as refused:
        parse_config("[nonsense]\n", tmp_path, None)
    known = str(refused.value).rsplit("known: ", 1)[1].split(", ")
    declared = {s.table.split()[0].strip("[]").split(".")[0] for s in reference.SETTINGS}
    assert declared == set(known) == {"access", "compute", "index", "models", "profiles"}


def test_each_key_is_declared_once_per_table():
    pairs = [(s.table, s.key) for s in reference.SETTINGS]
    assert len(pairs) == len(set(pairs))


def test_markdown_reference_is_one_table_per_section_with_pipes_escaped():
    settings = (Setting("[a]", "x", "`1` | `2`", "`1`", "picks one"),
                Setting("[a]", "y", "text", "-", "names it"),
                Setting("[b]", "z", "a folder", "`.`", "where"))
    assert reference.markdown_reference(settings) == (
        "### `[a]`\n\n"
        "| key | values | default | what it does |\n"
        "|---|---|---|---|\n"
        "| `x` | `1` \\| `2` | `1` | picks one |\n"
        "| `y` | text | - | names it |\n\n"
        "### `[b]`\n\n"
        "| key | values | default | what it does |\n"
        "|---|---|---|---|\n"
        "| `z` | a folder | `.` | where |\n")
