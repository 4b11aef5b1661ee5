"""``xqa train tokenizer``: a SentencePiece tokenizer for the embedded default."""
from __future__ import annotations

import argparse

from xqa.training.tokenizer import TokenizerTrainConfig as D


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--passages", required=True, help="passages (JSONL or DPR TSV) to learn from")
    p.add_argument("--questions", nargs="*", default=[], help="question sets to learn from as well")
    p.add_argument("--out", required=True, help="output tokenizer folder")
    p.add_argument("--vocab-size", type=int, default=D.vocab_size, help="target vocabulary size")
    p.add_argument("--overwrite", action="store_true", help="retrain even if OUT is complete")


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import to_config
    from xqa.training import tokenizer

    out = tokenizer.train(to_config(D, args))
    print(f"tokenizer written to {out}")
    return 0
