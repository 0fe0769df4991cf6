"""Evaluation per principal: the gold lines a group is scored on (a line's ``groups``, else its
needle in a document the group reads) and rankings within the rows the group may read."""

from __future__ import annotations

import pytest

from rag_pipeline.core.config.gold_file import GoldLine
from rag_pipeline.core.evaluation.catalogue import RunKey
from rag_pipeline.core.evaluation.evaluate import evaluate, rows_holding
from rag_pipeline.core.evaluation.gold import validate_gold
from rag_pipeline.core.evaluation.run import gold_lines_for
from rag_pipeline.core.index.access import labelled
from rag_pipeline.core.retrieval.choices import Retriever
from rag_pipeline_tests.core.index.test_access import POLICY
from rag_pipeline_tests.core.index_builder import BuiltIndex, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder

UPGRADE = GoldLine("up", "Run the upgrade command twice when the lock file is older than a week.",
                   "how often should the upgrade command run", "upgrade keeps failing")
NOTES = GoldLine("xml", "Version 2 removed the legacy XML exporter.", "which exporter was removed",
                 "my xml export is gone")
CONFIG = GoldLine("cfg", "The configuration file lives in the home folder and is written in TOML.",
                  "where is the configuration file", "cannot find my settings", ("eng",))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    return build_index(tmp_path_factory.mktemp("eval-access"), hashed_embedder)


@pytest.mark.parametrize(("groups", "kept", "documents"), [
    (None, ["up", "xml", "cfg"], 4),
    (frozenset({"staff"}), ["up"], 2),            # notes.txt: nobody; cfg: for eng
    (frozenset({"eng"}), ["up", "cfg"], 2),
    (frozenset({"eng", "staff"}), ["up", "cfg"], 3),
])
def test_the_gold_lines_a_group_is_scored_on(built: BuiltIndex, groups, kept, documents):
    lines, canonical = gold_lines_for([UPGRADE, NOTES, CONFIG], built.canonical, POLICY, groups)
    assert ([line.id for line in lines], len(canonical)) == (kept, documents)


def test_a_group_is_ranked_within_its_rows(built: BuiltIndex, hashed_embedder: HashedEmbedder):
    index = labelled(built.index, POLICY)
    staff = frozenset({"staff"})
    readable = index.access.readable(staff)
    assert rows_holding(index, [UPGRADE.needle], readable) == {UPGRADE.needle: frozenset({4})}
    assert rows_holding(index, [NOTES.needle], readable) == {NOTES.needle: frozenset()}
    lines, canonical = gold_lines_for([UPGRADE, NOTES], built.canonical, POLICY, staff)
    queries, errors = validate_gold(lines, canonical)
    report = evaluate({"header": index}, hashed_embedder, queries, [], errors,
                      [RunKey("header", Retriever.BM25)], groups=staff)
    assert [(r.line_id, r.rank) for r in report.ranks] == [("up", 1), ("up", 1)]
    # The same query as a group that reads nothing: the needle is not where it can look.
    nobody = evaluate({"header": index}, hashed_embedder, queries, [], errors,
                      [RunKey("header", Retriever.BM25)], groups=frozenset({"nobody"}))
    assert ([r.rank for r in nobody.ranks], nobody.destroyed) == ([None, None], {"header": ["up"]})
