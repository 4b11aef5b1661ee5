"""Fusion functions: worked examples, a reference implementation, properties."""
from __future__ import annotations

import math
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retriever.fusion import as_hits, hybrid, rrf, scd_budget, sparse_corroborate_dense
from xqa.records import Hit

DENSE = [3, 5, 1, 2, 4]
SPARSE = [2, 8, 5, 9, 7]


def pairs(ids, start=10.0):
    """A ranked list of (id, score) pairs with strictly decreasing scores."""
    return [(str(i), start - n) for n, i in enumerate(ids)]


def ids(hits):
    return [int(h.id) for h in hits]


# --- Sparse-Corroborate-Dense -------------------------------------------------


def reference_scd(dense, sparse, k, max_frac, corroborated_order="dense"):
    """Algorithm 1 of Tu & Padmanabhan 2022 (the MIA 2022 system) transliterated, with its defects fixed.

    Written loop-for-loop like the printed pseudo-code (not like the library):
    the sparse loop pushes corroborated hits and spends reserved slots; the dense
    loop always advances; the backfill is capped at the remaining budget.
    """
    dense, sparse = dense[:k], sparse[:k]
    dense_idx = {d: n for n, d in enumerate(dense)}
    reserved = min(math.floor(max_frac * k + 1e-9), len(sparse))
    final, added, backfill = [], set(), []
    for s in sparse:
        if s in dense_idx:
            final.append(s)
            added.add(s)
            reserved -= 1
        else:
            backfill.append(s)
    if corroborated_order == "dense":
        final.sort(key=dense_idx.__getitem__)
    i = 0
    while len(final) < k - max(0, reserved) and i < len(dense):
        if dense[i] not in added:
            final.append(dense[i])
            added.add(dense[i])
        i += 1
    final.extend(backfill[: max(0, reserved)])
    return final


def test_worked_example_dense_order():
    out = sparse_corroborate_dense(pairs(DENSE), pairs(SPARSE), k=5, max_frac=0.6)
    assert ids(out) == [5, 2, 3, 1, 8]
    assert [h.source for h in out] == ["corroborated", "corroborated", "dense", "dense", "sparse"]


def test_worked_example_sparse_order():
    out = sparse_corroborate_dense(pairs(DENSE), pairs(SPARSE), k=5, max_frac=0.6,
                                   corroborated_order="sparse")
    assert ids(out) == [2, 5, 3, 1, 8]


def test_scores_strictly_decrease_and_survive_a_resort():
    out = sparse_corroborate_dense(pairs(DENSE), pairs(SPARSE), k=5, max_frac=0.6)
    scores = [h.score for h in out]
    assert all(a > b for a, b in pairwise(scores))
    # FiD's loader re-sorts ctxs by score: the fused order must survive it.
    assert ids(sorted(out, key=lambda h: -h.score)) == ids(out)


def test_empty_sparse_gives_dense_list():
    out = sparse_corroborate_dense(pairs(DENSE), [], k=5, max_frac=0.6)
    assert ids(out) == DENSE
    assert {h.source for h in out} == {"dense"}
    assert ids(sparse_corroborate_dense(pairs(DENSE), [], k=3, max_frac=0.2)) == DENSE[:3]


def test_empty_dense_gives_only_the_sparse_budget():
    out = sparse_corroborate_dense([], pairs(SPARSE), k=5, max_frac=0.6)
    assert ids(out) == [2, 8, 5]  # strict budget: floor(0.6*5) = 3 sparse-only hits, no more
    assert {h.source for h in out} == {"sparse"}


def test_all_sparse_hits_corroborated():
    dense = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    sparse = [7, 2, 9]
    out = sparse_corroborate_dense(pairs(dense), pairs(sparse), k=10, max_frac=0.2)
    # budget = min(2, 3) = 2 < 3 corroborated: no sparse-only slot, the rest is dense.
    assert ids(out) == [2, 7, 9, 1, 3, 4, 5, 6, 8, 10]
    assert [h.source for h in out[:3]] == ["corroborated"] * 3
    assert {h.source for h in out[3:]} == {"dense"}


