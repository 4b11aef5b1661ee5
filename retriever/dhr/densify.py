"""Densified lexical representations and the gated inner product (DLR, Lin & Lin, TOIS 2023).

Lin & Lin, "A Dense Representation Framework for Lexical and Semantic
Matching" (TOIS 2023): a sparse lexical vector over a vocabulary ``V`` is cut
into ``M`` slices of ``N`` dims (``|V|`` padded up to ``M·N``); each slice keeps
only its largest entry, as a value ``val[m]`` and its position ``idx[m]`` in the
slice (``0 <= idx < N``). The gated inner product

    GIP(q, d) = Σ_m val_q[m] · val_d[m] · 1{idx_q[m] = idx_d[m]}

equals the sparse dot product exactly when every slice holds at most one
non-zero entry on each side; for non-negative vectors ``0 <= GIP <= dot``
always (a term survives only when both sides kept the same dimension).

Slicing: *contiguous* (slice ``m`` = dims ``[m·N, (m+1)·N)``) or *strided*
(slice ``m`` = dims ``{m, m+M, m+2M, ...}``). Vocabulary ids of SentencePiece
models are roughly sorted by frequency, so contiguous slices group pieces of
similar frequency and strided slices mix frequent and rare ones.

Lexical vectors here are BM25 over tokenizer pieces: a passage's entry for
piece ``i`` is ``v_i · tf·(k1+1) / (tf + k1·(1 - b + b·|d|/avgdl))`` with
``v_i = log(1 + (N - df_i + 0.5)/(df_i + 0.5))``; a query is the binary bag of
its pieces, densified by the key ``v ⊙ bow`` (a slice keeps its piece of
largest IDF) with value 1, so that without collisions GIP is BM25 exactly.

Sparse vectors travel as CSR arrays ``(indptr [n+1] int64, indices [nnz] int64,
data [nnz] float32)``, the layout of ``scipy.sparse.csr_matrix``; pure numpy.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from xqa.errors import XqaError

K1 = 0.9   # Lucene / Anserini BM25 defaults, as xqa's BM25 indexes use
B = 0.4


@dataclass(frozen=True)
class Csr:
    """Rows of a sparse matrix: ``indptr [n+1]``, ``indices [nnz]``, ``data [nnz]``.

    Row ``r`` holds ``indices[indptr[r]:indptr[r+1]]`` (column ids, unique within
    the row) with values ``data[...]`` at the same positions.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.indptr) - 1

    def row_ids(self) -> np.ndarray:
        """The row of each stored entry, ``[nnz]`` int64."""
        return np.repeat(np.arange(self.rows, dtype=np.int64), np.diff(self.indptr))

    def to_dense(self, width: int) -> np.ndarray:
        """``[n, width]`` float64 (tests and small inputs only)."""
        out = np.zeros((self.rows, width), dtype=np.float64)
        out[self.row_ids(), self.indices] = self.data
        return out


def term_counts(docs: Sequence[Sequence[int]], vocab_size: int) -> tuple[Csr, np.ndarray]:
    """Term frequencies of token-id lists: ``(Csr of counts (float32), lengths [n] int64)``.

    ``lengths`` counts every token (repeats included), the BM25 ``|d|``. Ids must
    lie in ``[0, vocab_size)``; rows are sorted by id.
    """
    indptr = np.zeros(len(docs) + 1, dtype=np.int64)
    idx_parts, cnt_parts = [], []
    lengths = np.zeros(len(docs), dtype=np.int64)
    for r, toks in enumerate(docs):
        t = np.asarray(toks, dtype=np.int64)
        if t.size and (t.min() < 0 or t.max() >= vocab_size):
            raise XqaError(f"token id out of range [0, {vocab_size}) in row {r}")
        u, c = np.unique(t, return_counts=True)
        idx_parts.append(u)
        cnt_parts.append(c)
        lengths[r] = t.size
        indptr[r + 1] = indptr[r] + u.size
    indices = np.concatenate(idx_parts) if idx_parts else np.zeros(0, np.int64)
    data = np.concatenate(cnt_parts).astype(np.float32) if cnt_parts else np.zeros(0, np.float32)
    return Csr(indptr, indices, data), lengths


