"""Dense retrieval benchmark: encoding speed, flat search against memory bandwidth, index bytes.

Measured in one run, on this machine:

* passage encoding (passages/s and tokens/s) for the tiny config (the embedded
  default) and for a base-size mLUKE-architecture encoder (768 hidden, 12
  layers, random weights) — the size of mLUKE/mBERT/DPR;
* flat inner-product search over ``n`` × 768 float32 vectors: queries/s one
  query at a time and in batches, next to the machine's memory bandwidth
  (numpy sum and copy of a large array, measured in the same run). A flat
  search must read every vector once per query batch, so
  ``bytes scanned per second = n·d·4 · batches/s`` cannot exceed the bandwidth;
* index bytes per passage for flat (fp32 and fp16), HNSW and IVF-PQ, and
  their queries/s and recall@10 against flat on the same vectors.

Passages are the embedded world's when ``passages`` is given, else synthetic
sentences of pseudo-words (about 55 tokens each, like the world's).
"""
from __future__ import annotations

import os
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from xqa.records import Passage


@dataclass
class BenchResult:
    rows: list[tuple[str, str, str]] = field(default_factory=list)  # (section, what, value)
    notes: list[str] = field(default_factory=list)

    def add(self, section: str, what: str, value: str) -> None:
        self.rows.append((section, what, value))
        print(f"  {section:<10} {what:<58} {value}", flush=True)

    def table(self) -> str:
        lines = ["| part | measure | value |", "|---|---|---|"]
        lines += [f"| {s} | {w} | {v} |" for s, w, v in self.rows]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"rows": [list(r) for r in self.rows], "notes": self.notes}


def _timeit(fn: Callable[[], object], min_time: float = 1.0, max_reps: int = 50) -> float:
    """Seconds per call: best of repeated calls (at least ``min_time`` in all, after one warm-up)."""
    fn()
    times, total = [], 0.0
    while total < min_time and len(times) < max_reps:
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        times.append(dt)
        total += dt
    return min(times)


def synthetic_passages(n: int, seed: int = 0) -> list[Passage]:
    """``n`` passages of 3-5 sentences of pseudo-words (deterministic)."""
    rng = random.Random(seed)
    syl = ["ka", "lo", "mi", "ra", "tu", "ve", "zi", "no", "sa", "pe", "do", "ru", "xa", "bi", "en", "or"]
    words = ["".join(rng.choice(syl) for _ in range(rng.randint(1, 4))) for _ in range(5000)]
    weights = [1.0 / (i + 1) for i in range(len(words))]
    out = []
    for i in range(n):
        sents = [" ".join(rng.choices(words, weights, k=rng.randint(6, 12))).capitalize() + "."
                 for _ in range(rng.randint(3, 5))]
        out.append(Passage(f"s{i}", rng.choice(words).capitalize(), " ".join(sents), "xx"))
    return out


def memory_bandwidth(n_bytes: int = 1 << 30) -> dict[str, float]:
    """Bytes/s of a numpy sum (read) and copy (read + write) of an ``n_bytes`` float32 array."""
    a = np.ones(n_bytes // 4, dtype=np.float32)
    b = np.empty_like(a)
    t_sum = _timeit(lambda: a.sum(), min_time=1.0, max_reps=8)
    t_copy = _timeit(lambda: np.copyto(b, a), min_time=1.0, max_reps=8)
    return {"read": a.nbytes / t_sum, "copy": 2 * a.nbytes / t_copy}


def bench_encoding(result: BenchResult, tokenizer_dir: Path, passages: Sequence[Passage],
                   n_tiny: int, n_base: int, max_length: int) -> None:
    import torch

    from retriever.dense.model import BiEncoder

    for size, n in (("tiny", n_tiny), ("base", n_base)):
        if n <= 0:
            continue
        model = BiEncoder.from_scratch(tokenizer_dir, size, passage_max_length=max_length, seed=0)
        ps = list(passages[:n])
        tokens = int(model.tokenize_passages(ps)["attention_mask"].sum())
        model.encode_passages(ps[:16])  # warm-up
        t = time.perf_counter()
        model.encode_passages(ps, batch_size=64)
        dt = time.perf_counter() - t
        params = sum(p.numel() for p in model.parameters()) / 1e6
        result.add("encode", f"{size} ({model.dim} hidden, {params:.1f}M params), {n} passages, "
                             f"{tokens / n:.0f} tokens avg, {torch.get_num_threads()} threads",
                   f"{n / dt:,.0f} passages/s ({tokens / dt:,.0f} tokens/s)")
        if size == "tiny":
            result.add("encode", "tiny: time for 5,000 passages (extrapolated)", f"{5000 * dt / n:.1f} s")


def bench_flat_search(result: BenchResult, n: int, d: int, bandwidth: dict[str, float], seed: int) -> None:
    import faiss

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d), dtype=np.float32)
    index = faiss.IndexFlatIP(d)
    index.add(x)
    scanned = x.nbytes
    bw = max(bandwidth["read"], bandwidth["copy"])  # the higher of the two probes: the stricter bound
    for batch in (1, 16, 256):
        q = rng.standard_normal((batch, d), dtype=np.float32)
        dt = _timeit(lambda: index.search(q, 100), min_time=1.5)
        qps = batch / dt
        gbps = scanned / dt / 1e9
        result.add("flat", f"{n:,} x {d} fp32 ({scanned / 1e6:.0f} MB), k=100, batch {batch}",
                   f"{qps:,.0f} queries/s; {gbps:.1f} GB/s scanned "
                   f"({100 * scanned / dt / bw:.0f}% of memory bandwidth)")
    one = scanned / bw
    result.add("flat", "bandwidth bound for one query (read every vector once)",
               f"{1 / one:,.0f} queries/s")
    result.notes.append("Batched flat search runs as a matrix product (BLAS): one pass over the vectors "
                        "serves the whole batch, so queries/s can exceed the one-query bandwidth bound.")


