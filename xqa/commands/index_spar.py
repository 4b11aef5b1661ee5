"""``xqa index spar``: one FAISS index of ``[P(p) ; PΛ(p)]`` (SPAR, paper 000 §4.2).

The dense passage vectors are read from the dense index's own encoded shards
when it kept them (no re-encoding); Λ's are encoded in resumable chunks under
``OUT/lexical``. μ is applied to queries, so ``xqa tune mu`` never rebuilds this.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dense", required=True, help="finished dense index folder (xqa index dense)")
    p.add_argument("--lexical", required=True, help="Λ model: a bi-encoder folder or its training run (xqa train lexical)")
    p.add_argument("--passages", required=True, help="the passages the dense index holds (JSONL or DPR TSV)")
    p.add_argument("--out", required=True, help="output SPAR index folder (rerun to resume)")
    p.add_argument("--lang", help="language of passage files that carry none (DPR TSV)")
    p.add_argument("--mode", choices=("concat", "sum"), default="concat",
                   help="weighted concatenation [P ; PΛ] (paper's choice) or weighted sum P + PΛ (equal dims)")
    p.add_argument("--index-type", choices=("flat", "hnsw", "ivfpq"), default=None,
                   help="FAISS index type (default: the dense index's)")
    p.add_argument("--batch-size", type=int, default=64, help="passages per encoding batch")
    p.add_argument("--device", default="cpu", help="torch device for encoding Λ (cpu, cuda)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--overwrite", action="store_true", help="rebuild a finished index")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    import time

    import torch

    from retriever.dense.encode import index_config
    from retriever.dense.index import IndexParams
    from retriever.spar.index import build_spar_index
    from xqa.io import read_passages

    if args.threads:
        torch.set_num_threads(args.threads)
    params = None
    if args.index_type:
        base = dict(index_config(args.dense).get("index", {}))
        base["kind"] = args.index_type
        params = IndexParams(**base)
    t0 = time.perf_counter()
    cfg = build_spar_index(args.dense, args.lexical, read_passages(args.passages, lang=args.lang), args.out,
                           mode=args.mode, params=params, overwrite=args.overwrite, batch_size=args.batch_size,
                           device=args.device, progress=not args.quiet)
    print(f"SPAR index ({cfg['mode']}, {cfg['dim']} dims = {cfg['dense_dim']} dense"
          f"{' + ' if cfg['mode'] == 'concat' else ' = '}{cfg['lexical_dim']} Λ) of {cfg['passages']} passages "
          f"in {len(cfg['languages'])} languages → {args.out} ({time.perf_counter() - t0:.0f} s"
          f"{', dense vectors reused' if cfg['reused_dense_shards'] else ''})")
    return 0
