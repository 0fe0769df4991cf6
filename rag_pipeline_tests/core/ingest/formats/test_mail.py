"""Mail: a message titled by its subject with its text (or HTML) body, each attachment a
document read by its own format (``message.eml/report.md``); mailboxes split into messages;
a mail with too many attachments fails as a whole."""

from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage
from pathlib import Path

import pytest

from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.ingest.extracted import ExtractionError, Section
from rag_pipeline.core.ingest.formats.mail import (
    MAX_PARSED_HEADER_CHARS,
    EmlFormat,
    MboxFormat,
    content_tag,
    split_mbox,
)

EML = EmlFormat()


def message(subject: str = "Site report: =?utf-8?q?caf=C3=A9?=", html: bool = False) -> EmailMessage:
    mail = EmailMessage()
    mail["Subject"] = subject
    mail["From"] = "Ana Li <ana@example.org>"
    mail["To"] = "team@example.org"
    mail["Date"] = "Tue, 01 Dec 2026 09:00:00 +0000"
    if html:
        mail.set_content("<html><body><nav>menu</nav><p>The <b>gauges</b> read high.</p></body></html>",
                         subtype="html")
    else:
        mail.set_content("The gauges read high.\r\nSee the attachments.\r\n")
        mail.add_alternative("<p>ignored: the plain part wins</p>", subtype="html")
    return mail


ENCLOSED_TAG = "153ff99931fd"
"""The :func:`content_tag` of the message :func:`with_attachments` encloses."""


def with_attachments() -> bytes:
    mail = message()
    mail.add_attachment(b"# Readings\n\nTwelve gauges.\n", maintype="text", subtype="markdown",
                        filename="../../readings.md")  # Planted: a folder part, dropped
    mail.add_attachment(b"second copy\n", maintype="text", subtype="plain", filename="readings.md")
    mail.add_attachment(b"no name given\n", maintype="text", subtype="plain")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("exports/one.txt", "one export\n")
    mail.add_attachment(archive.getvalue(), maintype="application", subtype="zip",
                        filename="exports.zip")
    forwarded = message("Earlier note")
    forwarded.set_boundary("earlier-note")  # its bytes, and so its attachment's name, fixed
    mail.add_attachment(forwarded)
    return mail.as_bytes()


def test_the_message_is_its_subject_headers_and_plain_body():
    own = EML.extract(message().as_bytes(), "mail")
    assert own.title == "Site report: café"
    assert own.canonical_text == ("Site report: café\n\n"
                                  "From: Ana Li <ana@example.org>\n"
                                  "To: team@example.org\n"
                                  "Date: Tue, 01 Dec 2026 09:00:00 +0000\n\n"
                                  "The gauges read high.\nSee the attachments.\n")
    assert own.sections == (Section("Site report: café", 19, len(own.canonical_text) - 1),)


def test_an_html_only_body_goes_through_the_html_reader():
    own = EML.extract(message("HTML", html=True).as_bytes(), "mail")
    assert own.canonical_text.endswith("+0000\n\nThe gauges read high.\n")  # the nav is chrome


def test_attachments_become_documents_read_by_their_own_formats(tmp_path: Path):
    (tmp_path / "report.eml").write_bytes(with_attachments())
    records = extract_corpus(tmp_path).records
    # Named by their bytes, never by their place or their siblings (found by an attack:
    # ``attachment-3`` beside two attachments told a reader of a third one hidden from them).
    first, second, unnamed = (content_tag(b"# Readings\n\nTwelve gauges.\n"),
                              content_tag(b"second copy\n"), content_tag(b"no name given\n"))
    enclosed = ENCLOSED_TAG
    assert [(r.document_id, r.status, r.format, r.title) for r in records] == [
        ("report.eml", "ok", "eml", "Site report: café"),
        (f"report.eml/readings ({first}).md", "ok", "markdown", "Readings"),
        (f"report.eml/readings ({second}).md", "ok", "markdown", f"readings ({second})"),
        (f"report.eml/attachment-{unnamed}.txt", "ok", "text", f"attachment-{unnamed}"),
        ("report.eml/exports.zip", "ok", "zip", "exports"),
        ("report.eml/exports.zip/exports/one.txt", "ok", "text", "one"),
        (f"report.eml/attachment-{enclosed}.eml", "ok", "eml", "Earlier note"),
    ]
    assert records[0].notes == (("attachments", "5"), ("members", "5"), ("members_ok", "5"),
                                ("members_failed", "0"), ("members_skipped", "0"))
    assert records[2].canonical_text == "second copy\n"


def test_a_message_that_is_a_wrapped_message_has_it_as_its_attachment(tmp_path: Path):
    # A forward sent as "Content-Type: message/rfc822" at the top (no multipart around it):
    # iter_attachments gives nothing for it, so the enclosed message's text was lost.
    (tmp_path / "forward.eml").write_bytes(
        b"Content-Type: message/rfc822\nMIME-Version: 1.0\nSubject: The enclosing message\n\n"
        b"Subject: An enclosed message\n\nHere is the body of the message.\n")
    enclosed = b"Subject: An enclosed message\n\nHere is the body of the message.\n"
    records = extract_corpus(tmp_path).records
    assert [(r.document_id, r.status, r.title, r.canonical_text) for r in records] == [
        ("forward.eml", "ok", "The enclosing message", "The enclosing message\n"),
        (f"forward.eml/attachment-{content_tag(enclosed)}.eml", "ok", "An enclosed message",
         "An enclosed message\n\nHere is the body of the message.\n"),
    ]


