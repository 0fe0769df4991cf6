"""The workbook the Office formats' tests embed in a deck or a Word document."""

from __future__ import annotations

import io


def workbook(*sheets: tuple[str, list[list[object]]]) -> bytes:
    """An XLSX package of ``(name, rows)`` sheets, each row appended from ``A`` (openpyxl)."""
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets:
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()
