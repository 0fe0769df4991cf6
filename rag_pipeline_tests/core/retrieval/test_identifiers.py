"""Tests for ``rag_pipeline.core.retrieval.identifiers``: what counts as an identifier, and which
ranked passages hold one."""

from __future__ import annotations

import pytest

from rag_pipeline.core.retrieval.identifiers import (
    MAX_HOLDERS,
    held_identifiers,
    question_identifiers,
    unheld_identifiers,
)


@pytest.mark.parametrize(("question", "identifiers"), [
    ("What is the status of INV-0045-QZ?", ("INV-0045-QZ",)),
    ("Which release has build identifier b7f3-22c9?", ("b7f3-22c9",)),
    ("who runs gw-eu-07 and GW-EU-07", ("gw-eu-07",)),  # each once, case aside
    ("\"AT-2290\": open or closed", ("AT-2290",)),
    ("what changed in 4.8.2.", ("4.8.2",)),
    # Not identifiers: plain words, a bare year or number, short codes, a time, words with a
    # digit (module and type names), code.
    ("how long before a network call times out", ()),
    ("what happened in 2026 at 10:30", ()),
    ("is B2 or Q3 bigger", ()),
    ("use the sqlite3 module or float32 arrays", ()),
    ("lst[0] = 1 and f(**{1: 'a'}) fail", ()),
])
def test_question_identifiers(question: str, identifiers: tuple[str, ...]):
    assert question_identifiers(question) == identifiers


def test_a_passage_holds_an_identifier_verbatim_and_a_common_one_counts_for_none():
    contents = ["Build identifier: b7f3-22c9.", "Builds b7f3-22c90 and xb7f3-22c9 differ",
                "INV-0045-qz was paid"]
    assert held_identifiers("release of b7f3-22c9 for INV-0045-QZ", contents) == [
        "b7f3-22c9", "", "INV-0045-QZ"]
    # Planted: utf-8 in more passages than MAX_HOLDERS: it names nothing in particular.
    common = ["Files are read as utf-8."] * (MAX_HOLDERS + 1)
    assert held_identifiers("what does utf-8 mean", common) == [""] * (MAX_HOLDERS + 1)
    assert held_identifiers("what does utf-8 mean", common[:MAX_HOLDERS]) == ["utf-8"] * MAX_HOLDERS


def test_a_question_whose_identifiers_no_passage_holds_names_them():
    contents = ["Invoice: INV-2026-0042 | Approver: Ana", "Invoice: INV-2026-0051 | Approver: Bo"]
    assert unheld_identifiers("Who approved INV-2026-9999?", contents) == ("INV-2026-9999",)
    assert unheld_identifiers("Who approved INV-2026-0042?", contents) == ()
    # One of two named is held: the question is about something the corpus holds.
    assert unheld_identifiers("INV-2026-0042 or INV-2026-9999", contents) == ()
    assert unheld_identifiers("who approved the last invoice", contents) == ()
    # A code of no shape the passages hold, or a number: nothing says the corpus lacks a record.
    assert unheld_identifiers("who approved PO-88122", contents) == ()
    assert unheld_identifiers("is 1_000 or 0x_FF allowed", ["0x1F and 1_0 are literals"]) == ()
    # Held by more passages than MAX_HOLDERS still counts as held.
    assert unheld_identifiers("what is utf-8", ["utf-8 text"] * (MAX_HOLDERS + 1)) == ()
