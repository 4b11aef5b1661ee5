"""``xqa data train``: reader and retriever training data from the train splits of the real sets.

Writes ``OUT/passages.jsonl``, ``OUT/train.jsonl`` (questions with answers, answer offsets,
their paragraph and BM25 hard negatives), ``OUT/dev.jsonl`` (the dev splits) and
``OUT/bm25``. The shipped corpus's paragraphs are held out: their questions are evaluation
questions. Sets marked evaluation only are never read.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", default=None, help="the real QA sets folder (default: $XQA_DATA or ../shared/data)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--corpus", default=None,
                   help="passages whose paragraphs are held out of training (default: the shipped corpus)")
    p.add_argument("--cap", type=int, default=0, help="at most this many questions from one set (0: all)")
    p.add_argument("--negatives", type=int, default=8, help="BM25 hard negatives kept per question")
    p.add_argument("--seed", type=int, default=0, help="seed of the --cap sample")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from xqa.data import training

    s = training.build(args.out, args.data, args.corpus, cap=args.cap, depth=args.negatives, seed=args.seed,
                       progress=not args.quiet)
    print(f"{s['train']} training questions ({', '.join(f'{k} {v}' for k, v in s['train_per_set'].items())}), "
          f"{s['dev']} dev questions, {s['passages']} passages -> {args.out}")
    for why, n in s["skipped"].items():
        print(f"  skipped {n}: {why}")
    return 0
