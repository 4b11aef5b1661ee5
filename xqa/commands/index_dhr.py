"""``xqa index dhr``: densified BM25 over e5 pieces + the dense vectors, one index (DHR).

DLR / DHR (Lin & Lin, "A Dense Representation Framework for Lexical and
Semantic Matching", TOIS 2023), without training: each passage's BM25 vector
over the dense encoder's tokenizer pieces is cut into M slices, each slice
keeps its maximum and that maximum's position; the dense passage vectors are
read from the dense index (not re-encoded). Searching scores
``GIP + λ·dense`` in one exact pass; λ is query-side (``xqa tune lambda``).
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from retriever.dlr.index import DEFAULT_LAMBDA, DEFAULT_SLICES
    from xqa.indexes import DhrIndexConfig as D

    p.add_argument("--dense", required=True, help="finished dense index folder (xqa index dense)")
    p.add_argument("--passages", required=True, help="the passages the dense index holds (JSONL or DPR TSV)")
    p.add_argument("--out", required=True, help="output DHR index folder")
    p.add_argument("--lang", help="language of passage files that carry none (DPR TSV)")
    p.add_argument("--slices", type=int, default=DEFAULT_SLICES,
                   help="M, the number of slices (default 4096: e5's 250,002 pieces give N = 62 dims per "
                        "slice, so positions fit one byte; 3 bytes per slice, ~12 KB per passage). A piece "
                        "that shares its slice with a heavier piece of the same passage is lost: on the "
                        "shipped corpus 19%% of passage pieces contiguous, 1.8%% strided")
    p.add_argument("--strided", action="store_true",
                   help="slice m = dims {m, m+M, m+2M, ...} instead of the contiguous [mN, (m+1)N)")
    p.add_argument("--lam", type=float, default=DEFAULT_LAMBDA,
                   help="λ recorded as the index's default dense weight: score = GIP + λ·dense "
                        "(GIP is on the BM25 scale, ~10-40, e5 cosines ~0.8; 500 is the best R@5 on the "
                        "shipped corpus's tune questions; xqa tune lambda tunes it for another corpus)")
    p.add_argument("--batch-size", type=int, default=D.batch_size, help="passages per tokenizer call")
    p.add_argument("--overwrite", action="store_true", help="rebuild an existing index")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from xqa.indexes import DhrIndexConfig, build_dhr, describe_dhr

    index = build_dhr(DhrIndexConfig(
        dense=args.dense, passages=args.passages, out=args.out, lang=args.lang, slices=args.slices,
        strided=args.strided, lam=args.lam, batch_size=args.batch_size, overwrite=args.overwrite,
        progress=not args.quiet))
    print(describe_dhr(index, args.out))
    return 0