def test_lists_longer_than_k_are_cut_to_top_k_first():
    dense = [1, 2, 3, 4, 5, 6]
    sparse = [9, 8, 6, 1]  # 6 is in dense but beyond the top-4: not corroborated
    out = sparse_corroborate_dense(pairs(dense), pairs(sparse), k=4, max_frac=0.5)
    # top-4 dense [1,2,3,4], top-4 sparse [9,8,6,1]; corroborated [1]; B=2 -> 1 sparse-only
    assert ids(out) == [1, 2, 3, 9]
    assert [h.source for h in out] == ["corroborated", "dense", "dense", "sparse"]


def test_lists_shorter_than_k_give_a_shorter_output():
    out = sparse_corroborate_dense(pairs([1, 2]), pairs([3, 4, 5]), k=10, max_frac=0.2)
    # B = min(2, 3) = 2, no corroboration: 2 sparse-only slots; dense runs out after 2.
    assert ids(out) == [1, 2, 3, 4]


def test_accepts_hit_records_and_keeps_language():
    dense = [Hit("a", 0.9, "dense", "fi"), Hit("b", 0.8, "dense", "sv")]
    sparse = [Hit("c", 12.0, "sparse", "fi"), Hit("b", 11.0, "sparse", "sv")]
    out = sparse_corroborate_dense(dense, sparse, k=3, max_frac=0.67)
    assert [(h.id, h.source, h.lang) for h in out] == [
        ("b", "corroborated", "sv"), ("a", "dense", "fi"), ("c", "sparse", "fi")]


def test_duplicate_ids_in_an_input_keep_their_first_occurrence():
    out = sparse_corroborate_dense(pairs([1, 1, 2]), pairs([3, 3]), k=3, max_frac=0.34)
    assert ids(out) == [1, 2, 3]


@pytest.mark.parametrize("kwargs, match", [
    ({"k": -1, "max_frac": 0.2}, "k must be"),
    ({"k": 5, "max_frac": 1.5}, "max_frac"),
    ({"k": 5, "max_frac": 0.2, "corroborated_order": "bm25"}, "corroborated_order"),
])
def test_scd_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sparse_corroborate_dense(pairs(DENSE), pairs(SPARSE), **kwargs)


def test_bad_hit_is_a_clear_type_error():
    with pytest.raises(TypeError, match="id, score"):
        sparse_corroborate_dense([("a", 1.0, "x")], [], k=2, max_frac=0.2)


def test_budget_floor_is_robust_to_float_error():
    assert scd_budget(100, 0.29, 1000) == 29  # 0.29 * 100 == 28.999999999999996
    assert scd_budget(5, 0.6, 2) == 2


ranked_ids = st.lists(st.integers(0, 14), unique=True, max_size=18)


@settings(max_examples=300, deadline=None)
@given(dense=ranked_ids, sparse=ranked_ids, k=st.integers(0, 16),
       max_frac=st.floats(0.0, 1.0), order=st.sampled_from(["dense", "sparse"]))
def test_scd_properties(dense, sparse, k, max_frac, order):
    out = sparse_corroborate_dense(pairs(dense), pairs(sparse), k, max_frac, order)
    got = ids(out)
    assert got == reference_scd(dense, sparse, k, max_frac, order)
    top_d, top_s = dense[:k], sparse[:k]
    assert len(got) <= k
    assert len(set(got)) == len(got)
    assert set(got) <= set(top_d) | set(top_s)
    n_corr = len(set(top_d) & set(top_s))
    budget = min(math.floor(max_frac * k + 1e-9), len(top_s))
    sparse_only = [h for h in out if h.source == "sparse"]
    assert len(sparse_only) == max(0, budget - n_corr)
    # slices come in order: corroborated, dense, sparse
    rank = {"corroborated": 0, "dense": 1, "sparse": 2}
    assert [rank[h.source] for h in out] == sorted(rank[h.source] for h in out)
    for h in out:
        expected = ("corroborated" if int(h.id) in top_d and int(h.id) in top_s
                    else "dense" if int(h.id) in top_d else "sparse")
        assert h.source == expected
    # relative order kept inside each slice
    for src, ref in (("dense", top_d), ("sparse", top_s),
                     ("corroborated", top_d if order == "dense" else top_s)):
        got_slice = [int(h.id) for h in out if h.source == src]
        assert got_slice == [i for i in ref if i in got_slice]
    # corroborated passages all make it (there are at most k of them)
    assert sum(h.source == "corroborated" for h in out) == min(n_corr, k)
    scores = [h.score for h in out]
    assert all(a > b for a, b in pairwise(scores))
    if not sparse:
        assert got == dense[:k]


