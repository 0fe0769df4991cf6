"""reStructuredText: docutils' tree as text, sections at titles, literal blocks verbatim, and
nothing read from outside the file (``include``, ``raw``)."""

from __future__ import annotations

import pytest

from rag_pipeline.core.chunking.strategies import body_sections
from rag_pipeline.core.ingest.extracted import Section, TableSpan
from rag_pipeline.core.ingest.formats.rst import RstFormat
from rag_pipeline_tests.core.ingest.long_tables import chunked_under_header, shift_rows

RST = RstFormat()

GUIDE = b"""=====
Guide
=====

Intro para with *emph* and a :func:`foo <pkg.foo>` role,
wrapped over two lines.

Install
=======

Run::

    make install
      indented

.. code-block:: python

   # a comment, not a heading
   print(1)

.. note:: Be careful.

.. toctree::

   a

- item one
- item two

  - nested

3. third
4. fourth

term
   Its definition.

=====  =====
A      B
=====  =====
1      2
=====  =====

Details
-------

.. include:: /etc/passwd

.. raw:: html

   <b>raw</b>

Last words.
"""

TEXT = ("Guide\n\n"
        "Intro para with emph and a foo role, wrapped over two lines.\n\n"
        "Install\n\n"
        "Run:\n\n"
        "make install\n  indented\n\n"
        "# a comment, not a heading\nprint(1)\n\n"
        "Note: Be careful.\n\n"
        "- item one\n- item two\n  - nested\n\n"
        "3. third\n4. fourth\n\n"
        "term\n  Its definition.\n\n"
        "A | B\n1 | 2\n\n"
        "Details\n\n"
        "Last words.\n")


def test_the_tree_as_text_with_sections_at_titles():
    extracted = RST.extract(GUIDE, "guide")
    assert extracted.canonical_text == TEXT
    assert extracted.title == "Guide"
    text = extracted.canonical_text
    assert [(s.title, s.level, text[s.start:s.end].strip().split("\n")[0])
            for s in extracted.sections] == [
        ("Guide", 1, ""),  # nothing before the title
        ("Guide", 1, "Intro para with emph and a foo role, wrapped over two lines."),
        ("Install", 2, "Run:"), ("Details", 3, "Last words.")]
    # A body runs from its heading's end to the next heading (or the text's end).
    assert extracted.sections[-1] == Section("Details", 263, 277, 3)
    assert text[263:277] == "\n\nLast words.\n"
    # The literal blocks keep their lines and indentation exactly.
    assert "make install\n  indented" in text
    # include and raw are off: nothing of /etc/passwd or of the raw HTML.
    assert "root" not in text and "<b>" not in text


def test_a_table_is_declared_with_its_header_rows():
    extracted = RST.extract(GUIDE, "guide")
    (table,) = extracted.tables
    assert table == TableSpan(243, 254, "A | B", 248, (249,))
    assert extracted.canonical_text[table.start:table.end] == "A | B\n1 | 2"


SPANS = b"""+------+-----+-----+
| Site | Lead| Hrs |
+======+=====+=====+
| wide       | 3   |
+------+-----+-----+
| tall | b   | 4   |
+      +-----+-----+
|      | c   | 5   |
+------+-----+-----+

.. table:: Hours

   =====  =====
   x      y
   z      w
   =====  =====
"""


def test_spanning_cells_do_not_shift_columns_and_a_table_without_header_has_none():
    extracted = RST.extract(SPANS, "spans")
    assert extracted.canonical_text == ("Site | Lead | Hrs\nwide |  | 3\ntall | b | 4\n | c | 5\n\n"
                                        "Hours\n\nx | y\nz | w\n")
    assert extracted.tables == (TableSpan(0, 51, "Site | Lead | Hrs", 17, (18, 30, 43)),
                                TableSpan(60, 71, "", 60, (60, 66)))


