"""``xqa index dense``: encode passages in shards, then build per-language FAISS indexes.

One process: ``xqa index dense --model M --passages P --out D`` encodes every
shard (skipping finished ones) and builds the indexes. Many processes or
machines: run ``--shard-id i --num-shards n`` for each ``i`` (any order, any
place that sees ``D``); whichever finishes the last shard builds the indexes
(or rerun without ``--shard-id``). A killed run resumes where it stopped.
"""
from __future__ import annotations

import argparse
import os

# OpenMP threads that spin while waiting are 4-5x slower than sleeping ones when the cores
# are shared (measured: docs/dense.md). Only effective before torch/FAISS load OpenMP.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.indexes import DenseIndexConfig as D

    p.add_argument("--model", required=True, help="bi-encoder folder (xqa train retriever OUT or OUT/best)")
    p.add_argument("--passages", required=True, help="passage file (JSONL or DPR TSV)")
    p.add_argument("--lang", help="language of passages that carry none (DPR TSV)")
    p.add_argument("--out", required=True, help="index folder (shards/, index/, config.json)")
    p.add_argument("--shard-id", type=int, default=None,
                   help="encode only this shard (0-based); default: all shards in this process")
    p.add_argument("--num-shards", type=int, default=D.num_shards, help="number of shards the passages are split into")
    p.add_argument("--chunk-size", type=int, default=D.chunk_size,
                   help="passages per resumable chunk inside a shard")
    p.add_argument("--index", choices=("flat", "hnsw", "ivfpq"), default=D.index,
                   help="FAISS index type per language: exact inner product, HNSW graph, or IVF-PQ")
    p.add_argument("--fp16", action="store_true",
                   help="store embeddings (.npy) and the flat index in float16 (half the bytes)")
    p.add_argument("--hnsw-m", type=int, default=D.hnsw_m, help="HNSW: links per node")
    p.add_argument("--ef-construction", type=int, default=D.ef_construction, help="HNSW: candidate list size when building")
    p.add_argument("--ef-search", type=int, default=D.ef_search, help="HNSW: candidate list size when searching")
    p.add_argument("--nlist", type=int, default=D.nlist, help="IVF-PQ: inverted lists (0: about 4*sqrt(n))")
    p.add_argument("--pq-m", type=int, default=D.pq_m, help="IVF-PQ: sub-quantisers (0: dim/4, a divisor of dim)")
    p.add_argument("--pq-bits", type=int, default=D.pq_bits, help="IVF-PQ: bits per sub-quantiser code")
    p.add_argument("--nprobe", type=int, default=D.nprobe, help="IVF-PQ: lists visited per query")
    p.add_argument("--batch-size", type=int, default=D.batch_size, help="passages per encoder batch")
    p.add_argument("--max-length", type=int, default=D.max_length,
                   help="passage tokens the encoder reads (0: the model's own setting); recorded in the index")
    p.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    p.add_argument("--threads", type=int, default=D.threads, help="torch CPU threads (0: torch's default)")
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
    from xqa.indexes import DenseIndexConfig, build_dense

    build_dense(DenseIndexConfig(
        model=args.model, passages=args.passages, out=args.out, lang=args.lang, shard_id=args.shard_id,
        num_shards=args.num_shards, chunk_size=args.chunk_size, index=args.index, fp16=args.fp16,
        hnsw_m=args.hnsw_m, ef_construction=args.ef_construction, ef_search=args.ef_search, nlist=args.nlist,
        pq_m=args.pq_m, pq_bits=args.pq_bits, nprobe=args.nprobe, batch_size=args.batch_size,
        max_length=args.max_length, device=args.device, threads=args.threads, precision=args.precision,
        encode_only=args.encode_only, overwrite=args.overwrite, progress=not args.quiet),
        log=lambda line: print(line, flush=True))
    return 0
