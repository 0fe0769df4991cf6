"""The one error an unusable user value raises, at the bottom of the core so that a check in
any stage (the warehouse's partition values, the configuration stage's argument checks) raises
the same class, and the CLI and the HTTP service catch one class for all of them."""

from __future__ import annotations

from collections.abc import Iterable


class InvalidArgumentError(ValueError):
    """A value a user gave is unusable; the message names the argument and the value."""


def listed(names: Iterable[object], shown: int | None = None) -> str:
    """Names as a message lists them: ``a, b, c`` (not a Python list's ``['a', 'b']``); with
    ``shown``, the first ``shown`` and how many more (``a, b and 3 more``)."""
    names = [str(name) for name in names]
    if shown is None or len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])} and {len(names) - shown} more"


def repeated(names: Iterable[str]) -> list[str]:
    """The names that occur more than once, sorted, each once: what a message about
    duplicates lists."""
    seen: set[str] = set()
    twice: set[str] = set()
    for name in names:
        (twice if name in seen else seen).add(name)
    return sorted(twice)
