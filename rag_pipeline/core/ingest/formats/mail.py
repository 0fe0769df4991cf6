"""Mail: a message (``.eml``) titled by its subject, each attachment a document; mailboxes (``.mbox``).

Parsed by the standard library's ``email`` with its default (RFC 5322, RFC 2047 headers) policy.
A message's own document is its subject line, then ``From``, ``To``, ``Cc`` and ``Date`` as
header lines, then its body: the ``text/plain`` part, else the ``text/html`` part rendered by
:func:`~rag_pipeline.core.ingest.formats.html.extract_html` (the standard library's
``get_body``), the HTML alternative when the plain one is a stub (a quarter of its text or
less: "view this message in a browser") or when the HTML holds a table (whose rows are then
cited as a table's: under their header, ``rows=``); the subject titles one section holding the
rest.

Text is decoded by its declared charset (``iso-8859-1`` read as windows-1252, which only adds
characters where it has controls: :data:`~.bom_text.SINGLE_BYTE_SUPERSETS`); else (undeclared
8-bit, a wrong or unknown charset) as UTF-8; else by the wider charset mail programs write under a
multi-byte name (``gb2312`` as GB18030, ``shift_jis`` as cp932:
:data:`~.bom_text.MULTI_BYTE_SUPERSETS`); else, unless it is plainly windows-1252 (as
:func:`~rag_pipeline.core.ingest.bom_text.plainly_windows_1252` says: a Western mail labelled
UTF-8), by the declared charset with its few bytes that are not of it (at most
:data:`~.bom_text.MAX_REPLACED_SHARE`: a stray byte) replaced by U+FFFD, and the notes count them
(``charset_replaced``); else as windows-1252, and the notes say so (``charset_guessed``). An HTML
part is read so by its MIME header's charset, whatever its ``<meta>`` says (a mail program converts
the text, not the markup); without one, by its ``<meta>`` charset. Only the parts read into the
document are noted (not an HTML alternative the plain text was kept over).

Its attachments (every part but the body and its alternatives: an inline ``text/html`` part after a
plain body too, and the images an HTML body shows from its ``multipart/related`` part) are members
``message.eml/<file name>`` (a message whose own type is ``message/rfc822``, a forward wrapped
whole, has the message it encloses as its one attachment): the name is the attachment's own file
name without any folder part, ``report (<tag>).pdf`` when another attachment has that name, or
``attachment-<tag>`` with the extension of its type, the tag from its bytes
(:func:`attachment_names`: a name never tells of the attachments a reader may not see); an attached
message is ``<name>.eml`` and is expanded in turn. A message with more than ``max_attachments``
attachments fails as a whole; an attachment over ``max_document_bytes`` fails alone.

A mailbox is split at its ``From `` lines (mboxo and mboxrd: a quoted ``>From `` line loses one
``>``), those that read ``From SENDER WEEKDAY ...`` as mail programs write them, or that a
header line follows, when the file starts with one (so an unquoted body line "From here
on..." splits nothing); its messages are members named by their ``Message-ID``
(``inbox.mbox/CAF1x2@mail.example.org.eml``, made safe: a message keeps its name, and its
citations, when others are added or deleted), ``inbox.mbox/message-<tag>.eml`` (from its
bytes) for one without or whose id an earlier message has, at most ``max_members`` of them.
"""

from __future__ import annotations

import codecs
import collections
import email.errors
import email.header
import email.policy
import hashlib
import mimetypes
import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rag_pipeline.core.ingest.bom_text import CharsetReading, decode_declared
from rag_pipeline.core.ingest.extracted import (
    Extracted,
    ExtractionError,
    Extractor,
    Section,
    TableSpan,
)
from rag_pipeline.core.ingest.file_signature import signature_of
from rag_pipeline.core.ingest.formats.base import ContainerFormat
from rag_pipeline.core.ingest.formats.html import declared_charset, extract_html
from rag_pipeline.core.ingest.members import Expansion, Member, UniqueNames, Unpacking, printable_name

