"""The one error an unusable user value raises, at the bottom of the core so that a check in
any stage (the warehouse's partition values, the configuration stage's argument checks) raises
the same class, and the CLI and the HTTP service catch one class for all of them."""

from __future__ import annotations

from collections.abc import Iterable


class InvalidArgumentError(ValueError):
    """A value a user gave is unusable; the message names the argument and the value."""


def listed(names: Iterable[object]) -> str:
    """Names as an error message lists them: ``a, b, c`` (not a Python list's ``['a', 'b']``)."""
    return ", ".join(str(name) for name in names)
