"""Tests for ``rag_pipeline.core.index.ann``: the rescored shortlist against the exact scan (oracle),
exact distances, the cell count and calibration questions by hand, the calibrated ``nprobe``, and the
guards that tie an index to its vectors."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rag_pipeline.benchmarks.ann_libraries import clustered_unit_vectors, near_questions
from rag_pipeline.core.index.ann import (
    MIN_SELF_RECALL,
    AnnIndex,
    AnnMismatchError,
    DensePath,
    calibrate_nprobe,
    calibration_questions,
    choose_path,
    exact_top_k,
    list_count,
    recall_at_k,
    self_recall,
    vectors_fingerprint,
)
from rag_pipeline.core.retrieval.dense import cosine_distances, top_k

N = 6_000
QUESTIONS = 100


@pytest.fixture(scope="module")
def corpus() -> tuple[np.ndarray, np.ndarray, AnnIndex]:
    vectors = clustered_unit_vectors(N, seed=3)
    return vectors, near_questions(vectors, QUESTIONS, seed=4), AnnIndex.build(vectors, threads=1)


def test_rescored_shortlist_recalls_the_exact_top_10(corpus):
    vectors, questions, index = corpus
    recalls = []
    for question in questions:
        rows, _ = index.search(vectors, question, 10)
        recalls.append(recall_at_k(rows, top_k(cosine_distances(vectors, question), 10)))
    assert np.mean(recalls) >= 0.99
    assert min(recalls) >= 0.8


def test_distances_are_the_exact_ones_closest_first(corpus):
    vectors, questions, index = corpus
    question = questions[0]
    rows, distances = index.search(vectors, question, 25)
    exact = cosine_distances(vectors, question)
    assert len(rows) == 25
    np.testing.assert_array_equal(distances, exact[rows])
    assert np.all(np.diff(distances) >= 0)


def test_k_beyond_the_index_returns_every_row_once():
    vectors = clustered_unit_vectors(30, seed=5)
    index = AnnIndex.build(vectors, threads=1)
    rows, distances = index.search(vectors, vectors[7], 50)
    assert sorted(rows.tolist()) == list(range(30))
    assert rows[0] == 7
    assert distances[0] == pytest.approx(0.0, abs=1e-6)


def test_k_zero_returns_nothing(corpus):
    vectors, questions, index = corpus
    rows, distances = index.search(vectors, questions[0], 0)
    assert rows.tolist() == [] and distances.tolist() == []


def test_list_count_by_hand():
    # 2 sqrt(n), at most n / 39 (faiss's training floor), at least 1.
    assert list_count(1_275_000) == 2_258
    assert list_count(127_500) == 714
    assert list_count(30_000) == 346
    assert list_count(6_000) == 153       # 2 sqrt(6000) = 154.9, 6000 // 39 = 153
    assert list_count(240) == 6
    assert list_count(30) == 1


def test_calibration_questions_are_sums_of_stored_rows_by_hand():
    # With the identity as the stored vectors, a question is the count of each row drawn (four
    # draws, seeded, with replacement), renormalised.
    vectors = np.eye(8, dtype=np.float32)
    questions = calibration_questions(vectors, 50, seed=2)
    drawn = np.random.default_rng(2).integers(0, 8, (50, 4))
    counts = np.stack([np.bincount(row, minlength=8) for row in drawn]).astype(np.float32)
    np.testing.assert_allclose(questions, counts / np.linalg.norm(counts, axis=1, keepdims=True), atol=1e-6)
    assert not np.array_equal(calibration_questions(vectors, 50, seed=3), questions)


def test_exact_top_k_in_blocks_is_the_scan():
    vectors = clustered_unit_vectors(1_000, seed=8)
    questions = calibration_questions(vectors, 20, seed=3)
    found = exact_top_k(vectors, questions, 10, block=128)
    for question, rows in zip(questions, found, strict=True):
        assert sorted(rows.tolist()) == sorted(top_k(cosine_distances(vectors, question), 10).tolist())


def test_calibration_picks_the_smallest_nprobe_that_reaches_the_target(corpus):
    vectors, _, index = corpus
    nprobe, tried = calibrate_nprobe(index, vectors)
    assert index.nprobe == nprobe
    assert list(tried) == [p for p in (8, 16, 32, 64, 128) if p <= nprobe]
    assert tried[nprobe] >= 0.995
    assert all(recall < 0.995 for p, recall in tried.items() if p < nprobe)
    # Every cell scanned: the shortlist is the exact one.
    _, everything = calibrate_nprobe(replace(index, nprobe=index.nlist), vectors, target=1.01)
    assert everything[max(everything)] == 1.0


def test_saved_index_opens_memory_mapped_and_answers_the_same(corpus, tmp_path):
    import faiss

    vectors, questions, index = corpus
    path = tmp_path / "index.faiss"
    index.save(path)
    opened = AnnIndex.open(path, rows=index.rows, fingerprint=index.fingerprint,
                           nprobe=index.nprobe)
    opened.check_serves(vectors)
    for question in questions[:10]:
        np.testing.assert_array_equal(opened.search(vectors, question, 10)[0],
                                      index.search(vectors, question, 10)[0])
    # Its mapped cells start no prefetch threads at each search (faiss's default: 32).
    cells = faiss.downcast_InvertedLists(opened.ivf.invlists)
    assert (type(cells).__name__, cells.prefetch_nthread) == ("OnDiskInvertedLists", 0)


def test_opening_an_index_with_another_row_count_is_refused(corpus, tmp_path):
    vectors, _, index = corpus
    path = tmp_path / "index.faiss"
    index.save(path)
    # Planted flaw: the table claims one row more than the index holds.
    with pytest.raises(AnnMismatchError, match=r"holds 6000 vectors, its table says 6001$"):
        AnnIndex.open(path, rows=N + 1, fingerprint=index.fingerprint, nprobe=index.nprobe)


def test_opening_a_file_that_is_no_index_is_refused(corpus, tmp_path):
    _, _, index = corpus
    path = tmp_path / "index.faiss"
    # Planted flaw: a truncated file (a copy cut short).
    index.save(path)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(AnnMismatchError, match="is not a faiss index"):
        AnnIndex.open(path, rows=N, fingerprint=index.fingerprint, nprobe=8)


def test_index_refuses_other_vectors(corpus):
    vectors, _, index = corpus
    # Planted flaws: one fingerprinted vector nudged (same count), and one row fewer.
    nudged = vectors.copy()
    nudged[0, 0] += 1e-3
    with pytest.raises(AnnMismatchError, match="rebuild the index"):
        index.check_serves(nudged)
    with pytest.raises(AnnMismatchError, match=r"holds 6000 vectors, the partition 5999$"):
        index.check_serves(vectors[:-1])
    index.check_serves(vectors, fingerprint=vectors_fingerprint(vectors))


def test_fingerprint_names_order_and_shape():
    vectors = clustered_unit_vectors(10, seed=6)
    assert vectors_fingerprint(vectors) == vectors_fingerprint(vectors.copy())
    assert vectors_fingerprint(vectors) != vectors_fingerprint(vectors[::-1])
    assert vectors_fingerprint(vectors) != vectors_fingerprint(vectors.reshape(20, -1))


def test_fingerprint_samples_evenly_spaced_rows():
    vectors = clustered_unit_vectors(100, seed=6)
    # With 3 sampled rows it reads rows 0, 50 and 99: a change there shows, one elsewhere not.
    changed, unsampled = vectors.copy(), vectors.copy()
    changed[50, 3] += 1e-3
    unsampled[51, 3] += 1e-3
    assert vectors_fingerprint(changed, rows=3) != vectors_fingerprint(vectors, rows=3)
    assert vectors_fingerprint(unsampled, rows=3) == vectors_fingerprint(vectors, rows=3)


def test_empty_matrix_is_refused():
    with pytest.raises(ValueError, match="non-empty matrix"):
        AnnIndex.build(np.zeros((0, 4), np.float32))


def test_recall_by_hand():
    assert recall_at_k(np.array([1, 2, 3, 9]), np.array([3, 2, 1, 4])) == 0.75
    assert recall_at_k(np.array([], np.int64), np.array([], np.int64)) == 1.0
    # Rows 4 and 9 are one vector (a repeated chunk): finding either is finding it; row 5,
    # farther than every exact row, is not.
    vectors = np.array([[1, 0], [0.6, 0.8], [0.8, 0.6], [0.7, 0.71414284], [0, 1], [-1, 0],
                        [0, 0], [0, 0], [0, 0], [0, 1]], np.float32)
    query = np.array([0, 1], np.float32)
    assert recall_at_k(np.array([1, 2, 3, 9]), np.array([3, 2, 1, 4]), vectors, query) == 1.0
    assert recall_at_k(np.array([1, 2, 3, 5]), np.array([3, 2, 1, 4]), vectors, query) == 0.75


def test_an_index_of_repeated_vectors_searched_whole_measures_recall_1():
    # Found by an analyst: a partition of 1,275 chunks holding 1,020 distinct texts measured
    # 0.985 with every cell searched, its ties broken otherwise than the exact scan's; it
    # falls under the trusted bar on a corpus of many repeated chunks.
    distinct = clustered_unit_vectors(1_000, seed=5)
    vectors = np.concatenate([distinct, distinct[:300]])
    index = AnnIndex.build(vectors, threads=1)
    assert self_recall(replace(index, nprobe=index.nlist), vectors) == 1.0


@pytest.mark.parametrize(("rows", "has_ann", "expected"), [
    (1_275, True, DensePath.EXACT),     # the bundled corpus: exact, its figures unchanged
    (29_999, True, DensePath.EXACT),
    (30_000, True, DensePath.ANN),
    (1_288_130, False, DensePath.EXACT),  # no index built: the scan, whatever the size
])
def test_choose_path(rows, has_ann, expected):
    assert choose_path(rows, has_ann) is expected


def test_a_built_index_measures_its_own_recall_and_is_trusted(corpus):
    vectors, _, index = corpus
    # Calibration questions of another seed than the calibration's own.
    assert index.measured_recall == self_recall(index, vectors)
    assert index.measured_recall >= MIN_SELF_RECALL
    assert index.trusted


def test_an_index_that_misses_neighbours_is_measured_and_not_trusted():
    vectors = clustered_unit_vectors(2_000, seed=6)
    index = AnnIndex.build(vectors, threads=1)
    # Planted flaw: an index whose ids name other rows (built from the same vectors in another
    # order), so the rows its shortlist names are mostly not the exact neighbours.
    shuffled = np.random.default_rng(0).permutation(len(vectors))
    flawed = AnnIndex.build(vectors[shuffled], threads=1)
    recall = self_recall(replace(flawed, fingerprint=index.fingerprint), vectors)
    assert recall < 0.5
    assert not replace(index, measured_recall=recall).trusted
    assert not replace(index, measured_recall=None).trusted
