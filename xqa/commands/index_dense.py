"""``xqa index dense``: encode passages in shards, then build per-language FAISS indexes.

One process: ``xqa index dense --model M --passages P --out D`` encodes every
shard (skipping finished ones) and builds the indexes. Many processes or
machines: run ``--shard-id i --num-shards n`` for each ``i`` (any order, any
place that sees ``D``); whichever finishes the last shard builds the indexes
(or rerun without ``--shard-id``). A killed run resumes where it stopped.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

# OpenMP threads that spin while waiting are 4-5x slower than sleeping ones when the cores
# are shared (measured: docs/dense.md). Only effective before torch/FAISS load OpenMP.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="bi-encoder folder (xqa train retriever OUT or OUT/best)")
    p.add_argument("--passages", required=True, help="passage file (JSONL or DPR TSV)")
    p.add_argument("--lang", help="language of passages that carry none (DPR TSV)")
    p.add_argument("--out", required=True, help="index folder (shards/, index/, config.json)")
    p.add_argument("--shard-id", type=int, default=None,
                   help="encode only this shard (0-based); default: all shards in this process")
    p.add_argument("--num-shards", type=int, default=1, help="number of shards the passages are split into")
    p.add_argument("--chunk-size", type=int, default=20_000,
                   help="passages per resumable chunk inside a shard")
    p.add_argument("--index", choices=("flat", "hnsw", "ivfpq"), default="flat",
                   help="FAISS index type per language: exact inner product, HNSW graph, or IVF-PQ")
    p.add_argument("--fp16", action="store_true",
                   help="store embeddings (.npy) and the flat index in float16 (half the bytes)")
    p.add_argument("--hnsw-m", type=int, default=32, help="HNSW: links per node")
    p.add_argument("--ef-construction", type=int, default=200, help="HNSW: candidate list size when building")
    p.add_argument("--ef-search", type=int, default=128, help="HNSW: candidate list size when searching")
    p.add_argument("--nlist", type=int, default=0, help="IVF-PQ: inverted lists (0: about 4*sqrt(n))")
    p.add_argument("--pq-m", type=int, default=0, help="IVF-PQ: sub-quantisers (0: dim/4, a divisor of dim)")
    p.add_argument("--pq-bits", type=int, default=8, help="IVF-PQ: bits per sub-quantiser code")
    p.add_argument("--nprobe", type=int, default=16, help="IVF-PQ: lists visited per query")
    p.add_argument("--batch-size", type=int, default=64, help="passages per encoder batch")
    p.add_argument("--max-length", type=int, default=0,
                   help="passage tokens the encoder reads (0: the model's own setting); recorded in the index")
    p.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--precision", choices=("auto", "fp32", "bf16", "int8"), default=None,
                   help="CPU precision of a converted encoder (default: its own setting, auto: the fastest "
                        "that passed the conversion's check on this CPU; int8 is its ONNX Runtime file)")
    p.add_argument("--encode-only", action="store_true",
                   help="encode the shard(s) and stop; a later run without it builds the indexes (so that "
                        "processes encoding shards side by side never build them twice)")
    p.add_argument("--overwrite", action="store_true",
                   help="rebuild the FAISS indexes of a finished folder (finished shards are reused)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    import torch

    from retriever.dense.encode import (build_indexes, encode_shard, model_info, shard_done)
    from retriever.dense.index import IndexParams
    from retriever.dense.model import BiEncoder
    from xqa.artifacts import is_complete, write_json_atomic
    from xqa.errors import XqaError
    from xqa.io import read_passages

    out = Path(args.out)
    n = args.num_shards
    if n < 1:
        raise XqaError("--num-shards must be at least 1")
    if args.shard_id is not None and not 0 <= args.shard_id < n:
        raise XqaError(f"--shard-id {args.shard_id} must be in [0, {n})")
    if is_complete(out):
        if not args.overwrite:
            print(f"{out} is a finished dense index; nothing to do (--overwrite rebuilds its FAISS indexes)")
            return 0
        (out / "config.json").unlink()
    if args.threads:
        torch.set_num_threads(args.threads)

    model_dir = Path(args.model)
    info = model_info(model_dir, out)
    _check_same_model(out, info, args.fp16)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "encoding.json", {"model": info, "num_shards": n, "fp16": args.fp16,
                                              **({"max_length": args.max_length} if args.max_length else {})})

    todo = [args.shard_id] if args.shard_id is not None else list(range(n))
    todo = [s for s in todo if not shard_done(out, s, n)]
    if todo:
        device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        model = BiEncoder.load(model_dir, device=device)
        if args.max_length:
            model.config.passage_max_length = args.max_length
        if args.precision:
            model.config.precision = args.precision
        precision = model.cpu_precision() if device == "cpu" else f"{device} bf16"
        if not args.quiet:
            print(f"encoding with {model_dir} in {precision}", flush=True)
        for s in todo:
            # the bar of each chunk's encoding moves per batch (a chunk is the unit a rerun resumes from)
            stats = encode_shard(lambda ps: model.encode_passages(ps, batch_size=args.batch_size,
                                                                  progress=not args.quiet),
                                 read_passages(args.passages, lang=args.lang), out, s, n,
                                 fp16=args.fp16, chunk_size=args.chunk_size, progress=False,
                                 meta={"precision": precision})
            print(f"shard {s}/{n}: {stats['encoded']} passages encoded, {stats['skipped']} already done")
    missing = [s for s in range(n) if not shard_done(out, s, n)]
    if args.encode_only:
        return 0
    if missing:
        print(f"{len(missing)} shard(s) still to encode ({', '.join(map(str, missing[:10]))}); "
              f"the indexes are built when all are done")
        return 0
    params = IndexParams(kind=args.index, fp16=args.fp16, hnsw_m=args.hnsw_m,
                         ef_construction=args.ef_construction, ef_search=args.ef_search,
                         nlist=args.nlist, pq_m=args.pq_m, pq_bits=args.pq_bits, nprobe=args.nprobe)
    build_indexes(out, n, params, info, progress=not args.quiet)
    cfg = json.loads((out / "config.json").read_text(encoding="utf-8"))
    langs = ", ".join(f"{k}:{v}" for k, v in sorted(cfg["languages"].items()))
    print(f"dense index written to {out}: {cfg['passages']} passages, {args.index}, dim {cfg['dim']} ({langs})")
    return 0


def _check_same_model(out: Path, info: dict, fp16: bool) -> None:
    """Refuse to mix shards encoded by different models or precisions."""
    from xqa.errors import XqaError

    prev = out / "encoding.json"
    if not prev.is_file():
        return
    old = json.loads(prev.read_text(encoding="utf-8"))
    if old["model"]["abs_path"] != info["abs_path"]:
        raise XqaError(f"{out} holds shards encoded by {old['model']['abs_path']}, not {info['abs_path']}; "
                       f"use another --out or remove {out}")
    if old.get("fp16") != fp16 and (out / "shards").is_dir():
        raise XqaError(f"{out} holds shards stored with fp16={old.get('fp16')}; pass the same --fp16 "
                       f"or remove {out / 'shards'}")
