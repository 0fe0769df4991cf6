"""Tests for ``rag_pipeline.core.text.terminal``: every unsafe character escaped, the rest kept."""

from __future__ import annotations

import json

from rag_pipeline.core.text.terminal import escape_controls


def test_escape_sequences_and_bidi_controls_are_escaped_tab_and_newline_kept():
    # Planted: a colour, a window title (OSC 0 ... BEL), a C1 CSI, a carriage return, DEL and a
    # right-to-left override.
    text = "a\x1b[31mred\x1b]0;pwned\x07\tb\n\x9b2Jc\rd\x7fe\u202ef"
    assert escape_controls(text) == (
        "a\\u001b[31mred\\u001b]0;pwned\\u0007\tb\n\\u009b2Jc\\u000dd\\u007fe\\u202ef")


def test_ordinary_text_is_unchanged():
    text = "Café — naïve 日本語 emoji 👍🏽 and a zero-width joiner \u200d kept.\n\tindented"
    assert escape_controls(text) == text


def test_escaped_json_is_still_json_and_decodes_to_the_original():
    original = {"quote": "x\x1b[2J\x9b\u202ey"}
    printed = escape_controls(json.dumps(original, ensure_ascii=False))
    assert "\x1b" not in printed and "\x9b" not in printed and "\u202e" not in printed
    assert json.loads(printed) == original
