"""The commands a message suggests (```rag-pipeline gold draft```), written so that they work
on the folder at hand: with the options (``--config F``, ``--data-dir D``) that chose it."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

__all__ = ["command_line", "commands_in"]


def command_line(options: Sequence[str], *words: str) -> str:
    """``rag-pipeline <options> <words>``, quoted for a shell."""
    return shlex.join(["rag-pipeline", *options, *words])


def commands_in(message: str, options: Sequence[str]) -> str:
    """``message`` with each ```rag-pipeline ...``` it suggests given ``options``
    (unchanged without options)."""
    if not options:
        return message
    return message.replace("`rag-pipeline ", f"`{command_line(options)} ")
