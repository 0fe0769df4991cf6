"""Who may read what: the ``[access]`` table of ``rag_pipeline.toml`` as typed values.

::

    [access]
    groups = ["hr", "eng", "staff"]            # optional: every reader must be one of these
    rules = [
      { glob = "hr/**",     readers = ["hr"] },
      { glob = "eng/**",    readers = ["eng"] },
      { glob = "public/**", readers = ["staff", "hr", "eng"] },
    ]

A glob matches a document id (the posix path relative to the corpus root; a member of a
container appends its own path, so ``hr/mail.eml/a.pdf`` matches ``hr/**``): ``**`` matches
any run of characters across folders, ``*`` any run within one folder, ``?`` one character
other than ``/``, ``[abc]`` one of a set and ``[!abc]`` (or ``[^abc]``) one character not in
it (neither ever ``/``). The first rule whose glob matches gives a document
its readers; a document no rule matches is readable by nobody (deny by default). A member of a
container is read only by groups that also read its container (every container, when nested).
Without an ``[access]`` table every document is readable by everyone, as before.

Pure: no Dagster, no I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import unicodedata
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from rag_pipeline.core.config.tables import check_table
from rag_pipeline.core.embedding.models import ModelConfigError
from rag_pipeline.core.ingest.sources.base import enclosing_ids
from rag_pipeline.core.text.arguments import listed

__all__ = ["ACCESS_KEYS", "RULE_KEYS", "AccessPolicy", "AccessReport", "AccessRule", "GlobAutomaton",
           "access_report", "glob_regex", "parse_access", "unmatched_globs"]

ACCESS_KEYS = frozenset({"rules", "groups"})
RULE_KEYS = frozenset({"glob", "readers"})
GROUP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]*")
"""A group name: letters, digits, ``.``, ``_``, ``@``, ``-`` (what single sign-on proxies send)."""


_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z",
            "lower": "a-z", "space": r" \t\n\r\f\v", "xdigit": "0-9A-Fa-f",
            "punct": re.escape(string.punctuation)}
"""The POSIX classes a set may name (``[[:digit:]]``), as regular-expression set items."""


def _set_end(glob: str, start: int) -> int:
    """The index of the ``]`` that closes the set opening at ``glob[start]`` (a ``]`` first in
    the set, after its ``!`` or ``^``, is one of its characters; a class ``[:digit:]`` is one
    item), or -1 when none does."""
    i = start + 1
    if glob.startswith(("!", "^"), i):
        i += 1
    if glob.startswith("]", i):
        i += 1
    while i < len(glob):
        if glob.startswith("[:", i) and (end := glob.find(":]", i + 2)) >= 0:
            i = end + 2
        elif glob[i] == "]":
            return i
        else:
            i += 1
    return -1


def _set_regex(body: str) -> str:
    """The regular expression of a glob's set ``[body]``: one character of it (``[!...]`` or,
    as shells read it, ``[^...]``: not of it), never ``/``, as ``*`` and ``?`` never match one.
    Its items are characters, ranges (``a-z``) and POSIX classes (``[:digit:]``), each written
    out so that no character of it has a meaning of its own in the expression.

    Raises:
        ValueError: A range whose end comes before its start (``z-a``), or an unknown class.
    """
    negate = body.startswith(("!", "^"))
    members = body[1:] if negate else body
    items, i = [], 0
    while i < len(members):
        if members.startswith("[:", i) and (end := members.find(":]", i + 2)) >= 0:
            name = members[i + 2:end]
            if name not in _CLASSES:
                raise ValueError(f"the set [{body}] names the class [:{name}:], which is unknown; "
                                 f"known: {', '.join(sorted(_CLASSES))}")
            items.append(_CLASSES[name])
            i = end + 2
        elif i + 2 < len(members) and members[i + 1] == "-":
            first, last = members[i], members[i + 2]
            if first > last:
                raise ValueError(f"the set [{body}] has the range {first}-{last}, which is backwards")
            items.append(f"{re.escape(first)}-{re.escape(last)}")
            i += 3
        else:
            items.append(re.escape(members[i]))
            i += 1
    escaped = "".join(items)
    return f"[^/{escaped}]" if negate else f"(?!/)[{escaped}]"


def _glob_tokens(glob: str) -> list[tuple[str, str]]:
    """A glob's parts, in order: ``("dirs", "")`` for ``**/`` (any run of folders, none
    included), ``("any", "")`` for ``**``, ``("star", "")``, ``("one", "")``, ``("set",
    expression)`` and ``("char", c)``.

    Raises:
        ValueError: A set with a backwards range (:func:`_set_regex`).
    """
    out, i = [], 0
    while i < len(glob):
        char = glob[i]
        if glob.startswith("**/", i):
            out.append(("dirs", ""))
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(("any", ""))
            i += 2
            continue
        if char == "*":
            out.append(("star", ""))
        elif char == "?":
            out.append(("one", ""))
        elif char == "[" and (end := _set_end(glob, i)) >= 0:
            out.append(("set", _set_regex(glob[i + 1:end])))
            i = end
        else:
            out.append(("char", char))
        i += 1
    return out


_TOKEN_REGEX = {"dirs": "(?:.*/)?", "any": ".*", "star": "[^/]*", "one": "[^/]"}


def glob_regex(glob: str) -> re.Pattern[str]:
    """The regular expression of a rule's glob over whole document ids (``a/**/b`` also
    matches ``a/b``).

    Raises:
        ValueError: A set with a backwards range (:func:`_set_regex`).
    """
    return re.compile("".join(_TOKEN_REGEX.get(kind) or (value if kind == "set" else re.escape(value))
                              for kind, value in _glob_tokens(glob)), re.DOTALL)


class GlobAutomaton:
    """A glob matched in time linear in the id (times the glob's length): the states of its
    automaton advanced together, one character at a time, as a bit set.

    Python's regular expressions backtrack: an expression of several ``.*`` takes time of the
    id's length to the power of their number (under ``**/drafts/**/legal/**/review/**/*.pdf``
    a crafted 4,000-character id in a request takes seconds, the interpreter lock held
    throughout). :meth:`AccessRule.matches` uses this automaton for a
    glob of two runs (``*``, ``**``) or more; a glob of at most one is matched by its
    expression, whose time is linear already.

    States: one before each part. ``*`` and ``**`` are loops (a character they take keeps the
    state, and the state also stands after them); ``**/`` is a choice between nothing and a
    loop over any character that must end in ``/``.
    """

    def __init__(self, glob: str) -> None:
        self._stays: list[tuple[int, re.Pattern[str]]] = []  # (bit, what it takes)
        self._steps: list[tuple[int, re.Pattern[str]]] = []
        closure: list[tuple[int, int]] = []  # (bit, the bits it also stands for), ascending
        anything, not_slash = re.compile(".", re.DOTALL), re.compile("[^/]")
        state = 0
        for kind, value in _glob_tokens(glob):
            if kind == "dirs":  # state: skip (to after the '/') or enter the loop
                closure.append((1 << state, (1 << state + 1) | (1 << state + 3)))
                self._stays.append((1 << state + 1, anything))
                closure.append((1 << state + 1, 1 << state + 2))
                self._steps.append((1 << state + 2, re.compile("/")))
                state += 3
            elif kind in ("any", "star"):
                self._stays.append((1 << state, anything if kind == "any" else not_slash))
                closure.append((1 << state, 1 << state + 1))
                state += 1
            else:
                self._steps.append((1 << state, not_slash if kind == "one" else re.compile(
                    value if kind == "set" else re.escape(value), re.DOTALL)))
                state += 1
        self._closure = closure
        self._accept = 1 << state
        self._masks: dict[str, tuple[int, int]] = {}

    def _close(self, states: int) -> int:
        for bit, also in self._closure:
            if states & bit:
                states |= also
        return states

    def _masks_of(self, char: str) -> tuple[int, int]:
        masks = self._masks.get(char)
        if masks is None:
            masks = (sum(bit for bit, takes in self._stays if takes.fullmatch(char)),
                     sum(bit for bit, takes in self._steps if takes.fullmatch(char)))
            if len(self._masks) < 4096:
                self._masks[char] = masks
        return masks

    def fullmatch(self, document_id: str) -> bool:
        states = self._close(1)
        for char in document_id:
            stays, steps = self._masks_of(char)
            states = self._close((states & stays) | ((states & steps) << 1))
            if not states:
                return False
        return bool(states & self._accept)


@dataclass(frozen=True)
class AccessRule:
    """One rule: documents whose id matches ``glob`` are readable by ``readers``. Both are
    compared in Unicode NFC: a folder ``sécurité`` written decomposed (as macOS and some sync
    tools write names) is matched by the glob typed composed, never passed over for a broader
    rule after it."""

    glob: str
    readers: tuple[str, ...]

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return glob_regex(unicodedata.normalize("NFC", self.glob))

    @cached_property
    def _automaton(self) -> GlobAutomaton | None:
        """The glob's automaton when it has two runs or more (:class:`GlobAutomaton`)."""
        glob = unicodedata.normalize("NFC", self.glob)
        runs = sum(kind in ("dirs", "any", "star") for kind, _ in _glob_tokens(glob))
        return GlobAutomaton(glob) if runs > 1 else None

    def matches(self, document_id: str) -> bool:
        document_id = unicodedata.normalize("NFC", document_id)
        if self._automaton is not None:
            return self._automaton.fullmatch(document_id)
        return self.pattern.fullmatch(document_id) is not None