# --- score hybrid --------------------------------------------------------------


def test_hybrid_by_hand():
    dense = [("a", 0.9), ("b", 0.5), ("c", 0.1)]
    sparse = [("c", 10.0), ("d", 6.0)]
    out = hybrid(dense, sparse, k=4, alpha=0.1)
    # missing dense -> 0.1 (dense min), missing sparse -> 6.0 (sparse min)
    # a: 0.9+0.6=1.5  b: 0.5+0.6=1.1  c: 0.1+1.0=1.1  d: 0.1+0.6=0.7
    assert [h.id for h in out] == ["a", "b", "c", "d"]  # b/c tie: dense rank decides
    assert [round(h.score, 9) for h in out] == [1.5, 1.1, 1.1, 0.7]
    assert {h.source for h in out} == {"hybrid"}
    assert [h.id for h in hybrid(dense, sparse, k=2, alpha=1.0)] == ["c", "a"]


def test_hybrid_normalized_by_hand():
    dense = [("a", 3.0), ("b", 1.0)]
    sparse = [("b", 20.0), ("c", 10.0)]
    out = hybrid(dense, sparse, k=3, alpha=1.0, normalize=True)
    # dense -> a 0.5, b -0.5; sparse -> b 0.5, c -0.5; missing takes the normalised min -0.5
    # a: 0.5-0.5=0  b: -0.5+0.5=0  c: -0.5-0.5=-1
    assert [(h.id, h.score) for h in out] == [("a", 0.0), ("b", 0.0), ("c", -1.0)]


def test_hybrid_with_an_empty_side():
    dense = pairs([1, 2, 3])
    assert ids(hybrid(dense, [], k=2, alpha=1.3)) == [1, 2]
    assert ids(hybrid([], pairs([4, 5]), k=5, alpha=0.5)) == [4, 5]


scored = st.dictionaries(st.integers(0, 12), st.floats(-50, 50, allow_nan=False), max_size=12)


def brute_hybrid(d, s, alpha, normalize):
    if normalize:
        def norm(x):
            if not x:
                return x
            lo, hi = min(x.values()), max(x.values())
            return {i: ((v - (lo + hi) / 2) / (hi - lo) if hi > lo else 0.0) for i, v in x.items()}
        d, s = norm(d), norm(s)
    dm = min(d.values()) if d else 0.0
    sm = min(s.values()) if s else 0.0
    return {i: d.get(i, dm) + alpha * s.get(i, sm) for i in set(d) | set(s)}


@settings(max_examples=200, deadline=None)
@given(d=scored, s=scored, k=st.integers(0, 30), alpha=st.floats(0, 2), normalize=st.booleans())
def test_hybrid_matches_brute_force(d, s, k, alpha, normalize):
    dense = sorted(d.items(), key=lambda x: -x[1])
    sparse = sorted(s.items(), key=lambda x: -x[1])
    out = hybrid([(str(i), v) for i, v in dense], [(str(i), v) for i, v in sparse], k, alpha, normalize)
    want = brute_hybrid(d, s, alpha, normalize)
    assert len(out) == min(k, len(want))
    assert len({h.id for h in out}) == len(out)
    for h in out:
        assert h.score == pytest.approx(want[int(h.id)], abs=1e-9)
    scores = [h.score for h in out]
    assert scores == sorted(scores, reverse=True)
    # nothing left out scores higher than the last one kept
    if out:
        kept = {int(h.id) for h in out}
        assert all(v <= out[-1].score + 1e-9 for i, v in want.items() if i not in kept)


