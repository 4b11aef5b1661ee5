"""``xqa embedded build``: the embedded default, by the build recipe its profile picks.

Profile ``default`` (what ``make demo`` builds): the corpus recipe (``xqa build``) over the
shipped multilingual Wikipedia sample with the shipped span reader. Profiles ``world``, ``long``
and ``small``: the world recipe, the generated test world, its tokenizer, indexes and tiny
models trained from scratch (:mod:`xqa.build`).
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="build/embedded", help="folder of the embedded default")
    from xqa.build import EMBEDDED_PROFILES

    p.add_argument("--profile", choices=EMBEDDED_PROFILES, default="default",
                   help="default: real Wikipedia paragraphs, the pretrained encoder and the shipped span reader "
                        "(make demo); world: the generated world with tiny models trained from scratch; long: "
                        "world with a reader trained 4,000 steps instead of 2,400; small: a small world and "
                        "short training (tests)")
    p.add_argument("--seed", type=int, default=0, help="seed of the world and of training")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads of the stages run in this process (0: all cores); "
                        "the reader's stages run as one-thread processes")


def run(args: argparse.Namespace) -> int:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    from xqa.build import embedded

    embedded(args.out, profile=args.profile, seed=args.seed, threads=args.threads)
    return 0
