"""``xqa data train``: reader and retriever training data from the train splits of the real sets.

Writes ``OUT/passages.jsonl``, ``OUT/train.jsonl`` (questions with answers, answer offsets,
their paragraph and BM25 hard negatives), ``OUT/dev.jsonl`` (the dev splits) and
``OUT/bm25``. The shipped corpus's paragraphs are held out: their questions are evaluation
questions. Sets marked evaluation only are never read.
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.data.training import TrainingDataConfig

COMMAND = ConfigCommand(TrainingDataConfig)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.data import training

    c = COMMAND.config(args)
    s = training.build(c.out, c.data, c.corpus, cap=c.cap, depth=c.negatives, seed=c.seed, progress=c.progress)
    print(f"{s['train']} training questions ({', '.join(f'{k} {v}' for k, v in s['train_per_set'].items())}), "
          f"{s['dev']} dev questions, {s['passages']} passages -> {c.out}")
    for why, n in s["skipped"].items():
        print(f"  skipped {n}: {why}")
    return 0
