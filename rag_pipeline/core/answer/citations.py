"""Citations the server attaches: the model only ever writes ``[n]``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Citation:
    """Source ``[index]`` of an answer: where the quote is, exactly, and how to open it.

    ``quote`` is the chunk's ``content`` and equals ``canonical_text[start:end]`` of the document;
    ``fragment`` is what the document's format makes of the span (``#char=start,end``, or
    ``#page=N`` for a PDF page: :meth:`DocumentFormat.fragment`); ``url`` is the document's
    location plus the fragment; ``left_out`` says what the document's extraction left out or
    may have read wrongly where the passage is (``1 comment(s) left out (reviewers' remarks)``;
    a workbook's uncalculated formulas only on a passage of their sheets), so the answer may be
    missing it;
    ``table_header`` is the header row of the table whose rows the quote holds without it
    (:meth:`DocumentFormat.header_above`), which says what each value of the rows is;
    ``identifier`` the code or option of the question the quote holds verbatim (the gate keeps
    such a passage first: for a code whatever its distance, for an option under the cut),
    ``""`` for none; ``shown_quote`` the quote's words as a
    reader sees them (:meth:`DocumentFormat.shown_quote`: Markdown's markup left out), ``""``
    when that is the quote itself.
    """

    index: int
    document_id: str
    document_name: str
    locator_label: str
    fragment: str
    start: int
    end: int
    quote: str
    cosine_distance: float
    url: str
    locations: tuple[str, ...] = ()
    section: str = ""
    left_out: tuple[str, ...] = ()
    table_header: str = ""
    identifier: str = ""
    shown_quote: str = ""


QUOTE_DIGEST = re.compile(r"[0-9a-f]{16}")
"""What :func:`quote_digest` gives: 16 lower-case hexadecimal digits."""


def quote_digest(quote: str) -> str:
    """The first 16 hex digits of the SHA-256 of ``quote``'s UTF-8: what a link to the quoted
    place carries, so the document view can tell whether its text there is still the quote."""
    import hashlib

    return hashlib.sha256(quote.encode("utf-8")).hexdigest()[:16]


def locator_label(document_title: str, section: str) -> str:
    return document_title if section == document_title else f"{document_title} > {section}"


def document_url(path: str, document_id: str, base_url: str | None, fragment: str) -> str:
    """The configured base URL plus the document id, or the file's URI (a document of an S3 or
    git source: its own ``s3://`` or ``git+...`` URI, its key or path percent-encoded so that a
    ``#`` or ``%`` in it is no fragment or escape); then the fragment. A member of an archive
    or a mail on this machine has no file of its own: its URL is the archive's or the mail's,
    without the fragment, which places the quote in the member (the label names it)."""
    from urllib.parse import quote

    if base_url:
        return base_url.rstrip("/") + "/" + quote(document_id) + fragment
    container = _enclosing_file(path)
    if container is not None:
        return _file_uri(container)
    return _file_uri(path) + fragment


@lru_cache(maxsize=4096)
def _enclosing_file(path: str) -> str | None:
    """The file on this machine that ``path`` runs on past (``/docs/a.zip`` for
    ``/docs/a.zip/b/c.md``), when ``path`` itself is none; None otherwise (a source URI, a file,
    a corpus not on this machine)."""
    from pathlib import Path

    if "://" in path or path.startswith("git+"):
        return None
    here = Path(path)
    if here.exists():
        return None
    for parent in here.parents:
        if parent.exists():
            return str(parent) if parent.is_file() else None
    return None


@lru_cache(maxsize=4096)
def _file_uri(path: str) -> str:
    """The file's absolute URI (resolving walks the file system: a service answering many
    questions about the same documents resolves each path once)."""
    from pathlib import Path
    from urllib.parse import quote

    if path.startswith("s3://"):
        bucket, _, key = path.removeprefix("s3://").partition("/")
        return f"s3://{bucket}/{quote(key, safe='/')}"
    if path.startswith("git+"):
        from rag_pipeline.core.ingest.sources.git import LOCATION

        found = LOCATION.fullmatch(path)
        if found is None:
            return path
        return path[:found.start("path")] + quote(found["path"], safe="/")
    return Path(path).resolve().as_uri()


def build_prompt(question: str, citations: list[Citation]) -> str:
    """Numbered sources (``[n] Document - Section`` then the quoted content, never the
    embedded text), then the instruction to answer only from them, citing ``[n]``."""
    blocks = []
    for c in citations:
        columns = f"(table columns: {c.table_header})\n" if c.table_header else ""
        blocks.append(f"[{c.index}] {c.document_name} - {c.section or c.document_name}\n"
                      f"{columns}{c.quote}")
    return ("Sources:\n\n" + "\n\n".join(blocks) + "\n\n"
            "Answer the question using only the sources above. Cite every claim with the number "
            "of its source in square brackets, like [1]. Do not write links. If the sources do "
            "not contain the answer, say so and stop.\n\n"
            f"Question: {question}\n")
