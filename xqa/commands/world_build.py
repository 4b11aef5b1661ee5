"""``xqa world build``: generate the embedded multilingual world (passages + questions)."""
from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="output folder (passages.jsonl, train/dev/test.jsonl, config.json)")
    p.add_argument("--size", choices=("default", "small"), default="default",
                   help="default: >=3,000 passages, 20k/1k/1k questions; small: a few hundred passages for tests")
    p.add_argument("--seed", type=int, default=0, help="random seed; a fixed seed gives byte-identical files")
    p.add_argument("--overwrite", action="store_true", help="rebuild even if OUT is already a complete world")


def run(args: argparse.Namespace) -> int:
    from xqa.world.generate import build_world, describe_build

    stats = build_world(args.out, size=args.size, seed=args.seed, overwrite=args.overwrite,
                        progress=sys.stderr.isatty())
    print(describe_build(stats, args.out))
    return 0