RULES_SEMANTICS = "containers-and-members; sets-within-a-folder"
"""How rules are applied, named in the digest: a member of a container is read only by groups
that read its container too, and a container only by groups that read everything in it
(:meth:`AccessPolicy.readers_by_document`); a glob's set never matches ``/``
(:func:`glob_regex`)."""


@dataclass(frozen=True)
class AccessPolicy:
    """The declared rules, in order (the first match wins), and the declared groups (empty:
    any group name a rule gives)."""

    rules: tuple[AccessRule, ...]
    groups: tuple[str, ...] = ()

    def readers_by_document(self, document_ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """The groups that may read each of a corpus's documents (sorted; empty: nobody).

        A document's own readers are its first matching rule's. A container and its members
        share them both ways: a member (its id runs on past another document's id: an
        archive's file, a mail's attachment) is read only by groups that read its container,
        so a rule naming ``public/board.eml`` keeps its attachments from ``public/**``'s
        readers; and a container only by groups that read everything in it, since its own text
        lists its members' names and its original file holds them. A folder is no document,
        whatever its name."""
        ids = set(document_ids)
        own = {d: frozenset(self.rule_readers(d)) for d in ids}
        readers = {d: set(groups) for d, groups in own.items()}
        for document_id in ids:
            for container in enclosing_ids(document_id):
                if container in ids:
                    readers[document_id] &= own[container]
                    readers[container] &= own[document_id]
        return {d: tuple(sorted(groups)) for d, groups in readers.items()}

    def readers_of(self, document_id: str, documents: Container[str] = frozenset()
                   ) -> tuple[str, ...]:
        """:meth:`readers_by_document` of a document that holds none of ``documents`` (a
        failed or skipped one): its rule's readers and its containers' among them."""
        return self.readers_by_document(
            [document_id, *(c for c in enclosing_ids(document_id) if c in documents)])[document_id]

    def rule_readers(self, document_id: str) -> tuple[str, ...]:
        """The readers of the first rule matching ``document_id`` (empty: none matches)."""
        for rule in self.rules:
            if rule.matches(document_id):
                return rule.readers
        return ()

    @cached_property
    def digest(self) -> str:
        """A short digest of the rules (order included) and of how they are applied
        (:data:`RULES_SEMANTICS`): a changed rule changes it, and so does another reading of
        the same rules, so that every ``access`` table is labelled again."""
        text = json.dumps([[r.glob, list(r.readers)] for r in self.rules], separators=(",", ":"))
        return hashlib.sha256(f"{RULES_SEMANTICS}\n{text}".encode()).hexdigest()[:16]

    @property
    def known_groups(self) -> frozenset[str]:
        """Every group a rule names (and every declared one)."""
        return frozenset(self.groups).union(*(r.readers for r in self.rules))


def _group_list(value: object, where: str) -> tuple[str, ...]:
    if (not isinstance(value, list) or not value
            or any(not isinstance(g, str) or GROUP_NAME.fullmatch(g) is None for g in value)):
        raise ModelConfigError(f"{where} must be a non-empty list of group names (letters, "
                               f"digits, '.', '_', '@', '-'), got {value!r}")
    if len(set(value)) != len(value):
        raise ModelConfigError(f"{where} names a group twice: {value!r}")
    return tuple(value)


def parse_access(raw: object, label: str) -> AccessPolicy:
    """The ``[access]`` table, checked; each error is one line naming the rule at fault.

    Raises:
        ModelConfigError: The table, a rule, a glob or a group name is malformed, or a rule
            names a group that ``groups`` does not declare.
    """
    check_table(raw, ACCESS_KEYS, f"{label}: [access]")
    groups = _group_list(raw["groups"], f"{label}: [access] groups") if "groups" in raw else ()
    rules_raw = raw.get("rules")
    if not isinstance(rules_raw, list):
        raise ModelConfigError(f"{label}: [access] rules must be a list of tables "
                               '{ glob = "...", readers = ["..."] }')
    rules = []
    for number, table in enumerate(rules_raw, start=1):
        where = f"{label}: [access] rule #{number}"
        if not isinstance(table, Mapping):
            raise ModelConfigError(f"{where} must be a table {{ glob = \"...\", readers = "
                                   f"[\"...\"] }}, got {table!r}")
        check_table(table, RULE_KEYS, where)
        glob = table.get("glob")
        if not isinstance(glob, str) or not glob or glob.startswith("/") or "\\" in glob:
            raise ModelConfigError(f"{where}: `glob` must be a non-empty path pattern relative to "
                                   f"the corpus root (no leading '/', '/' between folders), got "
                                   f"{glob!r}")
        rule = AccessRule(glob, ())
        try:
            rule.pattern  # noqa: B018 - compiled here so that a bad glob fails the table
        except (ValueError, re.error) as exc:
            raise ModelConfigError(f"{where}: `glob` {glob!r} is not a pattern: {exc}") from None
        readers = _group_list(table.get("readers"), f"{where} ({glob!r}): `readers`")
        if groups:
            stray = sorted(set(readers) - set(groups))
            if stray:
                raise ModelConfigError(f"{where} ({glob!r}): unknown group(s) {listed(stray)}; "
                                       f"[access] groups declares {listed(groups)}")
        rules.append(AccessRule(glob, readers))
    return AccessPolicy(tuple(rules), groups)


def unmatched_globs(policy: AccessPolicy, document_ids: Iterable[str]) -> list[str]:
    """The rules' globs that match none of ``document_ids`` (a warning: a typo, or a folder
    not there yet)."""
    ids = list(document_ids)
    return [r.glob for r in policy.rules if not any(r.matches(d) for d in ids)]


@dataclass(frozen=True)
class AccessReport:
    """What the rules make of a corpus: documents per group, the ones nobody may read, and
    globs that match nothing."""

    documents: int
    by_group: dict[str, int]
    unreadable: list[str]
    unmatched: list[str]


def unreadable_reason(policy: AccessPolicy, document_id: str) -> str:
    """Why a document of the corpus that nobody reads is so (``status`` names each one)."""
    if not policy.rule_readers(document_id):
        return "no [access] rule matches it"
    return ("its rule and those of its container or members share no group (a container and "
            "its members are read by the groups that read both)")


def access_report(policy: AccessPolicy, document_ids: Iterable[str],
                  corpus_ids: Iterable[str] = ()) -> AccessReport:
    """The rules applied to ``document_ids`` (what ``status`` prints), read over
    ``corpus_ids`` too (every document of the corpus, whatever its status)."""
    ids = sorted(document_ids)
    readers = policy.readers_by_document([*corpus_ids, *ids])
    groups = sorted(policy.known_groups)
    return AccessReport(len(ids), {g: sum(g in readers[d] for d in ids) for g in groups},
                        [d for d in ids if not readers[d]], unmatched_globs(policy, ids))
