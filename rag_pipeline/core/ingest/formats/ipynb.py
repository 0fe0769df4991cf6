"""Jupyter notebooks: Markdown cells as prose, code cells as fenced code, text outputs; ``#cell=N``.

The notebook is read as the JSON it is (nbformat 4; the standard library's ``json``), so no
kernel, widget or output is ever run or rendered; an older one (nbformat 2 or 3, its cells in
``worksheets``) is first upgraded to version 4 by ``nbformat``'s own converter (heading cells
become Markdown headings, ``input`` becomes ``source``, ``pyout`` an ``execute_result``; the
code cells' own ``language`` names the fences' language). The canonical text is Markdown: a Markdown
cell as it is; a code cell as a fenced block in the notebook's language, its ``#`` comments
kept (inside the fence they are code, never headings); each of its outputs that is text as a
fenced ``text`` block: a stream's text, a result's ``text/plain`` (else, or when that only names
its object as ``display(HTML(...))`` or a plot leaves it, ``text/markdown``, else its ``text/html`` read
by the HTML reader), an error's ``name: value`` (its traceback, frames
of the kernel's code, left out and counted: ``tracebacks_left_out``). Terminal colour codes
are dropped, and one output keeps at most :data:`MAX_OUTPUT_CHARS` characters (the rest is cut
at a line end and counted in the notes: a notebook with a 100 MB log in one cell is still a
notebook, not 100 MB of log). A raw cell is a fenced ``text`` block too. What has no text (an
image output, a cell of an unknown type) is left out and counted in the notes
(``outputs_without_text``, ``cells_left_out``). Sections come from the Markdown cells'
headings, each cell's own as Jupyter renders it alone (a fence a cell leaves open ends with
it); each cell with text is one anchor ``cell=N`` (1-based, every cell counted).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag_pipeline.core.ingest.anchor_spans import unit_fragment
from rag_pipeline.core.ingest.extracted import Anchor, Extracted, ExtractionError, Extractor
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.formats.markdown import heading_spans, markdown_sections

MAX_OUTPUT_CHARS = 20_000
"""An output's text beyond this many characters is cut (noted as ``outputs_cut``)."""

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
"""A terminal's colour codes and its commands (``ESC ] ... BEL``, or ``ESC \\`` ending one: a
link's). A command ends before the next ``ESC``: an output of many unended ones is read in one
pass, not searched to its end from each."""
_BACKTICKS = re.compile(r"`{3,}")
_REPR = re.compile(r"<[\w.]+(?: object(?: at 0x[0-9a-fA-F]+)?| at 0x[0-9a-fA-F]+)>"
                   r"|<Figure size [\d.]+x[\d.]+ with \d+ Axes>")
"""A result's ``text/plain`` that only names its object (``<IPython.core.display.HTML
object>``, ``<pandas.io.formats.style.Styler at 0x7f...>``, matplotlib's ``<Figure size 640x480
with 1 Axes>``): its text is its other forms' (an image's: none)."""


def _text(value: object) -> str:
    """A notebook string field: a string or a list of lines."""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


def fenced(body: str, info: str) -> str:
    """``body`` in a backtick fence longer than any backtick run inside it (CommonMark 4.5)."""
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def _output_text(output: dict) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return _text(output.get("text"))
    if kind in ("execute_result", "display_data"):
        data = output.get("data") or {}
        plain = _text(data.get("text/plain"))
        if _REPR.fullmatch(plain.strip()) and (data.get("text/markdown") or data.get("text/html")
                                               or any(kind.startswith("image/") for kind in data)):
            plain = ""  # ``display(HTML(table))``: the table is in the HTML alone; a plot is none
        text = plain or _text(data.get("text/markdown"))
        if not text.strip() and (html := _text(data.get("text/html"))).strip():
            from rag_pipeline.core.ingest.formats.html import extract_html

            text = extract_html(html.encode("utf-8"), "").canonical_text
        return text
    if kind == "error":
        return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    return ""


def _upgraded(data: bytes, notebook: dict) -> dict:
    """An nbformat 2 or 3 notebook as nbformat 4, by ``nbformat``'s converter.

    Raises:
        ExtractionError: The converter cannot read or upgrade it.
    """
    import nbformat

    try:
        upgraded = nbformat.reads(data.decode("utf-8-sig"), as_version=4)
    except Exception as exc:  # nbformat raises its own, jsonschema's and KeyError on broken ones
        raise ExtractionError(f"unreadable notebook: nbformat {notebook.get('nbformat')} that "
                              f"nbformat cannot upgrade ({type(exc).__name__}: {exc})") from exc
    languages = [cell.get("language") for sheet in notebook["worksheets"] if isinstance(sheet, dict)
                 for cell in sheet.get("cells") or () if isinstance(cell, dict)]
    language = next((name for name in languages if isinstance(name, str) and name), None)
    if language and not upgraded.metadata.get("language_info"):
        upgraded.metadata["language_info"] = {"name": language}
    return upgraded


