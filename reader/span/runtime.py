"""The span reader's int8 CPU runtime: its encoder through :mod:`xqa.encoders.runtime`.

The reader's encoder (a few layers of multilingual-e5-small, fine-tuned) is exported,
fused and quantised exactly as the retrieval encoder is; the span and relevance heads stay
in torch on the runtime's hidden states. The smoothing is set on reader rows (question +
title + paragraph windows) of shipped tuning questions and their gold paragraphs, and the
check runs on other tuning questions: the hidden states of the paragraph tokens (cosine
to fp32) and the best span of every row, which must be the same span as fp32's in at least
:data:`MIN_SPAN_AGREEMENT` of the rows. The record goes into ``runtime.json`` beside the
reader's ``config.json``; ``precision: auto`` uses the one :func:`xqa.encoders.runtime.choose`
took: of those that passed, the closest to fp32 within 15 % of the fastest.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reader.span.inference import RUNTIME_RECORD as RECORD
from reader.span.inference import SpanReader, best_spans
from xqa.artifacts import write_json_atomic
import xqa.encoders.runtime as rt
from xqa.encoders.info import bf16_supported

MIN_SPAN_AGREEMENT = 0.8   # a guard against a broken file; the F1 on real questions decides (docs/reader.md)
CALIBRATION_QUESTIONS = 24
CHECK_QUESTIONS = 48


def _rows(reader, pairs) -> list:
    from reader.span.data import encode, windows

    rows = []
    for q, c in pairs:
        (qe,) = encode(reader.tokenizer, [q.question])
        title, text = encode(reader.tokenizer, [c.title or "", c.text or ""])
        rows += windows(qe, title, text, reader.cls_id, reader.sep_id, reader.settings.layout)
    return rows


def _feeds(reader, rows, size: int = 16) -> list[tuple[list[int], dict]]:
    from reader.span.data import pad_rows

    order = sorted(range(len(rows)), key=lambda i: -len(rows[i].ids))
    out = []
    for s in range(0, len(order), size):
        idx = order[s: s + size]
        b = pad_rows([rows[i].ids for i in idx], reader.pad_id)
        out.append((idx, {"input_ids": b["input_ids"].numpy(), "attention_mask": b["attention_mask"].numpy()}))
    return out


def build(folder: str | Path, threads: int = 0, progress=print) -> dict[str, Any]:
    """Export the int8 file of the span reader in ``folder``, check it against fp32 and time
    both on this CPU; write the record to ``folder/runtime.json`` and return it."""
    folder = Path(folder)
    t0 = time.perf_counter()
    if threads:
        torch.set_num_threads(threads)
    reader = SpanReader.load(folder, runtime=False)
    progress("  exporting the reader's int8 runtime (ONNX, fused kernels, int8 matrix products) ...")
    calib = [f for _, f in _feeds(reader, _rows(reader, rt.shipped_pairs(CALIBRATION_QUESTIONS)))]
    built = rt.export_int8(folder / "encoder", out=folder / rt.INT8_FILE, calibration=calib)
    progress(f"  checking it against fp32 on {CHECK_QUESTIONS} shipped tuning questions and their paragraphs ...")
    rows = _rows(reader, rt.shipped_pairs(CHECK_QUESTIONS, skip=CALIBRATION_QUESTIONS))
    feeds = _feeds(reader, rows)
    session = rt.Int8Encoder(folder / rt.INT8_FILE, threads)
    A = reader.settings.max_answer_len

    def run(hidden_of, batches=feeds) -> tuple[list, list, float]:
        spans, hidden_rows = [None] * len(rows), [None] * len(rows)
        t = time.perf_counter()
        with torch.inference_mode():
            for idx, feed in batches:
                hidden = hidden_of(feed)
                logits = reader.model.span_head(hidden).float()
                for j, i in enumerate(idx):
                    w = rows[i]
                    sl = slice(w.text_start, w.text_start + w.n)
                    _, best = best_spans(logits[j, sl, 0], logits[j, sl, 1], A, 1)
                    spans[i] = tuple(best[0][1:]) if best else None
                    hidden_rows[i] = hidden[j, sl].float().numpy()
        return spans, hidden_rows, time.perf_counter() - t

    def torch_hidden(feed, bf16=False):
        ctx = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else torch.autocast("cpu", enabled=False)
        with ctx:
            return reader.model.encoder(input_ids=torch.from_numpy(feed["input_ids"]),
                                        attention_mask=torch.from_numpy(feed["attention_mask"])).last_hidden_state

    run(torch_hidden, feeds[-1:])                       # warm-up
    ref_spans, ref_hidden, t_fp32 = run(torch_hidden)
    measured = {"fp32": {"rows_per_s": round(len(rows) / t_fp32, 2), "passed": True}}
    candidates = {"int8": lambda f: torch.from_numpy(session.hidden(f["input_ids"], f["attention_mask"]))}
    if bf16_supported():
        candidates["bf16"] = lambda f: torch_hidden(f, bf16=True)
    for name, fn in candidates.items():
        run(fn, feeds[-1:])
        spans, hidden, dt = run(fn)
        cos = []
        for a, b in zip(ref_hidden, hidden):
            num = (a * b).sum(1)
            den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
            cos.append(float((num / np.maximum(den, 1e-12)).mean()))
        agree = float(np.mean([x == y for x, y in zip(ref_spans, spans)]))
        measured[name] = {"rows_per_s": round(len(rows) / dt, 2), "cosine_mean": round(float(np.mean(cos)), 5),
                          "cosine_min": round(float(np.min(cos)), 5), "span_agreement": round(agree, 4),
                          "passed": bool(np.mean(cos) >= rt.MIN_MEAN_COSINE and np.min(cos) >= rt.MIN_COSINE
                                         and agree >= MIN_SPAN_AGREEMENT)}
    record = {"measured": measured, "choice": rt.choose(measured, "rows_per_s"),
              "cpu": rt.cpu_features(), "threads": threads or torch.get_num_threads(),
              "sample": {"rows": len(rows), "questions": CHECK_QUESTIONS,
                         "source": "the shipped corpus's tuning questions and their gold paragraphs"},
              "int8": {**built, "passed": measured["int8"]["passed"],
                       "cosine_mean": measured["int8"]["cosine_mean"],
                       "span_agreement": measured["int8"]["span_agreement"]},
              "seconds": round(time.perf_counter() - t0, 1)}
    write_json_atomic(folder / RECORD, record)
    return record


def describe(record: dict[str, Any]) -> str:
    lines = []
    for name, r in record.get("measured", {}).items():
        extra = (f", cosine to fp32 mean {r['cosine_mean']:.4f} / min {r['cosine_min']:.4f}, "
                 f"same best span in {r['span_agreement']:.0%} of rows" if "cosine_mean" in r else "")
        lines.append(f"  {name}: {r['rows_per_s']:.1f} rows/s{extra}{'' if r.get('passed') else ' (check failed: not used)'}")
    lines.append(f"  precision auto on this CPU ({rt.cpu_summary(record.get('cpu'))}): {rt.recorded_choice(record)}"
                 f" (of those that passed, the closest to fp32 within {rt.CHOICE_MARGIN * 100:.0f} % of the fastest)")
    return "\n".join(lines)


def build_and_report(folder: str | Path, threads: int = 0, log=print) -> dict[str, Any]:
    """:func:`build`, then the record said as :func:`describe` says it; the record."""
    record = build(folder, threads=threads, progress=log)
    log(f"int8 runtime {folder}/model.int8.onnx ({record['seconds']:.0f} s):\n{describe(record)}")
    return record
