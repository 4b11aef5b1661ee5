"""SPAR: RBO and shuffling diagnostics, teacher data, Λ training, the SPAR index."""
from __future__ import annotations

import random

import pytest
from fusion_stack import NO_BM25_LANG, build_stack
from hypothesis import given, settings
from hypothesis import strategies as st

from retriever.spar.data import (
    TeacherConfig,
    label,
    sample_sentence_queries,
    split_sentences,
)
from retriever.spar.diagnostics import mean_rbo, rbo, shuffle_tokens
from xqa.errors import XqaError
from xqa.records import Hit, Passage, Question

# --- rank-biased overlap ----------------------------------------------------------


def test_rbo_by_hand_equal_lengths():
    # X = 1, 1, 3 at depths 1..3; A = 1, 1/2, 1
    # (0.1/0.9) * (1*0.9 + 0.5*0.81 + 1*0.729) + 1*0.729 = 0.226 + 0.729
    assert rbo([1, 2, 3], [1, 3, 2], p=0.9) == pytest.approx(0.955)


def test_rbo_by_hand_uneven_lengths():
    # s=2, l=3; X_1=1, X_2=1, X_3=|{1,2} & {1,3,2}|=2; X_s=1
    # (0.1/0.9) * (0.9 + 0.405 + 2/3*0.729 + 1*(3-2)/(2*3)*0.729) + ((2-1)/3 + 1/2) * 0.729
    want = (0.1 / 0.9) * (0.9 + 0.405 + 0.486 + 0.1215) + (1 / 3 + 1 / 2) * 0.729
    assert want == pytest.approx(0.82)
    assert rbo([1, 2], [1, 3, 2], p=0.9) == pytest.approx(want)
    assert rbo([1, 3, 2], [1, 2], p=0.9) == pytest.approx(want)


