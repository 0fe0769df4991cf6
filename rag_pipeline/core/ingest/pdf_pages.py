"""Positioned text runs of a PDF's pages and its outline, read with pypdfium2 (PDFium).

PDF is drawing instructions, not text: PDFium gives each character with its box, font size
and font; this module groups them into :class:`TextRun` values (one horizontal run of text
on one baseline, cut where a gap wider than about two spaces opens, so table cells and the
two columns of a page stay apart) that :mod:`rag_pipeline.core.ingest.pdf_layout` turns into
canonical text. PDFium marks a hyphen that it judges to break a word at a line end with
U+FFFE and joins the next line to it; the run is cut there and flagged ``hyphen`` so the
layout decides what the word is. Characters are taken as a reader sees them: a small-caps
face's letters in capitals (``POSIX``, not the ``posix`` the file stores), a typewriter face's
quotes straight, a minus sign as ``-``. TeX draws an underscore outside a typewriter face
(``@var{t_out}`` in Texinfo) as a short rule on the baseline, not a character: a rule in the
gap between two characters of a run is read as ``_`` (:func:`underscore_rules`).
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pypdfium2


class PageSource(StrEnum):
    """Where a page's text comes from."""

    TEXT = "text"
    OCR = "ocr"


@dataclass(frozen=True)
class TextRun:
    """One horizontal run of text on a page, in points with the origin at the page's top left.

    Attributes:
        page: 0-based page index.
        text: The run's characters (no line break inside).
        x0: Left edge.
        x1: Right edge.
        top: Top of the tallest character.
        baseline: The baseline's distance from the page's top.
        size: Font size (the most common one in the run).
        bold: The run's font is a bold face.
        mono: At least 95 % of the run's characters are in a fixed-pitch face (code).
        hyphen: The run ends where PDFium found a word broken by a line-end hyphen.
        words: Left and right edges of each of the run's words (``text.split()``), in order;
            empty when not known (OCR).
        depth: How far below ``baseline`` its last line's baseline lies: a table cell wrapped
            over lines, read as one run (0 for one line).
    """

    page: int
    text: str
    x0: float
    x1: float
    top: float
    baseline: float
    size: float
    bold: bool = False
    mono: bool = False
    hyphen: bool = False
    words: tuple[tuple[float, float], ...] = ()
    depth: float = 0.0


@dataclass(frozen=True)
class PageText:
    """A page's runs in the order the PDF draws them, and where its text came from.

    Attributes:
        index: 0-based page index.
        width: Page width in points.
        height: Page height in points.
        runs: The page's text runs.
        source: ``text`` for the PDF's own text layer, ``ocr`` for text recognised from pixels.
        ocr_confidence: Tesseract's mean word confidence (0-100) for an OCR page, ``None`` for a
            text page or an OCR page where Tesseract found no word (a figure, a blank page).
    """

    index: int
    width: float
    height: float
    runs: tuple[TextRun, ...]
    source: PageSource = PageSource.TEXT
    ocr_confidence: float | None = None


@dataclass(frozen=True)
class OutlineEntry:
    """One bookmark of the PDF's outline.

    Attributes:
        title: The bookmark's title.
        level: 1 for a top-level bookmark, 2 under it, ...
        page: 0-based target page.
        top: The target's distance from the page's top in points, ``None`` when the
            destination names no position.
    """

    title: str
    level: int
    page: int
    top: float | None


_BOLD_MARKS = ("bold", "black", "heavy", "cmbx", "semibold", "demi")
_MONO_MARKS = ("mono", "courier", "cmtt", "consol", "typewriter", "sfmono")
_FIXED_PITCH_FLAG = 1  # PDF 1.7, table 123: font descriptor flag bit 1
_SMALL_CAP_FLAG = 1 << 17
_FORCE_BOLD_FLAG = 1 << 18
_SMALL_CAPS_MARKS = ("cmcsc", "smallcaps", "-sc")
# What a reader sees: a typewriter face draws U+2018 and U+2019 as ` and ' (TeX's CMTT maps
# its grave and straight quote to the curly code points); a minus sign is a hyphen-minus.
_MONO_GLYPHS = {"\u2018": "`", "\u2019": "'"}
_MINUS = "\u2212"
_HYPHEN_MARKS = ("\ufffe", "\x02")  # U+FFFE in FPDFText_GetText, 0x02 per character
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi",
                            "\ufb04": "ffl", "\u00a0": " "})


def _font_kind(name: str, flags: int) -> tuple[bool, bool, bool]:
    """(bold, mono, small caps) from a font's name and descriptor flags."""
    lower = name.lower()
    base = lower.split("+", 1)[-1]
    bold = bool(flags & _FORCE_BOLD_FLAG) or any(mark in base for mark in _BOLD_MARKS)
    mono = bool(flags & _FIXED_PITCH_FLAG) or any(mark in base for mark in _MONO_MARKS)
    small_caps = bool(flags & _SMALL_CAP_FLAG) or any(mark in base for mark in _SMALL_CAPS_MARKS)
    return bold, mono, small_caps


