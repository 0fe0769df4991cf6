"""W3C text fragments (``#:~:text=``): a link into a real web page that opens at the quote.

No browser honours RFC 5147's ``#char=``; Chromium, Edge and Safari honour text fragments
(WICG "URL Fragment Text Directives"): ``#:~:text=textStart,textEnd`` scrolls to and
highlights the page's first range that starts with ``textStart`` and ends with the first
``textEnd`` after it, matched case-insensitively on whole words, white space collapsed. Each of
the two must lie within one block of the page, so they are taken from the quote's first and
last lines. Both are grown word by word until, in the canonical text (the page's text as the
format read it), their first occurrence is the quote's own, so the link does not land on an
earlier sentence that begins the same way. Words carrying Markdown markup (backticks,
emphasis, link brackets), tokens of punctuation alone and leading block markers (``#``,
``-``, ``1.``, ``>``) are not words of the rendered page and are never used.
"""

from __future__ import annotations

import re
from urllib.parse import quote

MIN_WORDS = 3
"""By default ``textStart`` and ``textEnd`` start with this many words and grow until unique."""

_BLOCK_MARKER = re.compile(r"#{1,6}|[-*+>]|\d+[.)]")
_MARKUP = re.compile(r"[`*\[\]()<>|\\]|^_|_$|~~")
_WORD_CHAR = re.compile(r"\w")


def encode_directive_text(text: str) -> str:
    """Percent-encoding for a text directive's term: everything but unreserved characters,
    and ``-`` too (the spec reserves ``-``, ``,`` and ``&`` inside a directive)."""
    return quote(text, safe="").replace("-", "%2D")


def _words(line: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", line)]


def _plain(token: str) -> bool:
    """A word of the rendered page: it holds a letter or digit and no Markdown markup. A token
    of punctuation alone (`` , `` left by an extractor that spaced an inline element) is not:
    the page has no space before it, so a term holding it would not match."""
    return bool(_WORD_CHAR.search(token)) and not _MARKUP.search(token)


def _clean_run(text: str, spans: list[tuple[int, int]], from_end: bool) -> list[tuple[int, int]]:
    """The run of plain words (:func:`_plain`) at the start (or end) of a line, after its
    block marker."""
    ordered = list(reversed(spans)) if from_end else list(spans)
    if not from_end and ordered and _BLOCK_MARKER.fullmatch(text[slice(*ordered[0])]):
        ordered = ordered[1:]
    while ordered and not _plain(text[slice(*ordered[0])]):
        ordered = ordered[1:]
    run = []
    for span in ordered:
        if not _plain(text[slice(*span)]):
            break
        run.append(span)
    return sorted(run)


def _pattern(text: str, spans: list[tuple[int, int]]) -> re.Pattern[str]:
    words = [re.escape(text[slice(*span)]) for span in spans]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


def _first_unique(text: str, run: list[tuple[int, int]], from_end: bool, search_from: int,
                  min_words: int) -> list[tuple[int, int]]:
    """The shortest sub-run (at least ``min_words`` words, taken from the run's start, or its
    end when ``from_end``) whose first match at or after ``search_from`` is itself; the whole
    run when none is (the quote's words occur earlier too)."""
    for count in range(min(min_words, len(run)), len(run) + 1):
        chosen = run[-count:] if from_end else run[:count]
        match = _pattern(text, chosen).search(text, search_from)
        if match is not None and match.start() == chosen[0][0]:
            return chosen
    return run


def text_fragment(text: str, start: int, end: int, min_words: int = MIN_WORDS) -> str:
    """The ``#:~:text=`` fragment of ``text[start:end]``; ``""`` when it holds no plain word.

    Args:
        text: The document's canonical text (or the quote alone: then ``textStart`` is unique
            only within the quote, and a larger ``min_words`` makes an earlier look-alike less
            likely).
        start: Where the quote starts.
        end: Where it ends (excluded).
        min_words: The fewest words ``textStart`` and ``textEnd`` start from.
    """
    while start < end and start > 0 and _WORD_CHAR.match(text[start - 1]) and _WORD_CHAR.match(text[start]):
        start += 1  # a quote starting inside a word starts at the next word
    while end > start and end < len(text) and _WORD_CHAR.match(text[end]) and _WORD_CHAR.match(text[end - 1]):
        end -= 1
    lines = [(m.start() + start, m.end() + start) for m in re.finditer(r"[^\n]*\S[^\n]*", text[start:end])]
    if not lines:
        return ""
    first_line, last_line = lines[0], lines[-1]
    first_spans = [(a + first_line[0], b + first_line[0]) for a, b in _words(text[slice(*first_line)])]
    start_run = _clean_run(text, first_spans, from_end=False)
    if not start_run:
        return ""
    start_terms = _first_unique(text, start_run, False, 0, min_words)
    last_spans = [(a + last_line[0], b + last_line[0]) for a, b in _words(text[slice(*last_line)])]
    end_run = _clean_run(text, last_spans, from_end=True)
    end_terms = [span for span in end_run if span[0] >= start_terms[-1][1]]
    fragment = "#:~:text=" + encode_directive_text(_joined(text, start_terms))
    if end_terms and end_terms[-1][1] > start_terms[-1][1]:
        end_terms = _first_unique(text, end_terms, True, start_terms[-1][1], min_words)
        fragment += "," + encode_directive_text(_joined(text, end_terms))
    return fragment


def _joined(text: str, spans: list[tuple[int, int]]) -> str:
    return " ".join(text[slice(*span)] for span in spans)
