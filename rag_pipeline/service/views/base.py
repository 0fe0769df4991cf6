"""What every document view shares: the request, the error, the page shell and quote marking."""

from __future__ import annotations

import hashlib
import html
import logging
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import BinaryIO
from urllib.parse import quote

from rag_pipeline.core.index.store import DocumentInfo
from rag_pipeline.core.ingest.reading import DEFAULT_MAX_DOCUMENT_BYTES
from rag_pipeline.core.ingest.sources import (
    OriginalGoneError,
    SourceError,
    SourceSettings,
    is_corpus_uri,
)
from rag_pipeline.core.runtime.recent import Recent
from rag_pipeline.core.text.terminal import escape_controls

_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi",
                            "\ufb04": "ffl"})
_log = logging.getLogger(__name__)
_LIGATURE = re.compile("[\ufb00-\ufb04]")
_ALNUM_RUN = re.compile(r"[^\W_]+")
"""A run of letters and digits: what ``str.isalnum`` holds (a ligature too)."""
LOCATE_CHARS = 40
"""When a quote is not found whole (a page drawn differently from its extracted text), its
first and last this many letters and digits are looked for instead."""
LOCATE_STRETCH = 2
"""From its first letters to its last, a quote found so spans at most this many times its own
letters (and :data:`LOCATE_CHARS` more): a longer stretch is not the quote (its ends found in
two columns read across each other, twenty lines boxed for two)."""


class ViewError(Exception):
    """A view request that cannot be shown: ``status`` and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Original:
    """A document's original file as indexed: its name and its bytes (checked against the
    index's sha256)."""

    name: str
    data: bytes
    sha256: str
    """The bytes' sha256 (what the index recorded for them)."""


@dataclass(frozen=True)
class ViewRequest:
    """One request of ``/documents/{id}``: the document, its canonical text, the quoted span
    (empty: the document opened without a quote) and the place asked for (``page`` of a PDF,
    ``sheet`` of a workbook)."""

    info: DocumentInfo
    text: str
    start: int
    end: int
    page: int | None = None
    sheet: str | None = None
    sources: SourceSettings | None = None
    """How to reach an S3 prefix or a git repository the document was indexed from (None: its
    original is read from a folder only)."""
    max_source_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    """The most bytes read of an original in an S3 prefix or a git repository: the
    configuration's ``[index] max_document_bytes``, the most a document indexed could have."""
    digest: str = ""
    """The quote's digest the link carried, checked: links to the document's other pages and
    sheets carry it on (``""``: none)."""

    @property
    def quote_link(self) -> str:
        """``/documents/{id}?from=…&to=…`` (and ``&digest=…``) of this quote: a link to another
        page or sheet of the document adds its own parameter."""
        return (path_url("/documents/", self.info.document_id) + f"?from={self.start}&to={self.end}"
                + (f"&digest={self.digest}" if self.digest else ""))

    @cached_property
    def original(self) -> Original | None:
        """The original file's bytes when it still holds those indexed (see
        :func:`open_indexed`), read from the handle that was checked: a view never opens the
        path again, so a file swapped after the check (for a link to another group's document)
        shows nothing of the other file. A document of an S3 prefix or a git repository is read
        again from there (:func:`~rag_pipeline.core.ingest.sources.originals.read_original`).
        None when the file is gone or changed."""
        if is_corpus_uri(self.info.path):
            return self._from_source[0]
        handle = open_indexed(self.info.path, self.info.document_id, self.info.content_sha256)
        if handle is None:
            return None
        with handle:
            try:
                data = handle.read()
            except OSError:
                return None
        # The digest checked may be one remembered for the handle's inode and times: the bytes
        # read are checked once more, so nothing written since is shown as the original.
        if hashlib.sha256(data).hexdigest() != self.info.content_sha256:
            return None
        return Original(Path(self.info.path).name, data, self.info.content_sha256)

    @property
    def unreachable(self) -> str:
        """Why the original, in an S3 prefix or a git repository, cannot be read now (the
        endpoint unreachable, the reader refused), or ``""``: it may be there all the same."""
        return self._from_source[1] if is_corpus_uri(self.info.path) else ""

    @cached_property
    def _from_source(self) -> tuple[Original | None, str]:
        from rag_pipeline.core.ingest.sources.originals import read_original

        if self.sources is None or not self.info.content_sha256:
            return None, ""
        try:
            data = read_original(self.info.path, self.max_source_bytes, self.sources,
                                 self.info.content_sha256)
        except OriginalGoneError:
            return None, ""
        except SourceError as exc:
            _log.warning("the original of %s cannot be read now: %s", self.info.document_id, exc)
            return None, str(exc)
        if hashlib.sha256(data).hexdigest() != self.info.content_sha256:
            return None, ""
        return Original(PurePosixPath(self.info.document_id).name, data, self.info.content_sha256), ""

    @property
    def quote(self) -> str:
        return self.text[self.start:self.end]

    @property
    def quoted(self) -> bool:
        """Whether a span is quoted (the view marks it); not when the document is opened
        without ``from`` and ``to``."""
        return self.end > self.start

    @cached_property
    def quote_before(self) -> int:
        """:func:`occurrences_before` the quote in the whole text."""
        return occurrences_before(self.text, self.start, self.end)


