"""Jupyter notebooks: Markdown cells as prose, code cells fenced with their comments, text
outputs, sections from the Markdown headings, ``#cell=N``, long outputs cut."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.ingest.extracted import Anchor, ExtractionError
from rag_pipeline.core.ingest.formats.ipynb import MAX_OUTPUT_CHARS, IpynbFormat

IPYNB = IpynbFormat()


def notebook(*cells, **metadata) -> bytes:
    book = nbformat.v4.new_notebook(cells=list(cells), metadata=metadata)
    return nbformat.writes(book).encode("utf-8")


def analysis() -> bytes:
    v4 = nbformat.v4
    return notebook(
        v4.new_markdown_cell("# Flood analysis\n\nWe load the gauges."),
        v4.new_code_cell("# read the gauges\nimport pandas as pd\ngauges = pd.read_csv('g.csv')",
                         outputs=[v4.new_output("stream", name="stdout",
                                                text="\x1b[32mloaded 12 rows\x1b[0m\n")]),
        v4.new_raw_cell("raw text is read as text"),
        v4.new_markdown_cell("## Peaks"),
        v4.new_code_cell("gauges.max()", outputs=[
            v4.new_output("execute_result", data={"text/plain": "level    4.2", "image/png": "iVBOR"},
                          execution_count=2),
            v4.new_output("error", ename="KeyError", evalue="'flow'", traceback=["\x1b[31m..."]),
            v4.new_output("display_data", data={"text/html": "<b>Peak at 04:00</b>"}),
            v4.new_output("display_data", data={"image/png": "iVBOR"})]),  # no text: counted
        v4.new_code_cell(""),  # an empty cell has no anchor
        kernelspec={"name": "python3", "language": "python", "display_name": "Python 3"})


TEXT = ("# Flood analysis\n\nWe load the gauges.\n\n"
        "```python\n# read the gauges\nimport pandas as pd\ngauges = pd.read_csv('g.csv')\n```\n\n"
        "```text\nloaded 12 rows\n```\n\n"
        "```text\nraw text is read as text\n```\n\n"
        "## Peaks\n\n"
        "```python\ngauges.max()\n```\n\n"
        "```text\nlevel    4.2\n```\n\n"
        "```text\nKeyError: 'flow'\n```\n\n"
        "```text\nPeak at 04:00\n```\n")


def test_cells_as_markdown_with_code_fenced_and_text_outputs():
    extracted = IPYNB.extract(analysis(), "analysis")
    assert extracted.canonical_text == TEXT
    assert extracted.title == "Flood analysis"
    text = extracted.canonical_text
    # The code comment "# read the gauges" is no heading: it is inside a fence.
    assert [(s.title, s.level, text[s.start:s.end].strip()[:20]) for s in extracted.sections] == [
        ("Flood analysis", 1, ""), ("Flood analysis", 1, "We load the gauges.\n"),
        ("Peaks", 2, "```python\ngauges.max")]
    assert [(a.locator, text[a.start:a.end][:12]) for a in extracted.anchors] == [
        ("cell=1", "# Flood anal"), ("cell=2", "```python\n# "), ("cell=3", "```text\nraw "),
        ("cell=4", "## Peaks"), ("cell=5", "```python\nga")]
    assert extracted.anchors[0] == Anchor(0, 37, "cell=1")
    # The KeyError's traceback (frames of the kernel's code) is left out and counted; its name
    # and message are kept (nbformat's tests/many_tracebacks.ipynb lost its frames unsaid).
    assert extracted.notes == (("cells", "6"), ("outputs_without_text", "1"),
                               ("tracebacks_left_out", "1"))


def test_each_markdown_cells_headings_are_its_own_as_jupyter_renders_them():
    # Found by an attack: a cell ending inside an unclosed fence hid the next cell's heading
    # (the cells were read as one Markdown stream, where Jupyter renders each alone).
    v4 = nbformat.v4
    extracted = IPYNB.extract(notebook(
        v4.new_markdown_cell("# Intro\n\n```python\nx = 1"),
        v4.new_markdown_cell("## Results\n\nThe results say hello."),
        v4.new_code_cell("## not a heading\nprint(1)")), "unclosed")
    text = extracted.canonical_text
    assert [(s.title, s.level, text[s.start:s.end].strip()[:22]) for s in extracted.sections] == [
        ("Intro", 1, ""), ("Intro", 1, "```python\nx = 1"), ("Results", 2, "The results say hello.")]
    assert extracted.title == "Intro"


def test_a_span_cites_the_cells_it_covers():
    anchors = IPYNB.extract(analysis(), "analysis").anchors
    assert IPYNB.fragment(anchors, 0, 37) == "#cell=1"
    assert IPYNB.fragment(anchors, 0, 50) == "#cell=1-2"  # the answer may be in cell 2
    assert IPYNB.fragment(anchors, 37, 39) == "#cell=1"  # between cells: the one before
    assert IPYNB.fragment(anchors, 40, 60) == "#cell=2"
    assert IPYNB.fragment(anchors, 0, len(TEXT)) == "#cell=1-5"
    assert IPYNB.fragment(anchors, len(TEXT) - 5, len(TEXT)) == "#cell=5"
    assert IPYNB.fragment((), 1, 2) == "#char=1,2"


def test_a_long_output_is_cut_at_a_line_end_and_counted():
    line = "x" * 99 + "\n"
    book = notebook(nbformat.v4.new_code_cell("print(log)", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text=line * 10_000)]))  # 1,000,000 chars
    extracted = IPYNB.extract(book, "log")
    # 20,000 characters are 200 whole lines; the cut drops the last line's new line. No
    # language in the metadata: a bare fence.
    assert MAX_OUTPUT_CHARS == 20_000
    assert extracted.canonical_text == f"```\nprint(log)\n```\n\n```text\n{line * 199}{'x' * 99}\n```\n"
    assert extracted.notes == (("cells", "1"), ("outputs_cut", "1"))


def test_a_notebook_with_a_100_mb_output_fails_on_its_size_and_the_run_goes_on(tmp_path: Path):
    # Planted: 100 MB of output in one cell: the file is over max_document_bytes, never parsed.
    book = json.dumps({"cells": [{"cell_type": "code", "source": "x", "metadata": {},
                                  "outputs": [{"output_type": "stream", "name": "stdout",
                                               "text": "y" * 100_000_000}]}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    (tmp_path / "huge.ipynb").write_text(book, encoding="utf-8")
    (tmp_path / "small.ipynb").write_bytes(analysis())
    records = {r.document_id: r for r in extract_corpus(tmp_path).records}
    assert (records["huge.ipynb"].status, records["huge.ipynb"].error) == (
        "failed", f"too large: {len(book)} bytes, over the limit of {20 * 1024 * 1024} bytes per "
        "document (max_document_bytes)")
    assert records["small.ipynb"].status == "ok"


@pytest.mark.parametrize(("data", "reason"), [
    (b"{not json", "unreadable notebook: not JSON (Expecting property name enclosed in double "
                   "quotes: line 1 column 2 (char 1))"),
    (b'{"worksheets": []}', "unreadable notebook: no list of cells (nbformat 4, or 2 and 3 with "
                            "their cells in worksheets)"),
])
def test_not_a_notebook_fails_with_its_reason(data: bytes, reason: str):
    with pytest.raises(ExtractionError) as raised:
        IPYNB.extract(data, "broken")
    assert str(raised.value) == reason


def nbformat3_notebook() -> bytes:
    """An IPython 1.x notebook as it was saved (nbformat 3): cells in a worksheet, a heading
    cell, code as ``input`` split into lines, a ``pyout`` and a ``pyerr``."""
    cell = {"collapsed": False, "language": "python", "metadata": {}}
    return json.dumps({"metadata": {"name": ""}, "nbformat": 3, "nbformat_minor": 0,
                       "worksheets": [{"metadata": {}, "cells": [
                           {"cell_type": "heading", "level": 1, "metadata": {},
                            "source": ["Tide gauges"]},
                           {"cell_type": "markdown", "metadata": {},
                            "source": ["The gauges report every ten minutes.\n", "Peaks follow."]},
                           {**cell, "cell_type": "code", "prompt_number": 1,
                            "input": ["# the last reading\n", "levels[-1]"],
                            "outputs": [{"output_type": "pyout", "prompt_number": 1,
                                         "metadata": {}, "text": ["4.2"]}]},
                           {**cell, "cell_type": "code", "prompt_number": 2,
                            "input": ["levels['flow']"],
                            "outputs": [{"output_type": "pyerr", "ename": "KeyError",
                                         "evalue": "'flow'", "traceback": []}]},
                       ]}]}).encode("utf-8")


def test_an_nbformat_3_notebook_is_upgraded_and_read():
    extracted = IPYNB.extract(nbformat3_notebook(), "tides")
    assert extracted.canonical_text == (
        "# Tide gauges\n\nThe gauges report every ten minutes.\nPeaks follow.\n\n"
        "```python\n# the last reading\nlevels[-1]\n```\n\n```text\n4.2\n```\n\n"
        "```python\nlevels['flow']\n```\n\n```text\nKeyError: 'flow'\n```\n")
    assert extracted.title == "Tide gauges"
    text = extracted.canonical_text
    assert [(a.locator, text[a.start:a.end][:14]) for a in extracted.anchors] == [
        ("cell=1", "# Tide gauges"), ("cell=2", "The gauges rep"), ("cell=3", "```python\n# th"),
        ("cell=4", "```python\nleve")]


def test_a_cell_of_an_unknown_type_is_left_out_and_counted():
    data = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "Kept."},
        {"cell_type": "widget-state", "metadata": {}, "source": "not read"}, "not a cell"]})
    extracted = IPYNB.extract(data.encode(), "n")
    assert (extracted.canonical_text, extracted.notes) == (
        "Kept.\n", (("cells", "3"), ("cells_left_out", "2")))


def test_an_output_of_unended_terminal_commands_is_read_at_once_and_ended_ones_are_dropped():
    """Found by an attack: an output of many ``ESC ]`` without their end took time growing with
    the square of their number (700 KB, 19 s), before the output was cut."""
    from rag_pipeline.core.ingest.reading_limits import document_reading_limits

    unended = "\x1b]" * 300_000 + "done\n"
    ended = "a \x1b]8;;https://example.org\x1b\\link\x1b]8;;\x1b\\ and \x1b]0;title\x07\x1b[1mbold\x1b[0m\n"
    cells = [nbformat.v4.new_code_cell("print(1)", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text=text)]) for text in (unended, ended)]
    with document_reading_limits(10):
        extracted = IPYNB.read(notebook(*cells), "terminal")
    assert "```text\na link and bold\n```" in extracted.canonical_text
    assert extracted.canonical_text.count("\x1b]") == MAX_OUTPUT_CHARS // 2


def test_a_result_whose_plain_text_only_names_its_object_is_read_from_its_html():
    """Found by a new user: ``display(HTML(df.to_html()))`` stores ``text/plain`` as
    ``<IPython.core.display.HTML object>``; that was read and the table lost."""
    v4 = nbformat.v4
    table = ("<table><tr><th>Carrier</th><th>Median delay</th></tr>"
             "<tr><td>Chronopost</td><td>2.5</td></tr></table>")
    book = notebook(v4.new_code_cell("display(HTML(t))", outputs=[
        v4.new_output("display_data", data={"text/plain": "<IPython.core.display.HTML object>",
                                            "text/html": table}),
        v4.new_output("execute_result", execution_count=2, data={
            "text/plain": "<pandas.io.formats.style.Styler at 0x7f3a2c1b9d90>",
            "text/markdown": "**styled**"}),
        v4.new_output("display_data", data={"text/plain": "<Figure size 640x480 with 1 Axes>",
                                            "image/png": "iVBOR"})]))
    extracted = IPYNB.extract(book, "n")
    text = extracted.canonical_text
    assert "```text\nCarrier\tMedian delay\n\nChronopost\t2.5\n```" in text
    assert "```text\n**styled**\n```" in text
    assert "<IPython" not in text and "Styler" not in text
    # Found by a team's notebooks: a plot's placeholder was its text, and the plot not counted.
    assert "<Figure" not in text
    assert ("outputs_without_text", "1") in extracted.notes
