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


def format_stats(stats: dict) -> str:
    """A short table: passages per language, questions per split and language, cross-lingual share."""
    langs = stats["languages"]
    lines = [f"{'':<12}" + "".join(f"{lg:>6}" for lg in langs) + f"{'total':>8}"]
    ppl = stats["passages_per_lang"]
    lines.append(f"{'passages':<12}" + "".join(f"{ppl[lg]:>6}" for lg in langs) + f"{stats['passages']:>8}")
    for split, n in stats["questions"].items():
        per = stats.get("questions_per_lang", {}).get(split, {})
        lines.append(f"{split:<12}" + "".join(f"{per.get(lg, 0):>6}" for lg in langs) + f"{n:>8}")
    share = ", ".join(f"{s} {v:.1%}" for s, v in stats["crosslingual_share"].items())
    lines.append(f"cross-lingual share: {share}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from xqa.world import build_world

    stats = build_world(args.out, size=args.size, seed=args.seed, overwrite=args.overwrite,
                        progress=sys.stderr.isatty())
    if not stats.get("built", True):
        print(f"{args.out} is already a complete world (size {stats.get('size')}, seed {stats.get('seed')}); "
              "pass --overwrite to rebuild")
    else:
        print(f"world written to {args.out}")
    if "languages" in stats:
        print(format_stats(stats))
    return 0