_HEADERS = ("From", "To", "Cc", "Date")
_FROM_LINE = re.compile(rb"^From [^\n]*\n", re.MULTILINE)
_STRICT_FROM_LINE = re.compile(
    rb"^From \S+ +(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\b[^\n]*\n"  # as mail programs write it
    rb"|^From [^\n]*\n(?=[!-9;-~]+:[ \t])",  # or any, followed by a header line
    re.MULTILINE)
_STUB_SHARE = 0.25
"""A plain alternative with at most this share of the HTML one's text is a stub."""
_QUOTED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)


MAX_PARSED_HEADER_CHARS = 4096
"""A longer header value is decoded word by word (RFC 2047 alone, :func:`_encoded_words`), not
parsed as an address list by the ``email`` policy, whose time and memory grow with the square
of a value's size: a 40 KB ``To`` of quote marks took 20 s, a 280 KB ``Subject`` of encoded
words 2.7 GB."""


def _header(message: object, name: str, reading: CharsetReading) -> str:
    """A header's value decoded (RFC 2047; raw 8-bit bytes as
    :func:`~rag_pipeline.core.ingest.bom_text.decode_declared` reads them), or as it is
    written when the policy cannot parse it (a broken address list)."""
    raw = next((value for key, value in message.raw_items() if key.lower() == name.lower()), None)
    if isinstance(raw, str) and _SURROGATE.search(raw):  # 8-bit bytes in a header
        value = _encoded_words(_whole_quads(
            decode_declared(raw.encode("ascii", "surrogateescape"), None, reading)), reading)
    elif isinstance(raw, str) and (len(raw) > MAX_PARSED_HEADER_CHARS or (
            name not in _ADDRESS_FIELDS and _ENCODED_WORD.search(raw))):
        value = _encoded_words(_whole_quads(raw), reading)
    elif isinstance(raw, str) and name in _ADDRESS_FIELDS and _COMMENT.search(raw):
        # The policy's address parser drops comments: the sender's name of an old-style
        # ``From: bbb@ddd.com (John X. Doe)``, as mailing-list archives write it.
        value = _encoded_words(_whole_quads(raw), reading)
    else:
        try:
            mended = _whole_quads(raw) if isinstance(raw, str) else raw
            value = (message.get(name) if mended == raw
                     else message.policy.header_factory(name, mended))
        except Exception:  # email's header parser raises several kinds on malformed values
            value = raw or ""
    return " ".join(str(value or "").split())


_ADDRESS_FIELDS = ("From", "To", "Cc")
_COMMENT = re.compile(r"\([^()]*\)")
"""An RFC 5322 comment in a header (the quoted-string corner cases aside)."""


_BASE64_WORD = re.compile(r"=\?([^?\s]+)\?[bB]\?([A-Za-z0-9+/]*)\?=")


def _whole_quads(value: str) -> str:
    """``value`` with each base64 encoded word cut one character past a whole group of four
    (a subject cut short by a mail program) cut back to its whole groups: that character holds
    no whole byte, and the ``email`` policy would give the word's base64 text as its words."""
    return _BASE64_WORD.sub(lambda word: word[0] if len(word[2]) % 4 != 1
                            else f"=?{word[1]}?b?{word[2][:-1]}?=", value)


_SURROGATE = re.compile("[\udc80-\udcff]")


_ENCODED_WORD = re.compile(r"=\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=")
_ENCODED_RUN = re.compile(rf"(?:{_ENCODED_WORD.pattern})+")
"""Encoded words one after the other (the white space between them removed first)."""
_BETWEEN_WORDS = re.compile(r"(?<=\?=)[ \t\r\n]+(?==\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=)")
"""White space between two encoded words, which RFC 2047 says is no text."""


