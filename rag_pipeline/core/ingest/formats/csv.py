"""CSV: each record one line under the header row, cited by RFC 7111 ``#row=`` fragments.

Read with the standard library's :mod:`csv` (RFC 4180 quoting, strict: a stray quote is an
error); the delimiter (``,`` ``;`` tab or ``|``) is found in the first 64 KiB
(:func:`sniff_delimiter`), falling back to RFC 4180's comma. UTF-8, or UTF-16/UTF-32 under a
byte-order mark (:mod:`rag_pipeline.core.ingest.bom_text`). The header and the lines are
those of :mod:`rag_pipeline.core.ingest.rows`. Rows are numbered as RFC 7111 numbers them:
records (a quoted field may span lines), the file's first record being row 1, blank records
counted but not shown.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Sequence

from rag_pipeline.core.ingest.anchor_spans import overlapping
from rag_pipeline.core.ingest.bom_text import decode_text
from rag_pipeline.core.ingest.extracted import Anchor, Extracted, ExtractionError, Extractor
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.locator import RowLocator
from rag_pipeline.core.ingest.office_zip import OfficeLimits
from rag_pipeline.core.ingest.rows import place_lines, table_lines

SNIFF_CHARS = 64 * 1024
_DELIMITERS = ",;\t|"


def sniff_delimiter(text: str) -> str:
    """The delimiter among ``,`` ``;`` tab and ``|`` that splits the first
    :data:`SNIFF_CHARS` characters into the most records of one width above one field.

    Each candidate parses the sample with RFC 4180 quoting; the one whose most common record
    width is over 1 and is shared by the most non-blank records wins, ties going to the
    order above; ``,`` when none gives more than one field (a one-column file). The standard
    :class:`csv.Sniffer` was tried first and measured failing ("Could not determine
    delimiter") on the file ``name;qty;note`` / ``widget;3;"multi\nline"`` /
    ``gadget;;x;extra`` (a quoted line break and a ragged row), whose records then became one
    field each.
    """
    sample = text[:SNIFF_CHARS]
    if len(text) > SNIFF_CHARS:
        sample = sample[:sample.rfind("\n") + 1] or sample
    best, best_score = ",", (0, 0)
    for delimiter in _DELIMITERS:
        try:
            widths = [len(record) for record in csv.reader(io.StringIO(sample, newline=""),
                                                           delimiter=delimiter, strict=False)
                      if any(field.strip() for field in record)]
        except csv.Error:
            continue
        if not widths:
            continue
        width = Counter(widths).most_common(1)[0][0]
        score = (widths.count(width), width) if width > 1 else (0, 0)
        if score > best_score:
            best, best_score = delimiter, score
    return best


def row_locator(number: int) -> str:
    return str(RowLocator(number, number))


class CsvFormat(DocumentFormat):
    """``.csv`` files (and ``.tsv``, whose tab the sniffer finds)."""

    name = "csv"
    suffixes = (".csv", ".tsv")
    plain_text = True
    fragment_names_rows = True
    rows_name_their_columns = True

    def extractor(self) -> Extractor:
        return Extractor("csv-stdlib", "13")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """One line per non-blank record, one :class:`Anchor` per line (``row=N``).

        Raises:
            ExtractionError: Not text (:mod:`~rag_pipeline.core.ingest.bom_text`), a record the :mod:`csv`
                reader rejects (a NUL byte), with its line number, or more records than a
                spreadsheet's rows (:class:`~rag_pipeline.core.ingest.office_zip.OfficeLimits`).
        """
        decoded = decode_text(data, "CSV")
        text = decoded.text
        # A field may be as long as the file (max_document_bytes bounds it), not only the
        # module's default 128 KiB.
        csv.field_size_limit(max(csv.field_size_limit(), len(text)))
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=sniff_delimiter(text),
                            strict=True)
        records: list[tuple[int, list[str]]] = []
        max_rows = OfficeLimits().max_rows
        try:
            for number, record in enumerate(reader, start=1):
                if number > max_rows:
                    raise ExtractionError(f"over {max_rows:,} records: the row limit a spreadsheet "
                                          "has (max_rows; a million tiny rows cost a gigabyte)")
                records.append((number, record))
        except csv.Error as exc:
            raise ExtractionError(f"malformed CSV at line {reader.line_num}: {exc}") from exc
        lines = table_lines(records, lambda column: f"column {column}")
        placed = place_lines(lines, 0, lambda line: row_locator(line.number))
        return Extracted(title=stem, canonical_text=placed.text, anchors=placed.anchors,
                         tables=(placed.table,) if placed.table else (),
                         notes=(("rows", str(placed.data_rows)), *decoded.notes))

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#row=12`` for one row, ``#row=12-30`` for a span (RFC 7111); ``#char=`` when the
        span holds no row."""
        rows = overlapping(anchors, start, end)
        if not rows:
            return super().fragment(anchors, start, end)
        return RowLocator(RowLocator.parse(rows[0].locator).first,
                          RowLocator.parse(rows[-1].locator).last).fragment