def test_a_mail_with_500_attachments_fails_as_a_whole_and_the_run_goes_on(tmp_path: Path):
    mail = message()
    for number in range(500):  # Planted: over the 100 attachments a message may hold
        mail.add_attachment(b"x\n", maintype="text", subtype="plain", filename=f"a{number}.txt")
    (tmp_path / "flood.eml").write_bytes(mail.as_bytes())
    (tmp_path / "fine.eml").write_bytes(message().as_bytes())
    records = extract_corpus(tmp_path).records
    assert [(r.document_id, r.status, r.error) for r in records] == [
        ("fine.eml", "ok", None),
        ("flood.eml", "failed", "more than 100 attachments: over the limit per message (max_attachments)"),
    ]


def test_a_mailbox_is_split_into_messages(tmp_path: Path):
    first = message("One").as_bytes()
    second = message("Two").as_bytes().replace(b"See the attachments.", b"From here on, quoted.")
    quoted = second.replace(b"From here on", b">From here on")
    mbox = (b"From ana@example.org Tue Dec  1 09:00:00 2026\n" + first + b"\n"
            b"From ana@example.org Tue Dec  1 10:00:00 2026\n" + quoted + b"\n")
    assert split_mbox(mbox) == [first + b"\n", second + b"\n"]
    (tmp_path / "inbox.mbox").write_bytes(mbox)
    records = extract_corpus(tmp_path).records
    one, two = content_tag(first + b"\n"), content_tag(second + b"\n")
    assert [(r.document_id, r.format, r.title) for r in records] == [
        ("inbox.mbox", "mbox", "inbox"), (f"inbox.mbox/message-{one}.eml", "eml", "One"),
        (f"inbox.mbox/message-{two}.eml", "eml", "Two")]
    assert records[0].canonical_text == f"message-{one}.eml\nmessage-{two}.eml\n"
    with pytest.raises(ExtractionError, match="^unreadable mbox: it does not start with a 'From ' line$"):
        MboxFormat().extract(b"Subject: no separator\n\nbody\n", "broken")


def test_bytes_without_headers_are_no_mail():
    reason = r"^unreadable mail: no header lines \(not an RFC 5322 message\)$"
    with pytest.raises(ExtractionError, match=reason):
        EML.extract(b"\n\njust a body\n", "broken")
    # An Outlook .msg saved under .eml (found by a new user) is named for what it is.
    with pytest.raises(ExtractionError, match=r"^unreadable mail: its bytes are an old Office "
                       r"document \(.doc, .xls, .ppt\) or an Outlook .msg, not an RFC 5322 message$"):
        EML.extract(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504), "outlook")


def test_a_pdf_attachment_is_read_as_a_pdf_and_cites_its_page(tmp_path: Path):
    from rag_pipeline_tests.core.ingest.test_corpus import text_pdf

    mail = message("Minutes")
    mail.add_attachment(text_pdf([["Page one of the minutes."], ["Page two: the gauges."]]),
                        maintype="application", subtype="pdf", filename="minutes.pdf")
    (tmp_path / "minutes.eml").write_bytes(mail.as_bytes())
    records = {r.document_id: r for r in extract_corpus(tmp_path).records}
    pdf = records["minutes.eml/minutes.pdf"]
    assert (pdf.status, pdf.format, [a.locator for a in pdf.anchors]) == ("ok", "pdf", ["page=1", "page=2"])
    assert pdf.path == str(tmp_path / "minutes.eml" / "minutes.pdf")


def test_a_mailbox_over_the_message_limit_fails_unread(tmp_path: Path):
    from rag_pipeline.core.ingest.containers import extract_file
    from rag_pipeline.core.ingest.members import ContainerLimits

    one = b"From a@example.org Tue Dec  1 09:00:00 2026\n" + message("x").as_bytes() + b"\n"
    (tmp_path / "big.mbox").write_bytes(one * 11)  # Planted: 11 messages, the limit 10
    (record,) = extract_file(tmp_path / "big.mbox", tmp_path, limits=ContainerLimits(max_members=10)).records
    assert (record.status, record.error) == ("failed", "more than 10 messages: over the limit per "
                                                       "mailbox (max_members)")


@pytest.mark.parametrize(("headers", "body"), [
    (b"Subject: Caf\xe9 r\xe9union\n", b"Nous nous r\xe9unissons au caf\xe9.\n"),  # undeclared 8-bit
    (b"Subject: Caf\xe9 r\xe9union\nContent-Type: text/plain; charset=utf-8\n",  # declared wrongly
     b"Nous nous r\xe9unissons au caf\xe9.\n"),
    (b"Subject: Caf\xe9 r\xe9union\nContent-Type: text/plain; charset=x-bogus\n",  # unknown
     b"Nous nous r\xe9unissons au caf\xe9.\n"),
])
def test_text_in_no_charset_a_wrong_or_an_unknown_one_is_read_as_windows_1252_and_said(
        headers: bytes, body: bytes):
    extracted = EML.extract(b"From: ana@example.org\n" + headers + b"\n" + body, "m")
    assert extracted.canonical_text == ("Caf\u00e9 r\u00e9union\n\nFrom: ana@example.org\n\n"
                                        "Nous nous r\u00e9unissons au caf\u00e9.\n")
    assert ("charset_guessed", "windows-1252") in extracted.notes


