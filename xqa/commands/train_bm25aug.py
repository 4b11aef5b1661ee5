"""``xqa train bm25-aug``: learn BM25 query augmentation end to end (Chen & Wiseman 2023,
"BM25 Query Augmentation Learned End-to-End") over multilingual-e5's pieces
(:mod:`xqa.training.bm25aug`). The trained model is ``OUT/best``; a rerun resumes.
"""
from __future__ import annotations

import argparse

from xqa.training.bm25aug import Bm25AugTrainConfig as D


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--train", required=True,
                   help='training questions (JSONL with "question", "positive_ids", "negative_ids" (BM25), "source")')
    g.add_argument("--dev", help="dev questions in the same layout, for validation on a mini-corpus")
    g.add_argument("--passages", required=True, help="passage JSONL the ids point into (the collection statistics)")
    g.add_argument("--per-set", type=int, default=D.per_set,
                   help="at most this many training questions per set (the 'source' field; 0: all)")
    g.add_argument("--dev-questions", type=int, default=D.dev_questions, help="at most this many dev questions")
    m = p.add_argument_group("model")
    m.add_argument("--init", required=True, metavar="DIR", help="encoder folder (converted multilingual-e5-small)")
    m.add_argument("--top-terms", type=int, default=D.top_terms,
                   help="augmentation pieces a query keeps at search time (and in validation)")
    m.add_argument("--query-max-length", type=int, default=D.query_max_length, help="question tokens")
    m.add_argument("--activation", choices=("relu", "softplus"), default=D.activation,
                   help="of the augmentation a(q): softplus keeps a gradient on every vocabulary entry; with "
                        "relu (the paper's) a(q) fell to zero within 100-200 steps on the real train sets, "
                        "and nothing brings it back")
    t = p.add_argument_group("training")
    t.add_argument("--out", required=True, help="output folder (OUT/best is the model; rerun to resume)")
    t.add_argument("--batch-size", type=int, default=D.batch_size, help="questions per batch")
    t.add_argument("--hard-negatives", type=int, default=D.hard_negatives, help="BM25 negatives per question in a batch")
    t.add_argument("--lr", type=float, default=D.lr,
                   help="the encoder's learning rate (at 3e-4 multilingual-e5-small collapses to one output)")
    t.add_argument("--head-lr-scale", type=float, default=D.head_lr_scale,
                   help="the heads (re-weighting u, c; augmentation bias) learn this many times faster than "
                        "the encoder")
    t.add_argument("--reg", type=float, default=D.reg, help="λ of the df-weighted L1 penalty on the augmentation")
    t.add_argument("--weight-decay", type=float, default=D.weight_decay)
    t.add_argument("--warmup-steps", type=int, default=D.warmup_steps)
    t.add_argument("--epochs", type=float, default=D.epochs)
    t.add_argument("--max-steps", type=int, default=D.max_steps, help="stop after this many steps (0: --epochs)")
    t.add_argument("--max-minutes", type=float, default=D.max_minutes,
                   help="stop after this many minutes of training (resumable; 0: no limit)")
    t.add_argument("--eval-every", type=int, default=D.eval_every, help="validate every N steps")
    t.add_argument("--save-every", type=int, default=D.save_every, help="checkpoint every N steps")
    t.add_argument("--seed", type=int, default=D.seed)
    t.add_argument("--threads", type=int, default=D.threads, help="torch CPU threads (0: torch's default)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from xqa.cli_options import to_config
    from xqa.training import bm25aug

    result = bm25aug.train(to_config(D, args, progress=not args.quiet))
    print(f"model written to {Path(args.out) / 'best'} (step {result['step']}, best mrr {result.get('best')})")
    return 0
