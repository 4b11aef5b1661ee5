"""Answerability: the calibrated probability that the answer shown is right.

Evidence fusion's probability says how the reader's mass spreads over the candidates it
read; it does not say whether the passages hold the answer at all. A question whose
answer is in no passage still gets a best candidate, often with a confident-looking
probability. :class:`Calibrator` turns what the pipeline already knows about one answer
(:func:`answer_features`) into the probability that the answer is right, by a logistic
regression over standardised features fitted on questions with known answers, half of them
made unanswerable by removing their paragraphs from the collection (``xqa tune
answerability``). "Right" is the same event the fit was given: the answer's F1 against the
gold ≥ 0.5 (:data:`CORRECT_F1`).

Features (:data:`FEATURES`), each from the answer record and the reader's passage scores:

==================  ==============================================================
``log_p``           log of the fused probability of the best answer
``log_overlap``     log of the fused probability of every answer that contains the best
                    one or is contained in it (nested spans split one answer's mass)
``margin``          fused probability of the best answer minus the second's
``span_score``      the reader's own score of the best answer (span logit, or FiD
                    sequence log-probability)
``relevance_max``   the reader's relevance of its most relevant passage (the span
                    reader's relevance logit; FiD: its attention share)
``relevance_gap``   that relevance minus the second passage's
``passage_weight``  fused weight of the best passage, softmax(β·r + γ·R)
``retrieval_top``   retriever score of the best-ranked passage read
``retrieval_gap``   that score minus the second's
``agreement``       share of the passages read that contain the answer
``same_language``   1 when the answer comes from a passage in the question's language
``answer_length``   log(1 + characters of the answer)
==================  ==============================================================

Pure numpy/scipy: no torch, no pickle; a calibrator is a JSON object.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from reader.evidence import normalize_answer, occurs_in
from xqa.records import Answer

FEATURES = ("log_p", "log_overlap", "margin", "span_score", "relevance_max", "relevance_gap", "passage_weight",
            "retrieval_top", "retrieval_gap", "agreement", "same_language", "answer_length")
# An answer counts as right when its F1 against the gold is at least this.
CORRECT_F1 = 0.5
# Shown answers that should be right at the default threshold (xqa tune answerability --precision).
DEFAULT_PRECISION = 0.75


def _top2(values: Sequence[float]) -> tuple[float, float]:
    v = sorted((float(x) for x in values if x is not None and math.isfinite(float(x))), reverse=True)
    if not v:
        return 0.0, 0.0
    return v[0], v[0] - (v[1] if len(v) > 1 else v[0])


def answer_features(answer: Answer, question_lang: str = "",
                    reader_relevance: Sequence[float] | None = None) -> dict[str, float]:
    """The :data:`FEATURES` of one answer. ``reader_relevance`` [N]: the reader's own
    per-passage relevance (span reader: logits); without it the evidence's weights stand in."""
    cands = answer.candidates
    p_top = float(answer.score) if cands else 0.0
    p_2 = float(cands[1].score) if len(cands) > 1 else 0.0
    best = cands[0] if cands else None
    rel = list(reader_relevance) if reader_relevance is not None else [e.relevance for e in answer.evidence]
    r_max, r_gap = _top2(rel)
    R_top, R_gap = _top2([e.context.score for e in answer.evidence])
    key = normalize_answer(best.written or best.text) if best else ""
    n = len(answer.evidence)
    found = sum(occurs_in(key, normalize_answer(f"{e.context.title} {e.context.text}")) for e in answer.evidence)
    same = 1.0 if best is None or not best.lang or not question_lang or best.lang == question_lang else 0.0
    overlap = p_top
    for c in cands[1:]:
        other = normalize_answer(c.written or c.text)
        if other and key and (occurs_in(other, key) or occurs_in(key, other)):
            overlap += float(c.score)
    return {
        "log_p": math.log(max(p_top, 1e-6)),
        "log_overlap": math.log(max(min(overlap, 1.0), 1e-6)),
        "margin": p_top - p_2,
        "span_score": float(best.reader_score) if best else 0.0,
        "relevance_max": r_max,
        "relevance_gap": r_gap,
        "passage_weight": float(answer.evidence[0].relevance) if n else 0.0,
        "retrieval_top": R_top,
        "retrieval_gap": R_gap,
        "agreement": found / n if n else 0.0,
        "same_language": same,
        "answer_length": math.log1p(len(answer.text.strip())),
    }


