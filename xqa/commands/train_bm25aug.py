"""``xqa train bm25-aug``: learn BM25 query augmentation end to end (Chen & Wiseman 2023,
"BM25 Query Augmentation Learned End-to-End") over multilingual-e5's pieces.

Glue only: files are read with ``xqa.io``, the model and task come from
``retriever.bm25aug``, the loop is ``xqa.training.train``. The collection
statistics (df, N, avgdl, every passage's BM25 term weights) are computed over
the pieces of the ``--passages`` file with Lucene's formula. The trained model
is ``OUT/best``; ``OUT/checkpoint`` makes a rerun resume.

SQuAD-sized sets would drown the others: each training set (a question's
``source``) keeps at most ``--per-set`` questions, drawn at random (seeded).
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--train", required=True,
                   help='training questions (JSONL with "question", "positive_ids", "negative_ids" (BM25), "source")')
    g.add_argument("--dev", help="dev questions in the same layout, for validation on a mini-corpus")
    g.add_argument("--passages", required=True, help="passage JSONL the ids point into (the collection statistics)")
    g.add_argument("--per-set", type=int, default=8000,
                   help="at most this many training questions per set (the 'source' field; 0: all)")
    g.add_argument("--dev-questions", type=int, default=1000, help="at most this many dev questions")
    m = p.add_argument_group("model")
    m.add_argument("--init", required=True, metavar="DIR", help="encoder folder (converted multilingual-e5-small)")
    m.add_argument("--top-terms", type=int, default=32,
                   help="augmentation pieces a query keeps at search time (and in validation)")
    m.add_argument("--query-max-length", type=int, default=64, help="question tokens")
    m.add_argument("--activation", choices=("relu", "softplus"), default="softplus",
                   help="of the augmentation a(q): softplus keeps a gradient on every vocabulary entry; with "
                        "relu (the paper's) a(q) fell to zero within 100-200 steps on the real train sets, "
                        "and nothing brings it back")
    t = p.add_argument_group("training")
    t.add_argument("--out", required=True, help="output folder (OUT/best is the model; rerun to resume)")
    t.add_argument("--batch-size", type=int, default=16, help="questions per batch")
    t.add_argument("--hard-negatives", type=int, default=3, help="BM25 negatives per question in a batch")
    t.add_argument("--lr", type=float, default=3e-5,
                   help="the encoder's learning rate (at 3e-4 multilingual-e5-small collapses to one output)")
    t.add_argument("--head-lr-scale", type=float, default=100.0,
                   help="the heads (re-weighting u, c; augmentation bias) learn this many times faster than "
                        "the encoder")
    t.add_argument("--reg", type=float, default=0.01, help="λ of the df-weighted L1 penalty on the augmentation")
    t.add_argument("--weight-decay", type=float, default=0.01)
    t.add_argument("--warmup-steps", type=int, default=50)
    t.add_argument("--epochs", type=float, default=1.0)
    t.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: --epochs)")
    t.add_argument("--max-minutes", type=float, default=0.0,
                   help="stop after this many minutes of training (resumable; 0: no limit)")
    t.add_argument("--eval-every", type=int, default=100, help="validate every N steps")
    t.add_argument("--save-every", type=int, default=200, help="checkpoint every N steps")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")


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


def run(args: argparse.Namespace) -> int:
    import time
    from collections import Counter
    from pathlib import Path

    import torch

    from retriever.bm25aug.model import AugmentationModel
    from retriever.bm25aug.pieces import CollectionStats, piece_ids
    from retriever.bm25aug.task import AugmentTask, TaskConfig
    from xqa.errors import XqaError
    from xqa.io import read_passages, read_questions
    from xqa.training import TrainConfig, train

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.top_terms < 0 or args.hard_negatives < 0 or args.batch_size < 1:
        raise XqaError("--top-terms and --hard-negatives must be >= 0 and --batch-size >= 1")
    t0 = time.perf_counter()
    train_ex, skipped = _examples(read_questions(args.train), args.train)
    if not train_ex:
        raise XqaError(f"{args.train}: no question has positive_ids")
    dev_ex = _examples(read_questions(args.dev), args.dev)[0] if args.dev else []
    model = AugmentationModel.from_pretrained(args.init, top_terms=args.top_terms,
                                              query_max_length=args.query_max_length, activation=args.activation)
    passages = list(read_passages(args.passages))
    rows = {p.id: i for i, p in enumerate(passages)}
    docs = []
    for s in range(0, len(passages), 2000):
        docs.extend(piece_ids(model.tokenizer, [p.contents() for p in passages[s:s + 2000]]))
    stats = CollectionStats(docs, model.vocab_size)
    del docs
    missing = sum(1 for ex in train_ex if not any(p in rows for p in ex["positive_ids"]))
    train_ex = [ex for ex in train_ex if any(p in rows for p in ex["positive_ids"])]
    capped = cap_per_set(train_ex, args.per_set, args.seed)
    sets = Counter(ex["source"] for ex in capped)
    print(f"{len(passages)} passages ({stats.avgdl:.1f} pieces on average); {len(train_ex)} training questions "
          f"({skipped} without positives, {missing} with none in the passages skipped), {len(capped)} after "
          f"--per-set {args.per_set}: " + ", ".join(f"{k} {v}" for k, v in sets.most_common())
          + f"; {len(dev_ex)} dev questions ({time.perf_counter() - t0:.0f} s)")
    task = AugmentTask(model, stats, rows, dev_ex,
                       TaskConfig(hard_negatives=args.hard_negatives, reg=args.reg, top_terms=args.top_terms,
                                  dev_questions=args.dev_questions, head_lr_scale=args.head_lr_scale,
                                  seed=args.seed))
    config = TrainConfig(out_dir=args.out, batch_size=args.batch_size, epochs=args.epochs,
                         max_steps=args.max_steps, lr=args.lr, weight_decay=args.weight_decay,
                         warmup_steps=args.warmup_steps, eval_every=args.eval_every, save_every=args.save_every,
                         seed=args.seed, bf16=False, max_minutes=args.max_minutes)
    result = train(task, capped, config, progress=not args.quiet)
    print(f"model written to {Path(args.out) / 'best'} (step {result['step']}, best mrr {result.get('best')})")
    return 0