@dataclass
class _RunBuilder:
    page: int
    chars: list[str]
    x0: float
    x1: float
    top: float
    baseline: float
    sizes: dict[float, int]
    bold: int = 0
    mono: int = 0
    glyphs: int = 0
    words: list[list[float]] = field(default_factory=list)
    baselines: dict[float, float] = field(default_factory=dict)
    """The baseline of the first character of each size: a run is on the baseline of its most
    common size, never on that of a raised mark it starts with (``¹occupies 32 bytes``)."""

    def add(self, char: str, left: float, right: float) -> None:
        """Appends a character that is no space, with its box's left and right edges."""
        if not self.chars or self.chars[-1] == " ":
            self.words.append([left, right])
        else:
            self.words[-1][1] = max(self.words[-1][1], right)
        self.chars.append(char)

    def run(self, hyphen: bool) -> TextRun | None:
        text = "".join(self.chars).translate(_LIGATURES).strip()
        if not text:
            return None
        size = max(self.sizes.items(), key=lambda item: item[1])[0] if self.sizes else 0.0
        words = tuple((round(left, 2), round(right, 2)) for left, right in self.words)
        baseline = self.baselines.get(size, self.baseline)
        return TextRun(self.page, text, round(self.x0, 2), round(self.x1, 2), round(self.top, 2),
                       round(baseline, 2), size, bold=self.bold * 2 > self.glyphs,
                       mono=self.mono >= 0.95 * self.glyphs, hyphen=hyphen,
                       words=words if len(words) == len(text.split()) else ())


WORD_GAP_EM = 0.15
"""A gap between two characters' advance boxes wider than this share of the font size is a word
space the file draws by positioning alone (groff justifies lines so, with no space character,
and PDFium then generates none): the space is put back, as poppler's ``pdftotext`` does
(its ``minWordBreakSpace`` is 0.1 of the font size)."""



def is_word_gap(advance_right: float, left: float, size: float) -> bool:
    """The gap from one character's advance box (its right edge ``advance_right``) to the next
    one's (its left edge ``left``) is a word space at font size ``size``
    (:data:`WORD_GAP_EM`)."""
    return left - advance_right > WORD_GAP_EM * size


UNDERSCORE_RULE_MAX_HEIGHT = 1.5
"""Points: a drawn underscore is a rule at most this thick (TeX's ``\\_`` is 0.1 ex, about 0.5 pt)."""


@dataclass(frozen=True)
class Rule:
    """A short horizontal rule drawn on a page, in points from the page's top left."""

    x0: float
    x1: float
    top: float
    bottom: float


def underscore_rules(page: pypdfium2.PdfPage, height: float) -> tuple[Rule, ...]:
    """The page's own path objects that can be drawn underscores: at most
    :data:`UNDERSCORE_RULE_MAX_HEIGHT` thick and 1 to 12 points long (a table's or a
    fraction's rule is longer). Paths inside a form XObject (an embedded figure) are left
    out: they are drawings, and their bounds are in the form's own coordinates."""
    import pypdfium2.raw as raw

    rules = []
    for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH], max_depth=0):
        left, bottom, right, top = obj.get_bounds()
        if top - bottom <= UNDERSCORE_RULE_MAX_HEIGHT and 1.0 <= right - left <= 12.0:
            rules.append(Rule(left, right, height - top, height - bottom))
    return tuple(rules)


def _underscore_between(rules: Sequence[Rule], x0: float, x1: float, baseline: float, size: float) -> bool:
    """A rule lies in the gap ``x0..x1`` on the line whose baseline is ``baseline`` (its middle
    within a quarter of the font size of it)."""
    return any(rule.x0 >= x0 - 1.0 and rule.x1 <= x1 + 1.0
               and abs((rule.top + rule.bottom) / 2 - baseline) <= 0.25 * size for rule in rules)