def _encoded_words(value: str, reading: CharsetReading) -> str:
    """``value`` with its RFC 2047 encoded words decoded and the text between them exactly as it
    is (a literal ``\\u0041`` stays six characters: decoding the whole value, the standard
    library's ``decode_header`` reads it as an escape). Adjacent words of one charset are joined
    before they are decoded (a long subject cuts a character's bytes between two), and decoded
    as a body of that charset is (:func:`~rag_pipeline.core.ingest.bom_text.decode_declared`:
    GBK characters under ``gb2312``, UTF-8 under a wrong label); a word that is no encoded word
    once read stays as it is."""
    def decoded(run: re.Match[str]) -> str:
        pieces: list[tuple[str | None, bytes | str]] = []
        for word in _ENCODED_WORD.finditer(run.group()):
            try:
                ((chunk, charset),) = email.header.decode_header(word.group())
            except (ValueError, email.errors.HeaderParseError):
                chunk, charset = word.group(), None
            if isinstance(chunk, bytes) and pieces and isinstance(pieces[-1][1], bytes) \
                    and pieces[-1][0] == charset:
                pieces[-1] = (charset, pieces[-1][1] + chunk)
            else:
                pieces.append((charset, chunk))
        return "".join(decode_declared(chunk, charset, reading) if isinstance(chunk, bytes)
                       else chunk for charset, chunk in pieces)

    return _ENCODED_RUN.sub(decoded, _BETWEEN_WORDS.sub("", value))


def _payload(part: object) -> bytes:
    """A part's decoded bytes.

    Raises:
        ValueError: Its base64 is cut short: email hands back the base64 text itself, which
            would be read as the part's words.
    """
    payload = part.get_payload(decode=True) or b""
    if any(isinstance(defect, email.errors.InvalidBase64LengthDefect) for defect in part.defects):
        raise ValueError("its base64 is cut short (a length no base64 has): the message was "
                         "truncated or damaged in transit")
    return payload


def _part_text(part: object, reading: CharsetReading) -> str:
    return decode_declared(_payload(part), part.get_content_charset(), reading)


@dataclass(frozen=True)
class _Body:
    """A message's body: its text, the tables in it (an HTML body's), the part it came from."""

    text: str
    tables: tuple[TableSpan, ...] = ()
    part: object | None = None


def _html_body(part: object, reading: CharsetReading) -> _Body:
    """An HTML part read by the HTML reader, white space trimmed, its tables kept: decoded here,
    by its MIME charset, else its ``<meta>`` one (:func:`_decoded`), and handed on with a UTF-8
    byte-order mark, which the reader trusts over a ``<meta>`` charset."""
    payload = _payload(part)
    charset = part.get_content_charset() or declared_charset(payload)
    read = extract_html(codecs.BOM_UTF8 + decode_declared(payload, charset, reading).encode(), "")
    text = read.canonical_text.strip()
    lead = len(read.canonical_text) - len(read.canonical_text.lstrip())
    return _Body(text, tuple(table.shifted(-lead) for table in read.tables), part)


def _body(message: object, reading: CharsetReading) -> _Body:
    """The body (the plain part's HTML alternative when the plain one is a stub, or when the
    HTML holds a table: a plain rendering of a table is loose lines, the HTML keeps each row
    under its header)."""
    body = message.get_body(preferencelist=("plain", "html"))
    if body is None:
        return _Body("")
    if body.get_content_type() == "text/html":
        return _html_body(body, reading)
    plain = _part_text(body, reading).replace("\r\n", "\n").strip()
    html = message.get_body(preferencelist=("html",))
    if html is not None and html is not body:
        alternative = CharsetReading()
        rich = _html_body(html, alternative)
        if len(plain) <= _STUB_SHARE * len(rich.text) or rich.tables:
            reading.add(alternative)
            return rich
    return _Body(plain, (), body)


def _resources(part: object) -> list[object]:
    """What a ``multipart/related`` part holds besides its root (the images its HTML shows, a
    chart with its figures), also inside a ``multipart/alternative``: ``iter_attachments``
    passes over the part that holds the body, and these with it."""
    if part.get_content_type() == "multipart/related":
        return list(part.iter_attachments())
    if part.get_content_type() == "multipart/alternative":
        return [inner for child in part.iter_parts() for inner in _resources(child)]
    return []


