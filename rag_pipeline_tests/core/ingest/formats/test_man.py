"""Manual pages in roff: requests read, typesetting dropped, a tagged paragraph kept with its
tag, and a file no format claims read as one only when its bytes begin as one."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.ingest.extracted import ExtractionError, Section
from rag_pipeline.core.ingest.formats.man import ManFormat, looks_like_roff

MAN = ManFormat()

PAGE = rb""".\" Planted: a comment, a macro definition and a conditional, none of them text.
.de Vb
.ft CW
Not text either
..
.if n .ds Aq '
.TH FROB 1 "2026-01-01" "frob 2.1" "User Commands"
.SH NAME
frob \- frobnicate files
.SH SYNOPSIS
.B frob
[\fIOPTION\fR]... \fIFILE\fR...
.SH DESCRIPTION
.B frob
reads each
.I FILE
and writes it frobnicated.
It never changes the original\(em it writes \fBFILE.frob\fP.
.PP
A second paragraph, with \(lqquotes\(rq and don\(aqt.
.SS Options
.TP
.BR \-n ", " \-\-dry\-run
Print what would be done.
Nothing is written.
.TP
\fB\-\-level\fR=\fIN\fR
Frobnicate
N times.
.IP \(bu 2
A bullet item.
.SH EXAMPLES
.nf
frob a.txt
  frob \-n b.txt
.fi
.TS
l l.
Level	Effect
1	light
.TE
"""


def test_a_page_is_its_words_with_headings_and_each_tag_above_its_body():
    extracted = MAN.extract(PAGE, "frob.1")
    assert extracted.title == "FROB(1)"
    assert extracted.canonical_text == (
        "NAME\n\nfrob - frobnicate files\n\n"
        "SYNOPSIS\n\nfrob [OPTION]... FILE...\n\n"
        "DESCRIPTION\n\nfrob reads each FILE and writes it frobnicated. It never changes the "
        "original— it writes FILE.frob.\n\n"
        "A second paragraph, with “quotes” and don't.\n\n"
        "Options\n\n"
        "-n, --dry-run\n  Print what would be done. Nothing is written.\n\n"
        "--level=N\n  Frobnicate N times.\n\n"
        "• A bullet item.\n\n"
        "EXAMPLES\n\nfrob a.txt\n  frob -n b.txt\n\nLevel | Effect\n1 | light\n")
    # NAME is a section, not the page's title: the (empty) text before it is the title's.
    text = extracted.canonical_text
    assert [(s.title, s.level, text[s.start:s.end]) for s in extracted.sections] == [
        ("FROB(1)", 1, ""), ("NAME", 1, "\n\nfrob - frobnicate files\n\n"),
        ("SYNOPSIS", 1, "\n\nfrob [OPTION]... FILE...\n\n"),
        ("DESCRIPTION", 1, text[text.index("DESCRIPTION") + 11:text.index("Options")]),
        ("Options", 2, text[text.index("Options") + 7:text.index("EXAMPLES")]),
        ("EXAMPLES", 1, "\n\nfrob a.txt\n  frob -n b.txt\n\nLevel | Effect\n1 | light\n")]
    assert isinstance(extracted.sections[0], Section)


def test_an_mdoc_page_reads_its_macros_as_words():
    page = (b".Dd January 1, 2026\n.Dt FROB 1\n.Os\n.Sh NAME\n.Nm frob\n.Nd frobnicate files\n"
            b".Sh DESCRIPTION\nThe\n.Nm\nutility reads\n.Ar file .\n.Bl -tag -width Ds\n"
            b".It Fl n\nPrint only.\n.El\n.Sh SEE ALSO\n.Xr grep 1\n")
    extracted = MAN.extract(page, "frob.1")
    assert extracted.title == "FROB(1)"
    assert extracted.canonical_text == (
        "NAME\n\nfrob — frobnicate files\n\nDESCRIPTION\n\nThe frob utility reads file.\n\n"
        "-n Print only.\n\nSEE ALSO\n\ngrep(1)\n")


def test_a_page_of_requests_alone_fails_with_its_reason():
    with pytest.raises(ExtractionError, match="^a manual page without text once its requests are read$"):
        MAN.extract(b'.TH EMPTY 1\n.\\" nothing else\n', "empty.1")


@pytest.mark.parametrize(("data", "roff"), [
    (b'.\\" comment\n.TH GREP 1\n', True),
    (b"'\\\" t\n.TH CHOOM 1\n", True),
    (b".de zZ\n\\fI\\$1\\fP\n..\n.TH BASH 1\n", True),
    (b".Dd May 1, 2026\n.Dt FILE 1\n", True),
    (b"Dec  1 00:00:01 host kernel: hello\n.TH in a log line\n", False),
    (b"TH GREP 1\n.SH NAME\n", False),
    (b"", False),
])
def test_a_manual_page_is_known_by_how_its_bytes_begin(data: bytes, roff: bool):
    assert looks_like_roff(data) is roff


def test_unclaimed_files_that_are_manual_pages_are_read_as_such_and_reused(tmp_path: Path):
    """Found by a new team: ``rsync.1.gz`` and other pages were indexed as plain text, 728
    chunks holding ``.TP`` and ``\\fB``. A rotated log ``syslog.1`` stays plain text."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "frob.1").write_bytes(PAGE)
    (corpus / "frob.1.gz").write_bytes(gzip.compress(PAGE))
    (corpus / "syslog.1").write_bytes(b"Dec  1 00:00:01 host kernel: hello\n")
    first = extract_corpus(corpus)
    assert sorted((r.document_id, r.format, r.extractor, r.title) for r in first.records) == [
        ("frob.1", "man", "man-roff", "FROB(1)"), ("frob.1.gz", "man", "gzip+man-roff", "FROB(1)"),
        ("syslog.1", "text", "plain-text", "syslog.1")]
    again = extract_corpus(corpus, previous=first.records)
    assert (again.extracted, again.reused) == (0, 3)


def test_conditionals_are_read_as_a_terminal_formatter_reads_them():
    """Found by an attack: pod2man writes an item's tag as ``.ie n .IP "..." 4`` / ``.el .IP
    ...``; every conditional was dropped, and with it the tags of 292 pages here."""
    page = (b'.TH A 1\n.SH ALGORITHMS\n.ie n .IP """ARIA-128-CBC""" 4\n.el .IP "ARIA-128-CBC" 4\n'
            b"The cipher.\n.if t \\{\\\nTypeset only.\n.if n \\{\\\nnested\n.\\}\n.\\}\n"
            b".if n \\{\\\nTerminal only.\n.\\}\n.if \\n(.g .ds Aq \\(aq\nLast.\n")
    assert MAN.extract(page, "a.1").canonical_text == (
        'ALGORITHMS\n\n"ARIA-128-CBC"\n  The cipher. Terminal only. Last.\n')


def test_the_synopsis_link_and_reference_macros_keep_their_words():
    """Found by an attack: ``.SY``/``.OP`` (a synopsis), ``.UR``'s address, ``.MR``, and mdoc's
    ``.Dl``, ``.Sx``, ``.An``, ``.Lk`` and ``Aq`` lost their words."""
    man = (b".TH A 1\n.SH SYNOPSIS\n.SY mycmd\n.OP \\-v file\n.YS\n.SH SEE\n"
           b".UR https://example.org/x\nthe site\n.UE .\n.MR ls 1\n")
    assert MAN.extract(man, "a.1").canonical_text == (
        "SYNOPSIS\n\nmycmd [-v file]\n\nSEE\n\nthe site <https://example.org/x>. ls(1)\n")
    mdoc = (b".Dd Jan 1\n.Dt FOO 1\n.Sh DESCRIPTION\n.Dl foo -x\nsee\n.Sx EXAMPLES\n"
            b".An Jane Doe\n.Lk https://x.org\n.Fl v Aq Ar file\n")
    assert MAN.extract(mdoc, "foo.1").canonical_text == (
        "DESCRIPTION\n\nfoo -x see EXAMPLES Jane Doe https://x.org -v <file>\n")


def test_unclosed_escapes_and_continued_lines_are_read_whole():
    """Found by an attack: a line of 50,000 unclosed ``\\[`` and 128,000 lines each ending in
    ``\\`` took time growing with the square of their length."""
    page = b".TH A 1\n.SH NAME\nstart " + b"\\[" * 50_000 + b" end\n" + b"more\\\n" * 1_000 + b"done\n"
    assert MAN.extract(page, "a.1").canonical_text == (
        "NAME\n\nstart end " + "more" * 1_000 + "done\n")


def test_accented_letters_a_byte_order_mark_and_a_bare_font_request():
    """Found by an attack: ``Cr\\('eation`` read as ``Cration`` (König lost in git's pages), a
    page behind a UTF-8 byte-order mark was not known as one, and ``.B`` alone above a request
    printed the request."""
    page = ("\ufeff.TH A 1\n.SH NAME\nCr\\('eation d\\(:ubel Gar\\(,con \\(/o\n.B\n.IP x\nbody\n"
            ".if n plain text\n").encode()
    assert looks_like_roff(page)
    assert MAN.extract(page, "a.1").canonical_text == (
        "NAME\n\nCréation dübel Garçon ø\n\nx body plain text\n")


def test_a_macro_with_its_own_end_and_a_table_without_a_format_end_lose_nothing_after_them():
    """Found by an attack: ``.de XX yy`` (ended by ``.yy``) and ``.ig zz`` hid everything up to
    the next ``..``; a table whose format line lacks its final ``.`` hid the rest of the page."""
    page = (b".TH A 1\n.SH X\n.de XX yy\nhidden\n..\nstill hidden\n.yy\nshown one\n.ig zz\n"
            b"ig hidden\n.zz\n.TS\nl l\na\tb\n.TE\nafter table\n")
    assert MAN.extract(page, "a.1").canonical_text == "X\n\nshown one\n\nl l\na | b\n\nafter table\n"


def test_a_line_of_thousands_of_conditionals_is_left_out_at_once():
    """Found by an attack: each true conditional read the rest of its line again, so a line of
    ``.if n`` thousands of times took time growing with their square (600 KB, 26 s). A line
    holds at most 16 in a row; real pages nest two or three."""
    from rag_pipeline.core.ingest.formats.man import MAX_HELD_CONDITIONS
    from rag_pipeline.core.ingest.reading_limits import document_reading_limits

    page = ".TH P 1\n.SH NAME\n" + ".if n " * 100_000 + "hello\n.PP\nKept.\n"
    with document_reading_limits(10):
        assert MAN.read(page.encode(), "p").canonical_text == "NAME\n\nKept.\n"
    nested = ".TH P 1\n.SH NAME\n" + ".if n " * MAX_HELD_CONDITIONS + "held\n"
    assert MAN.read(nested.encode(), "p").canonical_text == "NAME\n\nheld\n"


def test_a_tbl_table_is_a_declared_table_with_its_header_when_it_has_one():
    """Found by a new user: find(1)'s -newerXY table was laid out as rows but declared no
    table, so a row was cited by characters alone, with no header; pages written with
    ``tab(:)`` and ``T{ ... T}`` text blocks (systemctl, pgbench) ran their cells together."""
    page = (b".TH FIND 1\n.SH TIMES\n.TS\nll\nllw(2i).\n"
            b"a\tThe access time of the file\nB\tThe birth time of the file\n"
            b"c\tThe inode status change time of the file\n.TE\n"
            b".SH HISTORY\n.TS\nl l l .\nFeature\tAdded in\tAlso occurs in\n"
            b"\\-files0\\-from\t4.9.0\n\\-newerXY\t4.3.3\tBSD\n.TE\n"
            b".SH STATES\n.TS\nallbox tab(:);\nlB lB.\nState:Description\n.T&\nl l.\n"
            b"active:T{\nStarted, bound,\n.br\nplugged in. See\n.BR systemd (1).\nT}\n"
            b"inactive:Stopped.\n.TE\n"
            b".SH CENTRED\n.TS\nc c\nl l.\nName\tMeaning\nrss\tresident size\nvsz\tvirtual size\n.TE\n")
    extracted = MAN.extract(page, "find.1")
    text = extracted.canonical_text
    assert [(t.header, [text[r:text.find("\n", r)] for r in t.rows]) for t in extracted.tables] == [
        ("", ["a | The access time of the file", "B | The birth time of the file",
              "c | The inode status change time of the file"]),
        # No .TH, rule, bold or own format line sets its first row apart, but its words do:
        # labels over rows that are none.
        ("Feature | Added in | Also occurs in", ["-files0-from | 4.9.0", "-newerXY | 4.3.3 | BSD"]),
        ("State | Description", ["active | Started, bound, plugged in. See systemd(1).",
                                 "inactive | Stopped."]),
        ("Name | Meaning", ["rss | resident size", "vsz | virtual size"])]
    start = text.index("B | The birth")
    assert MAN.cited_fragment(extracted.anchors, extracted.tables, start, start + 29) == (
        f"#char={start},{start + 29}&rows=2-2")


def test_an_mdoc_reference_block_is_one_paragraph_of_its_parts():
    """Found by a new user: ssh(1)'s STANDARDS lost its 13 RFCs (``.Rs`` ... ``.Re``)."""
    page = (b".Dd May 1, 2026\n.Dt SSH 1\n.Sh STANDARDS\n.Rs\n.%A S. Lehtinen\n.%A C. Lonvick\n"
            b".%D January 2006\n.%R RFC 4250\n.%T The Secure Shell (SSH) Protocol Assigned Numbers\n"
            b".Re\n.Pp\nAfter.\n")
    assert MAN.extract(page, "ssh.1").canonical_text == (
        "STANDARDS\n\nS. Lehtinen, C. Lonvick, January 2006, RFC 4250, The Secure Shell (SSH) "
        "Protocol Assigned Numbers.\n\nAfter.\n")


def test_a_comparison_of_strings_holds_when_they_are_the_same():
    """Found by a new user: strace(1) writes ``.if '#'#' .OP ...`` for what its build shows,
    and its synopsis lost ``[-ACdffhikqqrtttTvVwxxyyzZ]``."""
    page = b".TH S 1\n.SH SYNOPSIS\n.if '#'#' shown\n.if ''#' hidden\n.if !'a'b' also shown\n"
    assert MAN.extract(page, "s.1").canonical_text == "SYNOPSIS\n\nshown also shown\n"


def test_a_pages_own_macro_is_read_where_it_is_called():
    """Found by a new user: strace(1)'s synopsis lost the options it writes with its own
    ``.OM`` and ``.OR``, and last(1) its author (``.als MTO URL``). A false block inside a
    macro skips the macro's lines only (Tcl's ``.BE`` once took the rest of tclsh(1))."""
    page = (b'.de OM\n.  ie \\\\n(.$-1 \\\n.    RI "[\\fB\\\\$1\\fP" "\\ \\\\$2" "]..."\n'
            b'.  el \\\n.    RB "[" "\\\\$1" "]..."\n..\n'
            b".de BE\n.ie n .nf\n.el \\{\\\nhidden box\n.\\}\n.fi\n..\n"
            b'.de URL\n\\fI\\\\$2\\fP <\\\\$1>\\\\$3\n..\n.als MTO URL\n'
            b".TH S 1\n.SH SYNOPSIS\nstrace\n.OM \\-e expr\n.OM \\-P\n.BE\n"
            b'.SH AUTHORS\n.MTO "miquels@cistron.nl" "Miquel van Smoorenburg" ""\n.PP\nThe end.\n')
    assert MAN.extract(page, "s.1").canonical_text == (
        "SYNOPSIS\n\nstrace [-e expr]... [-P]...\n\nAUTHORS\n\n"
        "Miquel van Smoorenburg <miquels@cistron.nl>\n\nThe end.\n")


def test_a_quote_inside_a_word_is_part_of_the_macros_argument():
    """roff splits a request's arguments one way whether a macro or a request takes them: a
    quote inside a word is part of the word, and two quotes in a quoted one are a quote."""
    page = (b'.de AR\n\\$2 then \\$1\n..\n.TH Q 1\n.SH QUOTES\n'
            b'.AR a"b "say ""hi"" now"\n.B a"b "c ""d"""\n')
    assert MAN.extract(page, "q.1").canonical_text == 'QUOTES\n\nsay "hi" now then a"b a"b c "d"\n'


def test_a_tbl_header_set_apart_by_its_words_alone_is_the_header():
    """Found in this machine's pages: xz(1)'s ``Filter | Alignment | Notes`` and ps(1)'s ``KEY |
    LONG | DESCRIPTION`` share their format line with the rows, and were cited as row 1. A
    first row of names like the others (``Alice | Bob``) stays a row."""
    page = (b".TH XZ 1\n.SH FILTERS\n.TS\ntab(;);\nl n l.\nFilter;Alignment;Notes\n"
            b"x86;1;32-bit or 64-bit x86\nARM;4;\n.TE\n.SH NAMES\n.TS\nl l.\n"
            b"Alice\tBob\nCarol\tDave\nErin\tFrank\n.TE\n")
    extracted = MAN.extract(page, "xz.1")
    assert [(t.header, extracted.canonical_text[t.start:t.end]) for t in extracted.tables] == [
        ("Filter | Alignment | Notes", "Filter | Alignment | Notes\nx86 | 1 | 32-bit or 64-bit x86\n"
                                       "ARM | 4"),
        ("", "Alice | Bob\nCarol | Dave\nErin | Frank")]


def test_a_macro_calling_itself_stops_at_the_limit():
    from rag_pipeline.core.ingest.formats.man import MAX_MACRO_LINES

    page = b".de XX\nword\n.XX\n.XX\n..\n.TH L 1\n.SH LOOP\n.XX\n"
    assert MAN.extract(page, "l.1").canonical_text.count("word") == MAX_MACRO_LINES // 3


def test_a_pages_own_strings_are_read_where_it_interpolates_them():
    """Found by a helper on Debian's sed.1 (``.ds sd \\fIsed\\fP``): every ``\\*(sd`` read as
    nothing, so "sed is a stream editor" was "is a stream editor", 12 times in the page. Its
    pod2man pages' quotes (``.ie n \\{\\ .ds C` ""``) were lost the same way."""
    page = (b'.TH SED 1\n.ds sd \\fIsed\\fP\n.ds q "  padded\n.as sd (GNU)\n'
            b'.ie n \\{\\\n.    ds C` ""\n.    ds C\' ""\n\'br\\}\n.el\\{\\\n.    ds C` ``\n'
            b".    ds C' ''\n'br\\}\n"
            b".SH DESCRIPTION\n\\*(sd is a stream editor.\nQuote \\*(C`x\\*(C', long "
            b"\\*[sd], one\\*q, escaped \\\\*(sd, unknown \\*(zz end.\n")
    extracted = MAN.extract(page, "sed.1")
    assert extracted.canonical_text == (
        "DESCRIPTION\n\nsed(GNU) is a stream editor. Quote \"x\", long sed(GNU), one padded, "
        "escaped \\*(sd, unknown end.\n")


def test_strings_past_their_budget_read_as_nothing():
    # Planted: a string doubled 25 times would be 134 million characters.
    definitions = b"".join(b".ds a%d \\*[a%d]\\*[a%d]\n" % (i + 1, i, i) for i in range(25))
    page = b".TH BIG 1\n.ds a0 xxxx\n" + definitions + b".SH NAME\nbig \\*[a25] end\n"
    # The definitions spend the budget (a18 would pass it): a25 is read as nothing, at once.
    assert MAN.extract(page, "big.1").canonical_text == "NAME\n\nbig end\n"


def test_old_pod2man_accents_read_as_a_terminal_shows_them():
    """Found by a helper on HTTP::Daemon(3pm): "Ville Skytta\\*:" read "Skytta\\k:..", the
    overstrike meant for a typesetter; on a terminal groff reads the crt branch: "Skyttae"."""
    page = (b".TH DAEMON 3pm\n"
            b".ds : \\\\k:\\h'-(\\\\n(.wu*8/10)'\\v'-.8m'\\z.\\h'.2m'.\\h'|\\\\n:u'\\v'.8m'\n"
            b".ds C` \\\\fB\n"
            b".if \\n(.H>23 .if \\n(.V>19 \\\n\\{\\\n.    ds : e\n.    ds 8 ss\n.\\}\n"
            b".if \\n(.H<23 .ds 8 B\n.rm C`\n"
            b".SH AUTHOR\nVille Skytta\\*: and Stra\\*8e, \\*(C`gone.\n")
    assert MAN.extract(page, "daemon.3pm").canonical_text == (
        "AUTHOR\n\nVille Skyttae and Strasse, gone.\n")


def test_a_comment_ends_a_strings_value_as_groff_reads_it():
    """Found by a code review against groff: GNU pages write ``.ds la <\\"`` (grep.1); the
    comment was kept in the value and cut off the rest of every line using it."""
    page = (b'.TH G 1\n.ds la <\\"\n.ds ra >\\" closing\n.ds sd sed \\" the editor\n'
            b'.ds bs a\\\\\\\\"b\n.SH NAME\nsee \\*(la x \\*(ra here, \\*(sd! and \\*(bs end\n')
    assert MAN.extract(page, "g.1").canonical_text == (
        'NAME\n\nsee < x > here, sed ! and a\\"b end\n')
