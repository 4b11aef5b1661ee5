"""``xqa index sparse``: one BM25 (Lucene) index per language of a passage file,
or with ``--cross-script`` one romanized index of all of them.

A thin wrapper over :func:`xqa.indexes.build_sparse`; prints
which analyzer each language got, marking fallbacks.
"""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from xqa.indexes import SparseIndexConfig as D

    parser.add_argument("--passages", required=True, metavar="FILE",
                        help='passages: JSONL {"id","title","text","lang"} (or Pyserini\'s '
                             '{"id","contents","lang"}), or DPR TSV with --lang')
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="index folder to create (one Lucene index per language inside)")
    parser.add_argument("--lang", default=None,
                        help="language of passages that carry no 'lang' field (e.g. a DPR TSV file)")
    parser.add_argument("--threads", type=int, default=None,
                        help="indexing threads inside Lucene (default: 2, or 1 on a one-core machine)")
    parser.add_argument("--batch-size", type=int, default=D.batch_size,
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
    from xqa.indexes import SparseIndexConfig, build_sparse, describe_sparse

    summary = build_sparse(SparseIndexConfig(
        passages=args.passages, out=args.out, lang=args.lang, threads=args.threads, batch_size=args.batch_size,
        overwrite=args.overwrite, optimize=not args.no_optimize, cross_script=args.cross_script,
        stop_fraction=args.stop_fraction, progress=not args.quiet))
    print(describe_sparse(summary, args.out))
    return 0
