"""``xqa reader kit``: the span reader's training, packed to travel (``reader.span.kit``).

Reads ``xqa data train``'s files and the converted encoder; writes one folder (about 40 MB
for every train split of ``../shared/data``) that ``xqa train reader --arch span --kit KIT``
trains from on any machine: a GPU machine that can fetch nothing needs nothing else.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, metavar="DIR",
                   help="xqa data train's output folder (train.jsonl, dev.jsonl, passages.jsonl)")
    p.add_argument("--base", required=True, help="the converted encoder (xqa convert e5 --out DIR)")
    p.add_argument("--out", required=True, help="kit folder to write")
    p.add_argument("--layers", type=int, default=0, help="keep the encoder's first N layers (0: all)")
    p.add_argument("--max-length", type=int, default=192, help="tokens per row (question, title, text window)")
    p.add_argument("--stride", type=int, default=64, help="tokens shared by two windows of a long paragraph")
    p.add_argument("--max-answer-len", type=int, default=24, help="answer tokens")
    p.add_argument("--dev-limit", type=int, default=300, help="dev questions kept for validation (0: all)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from reader.span.kit import prepare
    from reader.span.task import load_training_questions
    from xqa.errors import XqaError
    from xqa.io import read_passages

    data = Path(args.data)
    for name in ("train.jsonl", "passages.jsonl"):
        if not (data / name).is_file():
            raise XqaError(f"{data / name} is missing: make it with 'xqa data train --out {data}'")
    dev = data / "dev.jsonl"
    passages = {p.id: p for p in read_passages(data / "passages.jsonl")}
    s = prepare(load_training_questions(str(data / "train.jsonl")), passages, args.base, args.out,
                dev=load_training_questions(str(dev)) if dev.is_file() else (), layers=args.layers, max_length=args.max_length,
                stride=args.stride, max_answer_len=args.max_answer_len, dev_limit=args.dev_limit,
                progress=not args.quiet)
    print(f"{s['train']} training questions ({', '.join(f'{k} {v}' for k, v in s['train_per_set'].items())}), "
          f"{s['dev']} dev questions, {s['passages']} paragraphs, {s['tokens']} distinct tokens -> {args.out} "
          f"({s['bytes'] / 2 ** 20:.1f} MiB)")
    for why, n in s["skipped"].items():
        print(f"  skipped {n}: {why}")
    return 0
