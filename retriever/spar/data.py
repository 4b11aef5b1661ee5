"""Training data for the lexical model Λ, made by the BM25 teacher (SPAR, Chen et al. 2022, §4.1).

No labels are needed. Queries are sentences sampled from the corpus's own
passages (Appendix A: at least one sentence per passage; uniform sampling
"may have worked equally well", so we sample uniformly). For each query the
teacher (BM25 in the passage's language) retrieves its top ``K`` (50): the top
``n_p`` (10) are the positives, the bottom ``n_n`` (5) the hard negatives.

Validation data (§4.1): queries (e.g. dev questions) labelled the same way,
except that only the teacher's top-1 is a positive, and one hard negative is
kept per query, so the validation mini-index holds 2N passages.

Examples are plain dicts in the layout of :mod:`retriever.dense.data`, so the
dense training task trains Λ unchanged::

    {"id", "question", "lang", "positive_ids": [...], "hard_negative_ids": [...]}
"""
from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from xqa.errors import XqaError
from xqa.records import Hit, Passage, Question

Example = dict[str, Any]

# Sentence ends: Latin/Cyrillic/Greek/Devanagari/Arabic punctuation followed by
# a space, or CJK/Thai full stops which need none.
_SENT_END = regex.compile(r"(?<=[.!?;।؟])\s+|(?<=[。！？])")
_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")


@dataclass
class TeacherConfig:
    """How the teacher labels queries (paper defaults: K=50, n_p=10, n_n=5)."""

    depth: int = 50            # K: teacher hits per query
    positives: int = 10        # n_p: top hits taken as positives
    negatives: int = 5         # n_n: bottom hits (of the top K) taken as hard negatives
    sentences_per_passage: int = 1
    min_words: int = 3         # sentences with fewer words are not queries
    max_queries: int = 0       # 0: no cap
    seed: int = 0

    def __post_init__(self) -> None:
        if self.positives < 1 or self.negatives < 0 or self.depth < self.positives:
            raise XqaError(f"teacher: need 1 <= n_p <= K and n_n >= 0 "
                           f"(got K={self.depth}, n_p={self.positives}, n_n={self.negatives})")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (a light rule-based splitter; no model needed)."""
    return [s.strip() for s in _SENT_END.split(text) if s and s.strip()]


def word_count(text: str) -> int:
    """Words for the ``min_words`` filter; an unsegmented CJK run counts by characters / 2."""
    words = _WORD.findall(text)
    if len(words) == 1 and len(words[0]) > 8:
        return len(words[0]) // 2
    return len(words)


def sample_sentence_queries(passages: Iterable[Passage], config: TeacherConfig) -> Iterator[Question]:
    """Up to ``sentences_per_passage`` random sentences of each passage, as questions.

    Question ids are ``"{passage id}#s{n}"``; ``lang`` is the passage's language
    (the teacher searches that language's BM25 index). Stops after
    ``max_queries`` when that is set.
    """
    rng = random.Random(config.seed)
    made = 0
    for p in passages:
        sents = [s for s in split_sentences(p.text) if word_count(s) >= config.min_words]
        if not sents:
            continue
        for n, s in enumerate(rng.sample(sents, min(config.sentences_per_passage, len(sents)))):
            yield Question(id=f"{p.id}#s{n}", question=s, lang=p.lang)
            made += 1
            if config.max_queries and made >= config.max_queries:
                return


def label(question: Question, hits: Sequence[Hit], n_pos: int, n_neg: int) -> Example | None:
    """One example from the teacher's ranked hits: top ``n_pos`` positive, bottom ``n_neg`` negative.

    The two never overlap: with fewer than ``n_pos + n_neg`` hits the
    negatives shrink first (and the training task tops them up with random
    passages). ``None`` when the teacher found nothing.
    """
    ids = list(dict.fromkeys(h.id for h in hits))
    if not ids:
        return None
    pos = ids[:n_pos]
    neg = ids[max(len(pos), len(ids) - n_neg):] if n_neg else []
    return {"id": question.id, "question": question.question, "lang": question.lang,
            "positive_ids": pos, "hard_negative_ids": neg}


def teacher_examples(teacher, questions: Iterable[Question], config: TeacherConfig, *,
                     validation: bool = False, batch_size: int = 256,
                     progress: bool = True) -> tuple[list[Example], int]:
    """Label ``questions`` with ``teacher`` (BM25); returns ``(examples, unlabelled)``.

    ``teacher.search(questions, K, missing="empty")`` per batch. Training
    examples get ``n_p`` positives and ``n_n`` hard negatives; with
    ``validation`` only the top-1 is positive and the last of the top ``K``
    is the single hard negative (the 2N-passage mini-index of §4.1).
    """
    n_pos, n_neg = (1, 1) if validation else (config.positives, config.negatives)
    examples: list[Example] = []
    unlabelled = 0
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(desc="BM25 teacher" + (" (dev)" if validation else ""), unit="query")
    try:
        batch: list[Question] = []

        def flush() -> None:
            nonlocal unlabelled
            for q, hits in zip(batch, teacher.search(batch, config.depth, missing="empty")):
                ex = label(q, hits, n_pos, n_neg)
                if ex is None:
                    unlabelled += 1
                else:
                    examples.append(ex)
            if bar is not None:
                bar.update(len(batch))
            batch.clear()

        for q in questions:
            batch.append(q)
            if len(batch) == batch_size:
                flush()
        if batch:
            flush()
    finally:
        if bar is not None:
            bar.close()
    return examples, unlabelled


__all__ = [
    "TeacherConfig",
    "label",
    "sample_sentence_queries",
    "split_sentences",
    "teacher_examples",
    "word_count",
]
