"""GNU Info: one section per node, navigation lines, the tag table and index markers left out."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest.extracted import ExtractionError, Section
from rag_pipeline.core.ingest.formats.info import InfoFormat

INFO = InfoFormat()

MANUAL = (b"This is gauges.info, produced by makeinfo version 6.8 from gauges.texi.\n\n"
          b"INFO-DIR-SECTION Science\nSTART-INFO-DIR-ENTRY\n* Gauges: (gauges).\nEND-INFO-DIR-ENTRY\n\n"
          b"\x1f\nFile: gauges.info,  Node: Top,  Next: Reading,  Up: (dir)\n\n"
          b"Gauges\n******\n\nHow to read the gauges.\n\n* Menu:\n\n* Reading::\n\n"
          b"\x1f\nFile: gauges.info,  Node: Reading,  Prev: Top,  Up: Top\n\n"
          b"1 Reading\n*********\n\n\x00\x08[index\x00\x08]\nRead them at nine.\n\n"
          b"\x1f\nTag Table:\nNode: Top\x7f98\nNode: Reading\x7f240\n\x1f\nEnd Tag Table\n")


def test_nodes_become_sections_without_their_navigation():
    extracted = INFO.extract(MANUAL, "gauges")
    assert extracted.canonical_text == ("Gauges\n******\n\nHow to read the gauges.\n\n* Menu:\n\n* Reading::"
                                        "\n\n1 Reading\n*********\n\nRead them at nine.\n")
    assert extracted.title == "Gauges"
    assert extracted.sections == (Section("Top", 0, 60), Section("Reading", 62, 101))
    assert extracted.canonical_text[62:101] == "1 Reading\n*********\n\nRead them at nine."
    assert extracted.notes == (("nodes", "2"),)


def test_an_index_nodes_menu_is_left_out_and_a_node_left_with_its_heading_alone_too():
    # Found by a new team: grep's and sed's Index nodes (70 and 74 chunks of
    # "* -c: Usage. (line 22)") were cited as sources, in place of prose.
    indexes = (b"\x1f\nFile: gauges.info,  Node: Index,  Prev: Reading,  Up: Top\n\n"
               b"Index\n*****\n\n\x00\x08[index\x00\x08]\n* Menu:\n\n"
               b"* gauges:                               Reading.               (line 6)\n"
               b"* nine, reading at:                     Reading.\n"
               b"                                                              (line 7)\n\n"
               b"\x1f\nFile: gauges.info,  Node: Option Index,  Prev: Index,  Up: Top\n\n"
               b"Option Index\n************\n\nEvery option, by name.\n\n"
               b"\x00\x08[index\x00\x08]\n* Menu:\n\n* --fast:                 Reading.   (line 9)\n\n")
    manual = MANUAL.replace(b"\x1f\nTag Table:", indexes + b"\x1f\nTag Table:")
    extracted = INFO.extract(manual, "gauges")
    assert extracted.canonical_text.endswith("Read them at nine.\n\nOption Index\n************\n\n"
                                             "Every option, by name.\n")
    assert [s.title for s in extracted.sections] == ["Top", "Reading", "Option Index"]
    assert extracted.notes == (("nodes", "3"), ("index_menus_left_out", "2"))


def test_a_file_without_nodes_is_no_info_file():
    with pytest.raises(ExtractionError, match=r"^not an Info file: no node separated by a \\x1f line$"):
        INFO.extract(b"just text\n", "plain")


def test_the_main_file_of_a_split_manual_is_its_preamble_naming_its_parts():
    """Found by an operator's trial: find.info and gnupg.info (their nodes in find.info-1 and
    find.info-2) failed as "not an Info file" while their parts were read."""
    main = ("This is find.info, produced by makeinfo version 6.8 from find.texi.\n\n"
            "This manual documents version 4.9.0 of the GNU utilities for finding files.\n\n"
            "\x1f\nIndirect:\nfind.info-1: 1201\nfind.info-2: 302214\n\x1f\nTag Table:\n"
            "(Indirect)\nNode: Top1201\n\x1f\nEnd Tag Table\n")
    extracted = InfoFormat().extract(main.encode(), "find.info")
    text = ("This is find.info, produced by makeinfo version 6.8 from find.texi.\n\n"
            "This manual documents version 4.9.0 of the GNU utilities for finding files.\n")
    assert (extracted.title, extracted.canonical_text, extracted.sections, extracted.notes) == (
        "find.info", text, (Section("find.info", 0, len(text)),),
        (("split_manual_parts", "find.info-1, find.info-2"),))
