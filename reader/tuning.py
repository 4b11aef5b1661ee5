"""Coarse-to-fine grid search of the evidence-fusion weights β, γ (and ε) on dev.

Paper 001 §3 tunes the fusion weights by grid search in passes, a coarse step
first, then finer steps around the best point. β multiplies the reader's
relevance (a distribution over passages, so values in [0, 1]) and γ the
retriever score (any scale: BM25 tens, dense inner products hundreds), so one
fixed grid cannot suit both: each grid is laid out in units of the typical
within-question spread (standard deviation) of its signal on dev, so the same
multipliers mean "this many spreads" for any retriever.

Everything is vectorised over questions: every dev question is prepared once
(match matrix, duplicate groups, EM/F1 of each candidate), then a grid point
costs a few numpy operations on [Q, N, k] arrays.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reader.answer_text import tidy_answer
from reader.evidence import (
    FusionParams,
    log_softmax,
    logsumexp,
    match_matrix,
    normalize_answer,
    soften,
)
from reader.scoring import Scorer
from xqa.records import Context

COARSE = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
MISSES = (0.01, 0.03, 0.1, 0.3, 1.0)



@dataclass
class FusionSet:
    """Dev questions packed for fast fusion; Q questions, N passages, k candidates (padded)."""

    logprobs: np.ndarray    # [Q, k], -inf for padding candidates
    match: np.ndarray       # [Q, N, k]
    soft_match: np.ndarray  # [Q, N, k] match with cross-attention shares for candidates in no passage
    relevance: np.ndarray   # [Q, N]
    retriever: np.ndarray   # [Q, N]
    passages: np.ndarray    # [Q, N] bool, real passages
    same: np.ndarray        # [Q, k, k] 1 where two candidates normalise to the same text
    em: np.ndarray          # [Q, k] EM of each candidate
    f1: np.ndarray          # [Q, k] F1 of each candidate

    def __len__(self) -> int:
        return self.logprobs.shape[0]


def prepare(outputs: Sequence[Any], contexts: Sequence[Sequence[Context]],
            answers: Sequence[Sequence[str]], langs: Sequence[str], scorer: Scorer,
            labels: Any = None) -> FusionSet:
    """Pack reader outputs (``candidates``, ``relevance``) with their passages and gold answers.

    With ``labels`` (:class:`xqa.world.labels.AnswerLabels`) a candidate is matched to the passages
    as written and answers (is grouped and evaluated) in the question's language."""
    Q = len(outputs)
    k = max([len(o.candidates) for o in outputs] + [1])
    N = max([len(o.relevance) for o in outputs] + [1])
    s = FusionSet(logprobs=np.full((Q, k), -np.inf), match=np.zeros((Q, N, k)), soft_match=np.zeros((Q, N, k)),
                  relevance=np.zeros((Q, N)), retriever=np.zeros((Q, N)), passages=np.zeros((Q, N), bool),
                  same=np.zeros((Q, k, k)), em=np.zeros((Q, k)), f1=np.zeros((Q, k)))
    for q, (out, ctxs) in enumerate(zip(outputs, contexts)):
        texts = [t for t, _ in out.candidates]
        n = len(out.relevance)
        s.logprobs[q, : len(texts)] = [lp for _, lp in out.candidates]
        s.match[q, :n, : len(texts)] = match_matrix(texts, list(ctxs)[:n])
        cand_rel = getattr(out, "candidate_relevance", None)
        has_soft = cand_rel is not None and np.shape(cand_rel) == (len(texts), n)
        s.soft_match[q, :n, : len(texts)] = soften(s.match[q, :n, : len(texts)], cand_rel if has_soft else None)
        s.relevance[q, :n] = out.relevance
        s.retriever[q, :n] = [c.score for c in list(ctxs)[:n]]
        s.passages[q, : max(n, 1)] = True  # no passage: one empty slot -> reader-only ranking
        shown = [tidy_answer(t) for t in (labels.shown_all(texts, langs[q]) if labels is not None else texts)]
        keys = [normalize_answer(t) for t in shown]
        for a, ka in enumerate(keys):
            for b, kb in enumerate(keys):
                s.same[q, a, b] = ka == kb
            if answers[q]:
                s.em[q, a], s.f1[q, a] = scorer(shown[a], answers[q], langs[q])
    return s


def _spread(values: np.ndarray, mask: np.ndarray) -> float:
    """Mean within-question standard deviation of ``values`` over real passages."""
    stds = [values[q, mask[q]].std() for q in range(values.shape[0]) if mask[q].sum() > 1]
    spread = float(np.mean(stds)) if stds else 0.0
    return spread if spread > 1e-12 else 1.0


