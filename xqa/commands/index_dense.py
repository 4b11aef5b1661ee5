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

from xqa.cli_config import ConfigCommand  # noqa: E402
from xqa.indexes import DenseIndexConfig  # noqa: E402

COMMAND = ConfigCommand(DenseIndexConfig, settings=True, groups={None: (
    "model", "passages", "lang", "out", "shard_id", "num_shards", "chunk_size", "index", "fp16", "hnsw_m",
    "ef_construction", "ef_search", "nlist", "pq_m", "pq_bits", "nprobe", "batch_size", "max_length", "device",
    "threads", "precision", "encode_only", "overwrite", "progress")})
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.artifacts import bars_unless
    from xqa.indexes import build_dense

    config = COMMAND.config(args)
    with bars_unless(config.progress):   # --quiet: no bar of any kind
        build_dense(config, log=lambda line: print(line, flush=True))
    return 0
