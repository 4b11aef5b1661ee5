"""``xqa index pieces``: one Lucene BM25 index of every passage's multilingual-e5 SentencePiece
pieces (all languages together), searched by the methods ``pieces`` and ``bm25-aug``.

A thin wrapper over :func:`xqa.indexes.build_pieces`.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.indexes import PiecesIndexConfig as D

    p.add_argument("--passages", required=True, metavar="FILE",
                   help='passages: JSONL {"id","title","text","lang"} (or DPR TSV with --lang)')
    p.add_argument("--encoder", required=True, metavar="DIR",
                   help="encoder folder whose tokenizer makes the pieces (e.g. the converted multilingual-e5-small)")
    p.add_argument("--out", required=True, metavar="DIR", help="index folder to create")
    p.add_argument("--lang", default=None, help="language of passages that carry no 'lang' field")
    p.add_argument("--threads", type=int, default=None,
                   help="indexing threads inside Lucene (default: 2, or 1 on a one-core machine)")
    p.add_argument("--batch-size", type=int, default=D.batch_size, help="passages handed to Lucene per call")
    p.add_argument("--overwrite", action="store_true", help="rebuild DIR if it holds a finished index")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from xqa.indexes import PiecesIndexConfig, build_pieces, describe_pieces

    index = build_pieces(PiecesIndexConfig(
        passages=args.passages, encoder=args.encoder, out=args.out, lang=args.lang, threads=args.threads,
        batch_size=args.batch_size, overwrite=args.overwrite, progress=not args.quiet))
    print(describe_pieces(index, args.out))
    return 0