_VERIFIED: Recent[tuple[int, ...], str] = Recent(256)
"""(device, inode, size, modified and changed times) -> the sha256 of a file's bytes."""
_HASH_BLOCK = 1 << 20


def indexed_file(path: str, document_id: str) -> Path | None:
    """Where the bytes of the document indexed from ``path`` are now: the file itself, or for a
    member of a container (``mail.eml/report.pdf``, whose path runs on past the container's
    file) a copy read again from its container; None when neither exists."""
    from rag_pipeline.service.views.members import member_file

    file = Path(path)
    if file.name == document_id.rsplit("/", 1)[-1] and file.is_file():
        return file
    return member_file(path)


def open_indexed(path: str, document_id: str, content_sha256: str) -> BinaryIO | None:
    """:func:`open_original` of where the document's bytes are now (:func:`indexed_file`)."""
    found = indexed_file(path, document_id)
    return open_original(str(found), content_sha256) if found is not None else None


def open_original(path: str, content_sha256: str) -> BinaryIO | None:
    """The indexed file at ``path``, open for reading, when it still holds the bytes whose
    sha256 the index recorded; None otherwise.

    A file changed, replaced, or swapped for a link to another file (outside the corpus, or a
    document another group reads) since it was indexed is not this document's original, so it
    is never served for it. The check runs on the open handle (``fstat``, then its bytes), so a
    swap after the check serves nothing else; the digest is remembered per device, inode, size
    and times, so a page of views hashes a file once. The file is hashed block by block before
    :attr:`ViewRequest.original` reads it whole: a file grown since it was indexed is never
    held in memory.
    """
    if not content_sha256 or not path:
        return None
    try:
        handle = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    except OSError:
        return None
    try:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            handle.close()
            return None
        key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        digest = _VERIFIED.get(key)
        if digest is None:
            hasher = hashlib.sha256()
            while block := handle.read(_HASH_BLOCK):
                hasher.update(block)
            digest = hasher.hexdigest()
            handle.seek(0)
            _VERIFIED.put(key, digest)
    except OSError:
        handle.close()
        return None
    if digest != content_sha256:
        handle.close()
        return None
    return handle


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
    for run in _ALNUM_RUN.finditer(text):
        word = run.group()
        lowered = word.lower()
        if len(lowered) == len(word) and not _LIGATURE.search(word):
            out.append(lowered)
            where.extend(range(run.start(), run.end()))
            continue
        for i, ch in enumerate(word, run.start()):  # a ligature, or a letter lower-cased to two
            for piece in ch.translate(_LIGATURES).lower():
                if piece.isalnum():
                    out.append(piece)
                    where.append(i)
    return "".join(out), where


def letters_of(text: str) -> str:
    """:func:`normalised`'s letters and digits alone (without where each comes from)."""
    if not _LIGATURE.search(text):
        joined = "".join(_ALNUM_RUN.findall(text))
        lowered = joined.lower()
        if len(lowered) == len(joined):
            return lowered
    return normalised(text)[0]


def locate(haystack: str, needle: str, before: int = 0) -> tuple[int, int] | None:
    """``(first, last)`` positions in ``haystack``'s :func:`normalised` string where ``needle``
    is: whole, else from its first LOCATE_CHARS letters to its last, within
    :data:`LOCATE_STRETCH` of its length; None when not found.
    ``before``: how many times the quote occurs in the document before the cited place (see
    :func:`occurrences_before`): the place found is the one after as many others, or the last
    one when the rendering holds fewer."""
    if not needle:
        return None
    found = _nth(haystack, needle, before)
    if found >= 0:
        return found, found + len(needle) - 1
    head, tail = needle[:LOCATE_CHARS], needle[-LOCATE_CHARS:]
    first = _nth(haystack, head, before)
    if first < 0:
        return None
    last = haystack.find(tail, first, first + LOCATE_STRETCH * len(needle) + LOCATE_CHARS)
    return (first, last + len(tail) - 1) if last >= 0 else None