def _attachments(message: object, body: object | None) -> list[object]:
    """Every part but the body and the alternatives around it: besides what
    ``iter_attachments`` gives, an inline part it passes over as a body candidate (an HTML
    part after a plain body) and the resources of the body's related part (:func:`_resources`);
    a nested multipart part (an alternative forwarded inline) as its own body and attachments,
    in turn."""
    if message.get_content_type() == "message/rfc822":
        return [message]
    found = list(message.iter_attachments())
    listed = {id(part) for part in found}
    if message.get_content_type() == "multipart/mixed":
        found = [part for part in message.iter_parts() if id(part) in listed
                 or not (body is not None and any(inner is body for inner in part.walk()))]
    taken = {id(part) for part in found}
    found += [inner for part in message.iter_parts() if id(part) not in taken
              for inner in _resources(part)]
    parts: list[object] = []
    for part in found:
        if part.get_content_maintype() == "multipart":
            inner = part.get_body(preferencelist=("plain", "html"))
            parts.extend([inner] if inner is not None else [])
            parts.extend(_attachments(part, inner))
        else:
            parts.append(part)
    return parts


CONTENT_TAG_CHARS = 12
"""Hex digits of a part's SHA-256 in a name made from its content (``attachment-<tag>.png``)."""


def content_tag(data: bytes) -> str:
    """The first :data:`CONTENT_TAG_CHARS` hex digits of ``data``'s SHA-256."""
    return hashlib.sha256(data).hexdigest()[:CONTENT_TAG_CHARS]


def _own_name(part: object) -> str:
    """An attachment's own file name without any folder part, made printable ("" for none);
    an attached message's ends in ``.eml``."""
    try:
        name = part.get_filename() or ""
    except Exception:  # noqa: BLE001 - a header the parser cannot read names nothing
        name = ""
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = printable_name(name).strip().lstrip(".")
    if part.get_content_type() == "message/rfc822" and name:
        return f"{name.removesuffix('.eml')}.eml"
    return name


def attachment_names(parts: Sequence[object], payloads: Sequence[bytes | None]
                     ) -> list[str | None]:
    """A member name for each attachment that says nothing of the others (a reader may be
    shown one attachment and not its siblings): its own file name; ``stem (<tag>).ext`` when
    another attachment has that name; ``attachment-<tag>.ext`` (the extension of its type) for
    one without a name; the tag from its bytes (:func:`content_tag`; ``unreadable`` for a part
    that cannot be decoded), never from its place. An attachment of the name and bytes of an
    earlier one is that one again: None (numbered, ``name (2)``, it told a reader of the copy
    a rule hid). Parts that cannot be decoded are numbered."""
    own = [_own_name(part) for part in parts]
    shared = {name for name, count in collections.Counter(own).items() if count > 1 and name}
    unique = UniqueNames()
    seen: set[str] = set()
    names: list[str | None] = []
    for part, name, payload in zip(parts, own, payloads, strict=True):
        tag = content_tag(payload) if payload is not None else "unreadable"
        if not name:
            extension = (".eml" if part.get_content_type() == "message/rfc822"
                         else ".txt" if part.get_content_type() in STATUS_REPORTS
                         else mimetypes.guess_extension(part.get_content_type())
                         or (".txt" if part.get_content_maintype() == "text" else ".bin"))
            name = f"attachment-{tag}{extension}"
        elif name in shared:
            stem, extension = posixpath.splitext(name)
            name = f"{stem} ({tag}){extension}"
        if payload is not None and name in seen:
            names.append(None)
            continue
        seen.add(name)
        names.append(unique(name))
    return names


