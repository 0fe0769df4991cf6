"""BM25 statistics as tables, and a vectorised scorer built from them.

Scoring follows Lucene's BM25 (Robertson & Zaragoza 2009, as compared by Kamphuis et al.,
ECIR 2020): ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` and, per query term occurrence,
``idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))``, with ``k1 = 1.2`` and ``b = 0.75``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy import sparse

from rag_pipeline.core.text.analyzers import Analyzer, analyze

K1 = 1.2
B = 0.75


def lucene_idf(df: int, n_docs: int) -> float:
    """``ln(1 + (N - df + 0.5) / (df + 0.5))``: Lucene's BM25 idf, never negative."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class Bm25Tables:
    """The four tables of one chunker's BM25 statistics for one analyzer."""

    terms: pa.Table  # term, df, idf
    chunks: pa.Table  # chunk_id, length
    postings: pa.Table  # chunk_id, term, tf
    params: pa.Table  # k1, b, n_chunks, avg_length, tokenizer


def build_bm25_tables(chunk_ids: Sequence[str], texts: Sequence[str], analyzer: Analyzer,
                      k1: float = K1, b: float = B) -> Bm25Tables:
    """Counts terms of every chunk text and derives df, idf and lengths."""
    counts = [Counter(analyze(text, analyzer)) for text in texts]
    lengths = [sum(c.values()) for c in counts]
    df: Counter[str] = Counter()
    for c in counts:
        df.update(c.keys())
    n = len(texts)
    terms = sorted(df)
    avg = (sum(lengths) / n) if n else 0.0
    post_chunk, post_term, post_tf = [], [], []
    for chunk_id, c in zip(chunk_ids, counts, strict=True):
        for term in sorted(c):
            post_chunk.append(chunk_id)
            post_term.append(term)
            post_tf.append(c[term])
    return Bm25Tables(
        # Strings typed as such: a chunker without chunks writes string columns, not nulls.
        terms=pa.table({"term": pa.array(terms, pa.string()),
                        "df": pa.array([df[t] for t in terms], pa.int64()),
                        "idf": pa.array([lucene_idf(df[t], n) for t in terms], pa.float64())}),
        chunks=pa.table({"chunk_id": pa.array(list(chunk_ids), pa.string()),
                         "length": pa.array(lengths, pa.int64())}),
        postings=pa.table({"chunk_id": pa.array(post_chunk, pa.string()),
                           "term": pa.array(post_term, pa.string()),
                           "tf": pa.array(post_tf, pa.int64())}),
        params=pa.table({"k1": [k1], "b": [b], "n_chunks": pa.array([n], pa.int64()),
                         "avg_length": [avg], "tokenizer": [analyzer.description]}),
    )


def _plain(values: pa.ChunkedArray) -> pa.Array:
    array = values.combine_chunks()
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


def _positions(values: pa.ChunkedArray, keys: pa.ChunkedArray, what: str) -> np.ndarray:
    """Position of each value among ``keys`` (dictionary-encoded values are looked up once per
    distinct value); a value that is not a key is an error."""
    array = values.combine_chunks()
    if pa.types.is_dictionary(array.type):
        found = pc.index_in(array.dictionary, value_set=_plain(keys)).take(array.indices)
    else:
        found = pc.index_in(array, value_set=_plain(keys))
    if found.null_count:
        raise ValueError(f"{found.null_count} BM25 postings name a {what} missing from the statistics")
    return found.to_numpy().astype(np.int64)


@dataclass(frozen=True)
class Bm25List:
    """A BM25 ranking: rows best first (ties by row), each with its score (all positive)."""

    rows: np.ndarray
    scores: np.ndarray


def ranked(scores: np.ndarray, depth: int, bound_rows: np.ndarray | None = None) -> Bm25List:
    """The positive entries of ``scores``, best first (ties by position), at most ``depth``.

    With ``bound_rows`` (at least ``depth`` distinct rows, all scoring above zero), their
    ``depth``-th best score is a floor no row of the top can be under: one comparison over the
    array then leaves a few candidates to sort instead of every matching row (at 1.3 M chunks,
    often most of them: a question's common words occur in hundreds of thousands of chunks).
    """
    if depth <= 0:
        return Bm25List(np.zeros(0, np.int64), np.zeros(0, scores.dtype))
    if bound_rows is not None and len(bound_rows) >= depth:
        held = scores[bound_rows]
        floor = float(np.partition(held, len(held) - depth)[len(held) - depth])
        candidates = np.flatnonzero(scores >= floor) if floor > 0 else np.flatnonzero(scores > 0)
    else:
        candidates = np.flatnonzero(scores > 0)
    if depth < len(candidates):
        kth = np.partition(-scores[candidates], depth - 1)[depth - 1]
        candidates = candidates[-scores[candidates] <= kth]
    order = np.lexsort((candidates, -scores[candidates]))[:depth]
    return Bm25List(candidates[order], scores[candidates[order]])


