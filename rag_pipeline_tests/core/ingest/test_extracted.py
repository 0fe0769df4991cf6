"""The notes that say part of a document was left out: each named by a format that writes it."""

from __future__ import annotations

import re
from pathlib import Path

from rag_pipeline.core.ingest import extracted
from rag_pipeline.core.ingest.extracted import LEFT_OUT_NOTES, left_out


def test_every_left_out_note_is_one_a_format_writes():
    # A note name is a bare string in its format's module (or the containers' one, for
    # compressed files, extracted's, for text repaired whatever its format, or bom_text's, for
    # charsets): a name here that no format writes (a typo on either side) would never be listed.
    ingest = Path(extracted.__file__).parent
    written = set()
    for module in [*(ingest / "formats").glob("*.py"), ingest / "containers.py",
                   ingest / "extracted.py", ingest / "bom_text.py"]:
        source = module.read_text(encoding="utf-8")
        written |= set(re.findall(r'\(\s*"([a-z_]+)",', source))  # ("name", value) pairs
        written |= set(re.findall(r"^    ([a-z_]+): int = 0$", source, re.MULTILINE))  # counters
    assert sorted(name for name in LEFT_OUT_NOTES if name not in written) == []


def test_left_out_phrases_keep_the_notes_order_and_skip_other_notes():
    assert left_out([("rows", "3"), ("outputs_cut", "2"), ("comments_left_out", "1")]) == [
        "2 notebook output(s) cut short (too long)", "1 comment(s) left out (reviewers' remarks)"]