def document_frequencies(counts: Csr, vocab_size: int) -> np.ndarray:
    """``df [vocab_size]`` int64: in how many rows each id occurs."""
    return np.bincount(counts.indices, minlength=vocab_size).astype(np.int64)


def bm25_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """Lucene's BM25 IDF ``log(1 + (N - df + 0.5)/(df + 0.5))`` per id, float32 (> 0 for df <= N)."""
    df = np.asarray(df, dtype=np.float64)
    return np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)


def bm25_weights(counts: Csr, lengths: np.ndarray, idf: np.ndarray, k1: float = K1, b: float = B,
                 avgdl: float | None = None) -> Csr:
    """BM25 passage vectors: ``idf_i · tf·(k1+1) / (tf + k1·(1 - b + b·|d|/avgdl))`` per entry.

    ``avgdl`` defaults to the mean of ``lengths`` (the pool's). Same sparsity as ``counts``.
    """
    lengths = np.asarray(lengths, dtype=np.float64)
    if avgdl is None:
        avgdl = float(lengths.mean()) if lengths.size else 1.0
    avgdl = max(avgdl, 1e-9)
    tf = counts.data.astype(np.float64)
    dl = lengths[counts.row_ids()]
    w = idf[counts.indices].astype(np.float64) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    return Csr(counts.indptr, counts.indices, w.astype(np.float32))