@pytest.mark.parametrize(("subject", "title"), [
    # "Ünïcode subject" in base64 cut one character past a whole group of four: that character
    # holds no whole byte, so the words end at "subje" (the policy alone gives the base64 text).
    (b"=?utf-8?b?w5xuw69jb2RlIHN1YmplY?=", "Ünïcode subje"),
    (b"=?utf-8?B?w5xuw69jb2RlIHN1YmplY?= \xc3\xa9t\xc3\xa9", "Ünïcode subje été"),  # 8-bit too
    (b"=?utf-8?b?w5xuw69jb2RlIHN1YmplY3Q=?=", "Ünïcode subject"),  # whole: as it was
])
def test_a_subject_whose_base64_word_is_cut_short_keeps_its_whole_bytes(subject: bytes,
                                                                        title: str):
    assert EML.extract(b"From: ana@example.org\nSubject: " + subject + b"\n\nBody.\n",
                       "m").title == title


def test_a_declared_charset_and_utf8_need_no_guess():
    mail = EmailMessage()
    mail["Subject"] = "Gr\u00fc\u00dfe"
    mail.set_content("Sch\u00f6ne Gr\u00fc\u00dfe aus K\u00f6ln.\n", charset="iso-8859-1")
    extracted = EML.extract(mail.as_bytes(), "m")
    assert "Sch\u00f6ne Gr\u00fc\u00dfe aus K\u00f6ln." in extracted.canonical_text
    assert not any(name == "charset_guessed" for name, _ in extracted.notes)


def test_a_plain_stub_gives_way_to_its_html_alternative():
    mail = EmailMessage()
    mail["Subject"] = "Figures"
    mail.set_content("View this message in a browser.\n")
    mail.add_alternative("<p>The quarterly figures: revenue rose 12 percent in the north, held "
                         "level in the south, and fell 3 percent in the west region.</p>",
                         subtype="html")
    text = EML.extract(mail.as_bytes(), "m").canonical_text
    assert "revenue rose 12 percent" in text and "View this message" not in text


def test_a_table_in_the_html_body_is_cited_row_by_row_under_its_header():
    mail = EmailMessage()
    mail["Subject"] = "Tasks"
    mail["From"] = "ana@example.org"
    mail.set_content("Owner\tTask\nLena\tEvidence export\nBo\tAudit log\n")  # a client's rendering
    mail.add_alternative("<p>This week:</p><table><tr><th>Owner</th><th>Task</th></tr>"
                         "<tr><td>Lena</td><td>Evidence export</td></tr>"
                         "<tr><td>Bo</td><td>Audit log</td></tr></table>", subtype="html")
    own = EML.extract(mail.as_bytes(), "m")
    assert own.canonical_text == ("Tasks\n\nFrom: ana@example.org\n\nThis week:\n\n"
                                  "Owner\tTask\n\nLena\tEvidence export\n\nBo\tAudit log\n")
    (table,) = own.tables
    text = own.canonical_text
    assert text[table.start:table.header_end] == table.header == "Owner\tTask"
    assert [text[start:start + 4] for start in table.rows] == ["Lena", "Bo\tA"]
    assert text[table.start:table.end] == "Owner\tTask\n\nLena\tEvidence export\n\nBo\tAudit log"
    assert EML.cited_fragment(own.anchors, own.tables, table.rows[1], table.end) == (
        f"#char={table.rows[1]},{table.end}&rows=2-2")
    assert EML.header_above(own.tables, table.rows[1], table.end) == "Owner\tTask"


def test_an_inline_html_part_after_a_plain_body_is_an_attachment(tmp_path: Path):
    mail = message()
    mail.make_mixed()
    extra = EmailMessage()
    extra.set_content("Second plain part.\n")
    html = EmailMessage()
    html.set_content("<p>Third part, in HTML.</p>", subtype="html")
    mail.attach(extra)
    mail.attach(html)
    (tmp_path / "m.eml").write_bytes(mail.as_bytes())
    texts = {r.document_id: r.canonical_text for r in extract_corpus(tmp_path).records}
    tags = content_tag(b"Second plain part.\n"), content_tag(b"<p>Third part, in HTML.</p>\n")
    plain, html = f"m.eml/attachment-{tags[0]}.txt", f"m.eml/attachment-{tags[1]}.html"
    assert sorted(texts) == ["m.eml", plain, html]
    assert texts[html] == "Third part, in HTML.\n"
    assert "The gauges read high." in texts["m.eml"]


