"""reStructuredText: docutils' tree as text, sections at titles, literal blocks verbatim, and
nothing read from outside the file (``include``, ``raw``)."""

from __future__ import annotations

from rag_pipeline.core.ingest.extracted import Section
from rag_pipeline.core.ingest.formats.rst import RstFormat

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
    assert [(s.title, s.level, text[s.start:s.end].split("\n")[0]) for s in extracted.sections] == [
        ("Guide", 1, "Intro para with emph and a foo role, wrapped over two lines."),
        ("Install", 2, "Run:"), ("Details", 3, "Last words.")]
    assert extracted.sections[-1] == Section("Details", 265, 276, 3)
    # The literal blocks keep their lines and indentation exactly.
    assert "make install\n  indented" in text
    # include and raw are off: nothing of /etc/passwd or of the raw HTML.
    assert "root" not in text and "<b>" not in text


def test_a_file_without_titles_is_one_section_titled_by_the_stem():
    extracted = RST.extract(b"Just a paragraph\nover lines.\n", "notes")
    assert (extracted.title, extracted.canonical_text, extracted.sections) == (
        "notes", "Just a paragraph over lines.\n", (Section("notes", 0, 28, 1),))


def test_absurd_nesting_fails_with_its_reason_instead_of_stopping_the_run():
    import pytest

    from rag_pipeline.core.ingest.extracted import ExtractionError

    nested = "".join("  " * depth + "- item\n\n" for depth in range(400)).encode()  # Planted
    with pytest.raises(ExtractionError, match="^unreadable reStructuredText: RecursionError: "):
        RST.extract(nested, "deep")
