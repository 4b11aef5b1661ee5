"""Judging ranked lists against a question set, for tuning and reports.

A passage is relevant to a question when it holds one of its answers (DPR
``has_answer``; the question's answers and, for cross-lingual questions, the
English ones), or — with ``metric="recall"`` — when its id is one of the
question's ``positive_ids``. Judgements are cached per (question, passage), so a
grid search judges each passage once however many weights it tries.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from xqa.errors import XqaError
from xqa.records import Hit, Question

METRICS = ("accuracy", "recall")


class Judge:
    """Relevance of passages to questions, cached: answer string or gold passage id."""

    def __init__(self, questions: Sequence[Question], store, metric: str = "accuracy",
                 match: str = "lang_aware"):
        if metric not in METRICS:
            raise XqaError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
        self.questions, self.store, self.metric, self.match = list(questions), store, metric, match
        self._cache: dict[tuple[int, str], bool] = {}
        if metric == "recall":
            self.gold = [set(map(str, q.meta.get("positive_ids") or ())) for q in self.questions]
            if not any(self.gold):
                raise XqaError("--metric recall needs questions with positive_ids")

    def answers(self, i: int) -> list[str]:
        q = self.questions[i]
        return list(dict.fromkeys(list(q.answers) + list(q.answers_en)))

    def relevant(self, i: int, pid: str) -> bool:
        key = (i, pid)
        hit = self._cache.get(key)
        if hit is None:
            if self.metric == "recall":
                hit = pid in self.gold[i]
            else:
                from xqa.evaluation.retrieval import has_answer

                p = self.store.get(pid)
                q = self.questions[i]
                lang = p.lang if p.lang in _unsegmented() else q.lang
                hit = has_answer(p.text, self.answers(i), lang, self.match)
            self._cache[key] = hit
        return hit

    def first_rank(self, i: int, hits: Sequence[Hit]) -> int | None:
        """1-based rank of the first relevant hit, or None."""
        for r, h in enumerate(hits, 1):
            if self.relevant(i, h.id):
                return r
        return None

    def metric_name(self) -> str:
        """``accuracy`` or ``recall``: the name of the figures :meth:`scores` gives."""
        return "accuracy" if self.metric == "accuracy" else "recall"

    def scores(self, lists: Sequence[Sequence[Hit]], ks: Sequence[int],
               subset: Sequence[int] | None = None) -> dict[int, float]:
        """Percent per k: top-k accuracy (answer metric) or recall@k of gold ids (recall metric)."""
        idx = list(range(len(lists))) if subset is None else list(subset)
        if not idx:
            return {k: float("nan") for k in ks}
        if self.metric == "recall":
            idx = [i for i in idx if self.gold[i]]
            if not idx:
                return {k: float("nan") for k in ks}
            return {k: 100.0 * sum(len(self.gold[i] & {h.id for h in lists[i][:k]}) / len(self.gold[i])
                                   for i in idx) / len(idx) for k in ks}
        ranks = [self.first_rank(i, lists[i][: max(ks)]) for i in idx]
        return {k: 100.0 * sum(r is not None and r <= k for r in ranks) / len(idx) for k in ks}


def _unsegmented() -> frozenset[str]:
    from xqa.evaluation.languages import UNSEGMENTED_LANGUAGES

    return frozenset(UNSEGMENTED_LANGUAGES)


def batched(items: Sequence, size: int):
    """``items`` in consecutive slices of ``size``."""
    for i in range(0, len(items), size):
        yield items[i: i + size]


def search_all(retriever, questions: Sequence[Question], k: int, desc: str, batch_size: int = 64,
               progress: bool = True, **kwargs) -> list[list[Hit]]:
    """``retriever.search`` over all questions in batches, with a progress bar."""
    from tqdm.auto import tqdm

    out: list[list[Hit]] = []
    with tqdm(total=len(questions), desc=desc, unit="q", disable=not progress) as bar:
        for chunk in batched(questions, batch_size):
            out.extend(retriever.search(chunk, k, **kwargs))
            bar.update(len(chunk))
    return out


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-markdown table (numbers with one decimal)."""
    def cell(x: object) -> str:
        if isinstance(x, float):
            return "–" if math.isnan(x) else f"{x:.1f}"
        return str(x)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)
