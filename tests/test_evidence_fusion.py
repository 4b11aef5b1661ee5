"""Evidence fusion: the fused answer distribution by hand, its numerical edge cases, duplicates and
translations, the answer record; tuning its weights on dev outputs; answer scoring."""
from __future__ import annotations

import math

import numpy as np
import pytest

from reader.base import ReaderOutput
from reader.evidence import FusionParams, build_answer, fuse_evidence, match_matrix, reader_only
from reader.scoring import score_predictions, simple_score
from reader.tuning import choose, evaluate, prepare, tune_fusion
from xqa.records import Context


def _softmax(x):
    e = [math.exp(v - max(x)) for v in x]
    return [v / sum(e) for v in e]


def test_fusion_matches_hand_computation():
    cands = [("Paris", -0.2), ("Lyon", -1.5), ("Parigi", -2.0)]
    ctxs = ["The capital is Paris, not Lyon.", "Lyon is a city."]
    r, R, beta, gamma, eps = [0.8, 0.2], [12.0, 10.0], 2.0, 0.5, 0.1
    # by hand: P(i) = softmax(beta r + gamma R); s_i = logprob + log(eps) where the candidate is absent
    P = _softmax([beta * r[i] + gamma * R[i] for i in range(2)])
    present = [[1, 1, 0], [0, 1, 0]]
    expected = [0.0, 0.0, 0.0]
    for i in range(2):
        s = [lp + (0.0 if present[i][j] else math.log(eps)) for j, (_, lp) in enumerate(cands)]
        for j, w in enumerate(_softmax(s)):
            expected[j] += P[i] * w
    got = {c.text: c.score for c in fuse_evidence(cands, r, R, ctxs, beta=beta, gamma=gamma, miss=eps)}
    for (text, _), e in zip(cands, expected):
        assert got[text] == pytest.approx(e, rel=1e-9)
    assert sum(got.values()) == pytest.approx(1.0)
    assert match_matrix([c for c, _ in cands], ctxs).tolist() == present


def test_fusion_is_stable_for_large_scores():
    cands = [("a", -1000.0), ("b", -1001.0)]
    out = fuse_evidence(cands, [0.5, 0.5], [1e4, -1e4], ["a", "b"], beta=1.0, gamma=1.0)
    assert all(math.isfinite(c.score) for c in out) and out[0].text == "a"


def test_log_softmax_of_a_row_without_mass_is_minus_infinity_not_nan():
    import warnings
    from types import SimpleNamespace

    from reader.evidence import log_softmax, logsumexp

    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, 1.0, -np.inf]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no "invalid value" warnings either
        out = log_softmax(x, axis=1)
        total = logsumexp(x, axis=1)
    assert np.isneginf(out[0]).all()
    assert np.exp(out[1]).tolist() == pytest.approx([1 / (1 + math.e), math.e / (1 + math.e), 0.0])
    assert np.isneginf(total[0]) and total[1] == pytest.approx(math.log(1 + math.e))
    # a dev question the reader gave no candidate picks its (padding) first slot, not a NaN argmax
    s = prepare([SimpleNamespace(candidates=[], relevance=np.array([1.0])),
                 SimpleNamespace(candidates=[("Paris", -0.1)], relevance=np.array([1.0]))],
                [[Context("p", "", "Paris", "en", 1.0, "bm25")]] * 2, [["Paris"], ["Paris"]], ["en", "en"],
                simple_score)
    assert choose(s, FusionParams()).tolist() == [0, 0] and evaluate(s, FusionParams()) == (0.5, 0.5)


def test_duplicates_summed_with_best_surface_form():
    cands = [("Paris", -1.0), ("paris.", -0.9), ("Rome", -0.5)]
    out = fuse_evidence(cands, [1.0], [0.0], ["Paris is in France; Rome is not."], beta=0.0, gamma=0.0, miss=0.5)
    # 'paris.' scores higher than 'Paris' alone; it is shown without its full stop (tidy_answer)
    assert [c.text for c in out] == ["paris", "Rome"]
    w = _softmax([-1.0, -0.9, -0.5])
    assert out[0].score == pytest.approx(w[0] + w[1]) and out[1].score == pytest.approx(w[2])
    assert out[0].reader_score == -0.9
    assert [c.text for c in reader_only(cands)] == ["paris", "Rome"]


