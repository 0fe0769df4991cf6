"""JSON Lines read as numbered objects, each bad line one error naming the file and line: the
one reader of the gold sets, the out-of-domain sets and the calibration texts."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def jsonl_objects(path: Path, error: type[Exception], expected: str | None = None,
                  ) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSONL file with their line numbers (from 1); blank lines are
    passed over, and a byte-order mark before the first line (an editor's "UTF-8 with BOM").

    Args:
        path: The file.
        error: The exception raised for a bad line, with a one-line message
            ``<path>:<line>: <what is wrong>``.
        expected: What every line must be (``a calibration line must be {"text": ...}``): when
            given, it is the message for a line that is not JSON or not an object; else the
            message says which of the two it is (``not JSON: <why>``, ``a line must be a JSON
            object, not list``).

    Raises:
        error: The file is missing, over :data:`MAX_JSONL_BYTES` or not UTF-8, or a line is not
            JSON or not a JSON object.
    """
    try:
        size = Path(path).stat().st_size
        if size > MAX_JSONL_BYTES:
            raise error(f"{path}: {size:,} bytes, over the limit of {MAX_JSONL_BYTES:,} for a "
                        "JSONL file here")
        data = Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise error(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise error(f"{path}: a folder, not a file") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        raise error(f"{path}:{line}: " + ("the file is UTF-16: save it as UTF-8" if utf16 else
                                          f"not UTF-8 (byte 0x{data[exc.start]:02x}): save the "
                                          "file as UTF-8")) from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path}:{number}: {expected or f'not JSON: {exc.msg}'}") from exc
        if not isinstance(row, dict):
            raise error(f"{path}:{number}: "
                        f"{expected or f'a line must be a JSON object, not {type(row).__name__}'}")
        yield number, row


MAX_JSONL_BYTES = 64 * 1024 * 1024
"""A gold set, an out-of-domain set or calibration texts over this is refused unread: the
largest real ones are a few megabytes, and a 300 MB file took 4 GB to read."""


JSON_TYPES = {bool: "true or false", int: "a number", float: "a number", str: "a string",
              list: "a list", dict: "an object", type(None): "null"}
"""What a JSON value is called in a message, by the Python type ``json`` reads it as."""


def not_text(row: dict[str, Any], fields: Sequence[str]) -> tuple[str, str] | None:
    """The first of ``fields`` that ``row`` holds as anything but a JSON string, and what it
    holds instead (``("id", "a number")``); None when each is a string or absent."""
    for name in fields:
        if name in row and not isinstance(row[name], str):
            return name, JSON_TYPES.get(type(row[name]), type(row[name]).__name__)
    return None


def missing_fields(row: dict[str, Any], required: Sequence[str]) -> list[str]:
    """The fields of ``required`` that ``row`` lacks or holds as anything but a string with a
    character other than white space, in ``required``'s order."""
    return [k for k in required if not isinstance(row.get(k), str) or not row[k].strip()]
