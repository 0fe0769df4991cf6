"""Text files read as UTF-8, or as the UTF-16/UTF-32 their byte-order mark declares, or as
windows-1252 when they are plainly that.

Subtitle tools and spreadsheet exports ("Unicode text") write UTF-16 with a byte-order mark; the
mark makes the encoding certain, so such a file is read, never guessed at. Without a mark the
file is UTF-8; a file that is not is read as windows-1252 (the encoding of a Western team's
legacy text and of Excel's "CSV" on Windows, Latin-1's printable characters included) only when
it is plainly that: no NUL byte, no byte windows-1252 leaves undefined, at most
:data:`MAX_GUESSED_SHARE` of its bytes outside ASCII and never three of them in a row (accented
letters stand alone in Western words; Cyrillic, Greek or East Asian legacy encodings write
whole words in such bytes), and no UTF-8 character in it (a UTF-8 file with one stray byte, or
cut inside a character, is UTF-8 gone wrong, not windows-1252). A file without a mark whose
every other byte is NUL (:data:`MIN_UTF16_SHARE` of its pairs) is UTF-16 written without one,
little- or big-endian by where the NULs fall: read so, never as text with a NUL between every
letter. The notes say so (``charset_guessed``, as a mail's do). Anything else fails with the
offset and the byte found there.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from functools import cache

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.file_signature import plainly_pdf, signature_of

GUESSED_CHARSET = "windows-1252"
MAX_GUESSED_SHARE = 0.2
"""A file that is not UTF-8 is read as windows-1252 only when at most this share of its bytes
is outside ASCII."""
MAX_CONTROL_SHARE = 0.01
"""Decoded bytes are plainly text (a file no format claims, a guess at UTF-16) unless more than
1 % of their characters are control characters other than tab, line feed, carriage return and
form feed (terminal escapes, binary records that happen to be valid UTF-8)."""
MAX_TEXT_CONTROL_SHARE = 0.1
"""A file a text format claims fails past this share of control characters: binary data renamed
``.txt``, UTF-16 without a mark in another script read as UTF-8 (a ``\\x04`` between letters).
Below it, a Markdown file with pasted terminal colours is still read."""
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")
MIN_UTF16_SHARE = 0.9
"""A file without a mark is read as UTF-16 when at least this share of its byte pairs hold a
NUL on the same side (Latin text in UTF-16), and at most the rest on the other."""
_HIGH_BYTES = bytes(range(0x80, 0x100))
_HIGH_RUN = re.compile(rb"[\x80-\xff]{3}")
_UTF8_CHARACTER = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")

_MARKS = (  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"), (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"), (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)


SINGLE_BYTE_SUPERSETS = {"iso8859-1": "cp1252", "iso8859-9": "cp1254", "tis-620": "cp874",
                         "iso8859-11": "cp874"}
"""A declared single-byte charset (by its Python codec's name, :func:`codec_name`) and the one
read in its place: they differ only where the declared one has control characters (0x80 to
0x9F), where mail programs and web pages write curly quotes and dashes (the WHATWG Encoding
Standard reads these labels so, as browsers do). The declared one is read when a byte is none of
the wider one's."""
MULTI_BYTE_SUPERSETS = {"gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932",
                        "euc_kr": "cp949", "big5": "big5hkscs"}
"""A declared multi-byte charset and the wider one written under its name (the WHATWG Encoding
Standard's: GBK's characters in a ``gb2312`` page or mail). A wider multi-byte charset reads
almost any bytes, so a mail tries it after UTF-8 (UTF-8 mislabelled ``gb2312`` is real)."""


WHATWG_LABELS = {"windows-874": "cp874", "iso-8859-8-i": "iso8859-8", "csiso88598i": "iso8859-8",
                 "logical": "iso8859-8", "windows-31j": "cp932", "x-sjis": "shift_jis",
                 "ms932": "cp932", "x-gbk": "gbk", "csgb2312": "gb2312", "x-euc-jp": "euc_jp",
                 "cn-big5": "big5", "x-x-big5": "big5", "x-mac-roman": "mac-roman",
                 "x-mac-cyrillic": "mac-cyrillic", "x-mac-ukrainian": "mac-cyrillic",
                 "koi8": "koi8-r", "koi": "koi8-r", "unicode-1-1-utf-8": "utf-8",
                 "unicode11utf8": "utf-8", "unicode20utf8": "utf-8", "x-unicode20utf8": "utf-8",
                 "x-cp1250": "cp1250", "x-cp1251": "cp1251", "x-cp1252": "cp1252",
                 "x-cp1253": "cp1253", "x-cp1254": "cp1254", "x-cp1255": "cp1255",
                 "x-cp1256": "cp1256", "x-cp1257": "cp1257", "x-cp1258": "cp1258",
                 "dos-866": "cp866", "ibm866": "cp866", "csibm866": "cp866"}
"""Labels the WHATWG Encoding Standard gives an encoding (as browsers and mail programs write
them) that Python's codec registry does not know, and the codec each names."""


def codec_name(charset: str | None) -> str | None:
    """Python's name for the codec of a declared ``charset`` (``iso8859-1`` for ``latin1``,
    ``cp874`` for ``windows-874``: :data:`WHATWG_LABELS`), None when it has none that decodes
    text (``base64``, ``zlib``: bytes to bytes)."""
    if charset:
        charset = WHATWG_LABELS.get(charset.strip().lower(), charset)
    try:
        info = codecs.lookup(charset) if charset else None
    except LookupError:
        return None
    return info.name if info is not None and getattr(info, "_is_text_encoding", True) else None


MAX_REPLACED_SHARE = 0.01
"""Text that is not its declared charset (nor UTF-8) is read by it, its bad bytes replaced and
counted, when at most this share of its bytes are bad (one always may be); past it, as
windows-1252."""


@dataclass
class CharsetReading:
    """What reading a document's text by its declared charset had to do (:func:`decode_declared`):
    the charsets guessed, how many bad byte sequences were replaced by U+FFFD; its notes."""

    guessed: set[str] = field(default_factory=set)
    replaced: int = 0

    def add(self, other: CharsetReading) -> None:
        self.guessed |= other.guessed
        self.replaced += other.replaced

    def notes(self) -> tuple[tuple[str, str], ...]:
        replaced = (("charset_replaced", str(self.replaced)),) if self.replaced else ()
        return tuple(("charset_guessed", charset) for charset in sorted(self.guessed)) + replaced


@cache
def _controls_as(wider: str) -> dict[int, str]:
    """The control characters 0x80 to 0x9F a single-byte charset decodes its bytes there to, and
    what ``wider`` decodes each of those bytes to, where it decodes it (as the WHATWG Encoding
    Standard reads ``iso-8859-1`` as windows-1252, its five undefined bytes kept)."""
    table = {}
    for byte in range(0x80, 0xA0):
        try:
            table[byte] = bytes((byte,)).decode(wider)
        except UnicodeDecodeError:
            continue
    return table


def decoded_with_replacements(payload: bytes, codec: str) -> tuple[str, int]:
    """``payload`` read by ``codec`` with its bad byte sequences replaced by U+FFFD, and how many
    there were (replacement characters the bytes themselves hold are no bad bytes)."""
    text = payload.decode(codec, "replace")
    return text, text.count("\ufffd") - payload.decode(codec, "ignore").count("\ufffd")


def decode_declared(payload: bytes, charset: str | None, reading: CharsetReading) -> str:
    """``payload`` by its declared ``charset`` as mail programs and browsers read the label: by
    its single-byte superset (:data:`SINGLE_BYTE_SUPERSETS`) or itself; else as UTF-8 (a wrong
    label, or none); else by its multi-byte superset (:data:`MULTI_BYTE_SUPERSETS`); else,
    unless it is plainly windows-1252 (:func:`plainly_windows_1252`: Western text labelled
    UTF-8), by that superset or itself, or UTF-8 without a label, with its few bad byte
    sequences (at most :data:`MAX_REPLACED_SHARE`, and always one) replaced by U+FFFD and
    counted; else as windows-1252, guessed. ``reading`` keeps what was done."""
    codec = codec_name(charset)
    if codec == "iso2022_jp":  # 7-bit: it would pass for UTF-8, escapes and all
        try:
            return payload.decode(codec)
        except UnicodeError:
            codec = charset = None
            try:
                return iso2022_jp_as_outlook_writes_it(payload)
            except UnicodeError:
                pass
    if (wider := SINGLE_BYTE_SUPERSETS.get(codec)) is not None:
        try:
            return payload.decode(wider)
        except UnicodeError:
            pass
        try:  # a byte the wider one leaves undefined keeps the declared one's control character
            return payload.decode(codec).translate(_controls_as(wider))
        except UnicodeError:
            pass
    for candidate in dict.fromkeys(filter(None, (codec, "utf-8", MULTI_BYTE_SUPERSETS.get(codec)))):
        try:
            return payload.decode(candidate)
        except UnicodeError:
            continue
    widest = MULTI_BYTE_SUPERSETS.get(codec, codec or "utf-8")
    if plainly_windows_1252(payload) is None:
        text, bad = decoded_with_replacements(payload, widest)
        if bad <= max(1.0, MAX_REPLACED_SHARE * len(payload)):
            reading.replaced += bad
            return text
    reading.guessed.add(GUESSED_CHARSET)
    return payload.decode(GUESSED_CHARSET, "replace")


_JIS_ESCAPES = {b"\x1b$B": "jis", b"\x1b$@": "jis", b"\x1b(B": "ascii", b"\x1b(J": "ascii",
                b"\x1b(I": "kana"}


def iso2022_jp_as_outlook_writes_it(payload: bytes) -> str:
    """ISO-2022-JP as Windows writes it (code page 50220: JIS X 0208 with NEC's row 13, ``①``,
    ``㈱``, and IBM's extensions; half-width katakana after ``ESC ( I``), which Python's
    ``iso2022_jp`` refuses: each two-byte JIS code turned into its Shift_JIS bytes and read as
    cp932, which holds those characters.

    Raises:
        UnicodeDecodeError: An escape it does not know, or a two-byte code cut short.
    """
    converted = bytearray()
    mode, index = "ascii", 0
    while index < len(payload):
        byte = payload[index]
        if byte == 0x1B:
            mode = _JIS_ESCAPES.get(payload[index:index + 3], "")
            if not mode:
                raise UnicodeDecodeError("iso2022_jp", payload, index, index + 3, "unknown escape")
            index += 3
        elif mode == "jis" and byte not in (0x0A, 0x0D):
            if index + 1 >= len(payload):
                raise UnicodeDecodeError("iso2022_jp", payload, index, index + 1, "cut short")
            first, second = byte, payload[index + 1]
            lead = ((first - 0x21) >> 1) + 0x81
            converted += bytes((lead + 0x40 if lead > 0x9F else lead,
                                second + (0x7E if first % 2 == 0 else 0x1F + (second >= 0x60))))
            index += 2
        else:
            converted.append(byte + 0x80 if mode == "kana" and 0x21 <= byte <= 0x5F else byte)
            index += 1
    return converted.decode("cp932")


@dataclass(frozen=True)
class DecodedText:
    """A text file's text and what its reading notes (``charset_guessed`` when it was not
    UTF-8 and read as windows-1252)."""

    text: str
    notes: tuple[tuple[str, str], ...] = ()


NOT_GUESSED = ("save it as UTF-8 (another encoding, such as Shift-JIS, GB18030, KOI8-R or "
               "UTF-16 without a byte-order mark, is not guessed)")
"""What a file read as no encoding is told."""


def decode_text(data: bytes, kind: str,
                max_control_share: float = MAX_TEXT_CONTROL_SHARE) -> DecodedText:
    """The file's text without its byte-order mark, ``\\r\\n`` and ``\\r`` line ends as ``\\n``.

    Args:
        data: The file's bytes.
        kind: The format's name for the reason (``"CSV"``).
        max_control_share: The share of control characters text may hold (Info files separate
            their nodes by ``\\x1f``: 1.0).

    Raises:
        ExtractionError: Bytes that are not text in the declared (or, without a mark, UTF-8,
            plainly UTF-16 or plainly windows-1252) encoding, with the offset and the byte; text
            of more than ``max_control_share`` control characters.
    """
    if plainly_pdf(data):
        raise ExtractionError(f"not {kind}: its first bytes are those of a PDF ({data[:8]!r}); "
                              "rename it to its real type")
    encoding, name, body = "utf-8", "UTF-8", data
    for mark, codec, label in _MARKS:
        if data.startswith(mark):
            encoding, name, body = codec, label, data[len(mark):]
            break
    notes: tuple[tuple[str, str], ...] = ()
    utf16 = plainly_utf16(data) if body is data and b"\x00" in data else None
    if utf16 is not None:
        codec, text = utf16
        notes = (("charset_guessed", codec),)
    else:
        try:
            text = body.decode(encoding)
        except UnicodeDecodeError as exc:
            guessed = plainly_windows_1252(data) if body is data else None
            if guessed is None:
                if (what := signature_of(data)) is not None:
                    raise ExtractionError(
                        f"not {kind}: its first bytes are those of {what} ({data[:8]!r}); "
                        f"rename it to its real type") from exc
                offset = exc.start + len(data) - len(body)
                raise ExtractionError(
                    f"not {name}: byte 0x{data[offset]:02x} at offset {offset} ({exc.reason}); "
                    f"{kind} files are read as UTF-8, or as UTF-16/UTF-32 with a byte-order mark, "
                    f"or as windows-1252 when plainly that: {NOT_GUESSED}") from exc
            text, notes = guessed, (("charset_guessed", GUESSED_CHARSET),)
        controls = control_characters(text)
        if controls > max_control_share * len(text):
            raise ExtractionError(
                f"not {kind if kind == 'text' else f'{kind} text'}: {controls:,} of its "
                f"{len(text):,} characters are control "
                "characters (binary data, or UTF-16 without a byte-order mark in a script other "
                "than Latin: save it as UTF-8)")
    return DecodedText(text.replace("\r\n", "\n").replace("\r", "\n"), notes)


def control_characters(text: str) -> int:
    """How many of ``text``'s characters are control characters other than tab, line feed,
    carriage return and form feed."""
    return len(_CONTROL.findall(text))


def text_charset(data: bytes) -> str | None:
    """The charset :func:`decode_text` reads ``data`` by, as an HTTP ``charset`` names it:
    ``"utf-8"``, a byte-order mark's (``"utf-16le"``), or ``"windows-1252"`` when plainly that;
    None for bytes it fails on."""
    for mark, codec, _ in _MARKS:
        if data.startswith(mark):
            return codec.replace("-le", "le").replace("-be", "be")
    try:
        decoded = decode_text(data, "text")
    except ExtractionError:
        return None
    guessed = dict(decoded.notes).get("charset_guessed")
    return guessed.replace("-le", "le").replace("-be", "be") if guessed else "utf-8"


def plainly_utf16(data: bytes) -> tuple[str, str] | None:
    """``(codec, text)`` of ``data`` read as UTF-16 without a mark when it is plainly that (the
    module docstring; a last odd byte, a file cut or ended by one ``\\n``, read as the ASCII it
    is), else None."""
    even = data[:len(data) - len(data) % 2]
    pairs = len(even) // 2
    if pairs < 2:
        return None
    low, high = even[0::2].count(0), even[1::2].count(0)
    for codec, nul_side, other in (("utf-16-le", high, low), ("utf-16-be", low, high)):
        if nul_side >= MIN_UTF16_SHARE * pairs and other <= (1 - MIN_UTF16_SHARE) * pairs:
            try:
                text = even.decode(codec)
            except UnicodeDecodeError:
                return None
            if len(data) % 2 and data[-1] < 0x80:
                text += chr(data[-1])
            if control_characters(text) > MAX_CONTROL_SHARE * len(text):
                return None
            return codec, text
    return None


def plainly_windows_1252(data: bytes) -> str | None:
    """``data`` read as windows-1252 when it is plainly that (the module docstring), else None."""
    high = len(data) - len(data.translate(None, _HIGH_BYTES))
    if (b"\x00" in data or high > MAX_GUESSED_SHARE * len(data) or _HIGH_RUN.search(data)
            or _UTF8_CHARACTER.search(data)):
        return None
    try:
        return data.decode(GUESSED_CHARSET)
    except UnicodeDecodeError:  # 0x81, 0x8D, 0x8F, 0x90 or 0x9D: no windows-1252 character
        return None
