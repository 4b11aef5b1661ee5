"""``xqa embedded build``: the embedded default, by the build recipe its profile picks.

Profile ``default`` (what ``make demo`` builds): the corpus recipe (``xqa build``) over the
shipped multilingual Wikipedia sample with the shipped span reader. Profiles ``world``, ``long``
and ``small``: the world recipe, the generated test world, its tokenizer, indexes and tiny
models trained from scratch (:mod:`xqa.recipes`).
"""
from __future__ import annotations

import argparse

from xqa.recipes import EmbeddedConfig
from xqa.cli_config import ConfigCommand

COMMAND = ConfigCommand(EmbeddedConfig)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    c = COMMAND.config(args)
    if c.threads:
        import torch

        torch.set_num_threads(c.threads)
    from xqa.recipes import embedded

    embedded(c.out, profile=c.profile, seed=c.seed, threads=c.threads)
    return 0
