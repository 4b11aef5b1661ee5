"""Training examples for the bi-encoder: question, positives, hard negatives.

An example is a plain dict (so it round-trips through Arrow / ``datasets``)::

    {"id": str, "question": str, "lang": str,
     "positive_ids": [passage id, ...], "hard_negative_ids": [passage id, ...]}

Positives come from the question's own ``positive_ids`` (the embedded world,
SQuAD-layout sets) or, for other sets, from a retrieval-result file: contexts
with ``has_answer`` true. Hard negatives come from a retrieval-result file in
the DPR layout (e.g. BM25's): the top hits that are not positives.

Only passages that some example names are ever needed during training (in-batch
negatives are other questions' passages), so :func:`load_passages` keeps just
those: memory grows with the training set, not with the corpus. Large example
sets go to Arrow (:func:`to_dataset`) and are memory-mapped.
"""
from __future__ import annotations

import hashlib
from typing import Any, Collection, Iterable, Mapping, Sequence

from xqa.errors import XqaError
from xqa.records import Passage, Question, RetrievalResult

Example = dict[str, Any]


def positives_from_results(results: Iterable[RetrievalResult]) -> dict[str, list[str]]:
    """``{question id: [ids of contexts with has_answer]}`` (DPR's positive definition)."""
    out: dict[str, list[str]] = {}
    for r in results:
        pos = [c.id for c in r.ctxs if c.has_answer]
        if pos:
            out[r.question.id] = pos
    return out


def hard_negatives_from_results(results: Iterable[RetrievalResult], positives: Mapping[str, Collection[str]],
                                n: int = 10, answers_known: bool = True) -> dict[str, list[str]]:
    """``{question id: top-n hit ids that are not positives}``.

    With ``answers_known`` a context marked ``has_answer`` is never a negative
    either (it may be an unlabelled positive).
    """
    out: dict[str, list[str]] = {}
    for r in results:
        pos = set(positives.get(r.question.id, ()))
        neg = [c.id for c in r.ctxs if c.id not in pos and not (answers_known and c.has_answer)]
        out[r.question.id] = list(dict.fromkeys(neg))[:n]
    return out


def build_examples(questions: Iterable[Question], *,
                   positives: Mapping[str, Sequence[str]] | None = None,
                   hard_negatives: Mapping[str, Sequence[str]] | None = None,
                   known_ids: Collection[str] | None = None) -> tuple[list[Example], int]:
    """Examples for the questions that have at least one positive; returns ``(examples, skipped)``.

    Positives: ``positives[q.id]`` when given, else ``q.meta["positive_ids"]``; hard negatives:
    ``hard_negatives[q.id]`` when given, else ``q.meta["negative_ids"]`` (``xqa data train``).
    Ids not in ``known_ids`` (when given) are dropped.
    """
    examples, skipped = [], 0
    for q in questions:
        pos = (positives or {}).get(q.id) or q.meta.get("positive_ids") or []
        if isinstance(pos, str):
            pos = [pos]
        pos = [str(p) for p in pos if known_ids is None or str(p) in known_ids]
        if not pos:
            skipped += 1
            continue
        given = (hard_negatives or {}).get(q.id) or q.meta.get("negative_ids") or ()
        neg = [str(p) for p in given if (known_ids is None or str(p) in known_ids) and str(p) not in pos]
        examples.append({"id": q.id, "question": q.question, "lang": q.lang,
                         "positive_ids": list(dict.fromkeys(pos)),
                         "hard_negative_ids": list(dict.fromkeys(neg))})
    return examples, skipped


def needed_ids(*example_sets: Iterable[Example]) -> set[str]:
    """Every passage id named by the examples."""
    out: set[str] = set()
    for examples in example_sets:
        for e in examples:
            out.update(e["positive_ids"])
            out.update(e["hard_negative_ids"])
    return out


def load_passages(passages: Iterable[Passage], keep: Collection[str] | None = None,
                  extra: int = 0) -> dict[str, Passage]:
    """``{id: Passage}`` of the passages in ``keep`` (all when None).

    ``extra`` more passages not in ``keep`` are kept as a pool of random
    negatives (for questions without hard negatives and for the dev mini-index).
    """
    out: dict[str, Passage] = {}
    spare = 0
    for p in passages:
        if keep is None or p.id in keep:
            out[p.id] = p
        elif spare < extra:
            out[p.id] = p
            spare += 1
    if keep is not None:
        missing = [i for i in keep if i not in out]
        if missing:
            raise XqaError(f"{len(missing)} passage ids named by the questions are not in the passage file "
                           f"(e.g. {missing[0]!r})")
    return out


def to_dataset(examples: Iterable[Example], cache_dir: str | None = None):
    """An Arrow-backed ``datasets.Dataset`` of examples (memory-mapped once cached)."""
    import datasets

    features = datasets.Features({
        "id": datasets.Value("string"), "question": datasets.Value("string"),
        "lang": datasets.Value("string"),
        "positive_ids": datasets.Sequence(datasets.Value("string")),
        "hard_negative_ids": datasets.Sequence(datasets.Value("string")),
    })

    def gen():
        yield from examples

    return datasets.Dataset.from_generator(gen, features=features, cache_dir=cache_dir)


def id_key(pid: str) -> int:
    """A stable signed 64-bit key for a passage id (to compare ids across processes as tensors)."""
    return int.from_bytes(hashlib.blake2b(pid.encode("utf-8"), digest_size=8).digest(), "little", signed=True)