def bench_index_types(result: BenchResult, n: int, d: int, seed: int) -> None:
    """Bytes per passage (total, and marginal: the slope between n/2 and n vectors), q/s, recall@10."""
    import faiss

    from retriever.dense.index import IndexParams, index_bytes, new_index

    rng = np.random.default_rng(seed + 1)
    centers = rng.standard_normal((256, d), dtype=np.float32)
    x = centers[rng.integers(0, 256, n)] + 0.5 * rng.standard_normal((n, d), dtype=np.float32)
    q = centers[rng.integers(0, 256, 200)] + 0.5 * rng.standard_normal((200, d), dtype=np.float32)
    truth = None
    half = n // 2
    for label, params in (("flat fp32", IndexParams("flat")), ("flat fp16", IndexParams("flat", fp16=True)),
                          ("HNSW M=32", IndexParams("hnsw", ef_construction=80, ef_search=128)),
                          ("IVF-PQ", IndexParams("ivfpq", nprobe=16))):
        t = time.perf_counter()
        index = new_index(x, params)
        index.add(x[:half])
        size_half = index_bytes(index)
        index.add(x[half:])
        build = time.perf_counter() - t
        size = index_bytes(index)
        dt = _timeit(lambda: index.search(q, 10), min_time=0.5)
        _, got = index.search(q, 10)
        if truth is None:
            truth = got
        recall = np.mean([len(set(g) & set(t_)) / 10 for g, t_ in zip(got, truth)])
        desc = label
        if params.kind == "ivfpq":
            ivf = faiss.downcast_index(index)
            desc += f" (nlist {ivf.nlist}, {ivf.pq.M} x {ivf.pq.nbits} bits)"
        result.add("index", f"{desc}, {n:,} x {d}",
                   f"{size / n:,.0f} bytes/passage ({(size - size_half) / (n - half):,.0f} marginal); "
                   f"{200 / dt:,.0f} q/s (batch 200); recall@10 {recall:.2f}; build {build:.1f} s")


def run_bench(passages_file: str | None, tokenizer_dir: str | None, n_tiny: int, n_base: int,
              n_flat: int, n_index: int, dim: int, seed: int, bandwidth_mb: int) -> BenchResult:
    """Run every part and return the table rows."""
    from xqa.io import read_passages
    from xqa.tokenizer import train_tokenizer

    result = BenchResult()
    if passages_file:
        passages = list(read_passages(passages_file))
        source = passages_file
    else:
        passages = synthetic_passages(max(n_tiny, n_base, 1), seed)
        source = "synthetic pseudo-word passages"
    random.Random(seed).shuffle(passages)
    with tempfile.TemporaryDirectory() as tmp:
        tok = Path(tokenizer_dir) if tokenizer_dir else train_tokenizer(
            (t for p in passages[:5000] for t in (p.title, p.text)), Path(tmp) / "tok", vocab_size=8000)
        result.notes.append(f"passages: {source}; tokenizer: {tokenizer_dir or 'trained on them (8000 pieces)'}")
        bench_encoding(result, tok, passages, n_tiny, n_base, max_length=128)
    bw = memory_bandwidth(bandwidth_mb << 20)
    result.add("memory", f"numpy sum of {bandwidth_mb} MB (read)", f"{bw['read'] / 1e9:.1f} GB/s")
    result.add("memory", f"numpy copy of {bandwidth_mb} MB (read + write)", f"{bw['copy'] / 1e9:.1f} GB/s")
    if n_flat:
        bench_flat_search(result, n_flat, dim, bw, seed)
    if n_index:
        bench_index_types(result, n_index, dim, seed)
    result.notes.append(f"{os.cpu_count()} CPU cores; load average after the run: "
                        + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    return result