def _cut(text: str) -> tuple[str, bool]:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text, False
    head = text[:MAX_OUTPUT_CHARS]
    line_end = head.rfind("\n")
    return (head[:line_end] if line_end > 0 else head), True


@dataclass
class _Left:
    """What the notebook's text leaves out, for its notes."""

    outputs_cut: int = 0
    outputs_without_text: int = 0
    cells_left_out: int = 0
    tracebacks_left_out: int = 0


def _cell_blocks(cell: dict, language: str, left: _Left) -> list[str]:
    """The cell's blocks of canonical text; what it leaves out is counted in ``left``."""
    kind = cell.get("cell_type")
    source = _text(cell.get("source")).strip("\n")
    if kind == "markdown":
        return [source] if source.strip() else []
    if kind == "raw":
        return [fenced(source, "text")] if source.strip() else []
    if kind != "code":
        left.cells_left_out += 1
        return []
    blocks = [fenced(source, language)] if source.strip() else []
    for output in cell.get("outputs") or ():
        if not isinstance(output, dict):
            continue
        if output.get("output_type") == "error" and output.get("traceback"):
            left.tracebacks_left_out += 1
        text = _ANSI.sub("", _output_text(output)).strip("\n")
        text, was_cut = _cut(text)
        left.outputs_cut += was_cut
        if text.strip():
            blocks.append(fenced(text, "text"))
        else:
            left.outputs_without_text += 1
    return blocks


class IpynbFormat(DocumentFormat):
    """``.ipynb`` notebooks (nbformat 4)."""

    name = "ipynb"
    suffixes = (".ipynb",)

    def extractor(self) -> Extractor:
        return Extractor("ipynb-json", "10")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """Cells in order, blocks joined by blank lines (the module docstring).

        Raises:
            ExtractionError: Not JSON, or not a notebook (no ``cells`` list).
        """
        try:
            notebook = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ExtractionError(f"unreadable notebook: not JSON ({exc})") from exc
        if (isinstance(notebook, dict) and isinstance(notebook.get("worksheets"), list)
                and notebook.get("nbformat") in (2, 3)):
            notebook = _upgraded(data, notebook)
        if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
            raise ExtractionError("unreadable notebook: no list of cells (nbformat 4, or 2 and 3 "
                                  "with their cells in worksheets)")
        metadata = notebook.get("metadata") if isinstance(notebook.get("metadata"), dict) else {}
        language = str((metadata.get("kernelspec") or {}).get("language")
                       or (metadata.get("language_info") or {}).get("name") or "")
        parts: list[str] = []
        anchors: list[Anchor] = []
        headings: list[tuple[int, int, int, str]] = []
        offset = 0
        left = _Left()
        for number, cell in enumerate(notebook["cells"], start=1):
            if not isinstance(cell, dict):
                left.cells_left_out += 1
                continue
            blocks = _cell_blocks(cell, language, left)
            if not blocks:
                continue
            text = "\n\n".join(blocks)
            if parts:
                parts.append("\n\n")
                offset += 2
            anchors.append(Anchor(offset, offset + len(text), f"cell={number}"))
            if cell.get("cell_type") == "markdown":
                headings += [(start + offset, end + offset, level, heading)
                             for start, end, level, heading in heading_spans(text)]
            parts.append(text)
            offset += len(text)
        canonical = "".join(parts) + ("\n" if parts else "")
        title = (next((heading for _, _, level, heading in headings if level == 1 and heading), None)
                 or str(metadata.get("title") or "") or stem)
        notes = [("cells", str(len(notebook["cells"]))),
                 *((name, str(count)) for name, count in vars(left).items() if count)]
        return Extracted(title=title, canonical_text=canonical,
                         sections=markdown_sections(canonical, title, headings),
                         anchors=tuple(anchors),
                         notes=tuple(notes))

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#cell=N`` for a span within one cell, ``#cell=N-M`` over several; ``#char=``
        without cells."""
        return unit_fragment(anchors, start, end) or super().fragment(anchors, start, end)
