"""``xqa bench sparse``: BM25 speed on this machine, Lucene (via xqa) vs bm25s, as a table.

Examples::

    xqa bench sparse                          # 100k synthetic passages, 2,000 queries
    xqa bench sparse --passages 20000 --no-peer
"""
from __future__ import annotations

import argparse
import os


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--passages", type=int, default=100_000,
                        help="synthetic passages to index (sentences of MLQA dev English contexts "
                             "when ../shared/data has them, else Zipf pseudo-words)")
    parser.add_argument("--queries", type=int, default=2000, help="queries in the timed batch")
    parser.add_argument("--small", type=int, default=5000, help="size of the small index also timed")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic corpus")
    parser.add_argument("--threads", type=int, default=None,
                        help="most search/indexing threads; queries/s is also measured with 1 "
                             "(default: the CPU count)")
    parser.add_argument("--ks", default="10,100", help="comma-separated k values timed")
    parser.add_argument("--work", default="build/bench/sparse", metavar="DIR",
                        help="folder for the benchmark's indexes (rebuilt each run)")
    parser.add_argument("--no-peer", action="store_true", help="skip the bm25s comparison")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the figures as JSON")


def run(args: argparse.Namespace) -> int:
    from xqa.artifacts import write_json_atomic
    from xqa.tools.lib.sparse import run_bench
    from xqa.errors import XqaError

    args.threads = args.threads or os.cpu_count() or 1
    try:
        ks = sorted({int(k) for k in args.ks.split(",") if k.strip()})
    except ValueError:
        raise XqaError(f"--ks: expected comma-separated integers, got {args.ks!r}") from None
    if not ks or ks[0] < 1 or args.passages < 1 or args.queries < 1 or args.threads < 1:
        raise XqaError("--ks, --passages, --queries and --threads must be positive")
    threads = sorted({1, args.threads})
    result = run_bench(args.passages, args.queries, args.small, args.seed, args.work, threads, ks,
                       peer=not args.no_peer)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nBM25 on {result.n_passages:,} passages ({result.source}); {os.cpu_count()} CPU cores, "
          f"load average after the run {load}\n")
    print(result.table())
    if args.json:
        write_json_atomic(args.json, result.to_dict())
    return 0
