"""The model key, ``<name>@<fingerprint>``: the name of one vector space, parsed and formatted
here only.

The fingerprint is the first eight hex digits of the sha256 of the model's manifest (its files,
backend, precision, window and calibration recipe: :class:`~rag_pipeline.core.embedding.models.
Manifest`), so two keys are equal exactly when their vectors are comparable. A key names a
partition folder (``model=<key>``) and a report folder, so it is parsed strictly: a name of
letters, digits, ``.``, ``_`` and ``-``, and exactly eight lower-case hex digits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FINGERPRINT_CHARS", "InvalidModelKey", "ModelKey"]

FINGERPRINT_CHARS = 8
SEPARATOR = "@"
_GRAMMAR = re.compile(r"(?P<name>[A-Za-z0-9._-]+)@(?P<fingerprint>[0-9a-f]{"
                      + str(FINGERPRINT_CHARS) + "})")


class InvalidModelKey(ValueError):
    """A string that is not ``<name>@<8 hex digits>``."""


@dataclass(frozen=True, order=True)
class ModelKey:
    """One vector space: the model's name and its weights' fingerprint."""

    name: str
    fingerprint: str

    @classmethod
    def parse(cls, text: str) -> ModelKey:
        """The key ``text`` spells.

        Raises:
            InvalidModelKey: ``text`` is not ``<name>@<8 hex digits>`` (the name of letters,
                digits, ``.``, ``_``, ``-``), so it can never name a folder outside its own.
        """
        match = _GRAMMAR.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise InvalidModelKey(f"not a model key (<name>@<{FINGERPRINT_CHARS} hex digits>): "
                                  f"{text!r}")
        return cls(match["name"], match["fingerprint"])

    @classmethod
    def is_valid(cls, text: str) -> bool:
        return isinstance(text, str) and _GRAMMAR.fullmatch(text) is not None

    def __str__(self) -> str:
        return f"{self.name}{SEPARATOR}{self.fingerprint}"
