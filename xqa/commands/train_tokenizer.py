"""``xqa train tokenizer``: a SentencePiece tokenizer for the embedded default."""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.training.tokenizer import TokenizerTrainConfig

COMMAND = ConfigCommand(TokenizerTrainConfig, settings=True,
                        groups={None: ("passages", "questions", "out", "vocab_size", "overwrite")})
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.training import tokenizer

    out = tokenizer.train(COMMAND.config(args))
    print(f"tokenizer written to {out}")
    return 0
