"""What every document view shares: the request, the error, the page shell and quote marking."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from rag_pipeline.core.index.store import DocumentInfo

_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi",
                            "\ufb04": "ffl"})
LOCATE_CHARS = 40
"""When a quote is not found whole (a page drawn differently from its extracted text), its
first and last this many letters and digits are looked for instead."""


class ViewError(Exception):
    """A view request that cannot be shown: ``status`` and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class ViewRequest:
    """One request of ``/documents/{id}``: the document, its canonical text, the quoted span
    and the place asked for (``page`` of a PDF, ``sheet`` of a workbook)."""

    info: DocumentInfo
    text: str
    start: int
    end: int
    page: int | None = None
    sheet: str | None = None

    @property
    def original(self) -> Path | None:
        """The original file when it is still where it was indexed from (a container member's,
        read again from its container)."""
        from rag_pipeline.service.views.members import member_file

        path = Path(self.info.path)
        named = path.name == self.info.document_id.rsplit("/", 1)[-1]
        return path if named and path.is_file() else member_file(self.info.path)

    @property
    def quote(self) -> str:
        return self.text[self.start:self.end]


@dataclass(frozen=True)
class View:
    """What a format's view contributes to the page shell."""

    label: str
    """Where the quote is, as a reader says it: ``page 23``, ``Budget 2026!A8:D12``."""
    body: str
    """The view's HTML (already escaped or sanitised)."""
    kind: str
    """A CSS class naming the view (``pdf``, ``sheet``, ``markup``, ``cues``, ``text``)."""
    note: str = ""
    """A plain-text remark shown under the heading (a quote not located, a fallback)."""


def path_url(prefix: str, document_id: str) -> str:
    """``prefix`` plus the document id with each segment percent-encoded."""
    return prefix + "/".join(quote(part, safe="") for part in document_id.split("/"))


def normalised(text: str) -> tuple[str, list[int]]:
    """The letters and digits of ``text``, lower-cased, ligatures expanded, and for each the
    index of the character of ``text`` it comes from: what a quote is found by whatever the
    white space, hyphenation and punctuation of the two renderings."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        for piece in ch.translate(_LIGATURES):
            if piece.isalnum():
                out.append(piece.lower())
                where.append(i)
    return "".join(out), where


def locate(haystack: str, needle: str) -> tuple[int, int] | None:
    """``(first, last)`` positions in ``haystack``'s :func:`normalised` string where ``needle``
    is: whole, else from its first LOCATE_CHARS letters to its last; None when not found."""
    if not needle:
        return None
    found = haystack.find(needle)
    if found >= 0:
        return found, found + len(needle) - 1
    head, tail = needle[:LOCATE_CHARS], needle[-LOCATE_CHARS:]
    first = haystack.find(head)
    if first < 0:
        return None
    last = haystack.find(tail, first)
    return (first, last + len(tail) - 1) if last >= 0 else None


def page_html(title: str, document_id: str, view: View, original_url: str | None,
              navigation: str = "") -> str:
    """The page shell around a view: the way back, the title, where the quote is, the original
    file one click away, then the view."""
    from importlib.resources import files

    template = files("rag_pipeline.service").joinpath("document.html").read_text(encoding="utf-8")
    original = (f'<a class="original" href="{html.escape(original_url)}">Open the original file</a>'
                if original_url else '<span class="meta">The original file is no longer where it '
                                     "was indexed from.</span>")
    note = f'<p class="note">{html.escape(view.note)}</p>' if view.note else ""
    return template.format(title=html.escape(title), document_id=html.escape(document_id),
                           label=html.escape(view.label), original=original, note=note,
                           navigation=navigation, kind=view.kind, body=view.body)