@settings(max_examples=100, deadline=None)
@given(dense=ranked_ids, sparse=ranked_ids, k=st.integers(0, 16))
def test_hybrid_alpha_zero_keeps_the_dense_ranking(dense, sparse, k):
    out = hybrid(pairs(dense), pairs(sparse), k, alpha=0.0)
    assert ids(out)[: min(k, len(dense))] == dense[:k]


# --- reciprocal rank fusion -----------------------------------------------------


def test_rrf_by_hand():
    out = rrf([pairs(["a", "b", "c"]), pairs(["b", "a", "d"])], k=10)
    assert [h.id for h in out] == ["a", "b", "c", "d"]  # a/b tie: first appearance
    assert out[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert out[2].score == pytest.approx(1 / 63)
    assert {h.source for h in out} == {"rrf"}


@settings(max_examples=150, deadline=None)
@given(lists=st.lists(ranked_ids, max_size=4), k=st.integers(0, 20), rrf_k=st.integers(0, 100))
def test_rrf_matches_brute_force(lists, k, rrf_k):
    out = rrf([pairs(lst) for lst in lists], k, rrf_k=rrf_k)
    want: dict[int, float] = {}
    for lst in lists:
        for r, i in enumerate(lst):
            want[i] = want.get(i, 0.0) + 1.0 / (rrf_k + r + 1)
    assert len(out) == min(k, len(want))
    assert len({h.id for h in out}) == len(out)
    for h in out:
        assert h.score == pytest.approx(want[int(h.id)])
    if out:
        kept = {int(h.id) for h in out}
        assert all(v <= out[-1].score + 1e-12 for i, v in want.items() if i not in kept)


def test_as_hits_accepts_both_forms():
    hits = as_hits([("x", 2), Hit("y", 1.0, "sparse", "de"), ("x", 0.5)], "dense")
    assert hits == [Hit("x", 2.0, "dense"), Hit("y", 1.0, "sparse", "de")]


# --- fused retrievers: wiring ------------------------------------------------------


class ListRetriever:
    """A retriever that answers from fixed ranked lists (keyed by question id)."""

    def __init__(self, lists, source, accepts_missing=False):
        self.lists, self.source, self.calls = lists, source, []
        if accepts_missing:
            self.search = self._search_missing

    def search(self, questions, k):
        self.calls.append(k)
        return [[Hit(str(i), s, self.source) for i, s in pairs(self.lists.get(q.id, []))[:k]]
                for q in questions]

    def _search_missing(self, questions, k, missing="error"):
        assert missing == "empty"
        return ListRetriever.search(self, questions, k)


def _qs(*qids):
    from xqa.records import Question

    return [Question(q, f"question {q}", "fi") for q in qids]


def test_build_retriever_wires_each_method_to_its_fusion():
    from retriever.combined import FusionConfig as F
    from xqa.methods import build_retriever

    dense = ListRetriever({"q1": DENSE, "q2": [1, 2, 3]}, "dense")
    sparse = ListRetriever({"q1": SPARSE}, "sparse", accepts_missing=True)  # q2: no BM25 list
    qs = _qs("q1", "q2")
    scd = build_retriever(F("scd", max_frac=0.6), dense=dense, sparse=sparse).search(qs, 5)
    assert [ids(x) for x in scd] == [[5, 2, 3, 1, 8], [1, 2, 3]]
    order = build_retriever(F("scd", max_frac=0.6, corroborated_order="sparse"), dense=dense, sparse=sparse)
    assert ids(order.search(qs, 5)[0]) == [2, 5, 3, 1, 8]
    hyb = build_retriever(F("hybrid", alpha=0.5, k_each=8), dense=dense, sparse=sparse).search(qs, 3)
    assert dense.calls[-1] == 8 and sparse.calls[-1] == 8  # each side searched to k'
    assert hyb[0] == hybrid(pairs(DENSE), pairs(SPARSE), 3, 0.5)
    fused = build_retriever("rrf", dense=dense, sparse=sparse).search(qs, 4)
    assert fused[1] == rrf([pairs([1, 2, 3])], 4)
    assert build_retriever("dense", dense=dense) is dense
    assert build_retriever("sparse", sparse=sparse) is sparse


def test_build_retriever_reports_missing_parts_and_unknown_methods():
    from retriever.combined import FusionConfig
    from xqa.methods import build_retriever
    from xqa.errors import XqaError

    with pytest.raises(XqaError, match="needs a sparse"):
        build_retriever("scd", dense=ListRetriever({}, "dense"))
    with pytest.raises(XqaError, match="unknown retrieval method"):
        build_retriever("bm42")
    with pytest.raises(ValueError, match="max_frac"):
        build_retriever(FusionConfig("scd", max_frac=2), dense=ListRetriever({}, "d"), sparse=ListRetriever({}, "s"))


class FakeDhr(ListRetriever):
    """DhrRetriever's views: ``lexical()`` and ``with_lambda(λ)`` return tagged copies."""

    def __init__(self, lists, lam=None, view="dhr"):
        super().__init__(lists, view)
        self.lam, self.view = lam, view

    def lexical(self):
        return FakeDhr(self.lists, 0.0, "dlr")

    def with_lambda(self, lam):
        return FakeDhr(self.lists, lam, "dhr")


def test_build_retriever_wires_dlr_dhr_pieces_and_bm25_aug():
    from retriever.combined import FusionConfig
    from xqa.methods import build_retriever, needs
    from xqa.errors import XqaError

    dhr = FakeDhr({"q1": DENSE}, lam=500.0)
    assert build_retriever("dlr", dhr=dhr).view == "dlr"
    assert build_retriever("dhr", dhr=dhr) is dhr                       # λ: the index's own
    tuned = build_retriever(FusionConfig("dhr", lam=300.0), dhr=dhr)
    assert tuned.view == "dhr" and tuned.lam == 300.0 and dhr.lam == 500.0
    pieces, aug = ListRetriever({}, "pieces"), ListRetriever({}, "bm25-aug")
    assert build_retriever("pieces", pieces=pieces) is pieces
    assert build_retriever("bm25-aug", pieces=pieces, bm25_aug=aug) is aug
    assert needs("bm25-aug") == ("pieces", "bm25_aug") and needs("dlr") == needs("dhr") == ("dhr",)
    with pytest.raises(XqaError, match="needs a dhr"):
        build_retriever("dhr", dense=ListRetriever({}, "dense"))
    with pytest.raises(XqaError, match="needs a bm25_aug"):
        build_retriever("bm25-aug", pieces=pieces)


def test_fusion_config_round_trips_and_rejects_unknown_keys():
    from retriever.combined import FusionConfig
    from xqa.methods import build_retriever
    from xqa.errors import XqaError

    cfg = FusionConfig(method="hybrid", alpha=0.35, normalize=True)
    assert FusionConfig.from_dict(cfg.to_dict()) == cfg
    r = build_retriever(cfg, dense=ListRetriever({"q": [1, 2]}, "d"), sparse=ListRetriever({"q": [2]}, "s"))
    assert r.alpha == 0.35 and r.normalize
    with pytest.raises(XqaError, match="unknown fusion settings: beta"):
        FusionConfig.from_dict({"beta": 1})


# --- benchmark helpers (correctness only; speed lives in `xqa bench fusion`) ---------


@given(n=st.integers(1, 5), k=st.integers(1, 70), overlap=st.floats(0, 1))
def test_synthetic_lists_have_the_requested_overlap(n, k, overlap):
    from xqa.tools.lib.fusion import synthetic_lists

    for dense, sparse in synthetic_lists(n, k, overlap, seed=1):
        assert len(dense) == len(sparse) == k
        assert len({h.id for h in dense} & {h.id for h in sparse}) == round(overlap * k)
        assert [h.score for h in dense] == sorted((h.score for h in dense), reverse=True)


def test_bench_fusion_renders_every_function():
    from xqa.tools.lib.fusion import Report, bench_fusion_functions, render

    rows = bench_fusion_functions(k=60, n=20, repeats=1)
    assert {r.name for r in rows} >= {"SCD (max_frac 0.2)", "hybrid (raw)", "hybrid (normalised)", "RRF (k=60)"}
    assert all(r.per_query_us > 0 for r in rows)
    text = render(Report(k=60, fusion=rows))
    assert text.count("\n| ") == len(rows) + 2 and "k = 60" in text  # header, rule, rows
