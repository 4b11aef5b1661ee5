"""EM/F1 of a reader's answers during training and tuning, with an injected scorer.

The official MIA metrics live in ``xqa.evaluation`` (which the reader package may
not import); ``xqa train reader`` and ``xqa tune fusion`` inject them as a
:data:`Scorer`. :func:`simple_score` is the fallback every reader family can use.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reader.evidence import normalize_answer

# (prediction, gold answers, language) -> (EM, F1), both in [0, 1]
Scorer = Callable[[str, Sequence[str], str], "tuple[float, float]"]


def simple_score(prediction: str, answers: Sequence[str], lang: str) -> tuple[float, float]:
    """Normalised EM and white-space token F1 (max over gold answers); a fallback scorer."""
    pred = normalize_answer(prediction).split()
    best_em = best_f1 = 0.0
    for gold in answers:
        g = normalize_answer(gold).split()
        best_em = max(best_em, float(pred == g))
        shared = sum((Counter(pred) & Counter(g)).values())
        if shared:
            p, r = shared / len(pred), shared / len(g)
            best_f1 = max(best_f1, 2 * p * r / (p + r))
    return best_em, best_f1


def score_predictions(examples: Sequence[Mapping[str, Any]], predictions: Sequence[str],
                      scorer: Scorer = simple_score) -> dict[str, float]:
    """Mean EM/F1 over questions with a gold answer, plus the macro average over languages."""
    per_lang: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for ex, pred in zip(examples, predictions):
        if ex.get("answers"):
            per_lang[ex.get("lang", "")].append(scorer(pred, ex["answers"], ex.get("lang", "")))
    flat = [s for v in per_lang.values() for s in v]
    if not flat:
        return {}
    out = {"em": sum(e for e, _ in flat) / len(flat), "f1": sum(f for _, f in flat) / len(flat)}
    out["macro_f1"] = sum(sum(f for _, f in v) / len(v) for v in per_lang.values()) / len(per_lang)
    return out