def _attachment_data(part: object) -> bytes:
    """An attachment's bytes; an attached message as the bytes of a message (a broken one
    re-encoded as UTF-8, which its own reading then judges); a text part whose declared charset
    reads it as UTF-8 with a byte-order mark, so its format reads the text the mail declares
    (an ISO-8859-1 HTML part's bytes alone, with no charset in the page, read as Big5)."""
    if part.get_content_maintype() == "text":
        payload = _payload(part)
        charset = part.get_content_charset()
        try:
            if charset and codecs.lookup(charset).name not in ("utf-8", "ascii"):
                return codecs.BOM_UTF8 + payload.decode(charset).encode("utf-8")
        except (LookupError, UnicodeError):  # unknown or wrong: the format's reading judges
            pass
        return payload
    if part.get_content_type() == "message/rfc822":
        inner = part.get_payload()
        inner = inner[0] if isinstance(inner, list) and inner else inner
        if not hasattr(inner, "as_bytes"):
            return b""
        try:
            return inner.as_bytes()
        except (UnicodeError, LookupError, ValueError):  # a header or part email cannot re-encode
            return inner.as_string().encode("utf-8", "replace")
    if part.get_content_type() in STATUS_REPORTS and isinstance(part.get_payload(), list):
        # Blocks of fields, parsed as messages without bodies: no bytes to decode. Written back
        # as they came: unfolded (a diagnostic's long URL whole) and 8-bit (a UTF-8 address).
        return b"".join(block.as_bytes(policy=_REPORT_AS_WRITTEN) for block in part.get_payload())
    return _payload(part)


_REPORT_AS_WRITTEN = email.policy.default.clone(utf8=True, max_line_length=0)


STATUS_REPORTS = ("message/delivery-status", "message/disposition-notification",
                  "message/global-delivery-status", "message/global-disposition-notification")
"""Machine-readable reports a bounce or a read receipt carries (``Action: failed``, ``Status:
5.1.1``): blocks of header fields, read as text (``attachment-<tag>.txt``)."""


def read_message(data: bytes, stem: str) -> tuple[Extracted, list[object]]:
    """The message's own document and its attachment parts.

    Raises:
        ExtractionError: The bytes are no message (no header at all).
    """
    import email
    import email.policy

    message = email.message_from_bytes(data, policy=email.policy.default)
    if not message.keys():
        what = signature_of(data)
        raise ExtractionError(f"unreadable mail: its bytes are {what}, not an RFC 5322 message"
                              if what else "unreadable mail: no header lines (not an RFC 5322 "
                              "message)")
    reading = CharsetReading()
    subject = _header(message, "Subject", reading)
    title = subject or stem
    headers = "\n".join(f"{name}: {value}" for name in _HEADERS
                        if (value := _header(message, name, reading)))
    try:
        body = _body(message, reading)
        attachments = _attachments(message, body.part)
    except Exception as exc:  # email's MIME layer raises many kinds on broken structure
        raise ExtractionError(f"unreadable mail: {type(exc).__name__}: {exc}") from exc
    rest = "\n\n".join(part for part in (headers, body.text) if part)
    canonical = f"{title}\n\n{rest}\n" if rest else f"{title}\n"
    sections = (Section(title, len(title) + 2, len(canonical) - 1),) if rest else ()
    body_start = len(canonical) - 1 - len(body.text)
    return Extracted(title=title, canonical_text=canonical, sections=sections,
                     notes=reading.notes(),
                     tables=tuple(table.shifted(body_start) for table in body.tables)), attachments


_FIELD_NAME = re.compile(rb"[!-9;-~]+:")
"""A header field's name and its colon (RFC 5322: printable ASCII but the colon)."""
_MESSAGE_FIELDS = frozenset({b"to", b"cc", b"date", b"subject", b"message-id", b"received",
                             b"return-path", b"delivered-to", b"mime-version", b"reply-to",
                             b"content-type", b"in-reply-to", b"references"})
"""Fields a message carries beside ``From``."""
MAX_HEAD_BYTES = 65_536
"""How far a message's header block may run for :func:`looks_like_message`."""