def test_a_text_attachment_is_read_in_the_charset_the_mail_declares(tmp_path: Path):
    # As CPython's email test data msg_10.txt: an HTML part in ISO-8859-1, quoted-printable,
    # whose page declares no charset (its bytes alone were guessed at as Big5: "\ufe57his").
    mail = message()
    mail.make_mixed()
    for subtype, body in (("html", "<p>\u00a1This is a Quoted Printable encoded message!</p>"),
                          ("plain", "Caf\u00e9 cr\u00e8me, \u00a1ol\u00e9!\n")):
        part = EmailMessage()
        part.set_content(body, subtype=subtype, charset="iso-8859-1", cte="quoted-printable")
        mail.attach(part)
    (tmp_path / "m.eml").write_bytes(mail.as_bytes())
    records = {r.document_id: r for r in extract_corpus(tmp_path).records}
    html, plain = (next(r for name, r in records.items() if name.endswith(suffix))
                   for suffix in (".html", ".txt"))
    assert html.canonical_text == "\u00a1This is a Quoted Printable encoded message!\n"
    assert plain.canonical_text == "Caf\u00e9 cr\u00e8me, \u00a1ol\u00e9!\n"
    assert [n for n in plain.notes if n[0] == "charset_guessed"] == []


def test_a_body_line_starting_with_from_splits_no_mailbox():
    mbox = (b"From ana@example.org Tue Dec  1 09:00:00 2026\nSubject: one\n\nFirst line.\n"
            b"From here on it is a sentence.\n\n"
            b"From bo@example.org Wed Dec  2 10:00:00 2026\nSubject: two\n\nSecond.\n")
    assert split_mbox(mbox) == [b"Subject: one\n\nFirst line.\nFrom here on it is a sentence.\n\n",
                                b"Subject: two\n\nSecond.\n"]
    # Separator lines without a weekday (a tool's own export) still split.
    assert split_mbox(b"From x\nSubject: a\n\nA.\nFrom y\nSubject: b\n\nB.\n") == [
        b"Subject: a\n\nA.\n", b"Subject: b\n\nB.\n"]


def test_a_separator_without_a_weekday_before_headers_still_splits_a_strict_mailbox():
    mbox = (b"From ana@example.org Tue Dec  1 09:00:00 2026\nSubject: one\n\nFirst.\n"
            b"From bo@example.org\nSubject: two\n\nSecond.\n")  # a mailbox appended by a tool
    assert split_mbox(mbox) == [b"Subject: one\n\nFirst.\n", b"Subject: two\n\nSecond.\n"]


def test_an_alternative_forwarded_inline_is_read_once_and_an_8bit_subject_keeps_its_encoded_words(
        tmp_path: Path):
    mail = message()
    mail.make_mixed()
    forwarded = EmailMessage()
    forwarded.set_content("Forwarded plain text.\n")
    forwarded.add_alternative("<p>Forwarded plain text.</p>", subtype="html")
    mail.attach(forwarded)
    (tmp_path / "m.eml").write_bytes(mail.as_bytes())
    texts = {r.document_id: r.canonical_text for r in extract_corpus(tmp_path).records}
    assert texts == {"m.eml": texts["m.eml"],
                     f"m.eml/attachment-{content_tag(b'Forwarded plain text.' + bytes([10]))}.txt":
                     "Forwarded plain text.\n"}
    raw = b"From: a@example.org\nSubject: =?utf-8?q?Caf=C3=A9?= \xe9t\xe9\n\nBody.\n"
    assert EML.extract(raw, "m").title == "Caf\u00e9 \u00e9t\u00e9"