class Bm25Scorer:
    """Scores every chunk for a query from one term-major sparse matrix (CSC arrays).

    The matrix holds, for chunk ``d`` and term ``t``, the precomputed
    ``idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))``; a query is a vector of its term
    counts (a term asked twice counts twice, as in Robertson's formula summed over the query).
    The three arrays (``indptr``, ``indices``, ``data``) may be memory-mapped
    (:func:`rag_pipeline.core.index.mapped.mapped_bm25`): a query reads only its terms' posting
    lists, so the serving process does not grow with the corpus.
    """

    def __init__(self, chunk_ids: Sequence[str], terms: Sequence[str], idf: np.ndarray,
                 indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, analyzer: Analyzer,
                 k1: float = K1, b: float = B) -> None:
        if len(indptr) != len(terms) + 1 or len(indices) != len(data) or indptr[-1] != len(data):
            raise ValueError(f"BM25 matrix arrays disagree: {len(terms)} terms, {len(indptr)} column "
                             f"starts, {len(indices)} rows, {len(data)} weights")
        self.chunk_ids = chunk_ids
        self.analyzer = analyzer
        self.k1, self.b = k1, b
        self.term_index = {t: i for i, t in enumerate(terms)}
        self.idf = np.asarray(idf, dtype=np.float64)
        self.indptr, self.indices, self.data = indptr, indices, data
        # Plain views of the same memory for the per-term slices: a slice of a numpy.memmap is
        # a memmap, and making one costs more than reading a short posting list.
        self._starts, self._rows, self._weights = (np.asarray(a) for a in (indptr, indices, data))

    @classmethod
    def from_postings(cls, chunk_ids: Sequence[str], terms: Sequence[str], idf: np.ndarray,
                      lengths: np.ndarray, post_chunk: np.ndarray, post_term: np.ndarray,
                      post_tf: np.ndarray, analyzer: Analyzer, k1: float = K1,
                      b: float = B) -> Bm25Scorer:
        """The scorer of postings given as parallel arrays (row of the chunk, column of the
        term, term frequency), in memory."""
        weights = posting_weights(np.asarray(idf, np.float64), lengths, post_chunk, post_term,
                                  post_tf, k1, b)
        matrix = sparse.csc_matrix((weights, (post_chunk, post_term)),
                                   shape=(len(chunk_ids), len(terms)))
        matrix.sort_indices()
        return cls(chunk_ids, terms, idf, matrix.indptr, matrix.indices, matrix.data, analyzer, k1, b)

    @classmethod
    def from_tables(cls, tables: Bm25Tables, analyzer: Analyzer) -> Bm25Scorer:
        """The scorer of stored statistics; postings are mapped to rows and columns by Arrow's
        hash lookup (linear in the postings, no Python object per posting)."""
        params = tables.params.to_pylist()[0]
        return cls.from_postings(
            tables.chunks.column("chunk_id").to_pylist(), tables.terms.column("term").to_pylist(),
            tables.terms.column("idf").to_numpy(),
            tables.chunks.column("length").to_numpy().astype(np.float64),
            _positions(tables.postings.column("chunk_id"), tables.chunks.column("chunk_id"), "chunk"),
            _positions(tables.postings.column("term"), tables.terms.column("term"), "term"),
            tables.postings.column("tf").to_numpy(), analyzer, params["k1"], params["b"])

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_ids)

    @property
    def matrix(self) -> sparse.csc_matrix:
        """The weights as a (chunks x terms) sparse matrix over the same arrays (no copy)."""
        return sparse.csc_matrix((self.data, self.indices, self.indptr),
                                 shape=(self.n_chunks, len(self.term_index)), copy=False)

    def postings(self, column: int) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding term ``column`` (ascending) and their weights."""
        start, end = int(self._starts[column]), int(self._starts[column + 1])
        return self._rows[start:end], self._weights[start:end]

    def occurs_in(self, column: int, rows: np.ndarray) -> bool:
        """Whether term ``column`` occurs in any of ``rows`` (a binary search of its postings)."""
        held, _ = self.postings(column)
        if len(held) == 0 or len(rows) == 0:
            return False
        found = np.searchsorted(held, rows).clip(max=len(held) - 1)
        return bool((held[found] == rows).any())

    def _weighted(self, columns: list[int], weights: list[float],
                  readable: np.ndarray | None = None) -> np.ndarray:
        """``sum_t weight_t * column_t``: every posting added into one score array, term by term
        in the given order (:func:`_add_postings`); with a ``readable`` row mask, only the
        postings of readable rows (every other row keeps a score of zero)."""
        scores = np.zeros(self.n_chunks)
        for column, weight in zip(columns, weights, strict=True):
            rows, values = self.postings(column)
            if readable is not None:
                keep = readable[rows]
                rows, values = rows[keep], values[keep]
            _add_postings(scores, rows, values, weight)
        return scores

    def term_scores(self, weights: Mapping[str, float]) -> np.ndarray:
        """BM25 score of every chunk for a weighted bag of already analysed terms (RM3's
        expanded query); terms the index does not hold are ignored."""
        return self._weighted(*self._known_terms(weights))

    def _known_terms(self, weights: Mapping[str, float]) -> tuple[list[int], list[float]]:
        known = {t: w for t, w in weights.items() if t in self.term_index}
        return [self.term_index[t] for t in known], [float(w) for w in known.values()]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk (0 where no query term occurs), in chunk order."""
        return self._weighted(*self._query_terms(query))

    def _query_terms(self, query: str) -> tuple[list[int], list[float]]:
        counts = Counter(t for t in analyze(query, self.analyzer) if t in self.term_index)
        return [self.term_index[t] for t in counts], [float(c) for c in counts.values()]

    def top(self, query: str, depth: int, readable: np.ndarray | None = None) -> Bm25List:
        """The ``depth`` best-scoring chunks with a positive score, best first (ties by row): the
        ranking of :meth:`scores` (:func:`ranked`), found without sorting every matching row.
        With ``readable`` (a boolean mask over the rows) only readable rows are scored and
        ranked: the postings of the others never enter the sum."""
        return self._top(*self._query_terms(query), depth, readable)

    def top_terms(self, weights: Mapping[str, float], depth: int,
                  readable: np.ndarray | None = None) -> Bm25List:
        """:meth:`top` for a weighted bag of analysed terms (RM3's expanded query)."""
        return self._top(*self._known_terms(weights), depth, readable)

    def _top(self, columns: list[int], weights: list[float], depth: int,
             readable: np.ndarray | None = None) -> Bm25List:
        return ranked(self._weighted(columns, weights, readable), depth,
                      self._bound_rows(columns, weights, depth, readable))

    def _bound_rows(self, columns: list[int], weights: list[float], depth: int,
                    readable: np.ndarray | None = None) -> np.ndarray | None:
        """Distinct rows that all score above zero and number at least ``depth``: the postings of
        one positively weighted term (the shortest such list; its readable rows only), or none."""
        lists = [self.postings(c)[0] for c, w in zip(columns, weights, strict=True) if w > 0]
        if readable is not None:
            lists = [rows[readable[rows]] for rows in lists]
        held = [rows for rows in lists if len(rows) >= depth]
        return min(held, key=len) if held and depth > 0 else None


