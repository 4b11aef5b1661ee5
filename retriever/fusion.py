"""Fusion of ranked hit lists: pure functions, no I/O, no models.

Three ways to merge a dense and a sparse ranked list:

- :func:`sparse_corroborate_dense` — Sparse-Corroborate-Dense (Tu & Padmanabhan 2022, §3.2,
  Algorithm 1, with the defects of the printed pseudo-code fixed);
- :func:`hybrid` — the score hybrid of Ma et al. 2022 ("Another Look at DPR", §2.1):
  ``dense + α·sparse`` over the union, a missing passage taking that list's
  minimum score, optionally min-max normalised first;
- :func:`rrf` — reciprocal rank fusion (k=60), a cheap baseline over any
  number of lists.

Every function accepts, for each list, either :class:`xqa.records.Hit` records
or plain ``(id, score)`` pairs (pyserini's searcher output), best first, and
returns a list of :class:`Hit` records sorted by a fused score that is strictly
decreasing in fused rank (FiD's data loader re-sorts ``ctxs`` by score, so a
score that disagreed with the fused order would silently undo the fusion).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from xqa.records import Hit

HitLike = Hit | tuple[str, float]

SCD_ORDERS = ("dense", "sparse")
RRF_K = 60


def as_hits(hits: Iterable[HitLike], source: str) -> list[Hit]:
    """Normalise a ranked list to :class:`Hit` records, dropping repeated ids.

    ``(id, score)`` pairs get ``source``; Hit records keep their own. The first
    occurrence of an id wins (a ranked list names each passage once).
    """
    out: list[Hit] = []
    seen: set[str] = set()
    for h in hits:
        if isinstance(h, Hit):
            hit = h
        else:
            try:
                pid, score = h
            except (TypeError, ValueError):
                raise TypeError(f"expected a Hit or an (id, score) pair, got {h!r}") from None
            hit = Hit(id=str(pid), score=float(score), source=source)
        if hit.id not in seen:
            seen.add(hit.id)
            out.append(hit)
    return out


def _rank_score(rank: int, k: int) -> float:
    """Score of the hit at 0-based fused ``rank`` in a list of at most ``k``.

    ``(k - rank) / k``: in (0, 1], strictly decreasing in rank, the same for
    every question at a given rank.
    """
    return (k - rank) / k


def scd_budget(k: int, max_frac: float, n_sparse: int) -> int:
    """The sparse budget ``B = min(floor(max_frac*K), len(sparse))``."""
    # The epsilon keeps e.g. floor(0.29 * 100) == 29 although 0.29 * 100 == 28.999999999999996.
    return min(math.floor(max_frac * k + 1e-9), n_sparse)


def sparse_corroborate_dense(
    dense: Sequence[HitLike],
    sparse: Sequence[HitLike],
    k: int,
    max_frac: float,
    corroborated_order: str = "dense",
) -> list[Hit]:
    """Sparse-Corroborate-Dense: at most ``k`` hits in three ordered slices.

    ``dense``: the dense top-K (global, all languages), best first.
    ``sparse``: the sparse top-K (BM25 in the question's language), best first;
    empty when that language has no BM25 index, and then the result is the
    dense list (cut to ``k``).
    Both lists are first cut to their top ``k`` (the algorithm's inputs are
    top-K lists), and a repeated id keeps its first occurrence.

    Slices:
      1. corroborated — ids in both lists, in dense order (or, with
         ``corroborated_order="sparse"``, in sparse order as Algorithm 1 prints it);
      2. dense-only ids in dense order;
      3. sparse-only ids in sparse order.
    With ``B = min(floor(max_frac*k), len(sparse))``, slice 3 gets
    ``max(0, B - n_corroborated)`` slots and slices 1+2 fill the other
    ``k - |slice 3|``. The budget is strict: if the dense list runs out the
    result is shorter than ``k``; it is never topped up with sparse-only hits.

    Returns Hit records with ``source`` ``corroborated`` / ``dense`` /
    ``sparse``, the language of the dense hit (or the sparse one), and score
    ``(k - rank) / k``.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if not 0.0 <= max_frac <= 1.0:
        raise ValueError(f"max_frac must be in [0, 1], got {max_frac}")
    if corroborated_order not in SCD_ORDERS:
        raise ValueError(f"corroborated_order must be one of {SCD_ORDERS}, got {corroborated_order!r}")
    if k == 0:
        return []
    dense_hits = as_hits(dense, "dense")[:k]
    sparse_hits = as_hits(sparse, "sparse")[:k]
    sparse_by_id = {h.id: h for h in sparse_hits}
    dense_ids = {h.id for h in dense_hits}

    corroborated_src = dense_hits if corroborated_order == "dense" else sparse_hits
    corroborated = [h for h in corroborated_src if h.id in dense_ids and h.id in sparse_by_id]
    dense_only = [h for h in dense_hits if h.id not in sparse_by_id]
    sparse_only = [h for h in sparse_hits if h.id not in dense_ids]

    budget = scd_budget(k, max_frac, len(sparse_hits))
    n_tail = max(0, budget - len(corroborated))  # <= len(sparse_only) since budget <= len(sparse)
    head = (corroborated + dense_only)[: k - n_tail]
    labelled = [(h, "corroborated" if n < len(corroborated) else "dense") for n, h in enumerate(head)]
    labelled += [(h, "sparse") for h in sparse_only[:n_tail]]

    out: list[Hit] = []
    for rank, (h, src) in enumerate(labelled):
        lang = h.lang or (sparse_by_id[h.id].lang if h.id in sparse_by_id else "")
        out.append(Hit(id=h.id, score=_rank_score(rank, k), source=src, lang=lang))
    return out


def _min_max(scores: dict[str, float]) -> dict[str, float]:
    """Centre on the mid-range and divide by the range (a constant list maps to 0)."""
    lo, hi = min(scores.values()), max(scores.values())
    mid, span = (lo + hi) / 2.0, hi - lo
    return {i: ((s - mid) / span if span > 0 else 0.0) for i, s in scores.items()}


def hybrid(
    dense: Sequence[HitLike],
    sparse: Sequence[HitLike],
    k: int,
    alpha: float,
    normalize: bool = False,
) -> list[Hit]:
    """Score hybrid (Ma et al.): ``dense + alpha * sparse`` over the union.

    ``dense`` / ``sparse``: each side's top-k' (k' ≥ k; pass longer lists for
    a deeper union). A passage missing from one list takes that list's minimum
    score (an empty list contributes 0). With ``normalize`` each list is first
    rescaled to ``(s - mid) / (max - min)`` (mid = (max + min) / 2), so the two
    score ranges are comparable and α means the same across queries.

    Returns the top ``k`` by fused score (ties: dense rank, then sparse rank),
    ``source="hybrid"``; the score is the fused score itself, which is
    monotone in rank by construction.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha}")
    dense_hits, sparse_hits = as_hits(dense, "dense"), as_hits(sparse, "sparse")
    d = {h.id: h.score for h in dense_hits}
    s = {h.id: h.score for h in sparse_hits}
    if normalize:
        d = _min_max(d) if d else d
        s = _min_max(s) if s else s
    d_min = min(d.values()) if d else 0.0
    s_min = min(s.values()) if s else 0.0
    order: dict[str, int] = {}
    lang: dict[str, str] = {}
    for h in dense_hits + sparse_hits:
        order.setdefault(h.id, len(order))
        if not lang.get(h.id):
            lang[h.id] = h.lang
    fused = {i: d.get(i, d_min) + alpha * s.get(i, s_min) for i in order}
    ranked = sorted(order, key=lambda i: (-fused[i], order[i]))[:k]
    return [Hit(id=i, score=fused[i], source="hybrid", lang=lang[i]) for i in ranked]


def rrf(lists: Sequence[Sequence[HitLike]], k: int, rrf_k: int = RRF_K) -> list[Hit]:
    """Reciprocal rank fusion: ``score(p) = sum over lists of 1 / (rrf_k + rank)``.

    ``rank`` is 1-based within each list (Cormack et al. 2009, k=60). Returns
    the top ``k`` (ties: first appearance across the lists in order),
    ``source="rrf"``.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if rrf_k < 0:
        raise ValueError(f"rrf_k must be >= 0, got {rrf_k}")
    fused: dict[str, float] = {}
    lang: dict[str, str] = {}
    for lst in lists:
        for rank, h in enumerate(as_hits(lst, "rrf"), start=1):
            fused[h.id] = fused.get(h.id, 0.0) + 1.0 / (rrf_k + rank)
            if not lang.get(h.id):
                lang[h.id] = h.lang
    first = {i: n for n, i in enumerate(fused)}
    ranked = sorted(fused, key=lambda i: (-fused[i], first[i]))[:k]
    return [Hit(id=i, score=fused[i], source="rrf", lang=lang[i]) for i in ranked]


__all__ = [
    "RRF_K",
    "SCD_ORDERS",
    "HitLike",
    "as_hits",
    "hybrid",
    "rrf",
    "scd_budget",
    "sparse_corroborate_dense",
]
