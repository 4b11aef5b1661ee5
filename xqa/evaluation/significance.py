"""Paired t-test between two systems scored on the same questions.

Two systems answer the same questions, so their per-question scores are paired;
the test asks whether the mean of the differences is zero
(``scipy.stats.ttest_rel``, two-sided). Per-question F1 is the default score:
it is the shared task's primary metric and less coarse than EM.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from xqa.errors import XqaError
from xqa.evaluation.mia import EndToEndScores


@dataclass(frozen=True)
class PairedTest:
    n: int
    mean_a: float
    mean_b: float
    mean_diff: float  # mean of (a - b)
    t: float | None  # None when undefined (n < 2 or all differences equal)
    p_value: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"test": "paired t-test (scipy.stats.ttest_rel, two-sided)", **asdict(self)}


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> PairedTest:
    """Two-sided paired t-test of ``a`` against ``b`` (same length, same question order)."""
    if len(a) != len(b):
        raise XqaError(f"paired t-test needs equally many scores, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return PairedTest(0, 0.0, 0.0, 0.0, None, None)
    mean_a, mean_b = sum(a) / n, sum(b) / n
    diffs = [x - y for x, y in zip(a, b)]
    t = p = None
    if n >= 2 and any(d != diffs[0] for d in diffs):
        from scipy import stats

        res = stats.ttest_rel(a, b)
        t, p = float(res.statistic), float(res.pvalue)
        if math.isnan(t):
            t = p = None
    return PairedTest(n, mean_a, mean_b, sum(diffs) / n, t, p)


def compare_systems(a: EndToEndScores, b: EndToEndScores, metric: str = "f1") -> PairedTest:
    """Paired t-test on per-question ``metric`` ("f1" or "em", percent) of two scored systems.

    Both must have been scored on the same gold questions.
    """
    if metric not in ("f1", "em"):
        raise XqaError(f"unknown metric {metric!r}; choose f1 or em")
    sa = {q.id: getattr(q, metric) for q in a.questions}
    sb = {q.id: getattr(q, metric) for q in b.questions}
    if sa.keys() != sb.keys():
        raise XqaError("the two systems were scored on different questions")
    ids = sorted(sa)
    return paired_t_test([sa[i] for i in ids], [sb[i] for i in ids])