def _add_postings(scores: np.ndarray, rows: np.ndarray, values: np.ndarray, weight: float) -> None:
    """``scores[rows] += values * weight`` (rows distinct), in one pass.

    scipy's compiled CSC product (``csc_matvec`` on a one-column matrix: ``y[i] += a * x``, the
    same product then sum, so the same floats) runs 2.9x faster than numpy's gather, add and
    scatter at 1.3 M chunks (4.0 against 11.6 ms a question at the median); it is a private
    module of scipy, so numpy's expression stands in where it is missing.
    """
    if _csc_matvec is None or len(rows) == 0:
        scores[rows] += values * weight
        return
    _csc_matvec(len(scores), 1, np.array([0, len(rows)], rows.dtype), rows, values,
                np.array([weight], values.dtype), scores)


try:
    from scipy.sparse._sparsetools import csc_matvec as _csc_matvec
except ImportError:  # pragma: no cover - a scipy without the private module
    _csc_matvec = None


def posting_weights(idf: np.ndarray, lengths: np.ndarray, post_chunk: np.ndarray,
                    post_term: np.ndarray, post_tf: np.ndarray, k1: float = K1,
                    b: float = B) -> np.ndarray:
    """``idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))`` of each posting (Robertson &
    Zaragoza 2009); ``avgdl`` is the mean of every chunk's ``lengths``."""
    lengths = np.asarray(lengths, np.float64)
    avg = float(lengths.mean()) if len(lengths) else 0.0
    norm = k1 * (1.0 - b + b * lengths / avg) if avg else np.full(len(lengths), k1)
    tf = np.asarray(post_tf, np.float64)
    return idf[post_term] * tf / (tf + norm[post_chunk])
