"""GNU Info manuals (``.info``, split parts ``.info-1``...; ``bash.info.gz`` through the
compressed-file rule): one section per node, without the navigation Info readers draw.

Read as text (UTF-8) in the layout ``makeinfo`` writes: nodes are separated by a ``\\x1f``
line; each node's first line (``File: bash.info,  Node: Top,  Next: ...``) is navigation and
is left out, the node's name titles its section. The preamble before the first node, the
``Tag Table``, ``Indirect`` table and ``Local Variables`` blocks are file structure, not text.
Index and image markers (``\\x00\\x08[index\\x00\\x08]``) are removed, with their line when
they fill it; an index node's menu, from its index marker on (``* grep: Usage. (line 22)``, a
line per entry pointing into the manual: navigation, as a web page's index is), is left out
with it, and a node left with no more than its heading is no section (note
``index_menus_left_out``). The main file of a split manual (``find.info``: an ``Indirect``
table naming ``find.info-1``, ``find.info-2``, which are read on their own) has no node: its
text is its preamble, what the manual documents (note ``split_manual_parts``). Cited ``#char=``.
"""

from __future__ import annotations

import re

from rag_pipeline.core.ingest.bom_text import decode_text
from rag_pipeline.core.ingest.extracted import Extracted, ExtractionError, Extractor, Section
from rag_pipeline.core.ingest.formats.base import DocumentFormat

_MARKER = re.compile("\x00\x08\\[[^\x00]*\x00\x08\\]")
_INDEX_MENU = re.compile("^\x00\x08\\[index\x00\x08\\]\n\\* Menu:.*", re.MULTILINE | re.DOTALL)
"""An index node's menu: its index marker's line, then ``* Menu:`` and the entries to the node's
end."""
_HEADING_ONLY = re.compile(r"[^\n]+\n[*=\-.]+\s*")
"""A node's text that is only its heading (a title and its underline)."""
_MARKER_LINE = re.compile(f"^(?:{_MARKER.pattern})+\n", re.MULTILINE)
_NODE_LINE = re.compile(r"File: [^,]*,\s+Node: ([^,\n]+)")
_STRUCTURE = ("Tag Table:", "End Tag Table", "Indirect:", "Local Variables:")


_INDIRECT = re.compile(r"\x1f\nIndirect:\n((?:[^\n:]+: \d+\n)+)")


def _split_manual(text: str, stem: str, notes: tuple[tuple[str, str], ...]) -> Extracted:
    """The main file of a split manual: its preamble as its text, its parts named in a note.

    Raises:
        ExtractionError: No ``Indirect`` table either (not an Info file).
    """
    indirect = _INDIRECT.search(text)
    preamble = text.split("\x1f", 1)[0].strip()
    if indirect is None or not preamble:
        raise ExtractionError("not an Info file: no node separated by a \\x1f line")
    parts = [line.rsplit(":", 1)[0] for line in indirect.group(1).splitlines()]
    return Extracted(title=stem, canonical_text=preamble + "\n",
                     sections=(Section(stem, 0, len(preamble) + 1),),
                     notes=(("split_manual_parts", ", ".join(parts)), *notes))


class InfoFormat(DocumentFormat):
    """GNU Info files, as ``makeinfo`` writes them."""

    name = "info"
    suffixes = (".info", *(f".info-{part}" for part in range(1, 10)))
    plain_text = True

    def extractor(self) -> Extractor:
        return Extractor("info-nodes", "7")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """The nodes' text, a section each (the module docstring).

        Raises:
            ExtractionError: Not text (:mod:`~rag_pipeline.core.ingest.bom_text`), or no node at all (not an
                Info file).
        """
        decoded = decode_text(data, "Info", max_control_share=1.0)  # \x1f separates its nodes
        parts: list[str] = []
        sections: list[Section] = []
        offset = 0
        menus = 0
        for chunk in decoded.text.split("\x1f")[1:]:
            body = chunk.lstrip("\n")
            header, _, rest = body.partition("\n")
            node = _NODE_LINE.match(header)
            if node is None or header.startswith(_STRUCTURE):
                continue
            rest, menu = _INDEX_MENU.subn("", rest)
            menus += menu
            rest = _MARKER.sub("", _MARKER_LINE.sub("", rest)).strip("\n").replace("\x7f", "")
            if not rest.strip() or (menu and _HEADING_ONLY.fullmatch(rest)):
                continue
            if parts:
                parts.append("\n\n")
                offset += 2
            sections.append(Section(node.group(1).strip(), offset, offset + len(rest)))
            parts.append(rest)
            offset += len(rest)
        if not sections:
            return _split_manual(decoded.text, stem, decoded.notes)
        canonical = "".join(parts) + "\n"
        title = next((line.strip() for line in parts[0].splitlines() if line.strip()), stem)
        return Extracted(title=title, canonical_text=canonical, sections=tuple(sections),
                         notes=(("nodes", str(len(sections))),
                                *((("index_menus_left_out", str(menus)),) if menus else ()),
                                *decoded.notes))
