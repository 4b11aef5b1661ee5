"""Training the lexical model Λ: teacher data (cached, resumable) and the training task.

Λ is an ordinary bi-encoder (:class:`retriever.dense.model.BiEncoder`) trained
with the dense retriever's task (:class:`retriever.dense.task.RetrieverTask`,
the DPR contrastive loss with in-batch and hard negatives) on the BM25
teacher's data (:mod:`.data`). The loop itself (``xqa.training.train``) is
called by ``xqa train lexical``: ``retriever`` does not import ``xqa``'s loop.

Several positives per query (n_p = 10; SPAR Figure 2: more than one positive
is what makes Λ work). Our choice: each step samples ONE of the query's
positives as its target (as DPR's ``shuffle_positives`` does, the
implementation SPAR used), so over the epochs every positive is a target; and
the query's other positives that happen to be in the batch are masked out of
its softmax rather than pushed away (the task's false-negative mask, up to
n_p positives). One hard negative per query per step is sampled from its n_n.

The teacher's labels are written once to ``OUT/teacher/`` (JSONL, with the
settings that made them) and reused by a resumed or repeated run.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from xqa.artifacts import write_json_atomic, write_text_atomic
from xqa.errors import XqaError
from xqa.records import Passage, Question

from .data import Example, TeacherConfig, sample_sentence_queries, teacher_examples

TEACHER_DIR = "teacher"


def _write_jsonl(path: Path, rows: list[Example]) -> None:
    write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def _read_jsonl(path: Path) -> list[Example]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def teacher_data(teacher, passages: Callable[[], Iterable[Passage]], out_dir: str | Path,
                 config: TeacherConfig, dev_questions: Iterable[Question] | None = None,
                 dev_size: int = 500, progress: bool = True) -> tuple[list[Example], list[Example], dict]:
    """Training and validation examples from the BM25 ``teacher``, cached in ``OUT/teacher``.

    ``passages``: a callable giving a fresh passage iterable (the corpus is
    read once here). Validation queries are ``dev_questions`` (the paper uses
    the task's dev questions) or, without them, ``dev_size`` held-out sentences.
    Returns ``(train, dev, info)``; a cache made with other settings is redone.
    """
    folder = Path(out_dir) / TEACHER_DIR
    dev_list = list(dev_questions or [])
    settings = {"teacher": asdict(config), "dev_questions": [q.id for q in dev_list][:50],
                "languages": sorted(getattr(teacher, "languages", None) or ()),
                "n_dev_questions": len(dev_list), "dev_size": dev_size}
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("settings") == settings:
            return _read_jsonl(folder / "train.jsonl"), _read_jsonl(folder / "dev.jsonl"), meta
    # Sentences of a language the teacher has no index for would find nothing: skip them.
    covered = set(getattr(teacher, "languages", None) or ())

    def corpus() -> Iterable[Passage]:
        return (p for p in passages() if not covered or p.lang in covered)

    queries = list(sample_sentence_queries(corpus(), config))
    if not queries:
        raise XqaError(f"no sentence of at least {config.min_words} words in the passages: "
                       f"nothing to train Λ on")
    if not dev_list:
        seen = {q.question for q in queries}
        dev_cfg = TeacherConfig(**{**asdict(config), "seed": config.seed + 1, "max_queries": 0})
        dev_list = [q for q in sample_sentence_queries(corpus(), dev_cfg) if q.question not in seen]
        dev_list = [Question(f"dev:{q.id}", q.question, q.lang) for q in dev_list[:dev_size]]
    train, unlabelled = teacher_examples(teacher, queries, config, progress=progress)
    dev, dev_unlabelled = teacher_examples(teacher, dev_list, config, validation=True, progress=progress)
    if not train:
        raise XqaError("the BM25 teacher found no passage for any sentence query: is --bm25 the index "
                       "of these passages?")
    folder.mkdir(parents=True, exist_ok=True)
    _write_jsonl(folder / "train.jsonl", train)
    _write_jsonl(folder / "dev.jsonl", dev)
    meta = {"settings": settings, "train": len(train), "dev": len(dev), "unlabelled": unlabelled,
            "dev_unlabelled": dev_unlabelled,
            "mean_positives": sum(len(e["positive_ids"]) for e in train) / len(train),
            "mean_negatives": sum(len(e["hard_negative_ids"]) for e in train) / len(train)}
    write_json_atomic(meta_path, meta)
    return train, dev, meta


def lexical_task(model, passages: Iterable[Passage], train: list[Example], dev: list[Example],
                 config: TeacherConfig, *, dev_limit: int = 1000, mask_false_negatives: bool = True,
                 seed: int = 0, random_pool: int = 10_000):
    """The training task for Λ: the dense retriever's task on teacher data.

    One positive sampled per query per step, the others masked as false
    negatives (``max_positives = n_p``); one hard negative per step; the
    validation mini-index holds each dev query's teacher top-1 and one hard
    negative (``dev_negatives = 1``: 2N passages).
    """
    from retriever.dense.data import load_passages, needed_ids
    from retriever.dense.task import RetrieverTask, TaskConfig

    keep = needed_ids(train, dev)
    pmap = load_passages(passages, keep, extra=random_pool)
    tcfg = TaskConfig(hard_negatives=1, max_positives=config.positives,
                      mask_false_negatives=mask_false_negatives, dev_questions=dev_limit,
                      dev_negatives=1, seed=seed)
    return RetrieverTask(model, pmap, dev, tcfg)


def summary(meta: dict[str, Any]) -> str:
    """One line about the teacher data."""
    return (f"{meta['train']} sentence queries ({meta['mean_positives']:.1f} positives, "
            f"{meta['mean_negatives']:.1f} hard negatives each; {meta['unlabelled']} without hits), "
            f"{meta['dev']} validation queries")


__all__ = ["TEACHER_DIR", "lexical_task", "summary", "teacher_data"]
