"""``xqa index spar``: one FAISS index of ``[P(p) ; PΛ(p)]`` (SPAR, Chen et al. 2022, §4.2).

The dense passage vectors are read from the dense index's own encoded shards
when it kept them (no re-encoding); Λ's are encoded in resumable chunks under
``OUT/lexical``. μ is applied to queries, so ``xqa tune mu`` never rebuilds this.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.indexes import SparIndexConfig as D

    p.add_argument("--dense", required=True, help="finished dense index folder (xqa index dense)")
    p.add_argument("--lexical", required=True, help="Λ model: a bi-encoder folder or its training run (xqa train lexical)")
    p.add_argument("--passages", required=True, help="the passages the dense index holds (JSONL or DPR TSV)")
    p.add_argument("--out", required=True, help="output SPAR index folder (rerun to resume)")
    p.add_argument("--lang", help="language of passage files that carry none (DPR TSV)")
    p.add_argument("--mode", choices=("concat", "sum"), default=D.mode,
                   help="weighted concatenation [P ; PΛ] (paper's choice) or weighted sum P + PΛ (equal dims)")
    p.add_argument("--index-type", choices=("flat", "hnsw", "ivfpq"), default=None,
                   help="FAISS index type (default: the dense index's)")
    p.add_argument("--batch-size", type=int, default=D.batch_size, help="passages per encoding batch")
    p.add_argument("--device", default=D.device, help="torch device for encoding Λ (cpu, cuda)")
    p.add_argument("--threads", type=int, default=D.threads, help="torch CPU threads (0: torch's default)")
    p.add_argument("--overwrite", action="store_true", help="rebuild a finished index")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from xqa.indexes import SparIndexConfig, build_spar, describe_spar

    index = build_spar(SparIndexConfig(
        dense=args.dense, lexical=args.lexical, passages=args.passages, out=args.out, lang=args.lang,
        mode=args.mode, index_type=args.index_type, batch_size=args.batch_size, device=args.device,
        threads=args.threads, overwrite=args.overwrite, progress=not args.quiet))
    print(describe_spar(index, args.out))
    return 0
