"""The FiD reader on a CPU: fp32, bf16 autocast, or int8 linear layers, checked and timed here.

int8 is PyTorch's dynamic quantisation of every linear layer (weights int8 per tensor,
activations quantised per batch as they come: fbgemm/oneDNN kernels, VNNI where the CPU has
it); attention, norms and embeddings stay fp32. The check reads shipped tuning questions, each
with its gold paragraph among the next questions' paragraphs, in fp32 and in each candidate
precision: a precision passes where its best answer is fp32's for at least
:data:`MIN_AGREEMENT` of the questions. The record goes into ``runtime.json`` beside the
reader's ``config.json``; ``precision: auto`` takes, on a CPU with the same features, the one
:func:`xqa.encoders.runtime.choose` took: of those that passed, the closest to fp32 within 15 %
of the fastest.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch

import xqa.encoders.runtime as rt
from reader.fid.precision import RECORD, read_record   # noqa: F401 - read_record: the record, read back
from xqa.artifacts import write_json_atomic
from xqa.encoders.info import bf16_supported

MIN_AGREEMENT = 0.8
CHECK_QUESTIONS = 24
PASSAGES = 5


def build(folder: str | Path, threads: int = 0, progress=print, questions: int = CHECK_QUESTIONS) -> dict[str, Any]:
    """Check and time the FiD reader in ``folder`` in each CPU precision on ``questions`` shipped
    tuning questions; write and return the record."""
    from reader.fid.inference import FiDReader

    folder = Path(folder)
    t0 = time.perf_counter()
    if threads:
        torch.set_num_threads(threads)
    reader = FiDReader.load(folder, device="cpu", precision="fp32")
    n = questions
    pairs = rt.shipped_pairs(n + PASSAGES)
    asked = [q for q, _ in pairs[:n]]
    contexts = [[pairs[i + j][1] for j in range(PASSAGES)] for i in range(n)]
    progress(f"  checking the FiD reader's CPU precisions against fp32 on {n} shipped tuning "
             f"questions, {PASSAGES} paragraphs each ...")

    def run(r) -> tuple[list[str], float]:
        r.read(asked[:1], contexts[:1])                      # warm-up
        t = time.perf_counter()
        outs = r.read(asked, contexts, batch_size=1)
        return [o.candidates[0][0] if o.candidates else "" for o in outs], time.perf_counter() - t

    ref, t_fp32 = run(reader)
    measured = {"fp32": {"questions_per_s": round(n / t_fp32, 3), "passed": True}}
    variants = {"int8": lambda: reader.with_precision("int8")}
    if bf16_supported():
        variants["bf16"] = lambda: reader.with_precision("bf16")
    for name, make in variants.items():
        answers, dt = run(make())
        agree = sum(a == b for a, b in zip(ref, answers)) / len(ref)
        measured[name] = {"questions_per_s": round(n / dt, 3), "agreement": round(agree, 4),
                          "passed": agree >= MIN_AGREEMENT}
    record = {"measured": measured, "choice": rt.choose(measured, "questions_per_s"),
              "cpu": rt.cpu_features(), "threads": threads or torch.get_num_threads(),
              "sample": {"questions": n, "passages": PASSAGES,
                         "source": "the shipped corpus's tuning questions, each with its gold paragraph "
                                   "first and the next questions' paragraphs"},
              "seconds": round(time.perf_counter() - t0, 1)}
    write_json_atomic(folder / RECORD, record)
    return record


def describe(record: dict[str, Any]) -> str:
    lines = []
    for name, r in record.get("measured", {}).items():
        extra = f", same best answer as fp32 for {r['agreement']:.0%} of questions" if "agreement" in r else ""
        lines.append(f"  {name}: {r['questions_per_s']:.2f} questions/s{extra}"
                     f"{'' if r.get('passed') else ' (check failed: not used)'}")
    lines.append(f"  precision auto on this CPU ({rt.cpu_summary(record.get('cpu'))}): {rt.recorded_choice(record)}"
                 f" (of those that passed, the closest to fp32 within {rt.CHOICE_MARGIN * 100:.0f} % of the fastest)")
    return "\n".join(lines)


def build_and_report(folder: str | Path, threads: int = 0, log=print) -> dict[str, Any]:
    record = build(folder, threads=threads, progress=log)
    log(f"FiD reader CPU precisions {folder} ({record['seconds']:.0f} s):\n{describe(record)}")
    return record