def page_runs(pdf: pypdfium2.PdfDocument, index: int) -> PageText:
    """The text runs of page ``index`` (0-based) from its text layer.

    A run ends at a line break PDFium reports, at a U+FFFE hyphen mark, where the baseline
    moves by more than half the font size, or where the gap to the next character is wider
    than 1.5 times the font size (a table cell or the other column). A narrower gap between
    two characters' advance boxes of more than :data:`WORD_GAP_EM` of the font size is a word
    space where PDFium reports none. A drawn underscore in the gap between two characters
    (:func:`underscore_rules`) replaces the space there.
    """
    import pypdfium2.raw as raw

    page = pdf[index]
    width, height = page.get_size()
    rules = underscore_rules(page, float(height))
    textpage = page.get_textpage()
    handle = textpage.raw
    count = raw.FPDFText_CountChars(handle)
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    origin_x, origin_y = ctypes.c_double(), ctypes.c_double()
    loose = raw.FS_RECTF()
    advance_right = 0.0
    name_buffer = ctypes.create_string_buffer(256)
    flags = ctypes.c_int()
    font_cache: dict[tuple[bytes, int], tuple[bool, bool, bool]] = {}
    runs: list[TextRun] = []
    current: _RunBuilder | None = None

    def close(hyphen: bool = False) -> None:
        nonlocal current
        if current is not None:
            run = current.run(hyphen)
            if run is not None:
                runs.append(run)
        current = None

    low_half = -1  # the index of the second half of a surrogate pair read with the first
    for i in range(count):
        if i == low_half:
            continue
        code = raw.FPDFText_GetUnicode(handle, i)
        if 0xD800 <= code < 0xDC00 and i + 1 < count \
                and 0xDC00 <= (low := raw.FPDFText_GetUnicode(handle, i + 1)) < 0xE000:
            # A character past U+FFFF (a mathematical italic N) is two UTF-16 halves, two
            # character indices: one character, placed where its first half is.
            code, low_half = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00), i + 1
        char = chr(code)
        if char in "\r\n":
            close()
            continue
        if char in _HYPHEN_MARKS:
            close(hyphen=True)
            continue
        generated = raw.FPDFText_IsGenerated(handle, i) == 1
        if char.isspace() or generated:
            if current is not None and char.isspace():
                current.chars.append(" ")
            continue
        raw.FPDFText_GetCharBox(handle, i, ctypes.byref(left), ctypes.byref(right),
                                ctypes.byref(bottom), ctypes.byref(top))
        raw.FPDFText_GetCharOrigin(handle, i, ctypes.byref(origin_x), ctypes.byref(origin_y))
        size = round(raw.FPDFText_GetFontSize(handle, i), 1)
        raw.FPDFText_GetFontInfo(handle, i, name_buffer, 256, ctypes.byref(flags))
        key = (name_buffer.value, flags.value)
        if key not in font_cache:
            font_cache[key] = _font_kind(name_buffer.value.decode("latin-1"), flags.value)
        bold, mono, small_caps = font_cache[key]
        if small_caps:
            char = char.upper()
        elif mono:
            char = _MONO_GLYPHS.get(char, char)
        if char == _MINUS:
            char = "-"
        raw.FPDFText_GetLooseCharBox(handle, i, ctypes.byref(loose))
        baseline = height - origin_y.value
        char_top = height - top.value
        if current is not None:
            moved = abs(baseline - current.baseline) > max(size, 1.0) * 0.5
            gap = left.value - current.x1
            if moved or gap > 1.5 * max(size, 1.0) or gap < -max(size, 1.0) * 2:
                close()
            elif current.chars[-1] != " " and is_word_gap(advance_right, loose.left, size):
                current.chars.append(" ")
        if current is not None and rules and left.value - current.x1 > 0.2 * size and _underscore_between(
                rules, current.x1, left.value, baseline, size):
            while current.chars and current.chars[-1] == " ":
                current.chars.pop()
            current.chars.append("_")
        if current is None:
            current = _RunBuilder(index, [], left.value, right.value, char_top, baseline, {})
        current.add(char, left.value, right.value)
        advance_right = loose.right
        current.x1 = max(current.x1, right.value)
        current.x0 = min(current.x0, left.value)
        current.top = min(current.top, char_top)
        current.sizes[size] = current.sizes.get(size, 0) + 1
        current.baselines.setdefault(size, baseline)
        current.glyphs += 1
        current.bold += bold
        current.mono += mono
    close()
    textpage.close()
    page.close()
    return PageText(index, float(width), float(height), tuple(runs))


def outline(pdf: pypdfium2.PdfDocument) -> tuple[OutlineEntry, ...]:
    """The PDF's bookmarks in order, each with its target page and position; bookmarks that
    point at no page of this file are left out (they cannot label any text)."""
    entries: list[OutlineEntry] = []
    page_count = len(pdf)
    for bookmark in _bookmarks(pdf):
        dest = bookmark.get_dest()
        if dest is None:
            continue
        page = dest.get_index()
        if page is None or not 0 <= page < page_count:
            continue
        title = " ".join((bookmark.get_title() or "").split())
        if not title:
            continue
        top: float | None = None
        mode, view = dest.get_view()
        y = _view_top(mode, view)
        if y is not None:
            top = float(pdf[page].get_height()) - y
        entries.append(OutlineEntry(title, bookmark.level + 1, page, top))
    return tuple(entries)


def _view_top(mode: int, view: Sequence[float]) -> float | None:
    """The y coordinate a destination scrolls to: XYZ gives it second, FitH and FitBH first
    (PDF 1.7, table 151); the other views name no height."""
    import pypdfium2.raw as raw

    if mode == raw.PDFDEST_VIEW_XYZ and len(view) >= 2 and view[1]:
        return float(view[1])
    if mode in (raw.PDFDEST_VIEW_FITH, raw.PDFDEST_VIEW_FITBH) and view and view[0]:
        return float(view[0])
    return None


def _bookmarks(pdf: pypdfium2.PdfDocument) -> Iterator[pypdfium2.PdfOutlineItem]:
    yield from pdf.get_toc(max_depth=16)