def test_an_attachment_whose_base64_is_cut_short_fails_and_is_never_read_as_its_base64(
        tmp_path: Path):
    """Found by an attack: email hands back the base64 text of such a part, which was indexed
    as the attachment's words."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "cut.eml").write_bytes(
        b"From: a@example.org\nSubject: Cut\nMIME-Version: 1.0\n"
        b'Content-Type: multipart/mixed; boundary="B"\n\n--B\nContent-Type: text/plain\n\n'
        b"See the attachment.\n--B\nContent-Type: text/plain\n"
        b'Content-Disposition: attachment; filename="notes.txt"\n'
        b"Content-Transfer-Encoding: base64\n\nQjY0QVRUQUNIIHJlYWRhYmxlIHRle\n--B--\n")
    records = {r.document_id: (r.status, r.error) for r in extract_corpus(root).records}
    assert records == {"cut.eml": ("ok", None), "cut.eml/notes.txt": (
        "failed", "unreadable attachment: ValueError: its base64 is cut short (a length no base64 "
                  "has): the message was truncated or damaged in transit")}


def test_a_message_whose_body_base64_is_cut_short_fails_with_that_reason():
    """Found by a second attack: the body's base64 text was indexed as the message's words."""
    cut = (b"From: a@example.org\nSubject: Cut\nMIME-Version: 1.0\nContent-Type: text/plain\n"
           b"Content-Transfer-Encoding: base64\n\nVGhlIHNlY3JldCBxdWFydGVybHkg\n")
    with pytest.raises(ExtractionError) as failed:
        EML.extract(cut + b"Y\n", "cut")
    assert str(failed.value) == ("unreadable mail: ValueError: its base64 is cut short (a length "
                                 "no base64 has): the message was truncated or damaged in transit")
    assert "The secret quarterly" in EML.extract(cut, "whole").canonical_text


def test_a_header_over_4096_characters_is_decoded_word_by_word_not_parsed_as_addresses():
    """Found by an attack: the ``email`` policy's parser takes time and memory growing with the
    square of a value's size (a 40 KB ``To`` of quote marks: 20 s; a 280 KB ``Subject`` of
    encoded words: 2.7 GB), so one small mail held a whole run."""
    recipients = ", ".join(f'"=?utf-8?q?Jos=C3=A9?= N" <jose{i}@example.org>' for i in range(100))
    for to, shown in ((recipients, recipients.replace("=?utf-8?q?Jos=C3=A9?=", "José")),
                      ('"a' * 20_000, '"a' * 20_000)):
        mail = f"From: ana@example.org\nTo: {to}\nSubject: {'=?utf-8?q?a?= ' * 20_000}\n\nBody.\n"
        own = EML.extract(mail.encode(), "m")
        assert len(to) > MAX_PARSED_HEADER_CHARS
        assert own.canonical_text == f"{'a' * 20_000}\n\nFrom: ana@example.org\nTo: {shown}\n\nBody.\n"
    short = EML.extract(b'From: ana@example.org\nTo: "Jose N" <jose@example.org>\n\nBody.\n', "m")
    assert "To: Jose N <jose@example.org>" in short.canonical_text  # parsed: quotes it needs not


def test_a_mailboxs_messages_are_named_by_their_ids_so_a_deletion_renames_none(tmp_path: Path):
    """Found by a new user: messages were named by their place (``message-3.eml``), so deleting
    the second of five renamed every later one (added 2, changed 4, deleted 3), and an old
    citation of ``message-3.eml`` named another mail."""
    def mail(number: int, message_id: str | None) -> bytes:
        header = f"Message-ID: {message_id}\n" if message_id is not None else ""
        return (f"From ana@example.org Tue Dec  1 09:0{number}:00 2026\nFrom: ana@example.org\n"
                f"Subject: Note {number}\n{header}\nBody {number}.\n\n").encode()

    ids = ["<CAF1x2@mail.example.org>", None, "<a/b c@host>", "<CAF1x2@mail.example.org>", "<>"]
    (tmp_path / "inbox.mbox").write_bytes(b"".join(mail(n, i) for n, i in enumerate(ids, start=1)))
    names = [r.document_id for r in extract_corpus(tmp_path).records][1:]
    tags = [content_tag(mail(n, i).split(b"\n", 1)[1]) for n, i in enumerate(ids, start=1)]
    assert names == ["inbox.mbox/CAF1x2@mail.example.org.eml", f"inbox.mbox/message-{tags[1]}.eml",
                     "inbox.mbox/a_b_c@host.eml", f"inbox.mbox/message-{tags[3]}.eml",  # the id again
                     f"inbox.mbox/message-{tags[4]}.eml"]  # nothing left of the id
    (tmp_path / "inbox.mbox").write_bytes(b"".join(mail(n, i) for n, i in enumerate(ids, start=1)
                                                  if n != 1))
    assert "inbox.mbox/a_b_c@host.eml" in [r.document_id for r in extract_corpus(tmp_path).records]


def test_an_attachments_name_tells_nothing_of_its_siblings(tmp_path: Path):
    """Found by an attack: a reader shown ``notice.eml/agenda.txt`` and
    ``notice.eml/attachment-3.txt`` (the unnamed one) learned of a third attachment hidden from
    them, and ``report (2).txt`` of another ``report.txt``. A name now comes from the
    attachment's own name or bytes, never from its place or its siblings."""
    def notice(hidden: bool) -> bytes:
        mail = message()
        if hidden:
            mail.add_attachment(b"names\n", maintype="text", subtype="plain", filename="layoffs.txt")
            mail.add_attachment(b"hr copy\n", maintype="text", subtype="plain", filename="report.txt")
        mail.add_attachment(b"the agenda\n", maintype="text", subtype="plain", filename="agenda.txt")
        mail.add_attachment(b"no name given\n", maintype="text", subtype="plain")
        mail.add_attachment(b"staff copy\n", maintype="text", subtype="plain", filename="report.txt")
        return mail.as_bytes()

    names = {}
    for hidden in (True, False):
        (tmp_path / "notice.eml").write_bytes(notice(hidden))
        names[hidden] = [r.document_id for r in extract_corpus(tmp_path).records][1:]
    unnamed, hr, staff = (content_tag(b) for b in (b"no name given\n", b"hr copy\n", b"staff copy\n"))
    assert names[True] == ["notice.eml/layoffs.txt", f"notice.eml/report ({hr}).txt",
                           "notice.eml/agenda.txt", f"notice.eml/attachment-{unnamed}.txt",
                           f"notice.eml/report ({staff}).txt"]
    assert names[False] == ["notice.eml/agenda.txt", f"notice.eml/attachment-{unnamed}.txt",
                            "notice.eml/report.txt"]
    # Two attachments of one name and the same bytes are one document, counted (found by an
    # attack: numbered, "a (tag) (2).txt" told a reader of the copy a rule hid from them).
    twice = message()
    for _ in range(2):
        twice.add_attachment(b"same\n", maintype="text", subtype="plain", filename="a.txt")
    (tmp_path / "notice.eml").write_bytes(twice.as_bytes())
    records = extract_corpus(tmp_path).records
    same = content_tag(b"same\n")
    assert [r.document_id for r in records][1:] == [f"notice.eml/a ({same}).txt"]
    assert records[0].notes[:2] == (("attachments", "2"), ("attachments_repeated", "1"))


