"""BM25 query augmentation learned end to end (Chen & Wiseman, "BM25 Query Augmentation
Learned End-to-End", 2023) over multilingual-e5's pieces.

Files are read with ``xqa.io``, the model and task come from ``retriever.bm25_aug``, the loop
is :func:`xqa.training.loop.train`. The collection statistics (df, N, avgdl, every passage's
BM25 term weights) are computed over the pieces of the passages with Lucene's formula. The
trained model is ``OUT/best``; ``OUT/checkpoint`` makes a rerun resume.

SQuAD-sized sets would drown the others: each training set (a question's ``source``) keeps
at most ``per_set`` questions, drawn at random (seeded).
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@dataclass
class Bm25AugTrainConfig:
    # the options of ``xqa train bm25-aug`` (:mod:`xqa.cli_config`)
    train: str = field(metadata={
        "help": 'training questions (JSONL with "question", "positive_ids", "negative_ids" (BM25), "source")'})
    passages: str = field(metadata={"help": "passage JSONL the ids point into (the collection statistics)"})
    init: str = field(metadata={"metavar": "DIR", "help": "encoder folder (converted multilingual-e5-small)"})
    out: str = field(metadata={"help": "output folder (OUT/best is the model; rerun to resume)"})
    dev: str | None = field(default=None, metadata={
        "help": "dev questions in the same layout, for validation on a mini-corpus"})
    per_set: int = field(default=8000, metadata={
        "help": "at most this many training questions per set (the 'source' field; 0: all)"})
    dev_questions: int = field(default=1000, metadata={"help": "at most this many dev questions"})
    top_terms: int = field(default=32, metadata={"min": 1,
        "help": "augmentation pieces a query keeps at search time (and in validation)"})
    query_max_length: int = field(default=64, metadata={"min": 1, "help": "question tokens"})
    activation: str = field(default="softplus", metadata={
        "choices": ("relu", "softplus"),
        "help": "of the augmentation a(q): softplus keeps a gradient on every vocabulary entry; with relu (the "
                "paper's) a(q) fell to zero within 100-200 steps on the real train sets, and nothing brings it "
                "back"})
    batch_size: int = field(default=16, metadata={"min": 1, "help": "questions per batch"})
    hard_negatives: int = field(default=3, metadata={"help": "BM25 negatives per question in a batch"})
    lr: float = field(default=3e-5, metadata={"min": 0.0,
        "help": "the encoder's learning rate (at 3e-4 multilingual-e5-small collapses to one output)"})
    head_lr_scale: float = field(default=100.0, metadata={"min": 0.0,
        "help": "the heads (re-weighting u, c; augmentation bias) learn this many times faster than the encoder"})
    reg: float = field(default=0.01, metadata={
        "min": 0.0, "help": "λ of the df-weighted L1 penalty on the augmentation"})
    weight_decay: float = field(default=0.01, metadata={"min": 0.0, "help": "AdamW weight decay"})
    warmup_steps: int = field(default=50, metadata={"help": "linear warm-up steps"})
    epochs: float = field(default=1.0, metadata={"min": 0.0, "help": "passes over the training questions"})
    max_steps: int = field(default=0, metadata={"help": "stop after this many steps (0: --epochs)"})
    max_minutes: float = field(default=0.0, metadata={"min": 0.0,
        "help": "stop after this many minutes of training (resumable; 0: no limit)"})
    eval_every: int = field(default=100, metadata={"min": 1, "help": "validate every N steps"})
    save_every: int = field(default=200, metadata={"min": 1, "help": "checkpoint every N steps"})
    seed: int = field(default=0, metadata={"help": "random seed"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    progress: bool = field(default=True, metadata={"flag": "--quiet", "help": "no progress bar"})


def _examples(questions, name: str) -> tuple[list[dict], int]:
    out, skipped = [], 0
    for q in questions:
        pos = list(q.meta.get("positive_ids") or [])
        if not pos:
            skipped += 1
            continue
        out.append({"id": q.id, "question": q.question, "positive_ids": pos,
                    "negative_ids": list(q.meta.get("negative_ids") or []),
                    "source": str(q.meta.get("source") or q.lang)})
    return out, skipped


def cap_per_set(examples: list[dict], cap: int, seed: int) -> list[dict]:
    """At most ``cap`` examples of each ``source`` (a seeded random choice; 0: all), in file order."""
    import random

    if cap <= 0:
        return examples
    by_set: dict[str, list[int]] = {}
    for i, ex in enumerate(examples):
        by_set.setdefault(ex["source"], []).append(i)
    rng = random.Random(seed)
    keep: set[int] = set()
    for idx in by_set.values():
        keep.update(idx if len(idx) <= cap else rng.sample(idx, cap))
    return [ex for i, ex in enumerate(examples) if i in keep]


def train(config: Bm25AugTrainConfig) -> dict:
    """Compute the collection statistics, build the model and task, run the shared loop; the
    loop's result (``step``, ``best`` dev MRR, ...)."""
    import time
    from collections import Counter

    import torch

    from retriever.bm25_aug.model import AugmentationModel
    from retriever.bm25_aug.pieces import CollectionStats, piece_ids
    from retriever.bm25_aug.task import AugmentTask, TaskConfig
    from xqa.errors import XqaError
    from xqa.io import read_passages, read_questions
    from xqa.training.loop import TrainConfig, dev_said
    from xqa.training.loop import train as run_loop

    c = config
    if c.threads:
        torch.set_num_threads(c.threads)
    if c.top_terms < 0 or c.hard_negatives < 0 or c.batch_size < 1:
        raise XqaError("--top-terms and --hard-negatives must be >= 0 and --batch-size >= 1")
    t0 = time.perf_counter()
    train_ex, skipped = _examples(read_questions(c.train), c.train)
    if not train_ex:
        raise XqaError(f"{c.train}: no question has positive_ids")
    dev_ex = _examples(read_questions(c.dev), c.dev)[0] if c.dev else []
    model = AugmentationModel.from_pretrained(c.init, top_terms=c.top_terms,
                                              query_max_length=c.query_max_length, activation=c.activation)
    passages = list(read_passages(c.passages))
    rows = {p.id: i for i, p in enumerate(passages)}
    docs = []
    for s in range(0, len(passages), 2000):
        docs.extend(piece_ids(model.tokenizer, [p.contents() for p in passages[s:s + 2000]]))
    stats = CollectionStats(docs, model.vocab_size)
    del docs
    missing = sum(1 for ex in train_ex if not any(p in rows for p in ex["positive_ids"]))
    train_ex = [ex for ex in train_ex if any(p in rows for p in ex["positive_ids"])]
    capped = cap_per_set(train_ex, c.per_set, c.seed)
    sets = Counter(ex["source"] for ex in capped)
    print(f"{len(passages)} passages ({stats.avgdl:.1f} pieces on average); {len(train_ex)} training questions "
          f"({skipped} without positives, {missing} with none in the passages skipped), {len(capped)} after "
          f"--per-set {c.per_set}: " + ", ".join(f"{k} {v}" for k, v in sets.most_common())
          + f"; {dev_said(len(dev_ex), c.dev_questions)} ({time.perf_counter() - t0:.0f} s)")
    task = AugmentTask(model, stats, rows, dev_ex,
                       TaskConfig(hard_negatives=c.hard_negatives, reg=c.reg, top_terms=c.top_terms,
                                  dev_questions=c.dev_questions, head_lr_scale=c.head_lr_scale, seed=c.seed))
    loop = TrainConfig(out_dir=c.out, batch_size=c.batch_size, epochs=c.epochs,
                       max_steps=c.max_steps, lr=c.lr, weight_decay=c.weight_decay,
                       warmup_steps=c.warmup_steps, eval_every=c.eval_every, save_every=c.save_every,
                       seed=c.seed, bf16=False, max_minutes=c.max_minutes)
    return run_loop(task, capped, loop, progress=c.progress, settings=asdict(config),
                    trains="a BM25 query augmentation")
