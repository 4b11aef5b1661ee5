"""Reader and retriever training data from the train splits of the real QA sets.

``xqa data train --out runs/real`` writes:

- ``passages.jsonl``: every paragraph of the train and dev sets (``{"id", "title", "text",
  "lang", "source", "license"}``: the set it comes from and that set's license), except the shipped corpus's (``xqa/corpus``): those paragraphs'
  questions are evaluation questions, so none of them is trained on;
- ``train.jsonl``: one line per training question, the MIA layout plus ``answer_starts``,
  ``positive_ids`` (its paragraph) and ``negative_ids`` (BM25's best paragraphs of its
  language that contain no answer: the reader's hard negatives, the retriever's too);
- ``dev.jsonl``: the same for the dev splits (TyDi GoldP Indonesian valid, iApp valid), for
  validation during training;
- ``bm25/``: the per-language BM25 index of ``passages.jsonl`` that made the negatives.

Only sets whose role is ``train`` go into ``train.jsonl`` (``xqa.data.sets``); the evaluation
sets are never read here.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from xqa.data.sets import SETS, TRAIN_SETS, answer_offsets, clean_context, data_root, passage_id, \
    squad_paragraphs, text_key

DEV_SETS = ("tydi-id-valid", "iapp-valid")


def shipped_keys(corpus_passages: str | Path) -> set[str]:
    """Text keys of the shipped corpus's paragraphs (to hold them out)."""
    from xqa.io import read_passages

    return {text_key(p.text) for p in read_passages(corpus_passages)}


def collect(root: str | Path | None, held_out: set[str], sets: Iterable[str], cap: int = 0,
            seed: int = 0) -> tuple[dict[str, dict], list[dict[str, Any]], Counter]:
    """``(passages, examples, skipped)`` of ``sets``: paragraphs not held out, questions whose
    answer occurs in their paragraph; at most ``cap`` questions a set (0: all), sampled."""
    root = data_root(root)
    passages: dict[str, dict] = {}
    examples: list[dict[str, Any]] = []
    skipped: Counter = Counter()
    rng = random.Random(seed)
    seen: set[str] = set()
    for name in sets:
        s = SETS[name]
        mine = []
        asked: set[tuple[str, str]] = set()
        for para in (p for f in s.files(root) for p in squad_paragraphs(f)):
            text = clean_context(para.context)
            if text_key(text) in held_out:
                skipped["held out (in the shipped corpus)"] += len(para.qas)
                continue
            pid = passage_id(name, text)
            passages.setdefault(pid, {"id": pid, "title": para.title, "text": text, "lang": s.lang,
                                      "source": name, "license": s.license})
            for qa in para.qas:
                answers, starts = [], []
                for t, start in qa.answers:
                    t = clean_context(t).strip()
                    at = answer_offsets(text, t, start)
                    if t and at >= 0 and t not in answers:
                        answers.append(t)
                        starts.append(at)
                if not answers:
                    skipped["answer not in its paragraph"] += 1
                    continue
                qid = f"{pid}-{qa.id}"
                key = (pid, " ".join(qa.question.split()))
                if qid in seen or key in asked:   # listed twice (TQuAD's files overlap)
                    skipped["the same question of the same paragraph again"] += 1
                    continue
                seen.add(qid)
                asked.add(key)
                mine.append({"id": qid, "question": qa.question, "lang": s.lang,
                             "answers": answers, "answer_starts": starts, "positive_ids": [pid],
                             "source": name})
        if cap and len(mine) > cap:
            skipped[f"over the cap of {cap} ({name})"] += len(mine) - cap
            mine = rng.sample(mine, cap)
        examples += mine
    return passages, examples, skipped