def test_the_images_an_html_body_shows_are_attachments(tmp_path: Path):
    """Found by a support team: a report's chart inside multipart/related (the body's HTML
    shows it by its Content-ID) was neither read nor counted."""
    def report(with_csv: bool) -> bytes:
        mail = message("Monthly report")
        mail.clear_content()
        mail.set_content("Queue depth is in the chart.\n")
        mail.add_alternative('<p>Queue depth: <img src="cid:chart"></p>', subtype="html")
        mail.get_payload()[1].add_related(b"\x89PNG chart", maintype="image", subtype="png",
                                          cid="<chart>", filename="queue-chart.png")
        if with_csv:  # multipart/mixed around the alternative
            mail.add_attachment(b"a,b\n1,2\n", maintype="text", subtype="csv",
                                filename="tickets.csv")
        return mail.as_bytes()

    for with_csv in (False, True):
        (tmp_path / "m.eml").write_bytes(report(with_csv))
        records = extract_corpus(tmp_path).records
        assert sorted(r.document_id for r in records) == [
            "m.eml", "m.eml/queue-chart.png", *(["m.eml/tickets.csv"] if with_csv else [])]
        assert records[0].notes[0] == ("attachments", "2" if with_csv else "1")


def test_a_message_twice_in_a_mailbox_is_one_document():
    """Found by an attack: the copy was ``message-<tag> (2).eml``, which told a reader of one
    copy of the other, hidden by a rule."""
    from rag_pipeline.core.ingest.formats.mail import message_names

    one, other = b"Subject: Note\n\nBody.\n", b"Subject: Other\n\nBody.\n"
    assert message_names([one, other, one]) == [
        f"message-{content_tag(one)}.eml", f"message-{content_tag(other)}.eml", None]


BOUNCE = b"""From: bbb@ddd.com (John X. Doe)
To: a@b.org
Subject: Returned mail: see transcript
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="B"

--B
Content-Type: text/plain

Your mail could not be delivered.

--B
Content-Type: message/delivery-status

Reporting-MTA: dns; mail.ddd.com

Final-Recipient: rfc822; nobody@b.org
Action: failed
Status: 5.0.0 (permanent failure)

--B--
"""


def test_a_bounces_delivery_status_is_read_and_an_old_style_senders_name_kept(tmp_path: Path):
    # Found by a team's mailing-list archive: the status part was skipped as "empty" (email
    # decodes no bytes of it), and "(John X. Doe)" was dropped from the sender.
    (tmp_path / "bounce.eml").write_bytes(BOUNCE)
    records = extract_corpus(tmp_path).records
    report = ("Reporting-MTA: dns; mail.ddd.com\n\nFinal-Recipient: rfc822; nobody@b.org\n"
              "Action: failed\nStatus: 5.0.0 (permanent failure)\n\n")
    tag = content_tag(report.encode())
    assert [(r.document_id, r.status, r.format) for r in records] == [
        ("bounce.eml", "ok", "eml"), (f"bounce.eml/attachment-{tag}.txt", "ok", "text")]
    assert records[0].canonical_text == (
        "Returned mail: see transcript\n\nFrom: bbb@ddd.com (John X. Doe)\nTo: a@b.org\n\n"
        "Your mail could not be delivered.\n")
    assert records[1].canonical_text == report


def test_a_delivery_status_report_is_read_as_written_unfolded_and_in_utf8(tmp_path: Path):
    # Found by an attack: a long diagnostic URL came out folded into an encoded word, and a
    # UTF-8 address of a global delivery-status as replacement characters.
    url = "https://support.google.com/mail/?p=NoSuchUser" + "x" * 80
    status = ("Reporting-MTA: dns; mx.example\n\nFinal-Recipient: rfc822; jörg@bücher.de\n"
              f"Action: failed\nDiagnostic-Code: smtp; 550 {url}\n")
    mail = ("From: a@b.example\nTo: c@d.example\nSubject: bounce\nMIME-Version: 1.0\n"
            'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\n\n'
            "--B\nContent-Type: text/plain\n\nfailed\n\n"
            f"--B\nContent-Type: message/global-delivery-status\n\n{status}\n--B--\n")
    (tmp_path / "bounce.eml").write_bytes(mail.encode("utf-8"))
    report = extract_corpus(tmp_path).records[1]
    assert (report.status, report.canonical_text) == ("ok", status)


def test_a_text_part_of_a_type_no_suffix_names_is_a_txt_attachment(tmp_path: Path):
    # Found by a team's bounces: a text/rfc822-headers part was named attachment-<tag>.bin.
    headers = "Received: from mx.example\nSubject: hello\n"
    mail = ("From: a@b.example\nSubject: bounce\nMIME-Version: 1.0\n"
            'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\n\n'
            "--B\nContent-Type: text/plain\n\nfailed\n\n"
            f"--B\nContent-Type: text/rfc822-headers\n\n{headers}\n--B--\n")
    (tmp_path / "bounce.eml").write_bytes(mail.encode())
    member = extract_corpus(tmp_path).records[1]
    assert (member.document_id, member.status) == (
        f"bounce.eml/attachment-{content_tag(headers.encode())}.txt", "ok")