def looks_like_message(data: bytes) -> bool:
    """Whether ``data`` begins as an Internet message does (RFC 5322): header fields and their
    folded lines up to the first blank line, within :data:`MAX_HEAD_BYTES`, nothing else
    before it, ``From`` among them and two more a message carries (``Date``, ``Subject``,
    ``Message-ID``, ``Received``...). A Maildir's files and mails saved without a suffix are
    such files."""
    head = data[:MAX_HEAD_BYTES]
    blank = re.search(rb"\r?\n\r?\n", head)
    if blank is None:
        return False
    fields: set[bytes] = set()
    for line in head[:blank.start()].split(b"\n"):
        line = line.rstrip(b"\r")
        if line[:1] in (b" ", b"\t") and fields:
            continue
        field = _FIELD_NAME.match(line)
        if field is None:
            return False
        fields.add(line[:field.end() - 1].lower())
    return b"from" in fields and len(fields & _MESSAGE_FIELDS) >= 2


_HEADER_LINES = re.compile(r"^(?:(?:From|To|Cc|Date|Sent|Subject): [^\n]*(?:\n|$))+", re.MULTILINE)
"""Consecutive header lines: a header block when one is ``From`` (or Outlook's ``Sent``), the
message's own or a forwarded one's in its body."""
_REPLY_LINES = re.compile(r"^[ \t]*>[^\n]*(?:\n[ \t]*>[^\n]*)*", re.MULTILINE)
"""Lines quoting an earlier message (``> Does anyone know why ...``)."""
_ATTRIBUTION = re.compile(r"^[ \t]*[^\s>][^\n]{0,300}:[ \t]*\n(?:[ \t]*\n)?(?=[ \t]*>)", re.MULTILINE)
"""The line that introduces a quoted message, ending in a colon right over its ``>`` lines
(``On Mon, 10 Mar 2025, Lars wrote:``, ``Le 10 mars 2025, Lars a écrit :``)."""
_SIGNATURE = re.compile(r"^--[ \t]?\n(?:(?![ \t]*>)[^\n]*(?:\n|$))*", re.MULTILINE)
"""A signature: from its ``-- `` line (RFC 3676, 4.3) to the first quoted line or the end."""


class EmlFormat(ContainerFormat):
    """``.eml`` messages."""

    name = "eml"
    suffixes = (".eml",)

    def not_answers(self, text: str) -> list[tuple[int, int]]:
        """A header block (``From:``, ``To:``, ``Date:`` lines), quoted reply lines with the line
        that introduces them (``On ..., Lars wrote:``) and a signature: a date question quoted
        the header block, a cause question the earlier message's question; the earlier message
        is a document of its own."""
        blocks = [match.span() for match in _HEADER_LINES.finditer(text)
                  if re.search(r"^(?:From|Sent): ", match[0], re.MULTILINE)]
        return sorted(blocks + [match.span() for pattern in (_REPLY_LINES, _ATTRIBUTION, _SIGNATURE)
                                for match in pattern.finditer(text)])

    def extractor(self) -> Extractor:
        return Extractor("mail-email", "19")

    def expand(self, data: bytes, stem: str, unpacking: Unpacking) -> Expansion:
        """The message and its attachments (the module docstring).

        Raises:
            ExtractionError: No message, broken MIME structure, or over ``max_attachments``.
        """
        own, attachments = read_message(data, stem)
        limit = unpacking.limits.max_attachments
        if len(attachments) > limit:
            raise ExtractionError(f"more than {limit} attachments: over the limit per message "
                                  "(max_attachments)")

        payloads: list[bytes | None] = []
        errors: list[str | None] = []
        for part in attachments:
            try:
                payloads.append(_attachment_data(part))
                errors.append(None)
            except Exception as exc:  # email's MIME layer on a broken part: that part fails
                payloads.append(None)
                errors.append(f"unreadable attachment: {type(exc).__name__}: {exc}")
        names = attachment_names(attachments, payloads)
        repeated = names.count(None)

        def members() -> Iterator[Member]:
            for name, payload, error in zip(names, payloads, errors, strict=True):
                if name is None:  # the same attachment again
                    continue
                if payload is None:
                    yield Member(name, error=error)
                    continue
                if len(payload) > unpacking.max_member_bytes:
                    yield Member(name, error=f"too large: {len(payload)} bytes, over the limit of "
                                             f"{unpacking.max_member_bytes} bytes per document "
                                             "(max_document_bytes)")
                    continue
                unpacking.budget.take(len(payload))
                yield Member(name, payload)

        notes = (("attachments", str(len(attachments))),
                 *((("attachments_repeated", str(repeated)),) if repeated else ()))
        return Expansion(own, members(), notes)