def choose(s: FusionSet, params: FusionParams) -> np.ndarray:
    """Index [Q] of the answer evidence fusion picks (group total, best surface form)."""
    passage_logits = params.beta * s.relevance + params.gamma * s.retriever
    log_p = log_softmax(np.where(s.passages, passage_logits, -np.inf), axis=1)          # [Q, N]
    m = s.soft_match if params.soft else s.match
    within = s.logprobs[:, None, :] + np.log(m + params.miss * (1 - m))                 # [Q, N, k]
    within = log_softmax(within, axis=2)
    joint = np.where(s.passages[:, :, None], log_p[:, :, None] + within, -np.inf)        # [Q, N, k]
    scores = np.exp(logsumexp(joint, axis=1))                                             # [Q, k] probabilities
    group = np.einsum("qab,qb->qa", s.same, scores)                                       # duplicates summed
    best_group = group >= group.max(axis=1, keepdims=True) * (1 - 1e-9)
    return np.where(best_group, scores, -1.0).argmax(axis=1)


def evaluate(s: FusionSet, params: FusionParams | None) -> tuple[float, float]:
    """Mean (EM, F1) of fusion with ``params``, or of the reader's top candidate when None."""
    idx = np.zeros(len(s), int) if params is None else choose(s, params)
    rows = np.arange(len(s))
    return float(s.em[rows, idx].mean()), float(s.f1[rows, idx].mean())


def _around(values: Sequence[float], best: float, points: int = 9) -> list[float]:
    """A finer linear grid between the neighbours of ``best`` in ``values``."""
    vals = sorted(set(values))
    i = vals.index(best)
    lo, hi = vals[max(0, i - 1)], vals[min(len(vals) - 1, i + 1)]
    return sorted(set(np.linspace(lo, hi, points).round(6).tolist()) | {best})


def tune_fusion(s: FusionSet, passes: int = 3, progress: bool = False) -> dict[str, Any]:
    """Grid-search β, γ, ε on ``s`` to maximise mean F1, coarse to fine.

    Pass 1: β, γ over :data:`COARSE` multipliers of the spread of r and R,
    ε over :data:`MISSES`, soft matching off and on (when the outputs carry
    per-candidate relevance). Each further pass: a 9-point linear grid between
    the previous best value's neighbours, for β and γ (ε and soft fixed). Ties keep the
    earlier point (smaller weights). Returns the best parameters and scores,
    the reader-only scores and the number of points tried.
    """
    unit_r = 1.0 / _spread(s.relevance, s.passages)
    unit_R = 1.0 / _spread(s.retriever, s.passages)
    betas = [m * unit_r for m in COARSE]
    gammas = [m * unit_R for m in COARSE]
    misses = list(MISSES)
    softs = [False, True] if np.any(s.soft_match != s.match) else [False]
    best: tuple[float, float, FusionParams] | None = None
    tried = 0
    for p in range(max(1, passes)):
        grid = [(b, g, e, m) for m in softs for e in misses for b in betas for g in gammas]
        if progress:
            print(f"fusion grid pass {p + 1}: {len(grid)} points")
        for b, g, e, m in grid:
            params = FusionParams(float(b), float(g), float(e), m)
            em, f1 = evaluate(s, params)
            tried += 1
            if best is None or f1 > best[1] + 1e-12:
                best = (em, f1, params)
        assert best is not None
        betas = _around(betas, best[2].beta)
        gammas = _around(gammas, best[2].gamma)
        misses = [best[2].miss]
        softs = [best[2].soft]
    reader_em, reader_f1 = evaluate(s, None)
    em, f1, params = best
    return {**params.to_dict(), "dev_em": em, "dev_f1": f1, "reader_only_em": reader_em,
            "reader_only_f1": reader_f1, "unit_beta": unit_r, "unit_gamma": unit_R,
            "n_questions": len(s), "points": tried}


def params_from(d: Mapping[str, Any]) -> FusionParams:
    return FusionParams.from_dict(d)


# --------------------------------------------------------------------------- span reader


@dataclass
class SpanFusionSet:
    """Dev questions of a span reader packed for fast fusion: Q questions, N passages, m spans.

    ``within`` [Q, m] is s_ij − log Σ_j' exp(s_ij') of each span in its passage; ``passage``
    [Q, m] its passage index (−1 for padding); ``same`` [Q, m, m] equal normalised texts."""

    within: np.ndarray
    passage: np.ndarray
    relevance: np.ndarray   # [Q, N]
    retriever: np.ndarray   # [Q, N]
    passages: np.ndarray    # [Q, N] bool
    same: np.ndarray
    same_lang: np.ndarray   # [Q, N] 1.0 where the passage is in the question's language
    em: np.ndarray          # [Q, m]
    f1: np.ndarray          # [Q, m]

    def __len__(self) -> int:
        return self.within.shape[0]


