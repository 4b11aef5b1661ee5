"""``xqa train tokenizer``: a SentencePiece tokenizer for the embedded default."""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.training.tokenizer import TokenizerTrainConfig

COMMAND = ConfigCommand(TokenizerTrainConfig, settings=True,
                        groups={None: ("passages", "questions", "out", "vocab_size", "overwrite")})
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.artifacts import holds_kind
    from xqa.training import tokenizer

    cfg = COMMAND.config(args)
    if holds_kind(cfg.out, "tokenizer") and not cfg.overwrite:
        print(f"{cfg.out} holds a tokenizer already: kept (--overwrite trains it again)")
        return 0
    out = tokenizer.train(cfg)
    print(f"tokenizer written to {out}")
    return 0
