"""The ``read(...)`` contract every reader family meets, and the generative family's output.

A reader (:class:`Reader`) is batch-first, ``read(questions, contexts, ...)`` ->
one output per question, and names its ``family``. Each output has the answer it
would give alone (``.text``), how much each passage it read weighed
(``.relevance`` [N]) and a JSON form (``to_dict``/``from_dict``, for caches):

- a generative reader (``reader.fid``) returns :class:`ReaderOutput`: candidate
  answers with their sequence log-probabilities;
- an extractive one (``reader.span``) returns ``reader.span.inference.SpanOutput``:
  spans with their scores per passage and each passage's log-normaliser.

Evidence fusion (:mod:`reader.evidence`) turns either into an ``Answer``; the
pipeline picks the path by the reader's ``family``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from xqa.records import Context, Question


@dataclass
class ReaderOutput:
    """What the reader says about one question.

    ``candidates``: (text, sequence log-probability), best first (one for greedy).
    ``relevance``: [n_passages] the weight of each passage the reader saw (sums to 1);
    FiD: cross-attention mass, averaged over the candidates weighted by their
    probability within the n-best. ``candidate_relevance``: [k, n_passages], per candidate.
    """

    candidates: list[tuple[str, float]]
    relevance: np.ndarray
    candidate_relevance: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))

    @property
    def text(self) -> str:
        return self.candidates[0][0] if self.candidates else ""

    def to_dict(self) -> dict[str, Any]:
        return {"candidates": [[t, float(s)] for t, s in self.candidates],
                "relevance": [float(x) for x in self.relevance],
                "candidate_relevance": np.asarray(self.candidate_relevance).round(6).tolist()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ReaderOutput:
        cr = np.asarray(d.get("candidate_relevance") or np.zeros((0, 0)), dtype=np.float32)
        return cls([(str(t), float(s)) for t, s in d["candidates"]],
                   np.asarray(d["relevance"], dtype=np.float32), cr)


class Reader(Protocol):
    """A reader family's model behind one call (``reader.fid.FiDReader``, ``reader.span.SpanReader``)."""

    family: str   # "fid" or "span"

    def read(self, questions: Sequence[Question], contexts: Sequence[Sequence[Context]],
             **settings: Any) -> list[Any]: ...