def slice_shape(vocab_size: int, slices: int) -> tuple[int, int]:
    """``(M, N)``: ``M = slices`` slices of ``N = ceil(|V| / M)`` dims (``M·N >= |V|``)."""
    if slices < 1 or vocab_size < 1:
        raise XqaError(f"need slices >= 1 and a vocabulary, got slices={slices}, |V|={vocab_size}")
    return int(slices), -(-int(vocab_size) // int(slices))


def idx_dtype(n: int) -> np.dtype:
    """The smallest unsigned type holding positions ``0..n-1``: uint8, uint16 or uint32."""
    for t in (np.uint8, np.uint16, np.uint32):
        if n - 1 <= np.iinfo(t).max:
            return np.dtype(t)
    raise XqaError(f"slices of {n} dims are too wide")


def slot_of(ids: np.ndarray, slices: int, width: int, strided: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(slice, position)`` of vocabulary ids: contiguous ``(id // N, id % N)``, strided ``(id % M, id // M)``."""
    ids = np.asarray(ids, dtype=np.int64)
    if strided:
        return ids % slices, ids // slices
    return ids // width, ids % width


def densify(rows: Csr, vocab_size: int, slices: int, *, strided: bool = False,
            key: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Densify sparse non-negative rows: ``(val [n, M] float16, idx [n, M] uint8/uint16)``.

    Each slice keeps the entry of largest ``key`` (default: the value itself;
    ties go to the smaller position) and stores its value and position; an
    empty slice has ``val = 0, idx = 0``. ``key`` (``[nnz]``, aligned with
    ``rows.data``) serves the query side: bag-of-pieces values, IDF keys.
    Zero values are dropped. Values round to float16 (about 3 significant digits).
    """
    m, n = slice_shape(vocab_size, slices)
    dt = idx_dtype(n)
    val = np.zeros((rows.rows, m), dtype=np.float16)
    idx = np.zeros((rows.rows, m), dtype=dt)
    data = np.asarray(rows.data, dtype=np.float32)
    if data.size and data.min() < 0:
        raise XqaError("densify needs non-negative values")
    k = data if key is None else np.asarray(key, dtype=np.float32)
    if k.shape != data.shape:
        raise XqaError(f"key has {k.shape[0]} entries, the rows {data.shape[0]}")
    keep = data > 0
    r = rows.row_ids()[keep]
    s, pos = slot_of(rows.indices[keep], m, n, strided)
    d, k = data[keep], k[keep]
    if r.size == 0:
        return val, idx
    # within each (row, slice): largest key first, then smallest position
    order = np.lexsort((pos, -k.astype(np.float64), s, r))
    r, s, pos, d = r[order], s[order], pos[order], d[order]
    first = np.ones(r.size, dtype=bool)
    first[1:] = (r[1:] != r[:-1]) | (s[1:] != s[:-1])
    val[r[first], s[first]] = d[first]
    idx[r[first], s[first]] = pos[first]
    return val, idx


def densify_queries(pieces: Sequence[Sequence[int]], idf: np.ndarray, df: np.ndarray, slices: int, *,
                    strided: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Queries as binary bags of pieces, densified by IDF: ``(val [n, M] float16, idx [n, M])``.

    A slice keeps the query's piece of largest IDF (collisions broken by IDF) with
    value 1. Pieces no passage holds (``df == 0``) are dropped: they match nothing,
    and keeping them could hide a matching piece of the same slice.
    """
    vocab = len(idf)
    counts, _ = term_counts(pieces, vocab)
    present = df[counts.indices] > 0
    bow = np.where(present, 1.0, 0.0).astype(np.float32)
    return densify(Csr(counts.indptr, counts.indices, bow), vocab, slices, strided=strided,
                   key=idf[counts.indices])


def gip(q_val: np.ndarray, q_idx: np.ndarray, p_val: np.ndarray, p_idx: np.ndarray) -> np.ndarray:
    """Gated inner products ``[nq, np]`` float32 of queries ``[nq, M]`` with passages ``[np, M]``.

    Only the queries' non-zero slices are visited (sum over slices of
    ``val_q · val_p · 1{idx_q = idx_p}``), so the cost is that of a handful of
    passage columns per query. For row-major passage arrays; the index keeps
    them slice-major and scores through :func:`gip_slice_major`.
    """
    return gip_slice_major(q_val, q_idx, np.ascontiguousarray(p_val.T), np.ascontiguousarray(p_idx.T))


def gip_slice_major(q_val: np.ndarray, q_idx: np.ndarray, pt_val: np.ndarray, pt_idx: np.ndarray) -> np.ndarray:
    """:func:`gip` with passage arrays stored slice-major: ``pt_val, pt_idx [M, np]``."""
    nq, npass = q_val.shape[0], pt_val.shape[1]
    if q_val.shape[1] != pt_val.shape[0]:
        raise XqaError(f"queries have {q_val.shape[1]} slices, passages {pt_val.shape[0]}")
    out = np.zeros((nq, npass), dtype=np.float32)
    for i in range(nq):
        for s in np.flatnonzero(q_val[i]):
            hit = pt_idx[s] == q_idx[i, s]
            out[i] += np.float32(q_val[i, s]) * np.where(hit, pt_val[s].astype(np.float32), np.float32(0))
    return out


def gip_reference(q: np.ndarray, p: np.ndarray, slices: int, *, strided: bool = False,
                  q_key: np.ndarray | None = None) -> np.ndarray:
    """Brute-force GIP from dense vectors ``q [nq, V]``, ``p [np, V]`` (non-negative), float64.

    Straight from the definition, one slice at a time in Python: pads ``V`` to
    ``M·N``, takes each slice's argmax (by ``q_key`` on the query side when given,
    first position on ties) and sums ``q·p`` over slices whose argmaxes agree
    and are non-zero on both sides. For tests.
    """
    v = q.shape[1]
    m, n = slice_shape(v, slices)
    pad = m * n - v

    def sliced(x: np.ndarray) -> np.ndarray:
        x = np.pad(np.asarray(x, np.float64), ((0, 0), (0, pad)))
        return x.reshape(len(x), n, m).transpose(0, 2, 1) if strided else x.reshape(len(x), m, n)

    qs, ps = sliced(q), sliced(p)
    qk = qs if q_key is None else sliced(q_key)
    out = np.zeros((len(q), len(p)))
    for i in range(len(q)):
        for j in range(len(p)):
            total = 0.0
            for s in range(m):
                a, b = int(np.argmax(qk[i, s])), int(np.argmax(ps[j, s]))
                if a == b and qs[i, s, a] > 0 and ps[j, s, b] > 0:
                    total += qs[i, s, a] * ps[j, s, b]
            out[i, j] = total
    return out


__all__ = ["B", "K1", "Csr", "bm25_idf", "bm25_weights", "densify", "densify_queries", "document_frequencies",
           "gip", "gip_reference", "gip_slice_major", "idx_dtype", "slice_shape", "slot_of", "term_counts"]
