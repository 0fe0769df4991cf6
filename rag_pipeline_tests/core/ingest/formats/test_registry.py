"""Tests for ``rag_pipeline.core.ingest.formats``: the registry, lookup by suffix and name, and
the default ``#char=`` fragment."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_pipeline.core.ingest import REGISTRY, Anchor, format_for, format_named


def test_every_format_has_a_unique_name_and_unique_suffixes():
    names = [fmt.name for fmt in REGISTRY]
    suffixes = [suffix for fmt in REGISTRY for suffix in fmt.suffixes]
    assert len(set(names)) == len(names)
    assert len(set(suffixes)) == len(suffixes)
    assert all(suffix == suffix.lower() and suffix.startswith(".") for suffix in suffixes)


@pytest.mark.parametrize(("name", "fmt"), [
    ("guide.md", "markdown"), ("GUIDE.MARKDOWN", "markdown"), ("notes.txt", "text"),
    ("notes.text", "text"), ("page.HTM", "html"), ("page.html", "html"), ("a.pdf", "pdf"),
    ("deck.pptx", "pptx"), ("book.epub", "epub"), ("notes.ipynb", "ipynb"), ("scan.TIFF", "image"),
    ("mail.eml", "eml"), ("inbox.mbox", "mbox"), ("guide.rst", "rst"), ("guide.adoc", "asciidoc"),
    ("bash.info", "info"), ("a.odt", "odt"), ("a.odp", "odp"), ("a.ods", "ods"), ("a.zip", "zip"),
    # The last two suffixes first: a compressed tar is a tar; a dotted version is not a suffix.
    ("docs.tar.gz", "tar"), ("docs.TGZ", "tar"), ("release-v1.2.md", "markdown")])
def test_format_for_reads_the_lower_case_suffix(name: str, fmt: str):
    found = format_for(Path("corpus") / name)
    assert found is not None and found.name == fmt


def test_format_for_an_unread_suffix_or_name_is_none():
    # The corpus reads these as the file inside (.gz) or as text when their bytes are text.
    assert format_for(Path("archive.7z")) is None
    assert format_for(Path("Makefile")) is None
    assert format_for(Path("notes.md.gz")) is None


@pytest.mark.parametrize("name", ["README", "LICENSE", "CHANGELOG", "NEWS", "INSTALL", "COPYING",
                                  "readme", "License"])
def test_the_suffix_less_files_every_project_ships_are_text(name: str):
    found = format_for(Path("corpus") / name)
    assert found is not None and found.name == "text"


def test_format_named_finds_each_registered_format_and_refuses_others():
    assert [format_named(fmt.name) for fmt in REGISTRY] == list(REGISTRY)
    with pytest.raises(KeyError, match="no document format named 'rtf'"):
        format_named("rtf")


@pytest.mark.parametrize("name", ["markdown", "text", "html"])
def test_the_default_fragment_is_rfc_5147_characters(name: str):
    # Anchors do not change a character fragment.
    assert format_named(name).fragment((Anchor(0, 5, "page=1"),), 113, 203) == "#char=113,203"