def add_negatives(examples: list[dict], passages: dict[str, dict], bm25_dir: str | Path, depth: int = 8,
                  threads: int = 2, progress: bool = True) -> None:
    """Fill each example's ``negative_ids``: BM25's top paragraphs of its language (searched
    with its question) that are not its own and contain none of its answers. ``bm25_dir``:
    where the index of ``passages`` is built, or reused where it was built of the same passages
    (``made_from.json``; an index of other passages, a rerun into the same folder with other
    data, is built again: its hits would name none of these)."""
    from retriever.dense.encode import passages_fingerprint
    from retriever.sparse import SparseRetriever, build_sparse_indexes
    from xqa.artifacts import is_complete, write_json_atomic
    from xqa.records import Passage, Question

    rows = [Passage(p["id"], p["title"], p["text"], p["lang"]) for p in passages.values()]
    made_from = {"passages": passages_fingerprint(rows)}
    stamp = Path(bm25_dir) / "made_from.json"
    try:
        same = json.loads(stamp.read_text(encoding="utf-8")) == made_from
    except (OSError, ValueError):
        same = False
    if not (is_complete(bm25_dir) and same):
        build_sparse_indexes(rows, bm25_dir, threads=threads, progress=progress, overwrite=True)
        write_json_atomic(stamp, made_from)
    qs = [Question(id=e["id"], question=e["question"], lang=e["lang"]) for e in examples]
    with SparseRetriever.load(bm25_dir, threads=threads) as bm25:
        hits: list = []
        step = 2000
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(qs), desc="BM25 negatives", unit="q")
        for i in range(0, len(qs), step):
            hits += bm25.search(qs[i: i + step], depth + 2)
            if bar is not None:
                bar.update(len(qs[i: i + step]))
        if bar is not None:
            bar.close()
    for e, hs in zip(examples, hits):
        negs = []
        for h in hs:
            p = passages.get(h.id)
            if p is None or h.id in e["positive_ids"] or any(a in p["text"] for a in e["answers"]):
                continue
            negs.append(h.id)
        e["negative_ids"] = negs[:depth]


@dataclass
class TrainingDataConfig:
    """What ``xqa data train`` makes (its options, :mod:`xqa.cli_config`); :func:`build`'s arguments."""

    data: str | None = field(default=None, metadata={
        "help": "the real QA sets folder (default: $XQA_DATA or ../shared/data)"})
    out: str = field(default="", metadata={"required": True, "help": "output folder"})
    corpus: str | None = field(default=None, metadata={
        "help": "passages whose paragraphs are held out of training (default: the shipped corpus)"})
    cap: int = field(default=0, metadata={"help": "at most this many questions from one set (0: all)"})
    negatives: int = field(default=8, metadata={"help": "BM25 hard negatives kept per question"})
    seed: int = field(default=0, metadata={"help": "seed of the --cap sample"})
    progress: bool = field(default=True, metadata={"flag": "--quiet", "help": "no progress bars"})


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> int:
    from xqa.artifacts import write_text_atomic

    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    write_text_atomic(path, "".join(line + "\n" for line in lines))
    return len(lines)


def build(out: str | Path, root: str | Path | None = None, corpus_passages: str | Path | None = None,
          cap: int = 0, depth: int = 8, seed: int = 0, progress: bool = True) -> dict[str, Any]:
    """Write ``passages.jsonl``, ``train.jsonl``, ``dev.jsonl`` and ``bm25/`` into ``out``."""
    from xqa.data.corpus import shipped_passages

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    held = shipped_keys(corpus_passages or shipped_passages())
    passages, train, skipped = collect(root, held, TRAIN_SETS, cap, seed)
    dev_passages, dev, dev_skipped = collect(root, held, DEV_SETS, 0, seed)
    passages.update(dev_passages)
    add_negatives(train + dev, passages, out / "bm25", depth=depth, progress=progress)
    write_jsonl(out / "passages.jsonl", passages.values())
    write_jsonl(out / "train.jsonl", train)
    write_jsonl(out / "dev.jsonl", dev)
    summary = {"passages": len(passages), "train": len(train), "dev": len(dev),
               "train_per_set": dict(Counter(e["source"] for e in train)),
               "skipped": dict(skipped + dev_skipped)}
    write_jsonl(out / "summary.jsonl", [summary])
    return summary