@dataclass
class Calibrator:
    """P(answer right | features) = σ(b + Σ_f w_f · (x_f − mean_f) / scale_f)."""

    features: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    fitted_on: dict[str, Any] = field(default_factory=dict)   # what the fit saw (questions, command)

    def __post_init__(self) -> None:
        k = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.coef) == k):
            raise ValueError(f"answerability calibrator: {k} features but {len(self.mean)} means, "
                             f"{len(self.scale)} scales and {len(self.coef)} coefficients")
        unknown = [f for f in self.features if f not in FEATURES]
        if unknown:
            raise ValueError(f"answerability calibrator: unknown features {unknown}; known: {', '.join(FEATURES)}")
        if any(s <= 0 for s in self.scale):
            raise ValueError("answerability calibrator: every scale must be positive")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def fits_method(self, method: str | None) -> bool:
        """Whether answers retrieved by ``method`` may be judged by this calibrator: its features
        hold retrieval scores, whose scale is the method's. True where either is unknown
        (``method`` None: contexts given; no ``fitted_on["method"]``: an older fit)."""
        fitted = self.fitted_on.get("method")
        return method is None or not fitted or fitted == method

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Calibrator:
        try:
            return cls(list(d["features"]), [float(x) for x in d["mean"]], [float(x) for x in d["scale"]],
                       [float(x) for x in d["coef"]], float(d["intercept"]), dict(d.get("fitted_on", {})))
        except KeyError as e:
            raise ValueError(f"answerability calibrator: missing key {e.args[0]!r}") from None

    def matrix(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        return np.asarray([[float(r.get(f, 0.0)) for f in self.features] for r in rows], dtype=np.float64)

    def logits(self, X: np.ndarray) -> np.ndarray:
        Z = (np.asarray(X, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        return Z @ np.asarray(self.coef) + self.intercept

    def probabilities(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        if not len(rows):
            return np.zeros(0)
        from scipy.special import expit

        return expit(self.logits(self.matrix(rows)))

    def probability(self, features: Mapping[str, float]) -> float:
        return float(self.probabilities([features])[0])


def fit_calibrator(rows: Sequence[Mapping[str, float]], labels: Sequence[bool], l2: float = 1.0,
                   features: Sequence[str] = FEATURES) -> Calibrator:
    """Logistic regression (L2 penalty ``l2`` on the standardised coefficients, by L-BFGS) of
    ``labels`` (the answer was right) on ``features`` of ``rows``."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    y = np.asarray(labels, dtype=np.float64)
    if len(rows) != len(y):
        raise ValueError(f"{len(rows)} feature rows but {len(y)} labels")
    if len(y) < 2 or y.min() == y.max():
        raise ValueError("fitting needs answers that are right and answers that are wrong")
    X = np.asarray([[float(r[f]) for f in features] for r in rows], dtype=np.float64)
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    Z = (X - mean) / scale
    n = len(y)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        z = Z @ w + b
        nll = -(y * log_expit(z) + (1 - y) * log_expit(-z)).sum() + 0.5 * l2 * (w @ w)
        g = expit(z) - y
        return nll / n, np.append(Z.T @ g + l2 * w, g.sum()) / n

    res = minimize(loss, np.zeros(Z.shape[1] + 1), jac=True, method="L-BFGS-B")
    w, b = res.x[:-1], float(res.x[-1])
    return Calibrator(list(features), mean.tolist(), scale.tolist(), w.tolist(), b,
                      {"answers": int(n), "right": int(y.sum()), "l2": l2})


def threshold_for_precision(probabilities: Sequence[float], correct: Sequence[bool],
                            precision: float = DEFAULT_PRECISION) -> float:
    """The lowest threshold t such that, among answers with probability ≥ t, at least
    ``precision`` are right (the most answers kept at that precision); 1.0 when none is."""
    p = np.asarray(probabilities, dtype=np.float64)
    c = np.asarray(correct, dtype=np.float64)
    order = np.argsort(-p, kind="stable")
    p, c = p[order], c[order]
    prec = np.cumsum(c) / np.arange(1, len(c) + 1)
    best = 1.0
    for i in range(len(p)):
        # a threshold can only fall between distinct probabilities
        if (i + 1 == len(p) or p[i + 1] < p[i]) and prec[i] >= precision:
            best = float(p[i])
    return best