def test_rbo_edge_cases():
    assert rbo([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert rbo([1, 2, 3], [4, 5, 6]) == 0.0
    assert rbo([], []) == 1.0
    assert rbo([1], []) == 0.0
    with pytest.raises(ValueError, match="p must be"):
        rbo([1], [1], p=1.0)


def series_rbo(a, b, p, depth=4000):
    """RBO as its defining series (1-p) sum_d p^(d-1) A_d, with Webber's extrapolation of A_d."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    s, l = len(short), len(long_)

    def overlap(d):
        return len(set(short[: min(d, s)]) & set(long_[: min(d, l)]))

    x_s, x_l = overlap(s), overlap(l)
    total = 0.0
    for d in range(1, depth + 1):
        if d <= s:
            agreement = overlap(d) / d
        elif d <= l:
            agreement = overlap(d) / d + x_s * (d - s) / (s * d)
        else:
            agreement = (x_l - x_s) / l + x_s / s
        total += (1 - p) * p ** (d - 1) * agreement
    return total


ranking = st.lists(st.integers(0, 12), unique=True, min_size=1, max_size=10)


@settings(max_examples=150, deadline=None)
@given(a=ranking, b=ranking, p=st.sampled_from([0.5, 0.8, 0.9, 0.95]))
def test_rbo_matches_its_series_and_is_a_similarity(a, b, p):
    r = rbo(a, b, p)
    assert r == pytest.approx(series_rbo(a, b, p), abs=1e-9)
    assert r == pytest.approx(rbo(b, a, p))
    assert -1e-12 <= r <= 1 + 1e-12
    if not set(a) & set(b):
        assert r == 0.0


def test_mean_rbo_cuts_to_depth():
    assert mean_rbo([[1, 2, 9]], [[1, 2, 8]], depth=2) == pytest.approx(1.0)
    assert mean_rbo([[1, 2], [1]], [[1, 2], [2]]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        mean_rbo([[1]], [])


@given(st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=4), max_size=8), st.integers(0, 99))
def test_shuffle_tokens_permutes_tokens(tokens, seed):
    text = " ".join(tokens)
    out = shuffle_tokens(text, random.Random(seed))
    assert sorted(out.split()) == sorted(tokens)


# --- teacher data (pure parts) ------------------------------------------------------



def test_split_sentences_latin_and_cjk():
    assert split_sentences("One two three. Four five six! Seven?") == ["One two three.", "Four five six!", "Seven?"]
    assert split_sentences("東京は首都である。京都は古い都だ。") == ["東京は首都である。", "京都は古い都だ。"]
    assert split_sentences("") == []


def test_sentence_queries_come_from_each_passage_and_are_seeded():
    ps = [Passage("a", "", "Alpha beta gamma delta. Short. Epsilon zeta eta theta.", "en"),
          Passage("b", "", "Tiny.", "en"),
          Passage("c", "", "Uno dos tres cuatro.", "es")]
    cfg = TeacherConfig(sentences_per_passage=2, seed=4)
    qs = list(sample_sentence_queries(ps, cfg))
    assert [q.id for q in qs] == ["a#s0", "a#s1", "c#s0"]  # "Short." and "Tiny." are under min_words
    assert {q.question for q in qs[:2]} == {"Alpha beta gamma delta.", "Epsilon zeta eta theta."}
    assert qs[2].lang == "es"
    assert qs == list(sample_sentence_queries(ps, cfg))
    assert len(list(sample_sentence_queries(ps, TeacherConfig(max_queries=1)))) == 1


def test_label_takes_top_positives_and_bottom_negatives():
    q = Question("q", "text", "en")
    hits = [Hit(str(i), 50.0 - i, "sparse") for i in range(50)]
    ex = label(q, hits, 10, 5)
    assert ex["positive_ids"] == [str(i) for i in range(10)]
    assert ex["hard_negative_ids"] == [str(i) for i in range(45, 50)]
    short = label(q, hits[:12], 10, 5)  # fewer than n_p + n_n: negatives shrink, never overlap
    assert short["positive_ids"] == [str(i) for i in range(10)] and short["hard_negative_ids"] == ["10", "11"]
    assert label(q, [], 10, 5) is None
    val = label(q, hits, 1, 1)  # validation: top-1 positive, one hard negative
    assert val["positive_ids"] == ["0"] and val["hard_negative_ids"] == ["49"]


@given(n=st.integers(0, 60), n_pos=st.integers(1, 12), n_neg=st.integers(0, 8))
def test_label_properties(n, n_pos, n_neg):
    ids = [str(i) for i in range(n)]
    ex = label(Question("q", "t", "en"), [Hit(i, -float(j)) for j, i in enumerate(ids)], n_pos, n_neg)
    if n == 0:
        assert ex is None
        return
    pos, neg = ex["positive_ids"], ex["hard_negative_ids"]
    assert pos == ids[: min(n_pos, n)]
    assert neg == ids[len(ids) - len(neg):] if neg else True
    assert not set(pos) & set(neg)
    assert len(neg) == max(0, min(n_neg, n - len(pos)))


def test_a_bm25_teacher_of_other_passages_is_refused(tmp_path):
    """train lexical's --bm25 must index the --passages it is given (it trained silently on an
    index of 100 of 473 passages)."""
    import json

    from xqa.training.lexical import check_teacher

    passages = tmp_path / "p.jsonl"
    passages.write_text("".join(json.dumps({"id": f"{lang}{i}", "title": "t", "text": "x", "lang": lang}) + "\n"
                                for lang, n in (("en", 3), ("de", 2)) for i in range(n)))
    bm25 = tmp_path / "bm25"
    bm25.mkdir()

    def index(languages, **extra):
        (bm25 / "config.json").write_text(json.dumps({"kind": "bm25", "languages": {
            code: {"num_passages": n} for code, n in languages.items()}, **extra}))

    index({"en": 3, "de": 2})
    check_teacher(str(bm25), str(passages))
    index({"en": 3})   # a language without a BM25 index: its passages are no teacher's
    check_teacher(str(bm25), str(passages))
    index({"en": 3, "de": 1})
    with pytest.raises(XqaError, match=r"indexes other passages than --passages .*\(de: 1 indexed, 2 given\)"):
        check_teacher(str(bm25), str(passages))
    index({"all": 5}, cross_script=True, num_passages=5)
    check_teacher(str(bm25), str(passages))
    index({"all": 4}, cross_script=True, num_passages=4)
    with pytest.raises(XqaError, match=r"\(4 indexed, 5 given\)"):
        check_teacher(str(bm25), str(passages))


def test_lambda_from_a_pretrained_encoder_trains_at_its_rate_and_a_hub_name_is_checked_first(tmp_path):
    """``--init`` without ``--lr``: 5e-5, not the from-scratch 1e-3; a hub name that cannot be had
    is said before the BM25 teacher labels a single query (hours at full scale)."""
    import json

    from xqa.training.lexical import LexicalTrainConfig, learning_rate, train

    assert learning_rate(LexicalTrainConfig(passages="p", bm25="b", out="o")) == 1e-3
    assert learning_rate(LexicalTrainConfig(passages="p", bm25="b", out="o", init="enc")) == 5e-5
    assert learning_rate(LexicalTrainConfig(passages="p", bm25="b", out="o", init="enc", lr=1e-4)) == 1e-4
    passages = tmp_path / "p.jsonl"
    passages.write_text(json.dumps({"id": "a", "title": "t", "text": "x y z", "lang": "en"}) + "\n")
    out = tmp_path / "lambda"
    with pytest.raises(XqaError, match=r"no-such-org/no-such-model: no such folder, and no model of that name on "
                                       r"the hub or in its local cache"):
        train(LexicalTrainConfig(passages=str(passages), bm25=str(tmp_path / "bm25"), out=str(out),
                                 init="no-such-org/no-such-model", progress=False))
    assert not out.exists()
    # train retriever too, before reading its questions and passages (none given here)
    from xqa.training.dense import DenseTrainConfig
    from xqa.training.dense import train as train_retriever

    with pytest.raises(XqaError, match=r"no-such-org/no-such-model: no such folder, and no model of that name"):
        train_retriever(DenseTrainConfig(train=str(tmp_path / "none.jsonl"), passages=str(tmp_path / "none.jsonl"),
                                         out=str(tmp_path / "dense"), init="no-such-org/no-such-model"))


def test_teacher_config_rejects_nonsense():
    with pytest.raises(XqaError, match="n_p"):
        TeacherConfig(depth=5, positives=10)


# --- on the real tiny stack ------------------------------------------------------------



@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    return build_stack(tmp_path_factory.getbasetemp() / "fusion_stack")


@pytest.mark.slow
def test_teacher_data_is_bm25_top_and_bottom(stack):
    import json

    from retriever.spar.data import TeacherConfig as TC

    rows = [json.loads(x) for x in (stack.lexical / "teacher" / "train.jsonl").read_text().splitlines()]
    assert len(rows) == 150
    sample = rows[:15]
    qs = [Question(r["id"], r["question"], r["lang"]) for r in sample]
    assert all(q.lang != NO_BM25_LANG for q in qs)  # no teacher in Telugu: those sentences find nothing
    hits = stack.sparse_retriever().search(qs, TC().depth)
    for r, h in zip(sample, hits):
        ids = [x.id for x in h]
        assert r["positive_ids"] == ids[:10]
        assert r["hard_negative_ids"] == ids[max(10, len(ids) - 5):]
        passage = r["id"].split("#")[0]
        assert passage in ids[:3]  # a sentence finds its own passage near the top


def no_teacher(stack):
    class NoTeacher:
        languages = stack.sparse_retriever().languages

        def search(self, *a, **k):
            raise AssertionError("the cached teacher data should have been reused")

    return NoTeacher()


@pytest.mark.slow
def test_teacher_data_is_cached(stack, tmp_path):
    from retriever.spar.data import TeacherConfig as TC
    from retriever.spar.lexical import teacher_data

    cfg = TC(max_queries=150, seed=0)
    train, dev, meta = teacher_data(no_teacher(stack), lambda: stack.passages, stack.lexical, cfg, dev_size=20,
                                    progress=False)
    assert meta["unlabelled"] == 0  # no sentence of the BM25-less language was asked
    assert len(train) == 150 and meta["train"] == 150
    assert all(len(e["positive_ids"]) == 1 and len(e["hard_negative_ids"]) == 1 for e in dev)


@pytest.mark.slow
def test_validation_mini_index_holds_2n_passages(stack):
    from retriever.dense.model import BiEncoder
    from retriever.spar.data import TeacherConfig as TC
    from retriever.spar.lexical import lexical_task, teacher_data

    train, dev, _ = teacher_data(no_teacher(stack), lambda: stack.passages, stack.lexical, TC(max_queries=150), dev_size=20,
                                 progress=False)
    task = lexical_task(BiEncoder.load(stack.lexical), stack.passages, train, dev, TC())
    ids, rows = task._mini_index
    distinct = {p for e in dev for p in e["positive_ids"] + e["hard_negative_ids"]}
    assert len(ids) == len(distinct) <= 2 * len(dev)
    assert all(len(r) == 1 for r in rows)  # the teacher's top-1 is the only positive
    assert task.config.max_positives == 10  # all n_p positives are masked as false negatives


_VECS: dict = {}


def passage_vectors(stack, model):
    """Every passage encoded by ``model`` (cached per model: the tests share the encoders)."""
    if id(model) not in _VECS:
        _VECS[id(model)] = (model, model.encode_passages(stack.passages))
    return _VECS[id(model)][1]


def brute_spar(stack, spar, questions, mu):
    """Brute force: ``{id: sim(q,p) + μ·simΛ(q,p)}`` for every passage, from the two encoders."""
    passages = stack.passages
    pd, pl = passage_vectors(stack, spar.dense_model), passage_vectors(stack, spar.lexical_model)
    qd = spar.dense_model.encode_queries([q.question for q in questions])
    ql = spar.lexical_model.encode_queries([q.question for q in questions])
    scores = qd @ pd.T + mu * (ql @ pl.T)
    return [{p.id: float(row[j]) for j, p in enumerate(passages)} for row in scores]


def assert_top_k(hits, brute, k):
    """``hits`` are a top-k of ``brute`` (id -> score): each score right, none better left out."""
    assert len(hits) == k
    for h in hits:
        assert h.score == pytest.approx(brute[h.id], rel=1e-4, abs=1e-4)
    assert [h.score for h in hits] == pytest.approx(sorted(brute.values(), reverse=True)[:k], rel=1e-4, abs=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
def test_spar_index_scores_equal_dense_plus_mu_lexical(stack, mu):
    spar = stack.spar_retriever().with_mu(mu)
    qs = stack.dev[:8]
    got = spar.search(qs, 15)
    for g, w in zip(got, brute_spar(stack, spar, qs, mu)):
        assert_top_k(g, w, 15)
        assert {h.source for h in g} == {"spar"}


@pytest.mark.slow
def test_mu_is_query_side_only(stack):
    base = stack.spar_retriever()
    view = base.with_mu(2.5)
    assert view.indexes is base.indexes and view.mu == 2.5 and base.mu == 0.5
    qs = stack.dev[:5]
    qd, ql = base.encode([q.question for q in qs])
    assert view.search(qs, 10) == base.search_encoded(qd, ql, 10, mu=2.5)


@pytest.mark.slow
def test_spar_halves_are_the_dense_retriever_and_lambda(stack):
    spar = stack.spar_retriever()
    qs = stack.dev[:8]
    dense = stack.dense_retriever().search(qs, 12)
    half = spar.part("dense").search(qs, 12)
    for a, b, w in zip(dense, half, brute_spar(stack, spar, qs, 0.0)):
        assert_top_k(a, w, 12)
        assert_top_k(b, w, 12)
    lex = spar.part("lexical").search(qs, 12)
    ql = spar.lexical_model.encode_queries([q.question for q in qs])
    pl = passage_vectors(stack, spar.lexical_model)
    for i, hits in enumerate(lex):
        assert_top_k(hits, {p.id: float(ql[i] @ pl[j]) for j, p in enumerate(stack.passages)}, 12)
        assert {h.source for h in hits} == {"lexical"}


@pytest.mark.slow
def test_weighted_sum_index(stack, tmp_path):
    from retriever.spar import SparRetriever, build_spar_index

    out = tmp_path / "spar_sum"
    cfg = build_spar_index(stack.dense, stack.lexical, stack.passages, out, mode="sum", progress=False)
    assert cfg["dim"] == cfg["dense_dim"] == 128
    spar = SparRetriever.load(out, mu=0.4)
    qs = stack.dev[:5]
    qd = spar.dense_model.encode_queries([q.question for q in qs])
    ql = spar.lexical_model.encode_queries([q.question for q in qs])
    shared = stack.spar_retriever()  # the same two models, loaded once for the whole module
    pd, pl = passage_vectors(stack, shared.dense_model), passage_vectors(stack, shared.lexical_model)
    scores = (qd + 0.4 * ql) @ (pd + pl).T
    for i, hits in enumerate(spar.search(qs, 10)):
        assert [h.score for h in hits] == pytest.approx(sorted(scores[i].tolist(), reverse=True)[:10],
                                                         rel=1e-4, abs=1e-4)
    with pytest.raises(XqaError, match="halves"):
        spar.part("lexical")


@pytest.mark.slow
def test_spar_index_refuses_overwrite_and_resumes(stack, tmp_path):
    import numpy as np

    from retriever.dense.encode import read_shards
    from retriever.spar import build_spar_index

    with pytest.raises(FileExistsError):
        build_spar_index(stack.dense, stack.lexical, stack.passages, stack.spar, progress=False)
    out = tmp_path / "resume"
    build_spar_index(stack.dense, stack.lexical, stack.passages, out, progress=False)
    chunk = out / "lexical" / "shards" / "00000-of-00001" / "chunk-000000.npy"
    before = chunk.stat().st_mtime_ns
    (out / "config.json").unlink()  # as if killed before the end
    build_spar_index(stack.dense, stack.lexical, stack.passages, out, progress=False)
    assert chunk.stat().st_mtime_ns == before  # Λ vectors were not encoded again
    with pytest.raises(XqaError, match="not in the passages"):
        build_spar_index(stack.dense, stack.lexical, stack.passages[:-3], tmp_path / "short", progress=False)
    # the Λ vectors the refused run left are of other passages: the run given the right ones encodes them again
    cfg = build_spar_index(stack.dense, stack.lexical, stack.passages, tmp_path / "short", progress=False)
    assert cfg["passages"] == len(stack.passages)
    # another Λ rebuilding the index encodes its own vectors, not reusing the other Λ's
    build_spar_index(stack.dense, stack.dense_model, stack.passages, out, overwrite=True, progress=False)
    assert chunk.stat().st_mtime_ns != before
    dense_vectors = np.concatenate([v for v, _, _ in read_shards(stack.dense, 1)])
    np.testing.assert_allclose(np.load(chunk), dense_vectors[:len(np.load(chunk))], rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_tune_commands_end_to_end(stack, tmp_path):
    import json

    from fusion_stack import _cli

    from retriever.spar.index import MU_GRID

    # indexes and passages named on the command line are the whole corpus: no default config is read
    common = ["--dev", stack.world / "dev.jsonl", "--passages", stack.passages_file]
    _cli("tune", "alpha", *common, "--bm25", stack.bm25, "--dense", stack.dense, "--metric", "recall",
         "--at", 10, "--depth", 30, "--out", tmp_path / "alpha.json")
    a = json.loads((tmp_path / "alpha.json").read_text())
    assert len(a["grid"]) == 41 and a["best_alpha"] in [float(x) for x in a["grid"]]
    assert a["grid"][f"{a['best_alpha']:.2f}"] == max(a["grid"].values())
    # α = 0 ranks by dense alone: its score is the dense retriever's
    assert a["grid"]["0.00"] == pytest.approx(a["baselines"]["dense"])
    _cli("tune", "mu", *common, "--spar", stack.spar, "--metric", "recall", "--at", 20,
         "--out", tmp_path / "mu.json")
    m = json.loads((tmp_path / "mu.json").read_text())
    assert len(m["grid"]) == 19 == len(MU_GRID)
    assert m["best_mu"] in MU_GRID and m["grid"][f"{m['best_mu']:.6g}"] == max(m["grid"].values())


@pytest.mark.slow
def test_diagnose_lexical_end_to_end(stack, tmp_path):
    import json

    from fusion_stack import _cli

    _cli("diagnose", "lexical", "--questions", stack.world / "dev.jsonl", "--bm25", stack.bm25,
         "--spar", stack.spar, "--passages", stack.passages_file,
         "--depth", 20, "--ks", 5, 20, "--out", tmp_path / "diag.json")
    d = json.loads((tmp_path / "diag.json").read_text())
    assert set(d["rbo"]) == {"Λ", "dense", "SPAR (μ=1)"}  # no config: the index's own μ
    assert all(0.0 <= v <= 1.0 for v in d["rbo"].values())
    bm25 = d["shuffle"]["BM25"]
    assert bm25["original"] == bm25["shuffled"]  # a bag of words does not see word order
    indexed = [q for q in stack.dev if q.lang != NO_BM25_LANG]
    assert d["rbo_questions"] == sum(bool(h) for h in stack.sparse_retriever().search(indexed, 1))


@pytest.mark.slow
def test_lexical_index_alone_global_and_same_language(stack, tmp_path):
    from retriever.spar.lexical_index import LexicalRetriever, build_lexical_index

    build_lexical_index(stack.lexical, stack.passages, tmp_path / "lam", progress=False)
    qs = stack.dev[:10]
    shared = stack.spar_retriever()
    pl = passage_vectors(stack, shared.lexical_model)
    ql = shared.lexical_model.encode_queries([q.question for q in qs])
    glob = LexicalRetriever.load(tmp_path / "lam").search(qs, 8)
    same = LexicalRetriever.load(tmp_path / "lam", same_language=True).search(qs, 8)
    for i, q in enumerate(qs):
        brute = {p.id: float(ql[i] @ pl[j]) for j, p in enumerate(stack.passages)}
        assert_top_k(glob[i], brute, 8)
        in_lang = {pid: v for pid, v in brute.items() if pid.startswith(q.lang + "-")}
        assert_top_k(same[i], in_lang, min(8, len(in_lang)))
        assert {h.lang for h in same[i]} == {q.lang}
