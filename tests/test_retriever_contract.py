"""The contract every retriever meets, checked on every kind buildable on a tiny corpus.

``search(questions, k) -> list[list[Hit]]``: one list per question, in order;
scores sorted descending; at most ``k`` hits; unique ids; ids of real
passages. Kinds: BM25, dense, SCD, hybrid (raw and normalised), RRF, SPAR,
SPAR's Λ half, SPAR's dense half, SPAR+SCD, cross-script BM25, BM25 +
cross-script, DLR, DHR and BM25 over pieces — all real (``fusion_stack``).
"""
from __future__ import annotations

import pytest
from fusion_stack import NO_BM25_LANG, build_stack

from retriever.base import Retriever, contract_violations
from retriever.combined import FusionConfig
from retriever.fusion import sparse_corroborate_dense
from xqa.errors import XqaError
from xqa.methods import build_retriever, method_names
from xqa.records import Question

# bm25-aug needs a trained augmentation model: its contract is checked in test_bm25_aug.py
KINDS = [m for m in method_names() if m != "bm25-aug"] + ["hybrid-norm", "lexical", "spar-dense-half"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    return build_stack(tmp_path_factory.getbasetemp() / "fusion_stack")


def make(stack, kind: str) -> Retriever:
    parts = {"sparse": stack.sparse_retriever(), "dense": stack.dense_retriever(),
             "spar": stack.spar_retriever(), "roman": stack.roman_retriever(), "dhr": stack.dhr_retriever(),
             "pieces": stack.pieces_retriever()}
    if kind == "hybrid-norm":
        return build_retriever(FusionConfig("hybrid", alpha=0.7, normalize=True, k_each=40), **parts)
    if kind == "lexical":
        return stack.spar_retriever().part("lexical")
    if kind == "spar-dense-half":
        return stack.spar_retriever().part("dense")
    return build_retriever(FusionConfig(kind, alpha=0.5, max_frac=0.2, mu=0.7), **parts)


def indexed_questions(stack, n=12):
    return [q for q in stack.dev if q.lang != NO_BM25_LANG][:n]


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_contract(stack, kind):
    r = make(stack, kind)
    assert isinstance(r, Retriever)
    qs = indexed_questions(stack)
    ids = {p.id for p in stack.passages}
    for k in (1, 7, 60, 10_000):
        lists = r.search(qs, k)
        assert len(lists) == len(qs)
        for hits in lists:
            assert contract_violations(hits, k) == [], (kind, k)
            assert {h.id for h in hits} <= ids
        if k == 60:
            # a full corpus is searched: never empty for these questions (every kind has dense or BM25 hits)
            assert sum(bool(h) for h in lists) >= len(qs) // 2
    assert r.search([], 5) == []
    assert all(h == [] for h in r.search(qs[:3], 0))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_batch_equals_one_by_one_and_is_deterministic(stack, kind):
    r = make(stack, kind)
    qs = indexed_questions(stack, 6)
    batch = r.search(qs, 10)
    assert batch == r.search(qs, 10)
    singles = [r.search([q], 10)[0] for q in qs]
    tols = normalized_tolerances(stack, qs) if kind == "hybrid-norm" else [1e-4] * len(qs)
    for b, s, tol in zip(batch, singles, tols):
        assert [h.id for h in b] == [h.id for h in s]
        assert [h.score for h in b] == pytest.approx([h.score for h in s], rel=1e-4, abs=tol)


def normalized_tolerances(stack, qs, k_each=40):
    """Per question, how far min-max normalisation may carry the dense side's float noise.

    Batched and single encodings differ by float rounding (bounded for the dense kind
    above). Normalising a list by its spread R moves a score by at most ~3δ/R for raw
    noise δ; a tiny test model's scores can sit within 0.003 of each other near 128
    (float32 steps of 1.5e-5), so that bound, not 1e-4, is what batch == single can mean.
    """
    dense = stack.dense_retriever()
    batch, singles = dense.search(qs, k_each), [dense.search([q], k_each)[0] for q in qs]
    out = []
    for b, s in zip(batch, singles):
        single = {h.id: h.score for h in s}
        noise = max((abs(h.score - single[h.id]) for h in b if h.id in single), default=0.0)
        spread = max(h.score for h in b) - min(h.score for h in b)
        out.append(1e-4 + (4 * noise / spread if spread > 0 else 0.0))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["scd", "spar+scd", "hybrid", "rrf"])
def test_fused_kinds_survive_a_language_without_bm25(stack, kind):
    qs = [q for q in stack.dev if q.lang == NO_BM25_LANG][:4]
    assert qs, "the small world has Telugu questions"
    with pytest.raises(XqaError, match="no BM25 index"):
        stack.sparse_retriever().search(qs, 5)
    lists = make(stack, kind).search(qs, 20)
    side = stack.spar_retriever().with_mu(0.7) if kind == "spar+scd" else stack.dense_retriever()
    if kind in ("scd", "spar+scd"):
        # an empty sparse list gives the dense side's list
        want = side.search(qs, 20)
        assert [[h.id for h in x] for x in lists] == [[h.id for h in x] for x in want]
        assert {h.source for x in lists for h in x} == {"dense"}


@pytest.mark.slow
def test_scd_retriever_equals_the_function_on_real_lists(stack):
    qs = indexed_questions(stack, 10)
    k = 20
    d = stack.dense_retriever().search(qs, k)
    s = stack.sparse_retriever().search(qs, k)
    got = make(stack, "scd").search(qs, k)
    assert got == [sparse_corroborate_dense(a, b, k, 0.2) for a, b in zip(d, s)]
    # the SCD list holds every dense/BM25 agreement and at most floor(0.2*k) - corroborated sparse-only hits
    for fused, a, b in zip(got, d, s):
        both = {h.id for h in a} & {h.id for h in b}
        assert {h.id for h in fused if h.source == "corroborated"} == both
        assert sum(h.source == "sparse" for h in fused) == max(0, min(4, len(b)) - len(both))


@pytest.mark.slow
def test_question_order_and_languages_are_kept(stack):
    qs = indexed_questions(stack, 8)
    r = make(stack, "sparse")
    lists = r.search(list(reversed(qs)), 5)
    forward = r.search(qs, 5)
    assert lists == list(reversed(forward))
    assert all(h.lang == q.lang for q, hits in zip(qs, forward) for h in hits)  # BM25: question language
    dense_langs = {h.lang for hits in make(stack, "dense").search(qs, 60) for h in hits}
    assert len(dense_langs) > 1  # dense: global over all languages


@pytest.mark.slow
def test_unknown_method_and_missing_component(stack):
    with pytest.raises(XqaError, match="unknown retrieval method"):
        build_retriever("colbert", dense=stack.dense_retriever())
    with pytest.raises(XqaError, match="needs a spar"):
        build_retriever("spar+scd", sparse=stack.sparse_retriever())
    q = Question("x", "anything", "en")
    assert len(make(stack, "spar").search([q], 3)[0]) == 3
