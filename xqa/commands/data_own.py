"""``xqa data own``: your own question-answer sets as span-reader training data.

Reads SQuAD-layout JSON or JSONL (question, answers, context; optionally id, lang, title,
answer_start), checks every record (an answer not in its context, an empty question, an unknown
language: each named by ``file:line``, all listed, nothing written), and writes the files
``xqa train reader --family span`` trains from: ``OUT/passages.jsonl``, ``OUT/train.jsonl``,
``OUT/dev.jsonl`` and ``OUT/bm25``. Layouts and checks: :mod:`xqa.data.own`.
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.data.own import OwnDataConfig

COMMAND = ConfigCommand(OwnDataConfig)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.data import own

    c = COMMAND.config(args)
    s = own.build(c)
    langs = ", ".join(f"{k} {v}" for k, v in sorted(s["languages"].items()))
    print(f"{s['train']} training questions and {s['dev']} dev questions ({langs} in all), {s['passages']} contexts, "
          f"{s['negatives']} BM25 negatives -> {c.out}")
    for why, n in s["notes"].items():
        print(f"  {n}: {why}")
    return 0