def split_mbox(data: bytes) -> list[bytes]:
    """The messages of an mbox file, ``From `` separator lines removed and ``>From `` lines
    unquoted once."""
    starts = list(_STRICT_FROM_LINE.finditer(data))
    if not starts or starts[0].start() != 0:
        starts = list(_FROM_LINE.finditer(data))
    if not starts or starts[0].start() != 0:
        raise ExtractionError("unreadable mbox: it does not start with a 'From ' line")
    messages = []
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(data)
        messages.append(_QUOTED_FROM.sub(rb"\1", data[match.end():end]))
    return messages


_UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9._@+=-]+")
MESSAGE_NAME_CHARS = 120
"""The longest a message's name is, from its ``Message-ID`` (ids of 1,000 characters exist)."""


def message_names(messages: Sequence[bytes]) -> list[str | None]:
    """A member name for each message of a mailbox: ``<its Message-ID>.eml``, the id's angle
    brackets dropped and each run of characters outside ``A-Za-z0-9._@+=-`` a ``_``, cut at
    :data:`MESSAGE_NAME_CHARS`; ``message-<tag>.eml`` (its bytes' :func:`content_tag`, never
    its place: a reader shown one message learns nothing of the others) for a message without
    an id (or none left once made safe) or with one an earlier message has; None for a
    message whose bytes an earlier one of that name has (the same message again)."""
    from email.parser import BytesHeaderParser

    names: list[str | None] = []
    taken: set[str] = set()
    unique = UniqueNames()
    for message in messages:
        try:
            found = BytesHeaderParser().parsebytes(message).get("Message-ID")
        except Exception:  # noqa: BLE001 - a header the parser cannot read names nothing
            found = None
        safe = _UNSAFE_IN_NAME.sub("_", str(found or "").strip().strip("<>").strip())
        safe = safe.strip("._")[:MESSAGE_NAME_CHARS]
        if safe and f"{safe}.eml" not in taken:
            name = f"{safe}.eml"
        elif (name := f"message-{content_tag(message)}.eml") in taken:
            names.append(None)  # the same message again
            continue
        taken.add(name)
        names.append(unique(name))
    return names


class MboxFormat(ContainerFormat):
    """``.mbox`` mailboxes."""

    name = "mbox"
    suffixes = (".mbox",)
    chunked = False

    def extractor(self) -> Extractor:
        return Extractor("mbox-split", "5")

    def expand(self, data: bytes, stem: str, unpacking: Unpacking) -> Expansion:
        """The messages as members named by :func:`message_names`.

        Raises:
            ExtractionError: Not an mbox file, or over ``max_members`` messages.
        """
        messages = split_mbox(data)
        limit = unpacking.limits.max_members
        if len(messages) > limit:
            raise ExtractionError(f"more than {limit} messages: over the limit per "
                                  "mailbox (max_members)")
        names = message_names(messages)
        members = (Member(name, message)
                   for name, message in zip(names, messages, strict=True) if name is not None)
        repeated = names.count(None)
        return Expansion(None, members, (("messages", str(len(messages))),
                                         *((("messages_repeated", str(repeated)),)
                                           if repeated else ())))
