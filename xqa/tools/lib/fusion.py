"""Fusion benchmark: what fusing costs, and SPAR's one index against a two-index hybrid.

Measured in one run, on this machine:

1. **Fusion overhead per query at k = 60** — each pure function of
   ``retriever.fusion`` on synthetic ranked lists (60 dense + 60 sparse hits
   with a set share of common ids), microseconds per query, beside the search
   times of part 2 when indexes are given.
2. **Search latency per query** (when a pipeline config or index folders are
   given): dense, BM25, SPAR (one FAISS index of ``[P ; PΛ]``: two query
   encoders + one search), and the two-index retrievers hybrid and SCD (query
   encoder + FAISS + BM25 + fusion), split into their parts; one question at
   a time (latency, median and p95) and in batches (throughput).
"""
from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xqa.records import Hit, Question


@dataclass
class Row:
    name: str
    per_query_us: float           # median over repeats, per query
    p95_us: float = float("nan")
    note: str = ""


@dataclass
class Report:
    k: int
    fusion: list[Row] = field(default_factory=list)
    latency: list[Row] = field(default_factory=list)
    throughput: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def synthetic_lists(n: int, k: int, overlap: float, seed: int = 0) -> list[tuple[list[Hit], list[Hit]]]:
    """``n`` pairs of ranked lists of ``k`` hits, ``overlap`` of the sparse ids also dense."""
    rng = random.Random(seed)
    out = []
    for q in range(n):
        dense_ids = [f"d{q}-{i}" for i in range(k)]
        shared = rng.sample(dense_ids, round(overlap * k))
        sparse_ids = shared + [f"s{q}-{i}" for i in range(k - len(shared))]
        rng.shuffle(sparse_ids)
        dense = [Hit(i, 80.0 - 0.1 * r, "dense") for r, i in enumerate(dense_ids)]
        sparse = [Hit(i, 25.0 - 0.2 * r, "sparse") for r, i in enumerate(sparse_ids)]
        out.append((dense, sparse))
    return out


def _p95(xs: Sequence[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.95 * len(xs)))]


def bench_fusion_functions(k: int = 60, n: int = 2000, overlap: float = 0.2, repeats: int = 5,
                           seed: int = 0) -> list[Row]:
    """Microseconds per query of each fusion function at depth ``k``: median and p95 of single calls.

    Each call is timed alone (``repeats`` passes over ``n`` list pairs): the
    median is robust to the other processes sharing the CPU, a mean is not.
    """
    from retriever.fusion import hybrid, rrf, sparse_corroborate_dense

    pairs = synthetic_lists(n, k, overlap, seed)
    tuples = [([(h.id, h.score) for h in d], [(h.id, h.score) for h in s]) for d, s in pairs]
    cases: dict[str, tuple[Callable[[list, list], object], list]] = {
        "SCD (max_frac 0.2)": (lambda d, s: sparse_corroborate_dense(d, s, k, 0.2), pairs),
        "SCD, sparse order": (lambda d, s: sparse_corroborate_dense(d, s, k, 0.2, "sparse"), pairs),
        "SCD on (id, score) pairs": (lambda d, s: sparse_corroborate_dense(d, s, k, 0.2), tuples),
        "hybrid (raw)": (lambda d, s: hybrid(d, s, k, 0.5), pairs),
        "hybrid (normalised)": (lambda d, s: hybrid(d, s, k, 0.5, normalize=True), pairs),
        "RRF (k=60)": (lambda d, s: rrf([d, s], k), pairs),
    }
    rows = []
    clock = time.perf_counter
    for name, (fn, data) in cases.items():
        times = []
        for _ in range(repeats):
            for d, s in data:
                t0 = clock()
                fn(d, s)
                times.append((clock() - t0) * 1e6)
        rows.append(Row(name, statistics.median(times), _p95(times), f"{overlap:.0%} overlap"))
    return rows


