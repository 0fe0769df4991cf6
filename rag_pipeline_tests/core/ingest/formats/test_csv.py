"""CSV: records under the header row, one ``row=N`` anchor each, RFC 7111 ``#row=`` fragments."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest.bom_text import NOT_GUESSED
from rag_pipeline.core.ingest.extracted import Anchor, ExtractionError
from rag_pipeline.core.ingest.formats.csv import CsvFormat, sniff_delimiter

CSV = CsvFormat()

# A semicolon file with a BOM and CRLF line ends, a blank record (row 2), a quoted field with a
# line break inside it (one record, row 3), an empty cell and a cell beyond the header (row 4).
PARTS = ("\ufeffname;qty;note\r\n\r\nwidget;3;\"multi\r\nline\"\r\ngadget;;x;extra\r\nbolt;10;\r\n"
         .encode("utf-8"))
PARTS_TEXT = ("name | qty | note\n"
              "name: widget | qty: 3 | note: multi line\n"
              "name: gadget | note: x | column 4: extra\n"
              "name: bolt | qty: 10\n")


def test_rows_are_lines_under_the_header_with_one_anchor_each():
    extracted = CSV.extract(PARTS, "parts")
    assert extracted.title == "parts"
    assert extracted.canonical_text == PARTS_TEXT
    assert extracted.sections == ()
    assert extracted.anchors == (Anchor(0, 17, "row=1"), Anchor(18, 58, "row=3"),
                                 Anchor(59, 99, "row=4"), Anchor(100, 120, "row=5"))
    for anchor, line in zip(extracted.anchors, PARTS_TEXT.splitlines(), strict=True):
        assert PARTS_TEXT[anchor.start:anchor.end] == line
    assert extracted.notes == (("rows", "3"),)


def test_a_span_over_several_rows_cites_the_rfc_7111_row_range():
    anchors = CSV.extract(PARTS, "parts").anchors
    assert CSV.fragment(anchors, 18, 99) == "#row=3-4"
    assert CSV.fragment(anchors, 20, 110) == "#row=3-5"  # starts and ends inside rows
    assert CSV.fragment(anchors, 59, 99) == "#row=4"
    assert CSV.fragment(anchors, 0, 120) == "#row=1-5"
    assert CSV.fragment((), 3, 9) == "#char=3,9"


@pytest.mark.parametrize(("sample", "delimiter"), [
    ("a,b,c\n1,2,3\n", ","),
    ("a;b\n\"x;y\";2\n", ";"),
    ("a\tb\n1\t2\n", "\t"),
    ("a|b|c\n1|2|3\n", "|"),
    ("name;qty;note\n\nwidget;3;\"multi\nline\"\ngadget;;x;extra\n", ";"),  # csv.Sniffer fails here
    ("one column\nsecond, with a comma\n", ","),  # no delimiter splits every record: the comma
])
def test_the_delimiter_is_the_one_giving_one_width_to_most_records(sample: str, delimiter: str):
    assert sniff_delimiter(sample) == delimiter


def test_a_one_column_file_is_its_lines():
    assert CSV.extract(b"word\nalpha\nbeta\n", "w").canonical_text == "word\nword: alpha\nword: beta\n"


def test_a_header_only_file_is_its_header_line():
    extracted = CSV.extract(b"a,b\n", "h")
    assert (extracted.canonical_text, extracted.anchors) == ("a | b\n", (Anchor(0, 5, "row=1"),))


def test_a_windows_1252_export_is_read_and_said_and_other_bytes_fail_with_the_offset():
    # Excel's "CSV" on a Western Windows: windows-1252, no byte-order mark.
    extracted = CSV.extract("a,b\nCaf\u00e9 \u20ac,1\n".encode("cp1252"), "export")
    assert (extracted.canonical_text, extracted.notes) == (
        "a | b\na: Caf\u00e9 \u20ac | b: 1\n", (("rows", "1"), ("charset_guessed", "windows-1252")))
    with pytest.raises(ExtractionError) as raised:  # Cyrillic windows-1251: mostly high bytes
        CSV.extract("\u0438\u043c\u044f,\u0433\u043e\u0440\u043e\u0434\n".encode("cp1251"), "ru")
    assert str(raised.value) == (
        "not UTF-8: byte 0xe8 at offset 0 (invalid continuation byte); CSV files are read as UTF-8, "
        "or as UTF-16/UTF-32 with a byte-order mark, or as windows-1252 when plainly that: " + NOT_GUESSED)


def test_utf16_with_a_byte_order_mark_is_read():
    # Excel's "Unicode text" export: UTF-16 LE with a byte-order mark, tab-separated, CRLF.
    data = "\ufeffname\tcity\r\nZo\u00eb\tK\u00f6ln\r\n".encode("utf-16-le")
    assert CSV.extract(data, "u").canonical_text == "name | city\nname: Zo\u00eb | city: K\u00f6ln\n"


def test_a_field_longer_than_the_csv_modules_default_limit_is_read():
    # 200,000 characters: over the csv module's 131,072, which failed the whole file.
    long = "x" * 200_000
    extracted = CSV.extract(f"note,id\n{long},1\nshort,2\n".encode(), "big")
    assert extracted.canonical_text == f"note | id\nnote: {long} | id: 1\nnote: short | id: 2\n"


@pytest.mark.parametrize(("data", "reason"), [
    (b'a,b\n"x"y,1\n', "malformed CSV at line 2: ',' expected after '\"'"),  # a stray quote
    (b'a,b\n"open,1\n', "malformed CSV at line 2: unexpected end of data"),  # never closed
])
def test_malformed_quoting_fails_with_its_line(data: bytes, reason: str):
    with pytest.raises(ExtractionError) as raised:
        CSV.extract(data, "bad")
    assert str(raised.value) == reason


def test_a_comment_line_above_the_table_is_preamble_not_the_header():
    # The shape of matplotlib's sample Stocks.csv: one comment field, then the real header.
    data = b"# Data source: example.org\nDate,IBM,AAPL\n1990-01-01,10.5,0.8\n"
    extracted = CSV.extract(data, "stocks")
    assert extracted.canonical_text == ("# Data source: example.org\n"
                                        "Date | IBM | AAPL\n"
                                        "Date: 1990-01-01 | IBM: 10.5 | AAPL: 0.8\n")
    assert [a.locator for a in extracted.anchors] == ["row=1", "row=2", "row=3"]
    assert extracted.notes == (("rows", "1"),)


def test_a_table_of_numbers_alone_has_no_header_row_and_names_each_value_by_its_column():
    # The shape of scikit-learn's wine_data.csv once its count line is gone: numbers from the
    # first row on. Row 1's values name none of row 2's (not "14.23: 13.2").
    wine = CSV.extract(b"14.23,1.71,2.43\n13.2,1.78,2.14\n13.16,2.36,2.67\n", "wine")
    assert (wine.canonical_text, [a.locator for a in wine.anchors], wine.notes,
            [t.header for t in wine.tables]) == (
        "column 1: 14.23 | column 2: 1.71 | column 3: 2.43\n"
        "column 1: 13.2 | column 2: 1.78 | column 3: 2.14\n"
        "column 1: 13.16 | column 2: 2.36 | column 3: 2.67\n",
        ["row=1", "row=2", "row=3"], (("rows", "3"),), [""])
    # A value a table of numbers lacks (NaN, NA, inf) is a number all the same (found by a
    # regression trial: statsmodels' bds_results.csv lost its first row as a count line).
    bds = CSV.extract(b"1.0,1.0,NaN,0.69\n1.0,2.0,36.4,0.71\n", "bds")
    assert (bds.canonical_text.splitlines()[0], bds.notes) == (
        "column 1: 1.0 | column 2: 1.0 | column 3: NaN | column 4: 0.69", (("rows", "2"),))
    # scikit-learn's iris.csv as shipped: a count line (rows, columns, the classes' names)
    # over the numbers names no columns (not "150: 5.1 | 4: 3.5").
    iris = CSV.extract(b"150,4,setosa,versicolor,virginica\n5.1,3.5,1.4,0.2,0\n4.9,3.0,1.4,0.2,0\n", "iris")
    assert (iris.canonical_text, iris.notes, [t.header for t in iris.tables]) == (
        "150 | 4 | setosa | versicolor | virginica\n"
        "column 1: 5.1 | column 2: 3.5 | column 3: 1.4 | column 4: 0.2 | column 5: 0\n"
        "column 1: 4.9 | column 2: 3.0 | column 3: 1.4 | column 4: 0.2 | column 5: 0\n",
        (("rows", "2"),), [""])
    # A count line starts with two numbers: a year over months is a header (found by an attack).
    assert CSV.extract(b"2024,Jan,Feb\n1,10,20\n", "y").canonical_text == (
        "2024 | Jan | Feb\n2024: 1 | Jan: 10 | Feb: 20\n")
    # A header of years over a column of labels stays a header; a title line stays preamble.
    assert CSV.extract(b"Budget\nItem,2025,2026\nRent,10,11\n", "b").canonical_text == (
        "Budget\nItem | 2025 | 2026\nItem: Rent | 2025: 10 | 2026: 11\n")


def test_a_note_under_the_table_is_its_text_not_a_value_of_the_first_column():
    data = (b"Vendor,Annual fee,Owner\nNorthwind,1200,Ana\nContoso,800,Raj\nTotal,,\n"
            b"Note: all figures exclude VAT,,\n")  # Planted: one cell, five words
    fees = CSV.extract(data, "fees")
    # Words filling less than half the header's cells under the last full row are notes under
    # the table, outside it: neither "Vendor: Total" nor a data row.
    assert fees.canonical_text == ("Vendor | Annual fee | Owner\n"
                                   "Vendor: Northwind | Annual fee: 1200 | Owner: Ana\n"
                                   "Vendor: Contoso | Annual fee: 800 | Owner: Raj\n"
                                   "Total\n"
                                   "Note: all figures exclude VAT\n")
    assert (fees.notes, fees.tables[0].end) == ((("rows", "2"),), fees.canonical_text.index("\nTotal"))
    # One word under the table stays a row: a last row naming only its first column.
    assert CSV.extract(b"Vendor,Annual fee,Owner\nNorthwind,1200,Ana\nContoso,800,Raj\nZed,,\n",
                       "f").canonical_text.endswith("Vendor: Zed\n")


def test_the_rows_are_declared_as_a_table_so_each_is_a_chunk_and_cites_its_own_row():
    from rag_pipeline.core.chunking.strategies import ChunkingStrategy, chunk_document
    from rag_pipeline.core.ingest.extracted import TableSpan

    extracted = CSV.extract(b"# staff list\nname,phone,room\nAna,1,A\nBo,2,B\n", "staff")
    text = extracted.canonical_text
    assert text == ("# staff list\nname | phone | room\nname: Ana | phone: 1 | room: A\n"
                    "name: Bo | phone: 2 | room: B\n")
    assert extracted.tables == (TableSpan(13, 93, "name | phone | room", 32, (33, 64)),)
    chunks = chunk_document("staff.csv", "staff", text, ChunkingStrategy.HEADER,
                            tables=extracted.tables)
    assert [(c.content, c.text) for c in chunks] == [
        ("# staff list", "[staff]\n# staff list"),
        ("name | phone | room\nname: Ana | phone: 1 | room: A",
         "[staff]\nname | phone | room\nname: Ana | phone: 1 | room: A"),
        ("name: Bo | phone: 2 | room: B", "[staff]\nname | phone | room\nname: Bo | phone: 2 | room: B")]
    last = chunks[-1]
    # The file's own row number (RFC 7111), never a second numbering beside it.
    assert CSV.cited_fragment(extracted.anchors, extracted.tables, last.start, last.end) == "#row=4"


def test_a_cell_of_many_digits_and_a_letter_is_read_at_once():
    """Found by an attack: a cell of digits ending in a letter took time growing with the
    square of its length (80 KB, 53 s), in CSV and spreadsheets alike."""
    from rag_pipeline.core.ingest.reading_limits import document_reading_limits
    from rag_pipeline.core.ingest.rows import number_like

    digits = "1" * 200_000
    with document_reading_limits(10):
        text = CSV.read(f"name,value\nratio,{digits}x\n".encode(), "ratios").canonical_text
    assert text == f"name | value\nname: ratio | value: {digits}x\n"
    assert [number_like(v) for v in ("1,250", "($2.50)", "2026-04-01", "12a", "", "-", "٣")] == [
        True, True, True, False, False, False, True]
