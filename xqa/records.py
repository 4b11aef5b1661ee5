"""Record types shared by every part of xqa.

This module is a leaf: it imports nothing of the project, so ``retriever`` and
``reader`` may import it without breaking the one-way import rule
(``apps -> xqa -> {retriever, reader}``).

Field names follow the DPR / FiD / XOR-TyDi JSON layouts so
records round-trip through those tools unchanged.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# The ``lang`` of a question whose language is not identified (BCP 47 "undetermined"):
# per-language BM25 searches the index of every language written in its script.
UNKNOWN_LANG = "und"
# ``--lang auto`` for a question file: a record without a language gets the one identified from
# its text (:func:`xqa.cli_options.identify_languages`); until then its ``lang`` is this.
AUTO_LANG = "auto"


def reads_as(question) -> str:
    """The language a :class:`Question` is in, for selecting and scoring it: the one it was
    identified as (``--lang auto``) where the pipeline has no index for it and it was searched
    as ``und`` (``meta["identified"]``), else its ``lang``. ``xqa answer`` (which searches it as
    ``und``) and ``xqa eval`` (which knows no pipeline) so take and score the same questions alike."""
    return question.meta.get("identified") or question.lang


@dataclass(frozen=True)
class Passage:
    """One retrievable unit: ``{"id", "title", "text", "lang"}``.

    ``meta`` (optional, a JSON object; indexes ignore it) says where the passage came from
    when xqa cut it from a document (:mod:`xqa.documents`): ``source`` (the file, relative to
    the documents folder), ``doc`` (document id), ``start``/``end`` (character offsets in the
    document's text), ``page`` (PDF), ``url`` and ``format``. It is written only when not empty.
    """

    id: str
    title: str
    text: str
    lang: str
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "title": self.title, "text": self.text, "lang": self.lang}
        if self.meta:
            d["meta"] = dict(self.meta)
        return d

    def contents(self) -> str:
        """The text indexed by BM25 (Pyserini's ``contents`` field)."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass(frozen=True)
class Question:
    """A question in the XOR-TyDi / MIA / MKQA layout.

    ``answers`` are in the question's language; ``answers_en`` (optional) holds
    English answers, as the embedded world and MKQA provide them.
    """

    id: str
    question: str
    lang: str
    answers: tuple[str, ...] = ()
    answers_en: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "question": self.question,
            "answers": list(self.answers),
            "lang": self.lang,
        }
        if self.answers_en:
            d["answers_en"] = list(self.answers_en)
        d.update(self.meta)
        return d


@dataclass(frozen=True)
class Hit:
    """A retriever's answer for one passage: pyserini-style ``(id, score)``.

    ``source`` says which retriever produced it: ``dense``, ``sparse``,
    ``corroborated``, ``spar``, ``hybrid``, ``rrf`` or ``lexical``.
    ``lang`` is the passage's language where the retriever knows it.
    """

    id: str
    score: float
    source: str = "dense"
    lang: str = ""


@dataclass(frozen=True)
class Context:
    """A retrieved passage with its retrieval record (a DPR/FiD ``ctxs`` entry)."""

    id: str
    title: str
    text: str
    lang: str
    score: float
    source: str
    has_answer: bool | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)  # the passage's provenance

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["has_answer"] is None:
            del d["has_answer"]
        if not d["meta"]:
            del d["meta"]
        return d


@dataclass(frozen=True)
class RetrievalResult:
    """One question and its ranked contexts: the DPR / FiD result layout."""

    question: Question
    ctxs: tuple[Context, ...]

    def to_dict(self) -> dict[str, Any]:
        d = self.question.to_dict()
        d["ctxs"] = [c.to_dict() for c in self.ctxs]
        return d


@dataclass(frozen=True)
class Candidate:
    """One answer candidate: its text and its score (higher is better)."""

    text: str
    score: float
    reader_score: float = 0.0
    written: str = ""  # what the reader wrote, when ``text`` is it in the question's language (xqa.world.labels)
    lang: str = ""  # language of the passage an extracted span comes from (span reader)


@dataclass(frozen=True)
class Evidence:
    """A passage the reader saw, with what each stage thought of it."""

    context: Context
    relevance: float  # reader relevance (cross-attention mass), sums to 1 over passages


# An answer's state (Answer.state): confident, likely but uncertain, or not in the collection.
ANSWERED, UNCERTAIN, NOT_FOUND = "answered", "uncertain", "not found"
STATES = (ANSWERED, UNCERTAIN, NOT_FOUND)


@dataclass(frozen=True)
class Answer:
    """The reader's answer: best surface form, probability, n-best, evidence."""

    question_id: str
    text: str
    score: float
    candidates: tuple[Candidate, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    # The calibrated probability that ``text`` is right (reader.answerability), None where the
    # pipeline has no calibrator or the answer's retrieval method is not the one it was fitted on;
    # ``answered`` is False when it is below the pipeline's threshold (the answer is then a best
    # guess, shown as such; with no probability: when there is no answer); ``features`` are what it
    # was computed from.
    confidence: float | None = None
    answered: bool = True
    # False when the confidence is below the pipeline's not-found threshold too: the evidence says
    # the collection does not hold the answer. An answer neither ``answered`` nor not ``found`` is
    # a likely answer, shown as uncertain.
    found: bool = True
    # The calibrated probability that the collection holds the answer (reader.answerability), None
    # where the pipeline has no such calibrator.
    answerable: float | None = None
    features: dict[str, float] = field(default_factory=dict, compare=False, hash=False)

    @property
    def state(self) -> str:
        """:data:`ANSWERED` (confident), :data:`UNCERTAIN` (a likely answer, with its probability)
        or :data:`NOT_FOUND` (not in this collection)."""
        return ANSWERED if self.answered else UNCERTAIN if self.found else NOT_FOUND

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.question_id,
            "answer": self.text,
            "score": self.score,
            "confidence": self.confidence,
            "answered": self.answered,
            "found": self.found,
            "state": self.state,
            "answerable": self.answerable,
            "candidates": [asdict(c) for c in self.candidates],
            "evidence": [
                {**e.context.to_dict(), "relevance": e.relevance} for e in self.evidence
            ],
        }
        if self.features:
            d["features"] = dict(self.features)
        return d