def test_encoded_words_are_decoded_alone_and_the_text_between_kept_as_written():
    # Found by an attack: decoding the whole header read a literal "\u0041" as "A".
    message = (b"From: admin@b.example (C:\\u0041dmin) =?utf-8?q?J=C3=B6rg?=\n"
               b"Subject: =?utf-8?q?Caf=C3=A9?= =?utf-8?q?_menu?=\n\nBody.\n")
    text = EML.extract(message, "m").canonical_text
    assert text == "Café menu\n\nFrom: admin@b.example (C:\\u0041dmin) Jörg\n\nBody.\n"


@pytest.mark.parametrize(("charset", "words"), [
    ("gb2312", "会议改到星期四下午三点，请准时参加。"),
    ("shift_jis", "会議は木曜日の午後三時に変更されました。"),
    ("koi8-r", "Совещание перенесено на четверг."),
    ("iso-8859-1", "La réunion est déplacée à jeudi, café compris."),
])
def test_an_html_body_is_read_by_its_mime_charset_whatever_its_meta_says(charset: str, words: str):
    """Found by a helper on real mail (as Outlook writes it): the part was decoded by its MIME
    charset and handed on as UTF-8, then the HTML reader obeyed the ``<meta>`` still in it;
    gb2312 and shift_jis bodies were lost whole, koi8-r and latin-1 ones garbled."""
    mail = EmailMessage()
    mail["Subject"] = "meeting"
    html = (f'<html><head><meta http-equiv="Content-Type" content="text/html; charset={charset}">'
            f"</head><body><p>{words}</p></body></html>")
    mail.set_content(html.encode(charset), maintype="text", subtype="html",
                     params={"charset": charset}, cte="base64")
    extracted = EML.extract(mail.as_bytes(), "m")
    assert extracted.canonical_text == f"meeting\n\n{words}\n"
    assert extracted.notes == ()


def eight_bit(subject: bytes, content_type: bytes, body: bytes) -> bytes:
    """A message of one part sent as 8-bit bytes."""
    return (b"Subject: " + subject + b"\nMIME-Version: 1.0\nContent-Type: " + content_type
            + b"\nContent-Transfer-Encoding: 8bit\n\n" + body)


def test_an_html_body_without_a_mime_charset_is_read_by_its_meta_charset():
    html = ('<html><head><meta charset="koi8-r"></head><body><p>Совещание в четверг.</p>'
            "</body></html>").encode("koi8-r")
    extracted = EML.extract(eight_bit(b"meeting", b"text/html", html), "m")
    assert extracted.canonical_text == "meeting\n\nСовещание в четверг.\n"
    assert extracted.notes == ()


def test_a_wider_charset_reads_what_mail_programs_write_under_a_narrow_name():
    """``gb2312`` mail holds GBK characters (``镕`` is not in GB 2312): read as GB18030, as
    browsers read the label, not as windows-1252."""
    body = "朱镕基访问了公司。\n".encode("gbk")
    extracted = EML.extract(eight_bit(b"news", b"text/plain; charset=gb2312", body), "m")
    assert extracted.canonical_text == "news\n\n朱镕基访问了公司。\n"
    assert extracted.notes == ()


def test_a_stray_byte_in_a_declared_charset_is_replaced_and_counted_not_the_whole_part_guessed():
    """Found by a helper on real mail: one bad byte in 8,782 of Russian UTF-8 sent the whole
    body to windows-1252 (``ÐŸÑ€Ð¾Ñ„Ð¸Ð»ÑŒ``)."""
    body = ("Профиль и сообщения. " * 20).encode() + b"\xd1" + " Контакты.\n".encode()
    extracted = EML.extract(eight_bit(b"profile", b"text/plain; charset=utf-8", body), "m")
    assert extracted.canonical_text == (
        "profile\n\n" + "Профиль и сообщения. " * 20 + "\ufffd Контакты.\n")
    assert extracted.notes == (("charset_replaced", "1"),)
    from rag_pipeline.core.ingest.extracted import left_out

    assert left_out(extracted.notes) == [
        "1 byte sequence(s) not of the declared charset replaced by U+FFFD (a damaged or "
        "mislabelled part)"]


def test_an_html_alternative_the_plain_body_is_kept_over_adds_no_note():
    """Found by a helper on real mail: a plain body read by its declared charset was said to be
    "read as windows-1252" because of the unused HTML alternative, which has no charset."""
    data = (b"Subject: saluti\nMIME-Version: 1.0\n"
            b'Content-Type: multipart/alternative; boundary="b"\n\n'
            b"--b\nContent-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: 8bit\n\n"
            b"Ci vediamo marted\xec, e poi pi\xf9 tardi al caf\xe8 per parlare del progetto nuovo.\n"
            b"--b\nContent-Type: text/html\nContent-Transfer-Encoding: 8bit\n\n"
            b"<p>Ci vediamo marted\xec.</p>\n--b--\n")
    extracted = EML.extract(data, "m")
    assert extracted.canonical_text == (
        "saluti\n\nCi vediamo martedì, e poi più tardi al cafè per parlare del progetto nuovo.\n")
    assert extracted.notes == ()


