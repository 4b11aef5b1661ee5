"""``xqa bench dhr``: exact DHR search (GIP + λ·dense, one index) on synthetic pools of growing size.

Measures what one pass of :class:`retriever.dhr.DhrRetriever` costs per
question at sizes a real corpus would have, with numpy on the CPU or with torch
on a device (``--paths numpy cpu cuda``), and prints a table: passages, index
size, milliseconds per question for DLR (GIP alone), the dense part alone and
DHR. Query encoding is not included (``xqa bench fusion`` times it on a real
index).

Examples::

    xqa bench dhr                                        # numpy, 50k and 200k passages
    xqa bench dhr --sizes 1000000,4000000 --paths cuda   # one GPU
"""
from __future__ import annotations

import argparse

from retriever.dhr.index import DEFAULT_LAMBDA


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="50000,200000",
                        help="comma-separated pool sizes (passages); memory is ~12.8 KB a passage at M = 4096")
    parser.add_argument("--paths", nargs="+", default=["numpy"],
                        help="'numpy' and/or torch devices ('cpu', 'cuda', 'cuda:1', ...)")
    parser.add_argument("--slices", type=int, default=4096, help="M (as xqa index dhr)")
    parser.add_argument("--vocab", type=int, default=250_002, help="|V| (multilingual-e5-small: 250,002)")
    parser.add_argument("--dim", type=int, default=384, help="dense dimension")
    parser.add_argument("--passage-slices", type=float, default=97.0,
                        help="non-zero slices per passage (97 on the shipped corpus's DHR index)")
    parser.add_argument("--query-slices", type=int, default=12, help="non-zero slices per question")
    parser.add_argument("--queries", type=int, default=256, help="questions timed")
    parser.add_argument("--batch", type=int, default=64, help="questions per search call")
    parser.add_argument("--k", type=int, default=100, help="passages per question")
    parser.add_argument("--lambda", dest="lam", type=float, default=DEFAULT_LAMBDA, help="λ (does not change the cost)")
    parser.add_argument("--lam", dest="lam", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=2, help="timed passes; the best is reported")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the figures as JSON")


def run(args: argparse.Namespace) -> int:
    import os

    from xqa.artifacts import write_json_atomic
    from xqa.errors import XqaError
    from xqa.tools.lib.dhr import Result, bench_one

    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        raise XqaError(f"--sizes: expected comma-separated integers, got {args.sizes!r}") from None
    if not sizes or min(sizes) < 1 or args.queries < 1 or args.batch < 1 or args.k < 1 or args.repeats < 1:
        raise XqaError("--sizes, --queries, --batch, --k and --repeats must be positive")
    if not 0 < args.query_slices <= args.slices or not 0 < args.passage_slices <= args.slices:
        raise XqaError("--query-slices and --passage-slices must be in 1..--slices")
    for p in args.paths:
        if p.startswith("cuda"):
            import torch

            if not torch.cuda.is_available():
                raise XqaError(f"--paths {p}: torch sees no CUDA device on this machine")
    settings = {k: getattr(args, k) for k in ("slices", "vocab", "dim", "passage_slices", "query_slices",
                                              "queries", "batch", "k", "lam", "repeats", "seed")}
    rows = []
    for n in sizes:
        for path in args.paths:
            row = bench_one(n, path, slices=args.slices, vocab=args.vocab, dim=args.dim,
                            per_passage=args.passage_slices, per_query=args.query_slices, queries=args.queries,
                            batch=args.batch, k=args.k, lam=args.lam, seed=args.seed, repeats=args.repeats)
            rows.append(row)
            print(f"  {n:,} passages, {path}: " + ", ".join(f"{k} {v:.3f} ms/q" for k, v in row.ms_per_query.items()),
                  flush=True)
    result = Result(rows, settings)
    print(f"\nDHR exact search, {args.queries} questions in batches of {args.batch}, top {args.k}; "
          f"M = {args.slices}, d = {args.dim}, {args.passage_slices:g} non-zero slices a passage, "
          f"{args.query_slices} a question; best of {args.repeats}; {os.cpu_count()} CPU cores\n")
    print(result.table())
    if args.json:
        write_json_atomic(args.json, result.to_dict())
    return 0
