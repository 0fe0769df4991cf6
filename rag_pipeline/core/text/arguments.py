"""The one error an unusable user value raises, at the bottom of the core so that a check in
any stage (the warehouse's partition values, the configuration stage's argument checks) raises
the same class, and the CLI and the HTTP service catch one class for all of them."""

from __future__ import annotations


class InvalidArgumentError(ValueError):
    """A value a user gave is unusable; the message names the argument and the value."""
