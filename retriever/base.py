"""The one retriever interface every xqa retriever meets.

A retriever is batch-first: ``search(questions, k) -> list[list[Hit]]``, one
ranked list per question, each sorted by score (descending), at most ``k``
hits, unique passage ids. BM25, dense, SPAR and every fused retriever satisfy
this Protocol, so the pipeline, the CLI and the evaluation never care which
one they hold (``tests/test_retriever_contract.py`` checks each kind).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from typing import Protocol, runtime_checkable

from xqa.records import Hit, Question


@runtime_checkable
class Retriever(Protocol):
    """Anything with a batch ``search``."""

    def search(self, questions: Sequence[Question], k: int) -> list[list[Hit]]:
        """Top-``k`` hits per question: sorted by score, at most ``k``, unique ids."""
        ...


def check_k(k: int) -> int:
    """Validate a requested depth; returns it as an int."""
    if isinstance(k, bool) or int(k) != k or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    return int(k)


def contract_violations(hits: Sequence[Hit], k: int) -> list[str]:
    """What is wrong with one ranked list under the retriever contract (empty if nothing).

    Used by the contract tests and handy as a debugging assertion.
    """
    problems = []
    if len(hits) > k:
        problems.append(f"{len(hits)} hits > k={k}")
    ids = [h.id for h in hits]
    if len(set(ids)) != len(ids):
        problems.append("repeated passage ids")
    scores = [h.score for h in hits]
    if any(a < b for a, b in pairwise(scores)):
        problems.append("scores not sorted in descending order")
    if any(math.isnan(s) for s in scores):
        problems.append("NaN score")
    return problems


__all__ = ["Retriever", "check_k", "contract_violations"]
