"""The contract every reader family meets, and how a family is declared.

A reader (:class:`Reader`) is batch-first: ``read(questions, contexts, **settings)`` gives
one output per question. Each output has the answer it would give alone (``.text``), how
much each passage it read weighed (``.relevance`` [N]) and a JSON form (``to_dict``; the
reader's ``output_from_dict`` reads it back, for caches). The reader turns one output into
the :class:`~xqa.records.Answer` (``answer``: evidence fusion with the given parameters, or
the reader alone) and tunes its own fusion weights (``tune_fusion``), so its callers never
ask which family it is:

- a generative reader (``reader.fid``) returns :class:`ReaderOutput`: candidate
  answers with their sequence log-probabilities;
- an extractive one (``reader.span``) returns ``reader.span.inference.SpanOutput``:
  spans with their scores per passage and each passage's log-normaliser.

A family is declared once, as a :class:`ReaderFamily` given to :func:`reader.registry.register`
(the built-in ones in their packages' ``FAMILY``); ``reader.registry.load_reader`` finds a
folder's family from its ``config.json``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from xqa.records import Answer, Context, Question

if TYPE_CHECKING:
    from reader.evidence import FusionParams


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


class Output(Protocol):
    """One question's reader output, of any family."""

    relevance: np.ndarray      # [N] the weight of each passage read

    @property
    def text(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


class Reader(Protocol):
    """A reader family's model behind one call (``reader.fid.FiDReader``, ``reader.span.SpanReader``)."""

    family: str        # the name its family is registered under
    n_context: int     # passages read per question where the caller names no number
    fusion_keys: tuple[str, ...]   # the FusionParams fields its fusion tuning sets

    def read(self, questions: Sequence[Question], contexts: Sequence[Sequence[Context]],
             **settings: Any) -> list[Output]:
        """One output per question; settings a family does not use are ignored."""
        ...

    def answer(self, question: Question, contexts: Sequence[Context], output: Output,
               params: FusionParams | None = None, labels: Any = None) -> Answer:
        """The answer to ``question`` from its ``output`` over ``contexts`` (the passages read):
        evidence fusion with ``params``, or the reader alone without. ``labels``
        (``xqa.world.labels.AnswerLabels``, or None) shows a copied answer in the question's language."""
        ...

    def output_from_dict(self, d: Mapping[str, Any]) -> Output:
        """An output from its ``to_dict`` form."""
        ...

    def settings_key(self, **settings: Any) -> str:
        """A file-name stem naming the reading settings its outputs depend on (cache files)."""
        ...

    def tune_fusion(self, outputs: Sequence[Output], contexts: Sequence[Sequence[Context]],
                    answers: Sequence[Sequence[str]], langs: Sequence[str], scorer: Any, labels: Any = None,
                    passes: int = 3, progress: bool = False) -> dict[str, Any]:
        """The fusion weights (``fusion_keys``) that maximise mean F1 of the answers over the
        outputs, with ``dev_em``/``dev_f1`` and the reader alone's ``reader_only_em``/``reader_only_f1``."""
        ...


@dataclass(frozen=True)
class ReaderFamily:
    """One reader family, as the registry (:mod:`reader.registry`) knows it.

    ``kinds``: the ``kind`` values in ``config.json`` of the folders it loads. ``fallback``: it
    also loads what carries no xqa kind (a folder without an xqa config, or a model hub name).
    ``load(folder)``: the :class:`Reader` in a folder it claims (import heavy code inside it).
    ``description``: one sentence on how it answers, for the demo's introduction.
    ``training``: the module that trains it for ``xqa train reader --family NAME`` (it has
    ``CONFIG``, the training config dataclass, ``train(config)`` and ``summary(result, config)``);
    named, not imported, so that the reader never imports the layer above it. None: not trainable there.
    ``runtime(folder, threads, log)``: builds, checks against fp32 and times its CPU precisions
    for the reader in ``folder`` and records the choice there (``xqa build``, ``xqa reader
    unpack``, ``xqa reader runtime``), for the folders ``runtime_wanted(folder)`` says.
    ``packed_kind``, ``pack(reader, base, out)``, ``unpack(packed, base, out)``: its small shipped
    form over the converted encoder ``base`` (``xqa reader pack|unpack``, ``xqa build``).
    ``kit_kind``, ``from_kit(run, base, out)``: what a run trained from a kit (``xqa reader kit``)
    keeps, and the reader made of it over ``base``. Each returns the folder it wrote.
    """

    name: str
    kinds: tuple[str, ...]
    load: Callable[[Path], Reader]
    description: str
    fallback: bool = False
    training: str | None = None
    runtime: Callable[[Path, int, Callable[[str], None]], Any] | None = None
    runtime_wanted: Callable[[Path], bool] = lambda folder: True
    packed_kind: str | None = None
    pack: Callable[[Path, Path, Path], Path] | None = None
    unpack: Callable[[Path, Path, Path], Path] | None = None
    kit_kind: str | None = None
    from_kit: Callable[[Path, Path, Path], Path] | None = None