def prepare_spans(outputs: Sequence[Any], contexts: Sequence[Sequence[Context]],
                  answers: Sequence[Sequence[str]], langs: Sequence[str], scorer: Scorer) -> SpanFusionSet:
    """Pack span reader outputs (``reader.span.SpanOutput``) with passages and gold answers."""
    Q = len(outputs)
    N = max((len(o.relevance) for o in outputs), default=1) or 1
    m = max((len(o.spans) for o in outputs), default=1) or 1
    s = SpanFusionSet(within=np.full((Q, m), -np.inf), passage=np.full((Q, m), -1, int),
                      relevance=np.zeros((Q, N)), retriever=np.zeros((Q, N)), passages=np.zeros((Q, N), bool),
                      same=np.zeros((Q, m, m)), same_lang=np.zeros((Q, N)), em=np.zeros((Q, m)),
                      f1=np.zeros((Q, m)))
    for q, (out, ctxs) in enumerate(zip(outputs, contexts)):
        n = len(out.relevance)
        s.relevance[q, :n] = out.relevance
        s.retriever[q, :n] = [c.score for c in list(ctxs)[:n]]
        s.passages[q, :n] = True
        s.same_lang[q, :n] = [float(bool(langs[q]) and c.lang == langs[q]) for c in list(ctxs)[:n]]
        shown = [tidy_answer(x.text) for x in out.spans]   # as evidence fusion shows them (merge_duplicates)
        keys = [normalize_answer(t) for t in shown]
        for a, x in enumerate(out.spans):
            s.within[q, a] = x.score - out.norm[x.passage]
            s.passage[q, a] = x.passage
            s.em[q, a], s.f1[q, a] = scorer(shown[a], answers[q], langs[q])
            for b, key in enumerate(keys):
                s.same[q, a, b] = float(key == keys[a])
    return s


def choose_spans(s: SpanFusionSet, beta: float, gamma: float, delta: float = 0.0) -> np.ndarray:
    """Index [Q] of the span evidence fusion picks (its group's total, best member shown); δ is
    added to the logit of each passage in the question's language."""
    logits = np.where(s.passages, beta * s.relevance + gamma * s.retriever + delta * s.same_lang, -np.inf)
    log_p = log_softmax(logits, axis=1)                                                  # [Q, N]
    rows = np.arange(len(s))[:, None]
    weight = np.where(s.passage >= 0, log_p[rows, np.maximum(s.passage, 0)], -np.inf)    # [Q, m]
    score = np.nan_to_num(np.exp(weight + s.within))                                      # [Q, m]
    group = np.einsum("qab,qb->qa", s.same, score)
    best_group = group >= group.max(axis=1, keepdims=True) * (1 - 1e-9)
    return np.where(best_group, score, -1.0).argmax(axis=1)


def evaluate_spans(s: SpanFusionSet, beta: float | None, gamma: float = 0.0,
                   delta: float = 0.0) -> tuple[float, float]:
    """Mean (EM, F1) of span fusion at (β, γ); with ``beta`` None, the reader alone: the best
    span of its most relevant passage."""
    rows = np.arange(len(s))
    if beta is None:
        top = np.where(s.passages, s.relevance, -np.inf).argmax(axis=1)                 # [Q]
        own = np.where(s.passage == top[:, None], s.within, -np.inf)
        idx = np.where(np.isfinite(own).any(axis=1), own.argmax(axis=1), s.within.argmax(axis=1))
    else:
        idx = choose_spans(s, beta, gamma, delta)
    return float(s.em[rows, idx].mean()), float(s.f1[rows, idx].mean())


# δ tried for the same-language prior of span evidence fusion (0: none)
SAME_LANGUAGE = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)


def tune_span_fusion(s: SpanFusionSet, passes: int = 3, progress: bool = False,
                     deltas: Sequence[float] = SAME_LANGUAGE) -> dict[str, Any]:
    """Grid-search β, γ of span evidence fusion on ``s`` (mean F1), coarse to fine, in units
    of the within-question spread of r and R (as :func:`tune_fusion`), for each same-language
    prior δ in ``deltas``; the best (β, γ, δ) wins."""
    unit_r = 1.0 / _spread(s.relevance, s.passages)
    unit_R = 1.0 / _spread(s.retriever, s.passages)
    best: tuple[float, float, float, float, float] | None = None
    tried = 0
    by_delta = {}
    for delta in deltas:
        betas = [m * unit_r for m in COARSE]
        gammas = [m * unit_R for m in COARSE]
        here: tuple[float, float, float, float] | None = None
        for p in range(max(1, passes)):
            if progress:
                print(f"span fusion grid, δ {delta:g}, pass {p + 1}: {len(betas) * len(gammas)} points")
            for b in betas:
                for g in gammas:
                    em, f1 = evaluate_spans(s, float(b), float(g), float(delta))
                    tried += 1
                    if here is None or f1 > here[1] + 1e-12:
                        here = (em, f1, float(b), float(g))
            assert here is not None
            betas, gammas = _around(betas, here[2]), _around(gammas, here[3])
        by_delta[f"{delta:g}"] = here[1]
        if best is None or here[1] > best[1] + 1e-12:
            best = (*here, float(delta))
    assert best is not None
    reader_em, reader_f1 = evaluate_spans(s, None)
    em, f1, beta, gamma, delta = best
    return {"beta": beta, "gamma": gamma, "same_language": delta, "miss": 0.1, "soft": False,
            "dev_em": em, "dev_f1": f1, "dev_f1_by_same_language": by_delta,
            "reader_only_em": reader_em, "reader_only_f1": reader_f1, "unit_beta": unit_r,
            "unit_gamma": unit_R, "n_questions": len(s), "points": tried}