def test_a_long_list_table_keeps_its_header_in_every_chunk():
    rows = "".join(f"   * - {site}\n     - {lead}\n     - {hours}\n" for site, lead, hours in shift_rows())
    source = (f"Shifts\n======\n\nWho works where.\n\n.. list-table::\n   :header-rows: 1\n\n"
              f"   * - Site\n     - Lead\n     - Duration\n{rows}").encode()
    extracted = RST.extract(source, "shifts")
    (table,) = extracted.tables
    canonical = extracted.canonical_text
    assert table.header == "Site | Lead | Duration" and len(table.rows) == 60
    assert canonical[table.rows[59]:table.end] == "Delta flats 60 | Tomas Ruiz | 60 hours"
    chunked_under_header("shifts.rst", extracted)


def test_a_file_without_titles_is_one_section_titled_by_the_stem():
    extracted = RST.extract(b"Just a paragraph\nover lines.\n", "notes")
    assert (extracted.title, extracted.canonical_text, extracted.sections) == (
        "notes", "Just a paragraph over lines.\n", (Section("notes", 0, 29, 1),))


def test_absurd_nesting_fails_with_its_reason_instead_of_stopping_the_run():
    import pytest

    from rag_pipeline.core.ingest.extracted import ExtractionError

    nested = "".join("  " * depth + "- item\n\n" for depth in range(400)).encode()  # Planted
    with pytest.raises(ExtractionError, match="^unreadable reStructuredText: RecursionError: "):
        RST.extract(nested, "deep")


def test_an_unknown_role_in_a_list_keeps_its_text_and_none_of_docutils_messages():
    """Found by a new team (supervisor's own docs): a Sphinx role inside a list item put
    docutils' report ``<string>:6: (ERROR/3) Unknown interpreted text role "file".`` into the
    text, and citations quoted it."""
    source = (b"Places\n======\n\n#. :file:`../etc/supervisord.conf` (relative)\n\n"
              b"| Run :program:`supervisord`\n| as :envvar:`HOME`\n")
    extracted = RST.extract(source, "places")
    assert extracted.canonical_text == (
        "Places\n\n1. ../etc/supervisord.conf (relative)\n\nRun supervisord\nas HOME\n")


def test_a_name_above_its_indented_description_is_kept_with_it():
    """Found by a new team: supervisor documents each setting as ````startsecs```` above an
    indented description; 33 of 120 chunks ended with a setting's bare name, and the chunk of
    its description and default did not name it."""
    source = (b"Settings\n========\n\n``startsecs``\n\n  The seconds a program must stay up.\n\n"
              b"  *Default*: 1\n\n``autostart``\n\n  Start with supervisord.\n\n"
              b"A closing paragraph, quoted:\n\n  a quotation\n\nLast words.\n")
    extracted = RST.extract(source, "settings")
    assert extracted.canonical_text == (
        "Settings\n\nstartsecs\n  The seconds a program must stay up.\n\nDefault: 1\n\n"
        "autostart\n  Start with supervisord.\n\nA closing paragraph, quoted:\n  a quotation\n\n"
        "Last words.\n")


def test_a_line_over_10000_characters_loses_no_text():
    """Found by an attack: docutils replaced a document holding such a line (a pasted log line,
    a long URL) by one error, so the file failed as empty."""
    line = "x" * 10_000 + "."
    text = RST.extract(f"Intro\n=====\n\nOtters.\n\n{line}\n\nWalruses.\n".encode(), "d").canonical_text
    assert text == f"Intro\n\nOtters.\n\n{line}\n\nWalruses.\n"


def test_a_paragraph_of_colons_is_reduced_at_once_and_unknown_roles_keep_their_text():
    """Found by an attack: the search for unknown roles tried each colon of ``:a:a:a...`` to
    its end (16 KB, 1.5 s; docutils' own inline parser on such a paragraph is bounded by the
    document's time limit)."""
    from docutils import nodes

    from rag_pipeline.core.ingest.formats.rst import inline_text
    from rag_pipeline.core.ingest.reading_limits import document_reading_limits

    with document_reading_limits(10):
        assert inline_text(nodes.paragraph(text=":a" * 30_000)) == ":a" * 30_000
    assert inline_text(nodes.paragraph(text=(
        "Call :py:func:`len` or :ref:`the guide <guide>`, not x:a:`b`."))) == (
        "Call len or the guide, not x:a:`b`.")


