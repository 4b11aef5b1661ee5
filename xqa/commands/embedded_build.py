"""``xqa embedded build``: world, tokenizer, indexes and tiny models, by xqa's own commands."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="build/embedded", help="folder of the embedded default")
    p.add_argument("--profile", choices=("default", "long", "small"), default="default",
                   help="default: full-size world (make demo); long: the same with a reader trained 4,000 "
                        "steps instead of 1,300 (about 10 more minutes on 2 cores; better answers); "
                        "small: a small world and short training (tests)")
    p.add_argument("--seed", type=int, default=0, help="seed of the world and of training")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: all cores)")


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
