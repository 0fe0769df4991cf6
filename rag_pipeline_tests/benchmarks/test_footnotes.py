"""The footnotes benchmark's counting: bare-mark paragraphs and the per-manual table."""

from __future__ import annotations

from rag_pipeline.benchmarks.footnotes import Furniture, bare_marks, furniture_table


def test_a_bare_mark_is_a_paragraph_of_only_a_mark():
    text = "A sentence runs1 on.\n\n1\n\nthe note.\n\n*\n\n12 hours\n\n1 the distinction\n\n1234\n"
    assert bare_marks(text) == 2  # "1" and "*"; "1234" is no mark, "12 hours" is text


def test_the_table_sums_every_manual():
    rows = [Furniture("R-data", 36, 5.0, 212, 4, 0, 0), Furniture("R-lang", 67, 7.3, 388, 4, 1, 2)]
    assert furniture_table(rows).splitlines()[2:] == [
        "| R-data | 36 | 5.0 s | 212 | 4 | 0 | 0.000 (0/212) |",
        "| R-lang | 67 | 7.3 s | 388 | 4 | 1 | 0.005 (2/388) |",
        "| **all** | 103 | 12.3 s | 600 | 8 | 1 | 0.003 (2/600) |",
    ]
