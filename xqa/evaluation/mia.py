"""End-to-end EM and token F1 exactly as the MIA 2022 shared task scored them.

Reproduces ``eval_xor_full.py`` / ``eval_mkqa_all.py`` of the
MIA-Shared-Task-2022 repository (reimplemented, not copied):

1. the prediction and each gold answer are segmented by the question's
   language (:mod:`xqa.evaluation.tokenize`);
2. both are normalized: lower-case, remove ASCII punctuation
   (``string.punctuation`` only, so ``«»``, ``、`` or ``。`` stay), delete the
   counters 年 歳 人 년, collapse white space. There is **no** article removal
   (unlike SQuAD's script);
3. EM is string equality of the normalized forms; F1 is the bag-of-tokens F1 on
   white-space tokens (0 when no token is shared, even when both are empty);
4. the score of a question is the maximum over its gold answers;
5. a question whose *first* gold answer is ``"No Answer"`` is skipped entirely
   (not counted); a question without a prediction counts with score 0;
6. per-language means, then the unweighted (macro) average over languages;
7. the MIA score averages the XOR-TyDi macro average and the MKQA macro
   average (README "Final Evaluation Procedure"), for F1 and EM separately.

A question with no gold answer at all (a test file) crashes the official
scripts; here it is skipped and counted in ``n_no_gold``.

Predictions are looked up by the question id, then, as ``eval_mkqa_all.py``
does, by the part before the first ``_`` (MKQA ids are ``<number>_<lang>``).

Scores are percentages (0–100), as the official scripts print them.
"""
from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from xqa.errors import XqaError
from xqa.evaluation.languages import check_language, check_mode
from xqa.evaluation.tokenize import mecab_dictionary_version, segment_answer
from xqa.records import Question

NO_ANSWER = "No Answer"
COUNTERS = ("年", "歳", "人", "년")
_ASCII_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower-case, drop ASCII punctuation, delete counters, collapse white space."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _ASCII_PUNCTUATION)
    for counter in COUNTERS:
        text = text.replace(counter, "")
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalized (already segmented) strings are equal."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """Bag-of-tokens F1 of the normalized (already segmented) strings, in [0, 1]."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    shared = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(pred_tokens)
    recall = shared / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def score_answer(prediction: str, answers: Sequence[str], lang: str,
                 mode: str = "official") -> tuple[float, float]:
    """``(EM, F1)`` in [0, 1] of one prediction against its gold answers (max over golds)."""
    if not answers:
        raise XqaError("score_answer needs at least one gold answer")
    pred = segment_answer(prediction, lang, mode, prediction=True)
    golds = [segment_answer(a, lang, mode) for a in answers]
    return max(exact_match(pred, g) for g in golds), max(token_f1(pred, g) for g in golds)


def lookup_prediction(predictions: Mapping[str, str | None], question_id: str) -> str | None:
    """The prediction for a question: by full id, else by the id's part before ``_`` (MKQA)."""
    if question_id in predictions:
        return predictions[question_id]
    bare = question_id.split("_")[0]
    if bare != question_id and bare in predictions:
        return predictions[bare]
    return None


@dataclass(frozen=True)
class QuestionScore:
    id: str
    lang: str
    em: float  # percent
    f1: float  # percent
    answered: bool


@dataclass(frozen=True)
class LanguageScore:
    lang: str
    n: int
    em: float  # percent
    f1: float  # percent
    n_missing: int  # questions without a prediction (scored 0)