SPHINX = b"""API
===

.. py:function:: spam(eggs)
   :noindex:

   This is just for testing domain object links.

   :param str eggs: Example string parameter

.. versionadded:: 3.5
   The *spam* function.

.. deprecated:: 3.8

.. toctree::
   :maxdepth: 2

   intro

.. only:: html

   .. py:class:: Ham

      A nested *class*.

.. testcode::

   print(*range(3))

After.
"""


def test_sphinx_directives_keep_their_words_and_those_that_only_arrange_are_left_out():
    # Found by a team's Sphinx docs: a py:function's description, a "New in version" note and
    # an `only` block's text were in no chunk, and nothing said so.
    extracted = RST.extract(SPHINX, "api")
    assert extracted.canonical_text == (
        "API\n\n"
        "spam(eggs)\n  This is just for testing domain object links.\n\n"
        "param str eggs: Example string parameter\n\n"
        "New in version 3.5: The spam function.\n\n"
        "Deprecated since version 3.8.\n\n"
        "Ham\n  A nested class.\n\n"
        "print(*range(3))\n\n"
        "After.\n")
    assert extracted.sections == (Section("API", 0, 0, 1),
                                  Section("API", 3, len(extracted.canonical_text), 1))


def test_directives_nested_past_the_limit_keep_their_source_lines():
    nested = "".join(f"{'   ' * level}.. box{level}:: level {level}\n\n" for level in range(12))
    text = RST.extract(f"T\n=\n\n{nested}{'   ' * 12}Deep words.\n".encode(), "t").canonical_text
    assert text.startswith("T\n\nlevel 0\n  level 1\n")
    assert "Deep words." in text and text.count("level") == 12


def test_directives_past_the_documents_limit_keep_their_source_lines(monkeypatch):
    from rag_pipeline.core.ingest.formats import rst

    monkeypatch.setattr(rst, "MAX_DIRECTIVES_READ", 2)
    source = "T\n=\n\n" + "".join(f".. py:function:: f{i}(x)\n\n   Uses *x*.\n\n" for i in range(3))
    assert RST.extract(source.encode(), "t").canonical_text == (
        "T\n\nf0(x)\n  Uses x.\n\nf1(x)\n  Uses x.\n\nf2(x)\nUses *x*.\n")


@pytest.mark.parametrize(("source", "text"), [
    # Found by an attack: inside a list item, a note, a table cell or a definition (text on one
    # line) a directive's words were dropped with docutils' report.
    ("- item one\n\n  .. versionadded:: 3.5\n     Feature X in a list.\n\n- item two\n",
     "- item one New in version 3.5: Feature X in a list.\n- item two\n"),
    (".. note::\n\n   Admonition body.\n\n   .. deprecated:: 4.0\n      Use Y instead.\n",
     "Note: Admonition body. Deprecated since version 4.0: Use Y instead.\n"),
    ("+------+--------------------------+\n| a    | b                        |\n"
     "+======+==========================+\n| cell | .. versionchanged:: 2.0  |\n"
     "|      |    Now faster.           |\n+------+--------------------------+\n",
     "a | b\ncell | Changed in version 2.0: Now faster.\n"),
    # Found by an attack: a signature running onto a second line was read as a list ("2."),
    # and a first line starting with a role as an option.
    (".. py:function:: connect(host,\n                  b)\n\n   Opens a connection.\n",
     "connect(host, b)\n  Opens a connection.\n"),
    (".. py:function:: g()\n\n   :func:`x` is the first content line.\n",
     "g()\n  x is the first content line.\n"),
    # Found by a team's Sphinx docs: directives docutils knows and could not run were lost
    # whole: Sphinx's `class` with a signature, a code block with Sphinx's `:caption:`.
    (".. class:: joiner(sep=', ')\n\n   A tiny helper to join sections.\n\n   .. versionadded:: 2.1\n",
     "joiner(sep=', ')\n  A tiny helper to join sections.\n\nNew in version 2.1.\n"),
    (".. code-block:: jinja\n   :caption: The body block\n\n   {% block body %}Steps.{% endblock %}\n",
     "The body block\n\n{% block body %}Steps.{% endblock %}\n"),
    # Found by a team's Sphinx glossary: an entry of two terms was cut from its definition.
    (".. glossary::\n\n   master document\n   root document\n      The root toctree's document.\n",
     "master document root document\n  The root toctree's document.\n"),
    # Raw HTML stays out, and an image's path is no word.
    (".. raw:: html\n\n   <script>alert(1)</script>\n\n.. image:: pic.png\n   :bogus: 1\n\nAfter.\n",
     "After.\n"),
])
def test_a_directives_words_are_kept_wherever_it_stands(source: str, text: str):
    assert RST.extract(f"T\n=\n\n{source}".encode(), "t").canonical_text == f"T\n\n{text}"