def _nth(haystack: str, needle: str, before: int) -> int:
    """Where ``needle`` occurs in ``haystack`` after ``before`` other places (the last place
    when there are fewer), or -1."""
    found = -1
    for number, at in enumerate(occurrence_starts(haystack, needle)):
        found = at
        if number == before:
            break
    return found


FIND_BUDGET = 4_000_000
"""Characters ``str.find`` compares again (the quote's length for each place found overlapping
the one before) before the places of a quote are found by :func:`_kmp_starts` instead."""


def occurrence_starts(haystack: str, needle: str) -> Iterator[int]:
    """Each place ``needle`` starts in ``haystack``, in order, overlapping ones included. A
    quote repeated back to back (a long quote of a periodic text) is found at every period:
    ``str.find`` from each place then compares the quote's length again, so the places of a
    300,000-character quote of ``a a a ...`` would take minutes; past :data:`FIND_BUDGET` of
    such work the rest is found in one pass. Places apart from each other cost ``str.find``
    what lies between them: it finds them all."""
    work, previous, at = 0, -len(needle), haystack.find(needle)
    while at >= 0:
        yield at
        if at - previous < len(needle):  # overlapping: its letters are compared again
            work += len(needle)
            if work > FIND_BUDGET:
                yield from _kmp_starts(haystack, needle, at + 1)
                return
        previous, at = at, haystack.find(needle, at + 1)


def _kmp_starts(haystack: str, needle: str, begin: int) -> Iterator[int]:
    """The places ``needle`` starts in ``haystack[begin:]`` (Knuth-Morris-Pratt: each
    character read once)."""
    fallback, k = [0] * len(needle), 0
    for i in range(1, len(needle)):
        while k and needle[i] != needle[k]:
            k = fallback[k - 1]
        if needle[i] == needle[k]:
            k += 1
        fallback[i] = k
    k = 0
    for i in range(begin, len(haystack)):
        char = haystack[i]
        while k and char != needle[k]:
            k = fallback[k - 1]
        if char == needle[k]:
            k += 1
        if k == len(needle):
            yield i - k + 1
            k = fallback[k - 1]


def occurrences_before(text: str, start: int, end: int, since: int = 0) -> int:
    """How many times the letters and digits of ``text[start:end]`` occur in ``text`` from
    ``since`` before ``start``: a sentence a document repeats (a closing line under each
    section) is marked where it was cited, not where it first occurs."""
    needle = letters_of(text[start:end])
    if not needle or since >= start:
        return 0
    letters = letters_of(text[since:end])
    cut = len(letters) - len(needle)
    count = 0
    for at in occurrence_starts(letters, needle):
        if at >= cut:
            break
        count += 1
    return count


def shown_name(name: str) -> str:
    """A name (a document's, a sheet's, a chapter's) as a view shows it: escaped, its
    bidirectional controls written out (``bidi\\u202egnp.md``), as the page does."""
    return html.escape(escape_controls(name))


def page_html(title: str, document_id: str, view: View, original_url: str | None,
              navigation: str = "", withheld: str = "") -> str:
    """The page shell around a view: the way back, the title, where the quote is, the original
    file one click away (or ``withheld``: why it is not served), then the view."""
    from importlib.resources import files

    template = files("rag_pipeline.service").joinpath("document.html").read_text(encoding="utf-8")
    original = (f'<a class="original" href="{html.escape(original_url)}">Open the original file</a>'
                if original_url else f'<span class="meta">{html.escape(withheld)}</span>' if withheld
                else '<span class="meta">The original file is gone or has changed since it was '
                     "indexed.</span>")
    note = f'<p class="note">{html.escape(view.note)}</p>' if view.note else ""
    # A quote under a heading that repeats the title ("Leave policy · Leave policy") names it once.
    tab_title = title if view.label in ("", title) else f"{title} · {view.label}"
    return template.format(title=shown_name(title), tab_title=shown_name(tab_title),
                           document_id=shown_name(document_id), label=shown_name(view.label),
                           original=original, note=note, navigation=navigation, kind=view.kind,
                           body=view.body)