@dataclass
class EndToEndScores:
    """Per-language and macro-averaged EM/F1 (percent), plus every question's score."""

    mode: str
    per_language: dict[str, LanguageScore]
    questions: list[QuestionScore] = field(default_factory=list)
    n_no_answer: int = 0  # skipped: first gold is "No Answer" (as the official scripts)
    n_no_gold: int = 0  # skipped: no gold answer at all

    @property
    def n(self) -> int:
        return sum(s.n for s in self.per_language.values())

    @property
    def macro_em(self) -> float:
        return _mean([s.em for s in self.per_language.values()])

    @property
    def macro_f1(self) -> float:
        return _mean([s.f1 for s in self.per_language.values()])

    def to_dict(self, with_questions: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "mode": self.mode,
            "mecab_dictionary": mecab_dictionary_version(),
            "n": self.n,
            "n_no_answer_skipped": self.n_no_answer,
            "n_no_gold_skipped": self.n_no_gold,
            "macro": {"em": self.macro_em, "f1": self.macro_f1},
            "per_language": {k: asdict(v) for k, v in sorted(self.per_language.items())},
        }
        if with_questions:
            d["questions"] = [asdict(q) for q in self.questions]
        return d


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _check_arguments(gold: object, predictions: object) -> None:
    """What a caller of :func:`evaluate` passed where the questions and the id → text mapping go,
    said where it is something else (which would score every question as missing)."""
    import os

    if isinstance(gold, (str, os.PathLike)):
        raise XqaError(f"gold: the questions, not a path; read them with xqa.io.read_questions({str(gold)!r})")
    if isinstance(predictions, Mapping):
        return
    if isinstance(predictions, (str, os.PathLike)):
        raise XqaError(f"predictions: a mapping of question id to answer text, not a path; read the file with "
                       f"xqa.evaluation.inputs.load_predictions([{str(predictions)!r}])")
    hint = ""
    if isinstance(predictions, Sequence) and predictions and hasattr(predictions[0], "question_id"):
        hint = " (answers from Pipeline.answer: {a.question_id: a.text for a in answers})"
    raise XqaError(f"predictions: a mapping of question id to answer text, not a {type(predictions).__name__}{hint}")


def evaluate(gold: Iterable[Question], predictions: Mapping[str, str | None],
             mode: str = "official") -> EndToEndScores:
    """Score ``predictions`` (question id → answer) against ``gold`` questions.

    ``mode="official"`` reproduces the MIA scripts; ``"lang_aware"`` also
    segments a bare ``zh`` with jieba. A prediction of ``None`` counts as missing.
    """
    check_mode(mode)
    _check_arguments(gold, predictions)
    sums: dict[str, list[float]] = {}
    missing: Counter[str] = Counter()
    questions: list[QuestionScore] = []
    n_no_answer = n_no_gold = 0
    for q in gold:
        if not isinstance(q, Question):
            raise XqaError(f"gold: Question records (xqa.io.read_questions), found a {type(q).__name__}")
        lang = check_language(q.lang)
        if not q.answers:
            n_no_gold += 1
            continue
        if q.answers[0] == NO_ANSWER:
            n_no_answer += 1
            continue
        acc = sums.setdefault(lang, [0, 0.0, 0.0])
        acc[0] += 1
        pred = lookup_prediction(predictions, q.id)
        if pred is None:
            missing[lang] += 1
            em = f1 = 0.0
        else:
            if not isinstance(pred, str):
                raise XqaError(f"prediction for question {q.id!r} is a {type(pred).__name__}, "
                               "expected a string")
            em, f1 = score_answer(pred, q.answers, lang, mode)
        acc[1] += em
        acc[2] += f1
        questions.append(QuestionScore(q.id, lang, 100 * em, 100 * f1, pred is not None))
    per_language = {
        lang: LanguageScore(lang, int(n), 100 * em / n, 100 * f1 / n, missing[lang])
        for lang, (n, em, f1) in sums.items()
    }
    return EndToEndScores(mode, per_language, questions, n_no_answer, n_no_gold)


def is_mkqa(question: Question) -> bool:
    """MKQA part of the MIA evaluation: ``source`` says so, else an id ``<number>_<lang>``."""
    source = question.meta.get("source")
    if isinstance(source, str) and source:
        return source.lower() == "mkqa"
    _, sep, tail = question.id.partition("_")
    return bool(sep) and tail == question.lang


def split_mia(questions: Iterable[Question]) -> tuple[list[Question], list[Question]]:
    """Split MIA evaluation questions into ``(xor_tydi, mkqa)``."""
    xor, mkqa = [], []
    for q in questions:
        (mkqa if is_mkqa(q) else xor).append(q)
    return xor, mkqa


def mia_score(xor: EndToEndScores, mkqa: EndToEndScores) -> dict[str, float]:
    """The MIA 2022 ranking score: mean of the XOR-TyDi and MKQA macro averages."""
    return {"em": (xor.macro_em + mkqa.macro_em) / 2, "f1": (xor.macro_f1 + mkqa.macro_f1) / 2}