def _latencies(fn: Callable[[list[Question]], object], questions: Sequence[Question]) -> list[float]:
    out = []
    for q in questions:
        t0 = time.perf_counter()
        fn([q])
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def bench_retrievers(parts: dict, questions: Sequence[Question], k: int = 60, batch_size: int = 32,
                     alpha: float = 0.5, max_frac: float = 0.2, mu: float = 1.0,
                     progress: bool = True) -> tuple[list[Row], list[Row]]:
    """Per-query latency (one question at a time) and batched throughput of each retriever.

    ``parts``: loaded components by index kind (``{"sparse", "dense", "spar", "dhr", ...}``, any
    subset). Every registered method (:mod:`xqa.methods`) whose parts are given is timed end to
    end, under its label; beside them the parts of the fused ones: the dense and SPAR query
    encoding, and the score hybrid and SCD fusion alone on these questions' lists.
    """
    from tqdm.auto import tqdm

    from retriever.combined import FusionConfig, sparse_search
    from retriever.fusion import hybrid, sparse_corroborate_dense
    from xqa.methods import build_retriever, methods

    qs = list(questions)
    sparse, dense, spar = parts.get("sparse"), parts.get("dense"), parts.get("spar")
    cases: dict[str, Callable[[list[Question]], object]] = {}
    for m in methods(every=True):
        if all(parts.get(n) is not None for n in m.needs):
            r = build_retriever(FusionConfig(m.name, alpha=alpha, max_frac=max_frac, mu=mu),
                                **{n: parts[n] for n in m.needs})
            cases[m.label] = lambda b, r=r: sparse_search(r, b, k)
    if dense is not None:
        cases["  dense: query encoding"] = lambda b: dense.encode_queries([q.question for q in b])
    if spar is not None:
        s = spar.with_mu(mu)
        cases["  SPAR: two query encoders"] = lambda b: s.encode([q.question for q in b])
    # fusion alone on these questions' real lists
    if dense is not None and sparse is not None:
        d_lists, s_lists = dense.search(qs, k), sparse_search(sparse, qs, k)
        at = {q.id: i for i, q in enumerate(qs)}

        def fuse(batch, scores: bool):
            for q in batch:
                i = at[q.id]
                if scores:
                    hybrid(d_lists[i], s_lists[i], k, alpha)
                else:
                    sparse_corroborate_dense(d_lists[i], s_lists[i], k, max_frac)

        cases["  fusion only: hybrid"] = lambda b: fuse(b, True)
        cases["  fusion only: SCD"] = lambda b: fuse(b, False)
    for fn in cases.values():  # warm-up: JVM JIT, FAISS, torch kernels
        fn(qs[: min(4, len(qs))])
    latency, throughput = [], []
    for name, fn in tqdm(cases.items(), desc="timing retrievers", unit="case", disable=not progress):
        lat = _latencies(fn, qs)
        latency.append(Row(name, statistics.median(lat), _p95(lat)))
        t0 = time.perf_counter()
        for i in range(0, len(qs), batch_size):
            fn(qs[i: i + batch_size])
        throughput.append(Row(name, (time.perf_counter() - t0) / len(qs) * 1e6, note=f"batch {batch_size}, mean"))
    return latency, throughput


def render(report: Report) -> str:
    def fmt(us: float) -> str:
        if math.isnan(us):
            return "–"
        return f"{us:,.1f} µs" if us < 1000 else f"{us / 1000:,.2f} ms"

    out = [f"## Fusion overhead per query (k = {report.k}, synthetic lists)\n",
           "| fusion | median per query | p95 per query | lists |", "| --- | --- | --- | --- |"]
    out += [f"| {r.name} | {fmt(r.per_query_us)} | {fmt(r.p95_us)} | {r.note} |" for r in report.fusion]
    if report.latency:
        tp = {r.name: r for r in report.throughput}
        out += ["", f"## Retrieval latency per query (k = {report.k})\n",
                "| retriever | one question: median | one question: p95 | batched, per question |",
                "| --- | --- | --- | --- |"]
        for r in report.latency:
            t = tp.get(r.name)
            out.append(f"| {r.name} | {fmt(r.per_query_us)} | {fmt(r.p95_us)} | "
                       f"{fmt(t.per_query_us) if t else '–'} ({t.note if t else ''}) |")
    out += [""] + [f"- {n}" for n in report.notes]
    return "\n".join(out)


__all__ = ["Report", "Row", "bench_fusion_functions", "bench_retrievers", "render", "synthetic_lists"]


def folder_size(path) -> int:
    """Bytes of the files under ``path`` (a file's own size for a file)."""
    from pathlib import Path

    p = Path(path)
    if p.is_file():
        return p.stat().st_size
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
