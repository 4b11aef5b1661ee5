"""A submission check: every gold question has one non-empty string prediction."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

KINDS = ("answered", "empty", "missing")


@dataclass
class Coverage:
    """Questions, answered, empty and missing predictions per language, and a few ids of each
    kind that is not answered."""

    per_language: dict[str, dict[str, int]]
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def total(self) -> dict[str, int]:
        return {k: sum(row[k] for row in self.per_language.values()) for k in ("questions", *KINDS)}

    @property
    def complete(self) -> bool:
        t = self.total
        return t["questions"] > 0 and t["answered"] == t["questions"]

    def to_dict(self) -> dict:
        return {"total": self.total, "per_language": self.per_language}


def coverage(gold: Sequence, predictions: Mapping, n_examples: int = 5) -> Coverage:
    """How many of the ``gold`` questions have a non-empty prediction in ``predictions``
    (:class:`xqa.evaluation.inputs.Predictions`); the answers are not needed."""
    from xqa.evaluation.mia import lookup_prediction

    counts: dict[str, Counter] = {k: Counter() for k in ("questions", *KINDS)}
    examples: dict[str, list[str]] = {"missing": [], "empty": []}
    for q in gold:
        counts["questions"][q.lang] += 1
        pred = lookup_prediction(predictions, q.id)
        kind = "missing" if pred is None else "empty" if not pred.strip() else "answered"
        counts[kind][q.lang] += 1
        if kind != "answered" and len(examples[kind]) < n_examples:
            examples[kind].append(q.id)
    per_language = {lang: {k: counts[k][lang] for k in ("questions", *KINDS)}
                    for lang in sorted(counts["questions"])}
    return Coverage(per_language, examples)
