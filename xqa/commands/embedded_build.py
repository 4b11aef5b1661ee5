"""``xqa embedded build``: world, tokenizer, indexes and tiny models, by xqa's own commands."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="build/embedded", help="folder of the embedded default")
    p.add_argument("--profile", choices=("default", "long", "small"), default="default",
                   help="default: full-size world (make demo); long: the same with a reader trained 4,000 "
                        "steps instead of 1,600 (about 5 more minutes on 2 cores; it reads better with the "
                        "evidence, end-to-end F1 within one build's noise); small: a small world and short "
                        "training (tests)")
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
    from xqa.embedded import Build

    Build(args.out, profile=args.profile, seed=args.seed).run()
    return 0
