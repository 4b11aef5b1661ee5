"""``xqa index sparse``: one BM25 (Lucene) index per language of a passage file,
or with ``--cross-script`` one romanized index of all of them.

A thin wrapper over :func:`retriever.sparse.build_sparse_indexes`; prints
which analyzer each language got, marking fallbacks.
"""
from __future__ import annotations

import argparse
import os
import time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--passages", required=True, metavar="FILE",
                        help='passages: JSONL {"id","title","text","lang"} (or Pyserini\'s '
                             '{"id","contents","lang"}), or DPR TSV with --lang')
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="index folder to create (one Lucene index per language inside)")
    parser.add_argument("--lang", default=None,
                        help="language of passages that carry no 'lang' field (e.g. a DPR TSV file)")
    parser.add_argument("--threads", type=int, default=None,
                        help="indexing threads inside Lucene (default: 2, or 1 on a one-core machine)")
    parser.add_argument("--batch-size", type=int, default=2000,
                        help="passages handed to Lucene per call")
    parser.add_argument("--overwrite", action="store_true",
                        help="rebuild DIR if it already holds a complete index (otherwise refused)")
    parser.add_argument("--no-optimize", action="store_true",
                        help="skip merging each index into one segment (faster build, slower search)")
    parser.add_argument("--cross-script", action="store_true",
                        help="build ONE index of all languages in romanized tokens (words and consonant "
                             "skeletons), which every question searches: finds passages that name the "
                             "question's people and places in another script (method sparse+roman)")
    parser.add_argument("--stop-fraction", type=float, default=None, metavar="F",
                        help="with --cross-script: a question leaves out the tokens found in at least this "
                             "share of its own language's passages (its function and template words, "
                             "which look rare in an index of every language); 0: keep every token. "
                             "Tune it on your corpus: the embedded world's is 0.1 (xqa.world.retrieval) "
                             "(default: 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from retriever.sparse import build_sparse_indexes
    from retriever.sparse.index import STOP_FRACTION
    from xqa.errors import XqaError
    from xqa.io import read_passages

    if args.threads is None:
        args.threads = min(2, os.cpu_count() or 1)
    if args.threads < 1 or args.batch_size < 1:
        raise XqaError("--threads and --batch-size must be at least 1")
    if args.stop_fraction is not None and not args.cross_script:
        raise XqaError("--stop-fraction applies to the cross-script index: add --cross-script")
    stop_fraction = STOP_FRACTION if args.stop_fraction is None else args.stop_fraction
    if not 0.0 <= stop_fraction <= 1.0:
        raise XqaError(f"--stop-fraction must be between 0 and 1, got {stop_fraction}")
    start = time.perf_counter()
    summary = build_sparse_indexes(read_passages(args.passages, lang=args.lang), args.out,
                                   threads=args.threads, overwrite=args.overwrite,
                                   batch_size=args.batch_size, optimize=not args.no_optimize,
                                   progress=not args.quiet, cross_script=args.cross_script,
                                   stop_fraction=stop_fraction)
    seconds = time.perf_counter() - start
    print(f"{'lang':<8} {'passages':>9} {'MB':>8}  analyzer")
    for lang, info in summary["languages"].items():
        mark = "  [FALLBACK]" if info["fallback"] else ""
        print(f"{lang:<8} {info['num_passages']:>9} {info['index_bytes'] / 1e6:>8.2f}  "
              f"{info['analyzer_description']}{mark}")
        if info.get("stop_tokens"):
            lists = ", ".join(f"{k} {len(v)}" for k, v in info["stop_tokens"].items())
            print(f"{'':<8} stop tokens (in >= {info['stop_fraction']:.0%} of a language's passages): {lists}")
    reused = f" (reused: {', '.join(summary['reused'])})" if summary["reused"] else ""
    where = "one cross-script index" if summary.get("cross_script") else f"{len(summary['languages'])} languages"
    print(f"{summary['num_passages']} passages in {where}, "
          f"{seconds:.1f} s, Lucene {summary['lucene']} / Anserini {summary['anserini']} "
          f"on Java {summary['java']} -> {args.out}{reused}")
    return 0