def test_translated_candidate_stays_scorable_and_can_win():
    ctxs = ["Die Hauptstadt von Italien ist Rom."]
    cands = [("Rome", -0.1), ("Roma", -3.0)]  # neither is a span of the German passage
    out = fuse_evidence(cands, [1.0], [3.0], ctxs, beta=1.0, gamma=1.0)
    assert out[0].text == "Rome" and out[0].score > 0 and out[1].score > 0
    # a span candidate gains over a non-span one, but a confident translation still wins
    out2 = fuse_evidence([("Rome", -0.1), ("Rom", -1.0)], [1.0], [3.0], ctxs, miss=0.1)
    assert out2[0].text == "Rom"
    out3 = fuse_evidence([("Rome", -0.1), ("Rom", -6.0)], [1.0], [3.0], ctxs, miss=0.1)
    assert out3[0].text == "Rome"


def test_miss_one_is_reader_only_and_answer_record():
    cands = [("x", -0.3), ("y", -0.4)]
    ctxs = [Context("1", "t", "x here", "en", 1.0, "dense"), Context("2", "t", "y here", "en", 9.0, "dense")]
    fused = fuse_evidence(cands, [0.3, 0.7], [1.0, 9.0], ctxs, beta=3.0, gamma=1.0, miss=1.0)
    assert [c.score for c in fused] == pytest.approx([c.score for c in reader_only(cands)])
    ans = build_answer("q", cands, [0.3, 0.7], ctxs, FusionParams(beta=0.0, gamma=1.0, miss=0.1))
    assert ans.text == "y" and [e.context.id for e in ans.evidence] == ["2", "1"]
    assert build_answer("q", cands, [0.3, 0.7], ctxs, None).text == "x"


def test_soft_match_credits_the_passage_a_translation_came_from():
    ctxs = ["Die Hauptstadt ist Rom.", "Paris liegt in Frankreich."]
    cands = [("Rome", -0.7), ("Paris", -0.6)]
    cand_rel = np.array([[0.9, 0.1], [0.5, 0.5]])  # 'Rome' was generated looking at passage 0
    hard = fuse_evidence(cands, [0.5, 0.5], [9.0, 0.0], ctxs, beta=0.0, gamma=1.0, miss=0.1)
    soft = fuse_evidence(cands, [0.5, 0.5], [9.0, 0.0], ctxs, beta=0.0, gamma=1.0, miss=0.1,
                         candidate_relevance=cand_rel)
    assert hard[0].text == "Paris" and soft[0].text == "Rome"
    assert sum(c.score for c in soft) == pytest.approx(1.0)
    out = ReaderOutput(cands, np.array([0.5, 0.5], np.float32), cand_rel.astype(np.float32))
    s = prepare([out], [[Context("a", "", ctxs[0], "de", 9.0, "d"), Context("b", "", ctxs[1], "de", 0.0, "d")]],
                [["Rome"]], ["en"], simple_score)
    assert choose(s, FusionParams(0.0, 1.0, 0.1, soft=True))[0] == 0
    assert choose(s, FusionParams(0.0, 1.0, 0.1, soft=False))[0] == 1


def test_tuning_finds_the_informative_signal():
    """Dev set where the reader's top candidate is wrong half of the time and the passage with
    the best retriever score holds the right answer: tuning must learn to use γ."""
    rng = np.random.default_rng(0)
    outputs, contexts, answers = [], [], []
    for q in range(40):
        gold, wrong = f"g{q}", f"w{q}"
        flip = q % 2 == 0
        cands = [(wrong, -0.5), (gold, -0.9)] if flip else [(gold, -0.5), (wrong, -0.9)]
        ctx = [Context("a", "", f"about {gold}", "en", float(5 + rng.random()), "dense"),
               Context("b", "", f"about {wrong}", "en", float(rng.random()), "dense")]
        outputs.append(ReaderOutput(cands, np.array([0.5, 0.5], np.float32)))
        contexts.append(ctx)
        answers.append([gold])
    s = prepare(outputs, contexts, answers, ["en"] * 40, simple_score)
    assert evaluate(s, None) == (0.5, 0.5)
    best = tune_fusion(s, passes=2)
    assert best["gamma"] > 0 and best["dev_f1"] == 1.0 and best["reader_only_f1"] == 0.5
    picked = choose(s, FusionParams(best["beta"], best["gamma"], best["miss"]))
    assert all(outputs[q].candidates[picked[q]][0] == f"g{q}" for q in range(40))


def test_score_predictions_macro_and_simple_score():
    examples = [{"answers": ["a b"], "lang": "en"}, {"answers": ["c"], "lang": "de"}, {"answers": [], "lang": "en"}]
    s = score_predictions(examples, ["a b", "x", "ignored"])
    assert s["em"] == 0.5 and s["f1"] == 0.5 and s["macro_f1"] == 0.5
    assert simple_score("the a", ["a b"], "en") == (0.0, 0.5)