def test_a_title_with_nothing_under_it_titles_the_deeper_one_below():
    """Found by a re-read: in reStructuredText a title over a deeper one, with no text between,
    was in no section, so "Install" was in no chunk's header or label (Markdown's read
    ``Install > Linux``)."""
    extracted = RST.extract(b"Guide\n=====\n\nIntro text.\n\nInstall\n-------\n\n"
                            b"Linux\n~~~~~\n\nRun apt.\n", "guide")
    assert [s.title for s in body_sections(extracted.canonical_text, extracted.title,
                                           extracted.sections)] == ["Guide", "Install > Linux"]


def test_sectnum_numbers_the_sections_below_the_documents_title_as_docutils_renders_them():
    """Found by a helper on docutils' own FAQ: the title, a section here, was numbered 1, so
    its question 2.7 read "1.2.7", in the text and in every label."""
    source = (b"====\nFAQ\n====\n\n.. sectnum::\n   :suffix: )\n\nGeneral\n=======\n\nWords.\n\n"
              b"What\n----\n\nAn answer.\n\nUsage\n=====\n\nMore.\n")
    extracted = RST.extract(source, "faq")
    assert [s.title for s in extracted.sections if s.end > s.start] == [
        "FAQ", "1) General", "1.1) What", "2) Usage"]
    assert extracted.title == "FAQ"
    assert "\n\n1.1) What\n\n" in extracted.canonical_text


def test_sectnum_without_a_title_numbers_from_the_top_with_its_start_and_depth():
    source = (b".. sectnum::\n   :start: 3\n   :depth: 1\n\nOne\n===\n\nA.\n\nDeep\n----\n\nB.\n\n"
              b"Two\n===\n\nC.\n")
    extracted = RST.extract(source, "parts")
    assert [s.title for s in extracted.sections if s.end > s.start] == [
        "3 One", "Deep", "4 Two"]


def test_sectnum_numbers_below_a_subtitle_as_docutils_does():
    """Found by a helper on docutils' enthought-rfp.txt: a lone section under the title is its
    subtitle to docutils, and its sections were numbered one level too deep."""
    source = (b"=====\nRFP\n=====\n\nFor proposals\n=============\n\n.. sectnum::\n\n"
              b"Needs\n-----\n\nWords.\n\nDetail\n``````\n\nMore.\n")
    extracted = RST.extract(source, "rfp")
    assert [s.title for s in extracted.sections if s.end > s.start] == [
        "RFP", "For proposals", "1 Needs", "1.1 Detail"]


def test_sectnum_of_depth_zero_numbers_the_top_level_only_as_docutils_does():
    source = (b".. sectnum::\n   :depth: 0\n\nOne\n===\n\nA.\n\nDeep\n----\n\nB.\n\n"
              b"Two\n===\n\nC.\n")
    assert [s.title for s in RST.extract(source, "parts").sections if s.end > s.start] == [
        "1 One", "Deep", "2 Two"]
