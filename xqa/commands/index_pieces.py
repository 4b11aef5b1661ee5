"""``xqa index pieces``: one Lucene BM25 index of every passage's multilingual-e5 SentencePiece
pieces (all languages together), searched by the methods ``pieces`` and ``bm25-aug``.

A thin wrapper over :func:`retriever.bm25aug.pieces.build_pieces_index`.
"""
from __future__ import annotations

import argparse
import os


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--passages", required=True, metavar="FILE",
                   help='passages: JSONL {"id","title","text","lang"} (or DPR TSV with --lang)')
    p.add_argument("--encoder", required=True, metavar="DIR",
                   help="encoder folder whose tokenizer makes the pieces (e.g. the converted multilingual-e5-small)")
    p.add_argument("--out", required=True, metavar="DIR", help="index folder to create")
    p.add_argument("--lang", default=None, help="language of passages that carry no 'lang' field")
    p.add_argument("--threads", type=int, default=None,
                   help="indexing threads inside Lucene (default: 2, or 1 on a one-core machine)")
    p.add_argument("--batch-size", type=int, default=1000, help="passages handed to Lucene per call")
    p.add_argument("--overwrite", action="store_true", help="rebuild DIR if it holds a finished index")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    import time

    from retriever.bm25aug.pieces import build_pieces_index
    from xqa.errors import XqaError
    from xqa.io import read_passages

    threads = args.threads if args.threads is not None else min(2, os.cpu_count() or 1)
    if threads < 1 or args.batch_size < 1:
        raise XqaError("--threads and --batch-size must be at least 1")
    t0 = time.perf_counter()
    cfg = build_pieces_index(read_passages(args.passages, lang=args.lang), args.encoder, args.out,
                             threads=threads, progress=not args.quiet, overwrite=args.overwrite,
                             batch_size=args.batch_size)
    print(f"pieces index of {cfg['passages']} passages ({cfg['pieces']} pieces, "
          f"{len(cfg['languages'])} languages, {cfg['index_bytes'] / 1e6:.1f} MB) → {args.out} "
          f"({time.perf_counter() - t0:.0f} s)")
    return 0