@pytest.mark.parametrize(("charset", "body", "read"), [
    # Curly quotes and a dash in bytes 0x80-0x9F, which iso-8859-1 leaves to control characters.
    (b"iso-8859-1", b"We\x92re meeting \x93Monday\x94 \x96 caf\xe9.", "We’re meeting “Monday” – café."),
    # UTF-8 under a narrow label: read as UTF-8, never as the label's superset (found by a
    # helper: as GB18030, which reads almost any bytes, "好的" was "濂界殑", unsaid).
    (b"us-ascii", "Café crème – see you.".encode(), "Café crème – see you."),
    (b"gb2312", "好的，周末愉快".encode(), "好的，周末愉快"),
    (b"gb2312", "朱镕基访问了公司".encode("gbk"), "朱镕基访问了公司"),
])
def test_a_declared_charset_is_read_as_mail_programs_write_under_it(charset: bytes, body: bytes,
                                                                    read: str):
    extracted = EML.extract(eight_bit(b"note", b"text/plain; charset=" + charset, body), "m")
    assert (extracted.canonical_text, extracted.notes) == (f"note\n\n{read}\n", ())


def test_an_html_body_named_by_its_meta_alone_is_read_as_a_declared_one_is():
    """Found by a helper: with no MIME charset, a ``<meta>`` gb2312 body holding a GBK
    character was lost whole, the HTML reader reading it by the narrow name."""
    html = ('<html><head><meta charset="gb2312"></head><body><p>朱镕基访问了公司。</p>'
            "</body></html>").encode("gbk")
    extracted = EML.extract(eight_bit(b"news", b"text/html", html), "m")
    assert (extracted.canonical_text, extracted.notes) == ("news\n\n朱镕基访问了公司。\n", ())


@pytest.mark.parametrize("charset", [b"base64", b"zlib", b"x-no-such-charset"])
def test_a_charset_that_decodes_no_text_is_no_charset(charset: bytes):
    extracted = EML.extract(eight_bit(b"note", b"text/plain; charset=" + charset, b"caf\xe9 au lait"), "m")
    assert (extracted.canonical_text, extracted.notes) == (
        "note\n\ncafé au lait\n", (("charset_guessed", "windows-1252"),))


@pytest.mark.parametrize(("subject", "title"), [
    ("朱镕基总理的讲话".encode("gbk"), "朱镕基总理的讲话"),  # a GBK character under gb2312
    ("好的，明天见".encode(), "好的，明天见"),  # UTF-8 under gb2312
])
def test_an_encoded_subject_is_decoded_as_a_body_of_its_charset_is(subject: bytes, title: str):
    """Found by a helper: the bodies read GBK and mislabelled UTF-8, but the subject (the
    document's title) still read '朱�F基' and '濂界��', unsaid."""
    import base64

    data = b"Subject: =?gb2312?b?" + base64.b64encode(subject) + b"?=\n\nBody.\n"
    extracted = EML.extract(data, "m")
    assert (extracted.title, extracted.notes) == (title, ())


def test_a_character_cut_between_two_encoded_words_is_read_whole():
    import base64

    raw = "朱镕基访问了公司".encode()
    words = [base64.b64encode(part).decode() for part in (raw[:4], raw[4:])]
    data = f"Subject: =?utf-8?b?{words[0]}?=\n =?utf-8?b?{words[1]}?=\n\nBody.\n".encode()
    assert EML.extract(data, "m").title == "朱镕基访问了公司"


@pytest.mark.parametrize(("label", "encoding", "words"), [
    (b"windows-874", "cp874", "การประชุมเลื่อน"),
    (b"iso-8859-8-i", "iso8859-8", "הישיבה נדחתה"),
    (b"x-sjis", "shift_jis", "会議は延期"),
])
def test_a_label_browsers_know_and_python_does_not_names_its_charset(label, encoding, words):
    """Found by a code review: these WHATWG labels fell through to a windows-1252 guess."""
    extracted = EML.extract(eight_bit(b"note", b"text/plain; charset=" + label,
                                      words.encode(encoding)), "m")
    assert (extracted.canonical_text, extracted.notes) == (f"note\n\n{words}\n", ())


def test_iso_2022_jp_as_windows_writes_it_is_read_not_kept_as_escapes():
    """Found by a helper: with NEC's ``①`` in it, Python's iso2022_jp refused the body, which
    then passed for UTF-8 (7-bit) and was indexed as raw escape codes, unsaid."""
    body = b"\x1b$B-!$N2q5D\x1b(B 10:00\n\x1b$B;qNA\x1b(B \x1b(I1\x1b(B\n"
    extracted = EML.extract(eight_bit(b"meeting", b"text/plain; charset=iso-2022-jp", body), "m")
    assert (extracted.canonical_text, extracted.notes) == ("meeting\n\n①の会議 10:00\n資料 ｱ\n", ())


def test_a_byte_windows_1252_leaves_undefined_keeps_the_rest_of_an_iso_8859_1_part_as_1252_reads_it():
    """Found by a code review: one 0x81 turned every curly quote of the part into a control
    character, unsaid; the WHATWG Encoding Standard keeps that byte's control and reads the rest
    as windows-1252."""
    body = b"caf\xe9 \x93quoted\x94 \x81 \x80"
    extracted = EML.extract(eight_bit(b"note", b"text/plain; charset=iso-8859-1", body), "m")
    assert (extracted.canonical_text, extracted.notes) == ("note\n\ncafé “quoted” \x81 €\n", ())
