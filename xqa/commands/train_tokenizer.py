"""``xqa train tokenizer``: a SentencePiece tokenizer for the embedded default."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--passages", required=True, help="passages (JSONL or DPR TSV) to learn from")
    p.add_argument("--questions", nargs="*", default=[], help="question sets to learn from as well")
    p.add_argument("--out", required=True, help="output tokenizer folder")
    p.add_argument("--vocab-size", type=int, default=8000, help="target vocabulary size")
    p.add_argument("--overwrite", action="store_true", help="retrain even if OUT is complete")


def run(args: argparse.Namespace) -> int:
    from itertools import chain

    from xqa.io import read_passages, read_questions
    from xqa.tokenizer import train_tokenizer

    def texts():
        for p in read_passages(args.passages):
            yield p.title
            yield p.text
        for path in args.questions:
            for q in read_questions(path):
                yield q.question
                yield from chain(q.answers, q.answers_en)

    out = train_tokenizer(texts(), args.out, vocab_size=args.vocab_size, overwrite=args.overwrite)
    print(f"tokenizer written to {out}")
    return 0
