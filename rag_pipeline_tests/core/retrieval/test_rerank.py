from __future__ import annotations

import math
from pathlib import Path

import pytest

from rag_pipeline.core.retrieval.rerank import Reranker, RerankSettings

QUESTION = "how often should the upgrade command run"
CANDIDATES = [
    ("c1", "Run the upgrade command twice when the lock file is older than a week."),
    ("c2", "The configuration file lives in the home folder and is written in TOML."),
    ("c3", "Version 2 removed the legacy XML exporter."),
    ("c4", "Every network call gives up after seventeen seconds."),
    ("c5", "Frobnicator needs a POSIX shell and about forty megabytes of disk space."),
]


def direct_scores(folder: Path, pairs: list[tuple[str, str]], max_length: int) -> list[float]:
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(folder), device="cpu", local_files_only=True, max_length=max_length)
    return [float(score) for score in model.predict(pairs, show_progress_bar=False)]


@pytest.mark.slow  # builds a cross-encoder with torch
def test_rerank_orders_by_the_cross_encoder_scores(tiny_cross_encoder: Path) -> None:
    reranker = Reranker(RerankSettings(model_path=tiny_cross_encoder))
    scores = direct_scores(tiny_cross_encoder, [(QUESTION, text) for _, text in CANDIDATES], 512)
    expected = sorted(zip([cid for cid, _ in CANDIDATES], scores, strict=True),
                      key=lambda pair: pair[1], reverse=True)

    ranked = reranker.rerank(QUESTION, CANDIDATES)

    assert len(set(scores)) == len(scores)
    assert ranked == expected
    assert [cid for cid, _ in ranked] != [cid for cid, _ in CANDIDATES]


@pytest.mark.slow  # builds a cross-encoder with torch
def test_rerank_scores_only_the_shortlist(tiny_cross_encoder: Path) -> None:
    reranker = Reranker(RerankSettings(model_path=tiny_cross_encoder, shortlist=3))
    head = CANDIDATES[:3]
    scores = direct_scores(tiny_cross_encoder, [(QUESTION, text) for _, text in head], 512)
    expected_head = sorted(zip([cid for cid, _ in head], scores, strict=True),
                           key=lambda pair: pair[1], reverse=True)

    ranked = reranker.rerank(QUESTION, CANDIDATES)

    assert ranked == [*expected_head, ("c4", -math.inf), ("c5", -math.inf)]


@pytest.mark.slow  # builds a cross-encoder with torch
def test_rerank_keeps_given_order_on_tied_scores(tiny_cross_encoder: Path) -> None:
    reranker = Reranker(RerankSettings(model_path=tiny_cross_encoder))
    same = "Run the upgrade command twice."
    candidates = [("b", same), ("other", CANDIDATES[2][1]), ("a", same), ("c", same)]

    ranked = reranker.rerank(QUESTION, candidates)

    tied = [cid for cid, _ in ranked if cid != "other"]
    assert tied == ["b", "a", "c"]
    assert len({score for cid, score in ranked if cid != "other"}) == 1


@pytest.mark.slow  # builds a cross-encoder with torch
def test_rerank_truncates_pairs_to_max_length(tiny_cross_encoder: Path) -> None:
    long_text = CANDIDATES[0][1] + " " + " ".join(["lock file stale cache"] * 40)
    candidates = [("long", long_text), ("short", CANDIDATES[1][1])]
    pairs = [(QUESTION, text) for _, text in candidates]
    truncated = direct_scores(tiny_cross_encoder, pairs, 16)
    full = direct_scores(tiny_cross_encoder, pairs, 512)

    ranked = dict(Reranker(RerankSettings(model_path=tiny_cross_encoder, max_length=16))
                  .rerank(QUESTION, candidates))

    assert truncated[0] != full[0]
    assert ranked == {"long": truncated[0], "short": truncated[1]}


@pytest.mark.slow  # builds a cross-encoder with torch
def test_rerank_of_no_candidates_is_empty(tiny_cross_encoder: Path) -> None:
    assert Reranker(RerankSettings(model_path=tiny_cross_encoder)).rerank(QUESTION, []) == []


@pytest.mark.slow  # builds a cross-encoder with torch
def test_rerank_refuses_repeated_ids(tiny_cross_encoder: Path) -> None:
    reranker = Reranker(RerankSettings(model_path=tiny_cross_encoder))
    with pytest.raises(ValueError, match=r"repeated: \['c1'\]"):
        reranker.rerank(QUESTION, [CANDIDATES[0], CANDIDATES[1], CANDIDATES[0]])


def test_missing_model_folder_raises_file_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(FileNotFoundError, match="no-such-model"):
        Reranker(RerankSettings(model_path=missing))


@pytest.mark.parametrize(("overrides", "message"), [({"shortlist": 0}, "shortlist"),
                                                    ({"max_length": 0}, "max_length")])
def test_settings_reject_values_below_one(tmp_path: Path, overrides: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RerankSettings(model_path=tmp_path, **overrides)
