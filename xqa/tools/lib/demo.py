"""End-to-end answer latency of the demo's work, per retrieval method.

What a demo user waits for, minus the browser: detect the question's
language, retrieve (method, K), read the top passages with the FiD reader,
fuse evidence. Each question is timed as one call; retrieval and reading are
also timed apart (``Pipeline.answer`` with ``contexts`` reads exactly what
``Pipeline.retrieve`` returned, so the two stages add up to ``answer``).

Loading (JVM, FAISS indexes, models, language identification) is measured once as the
cold start and kept out of the per-question figures; each method answers one untimed
question first (its fused retriever is built then). Target from issue #8:
p50 under 1 s on a 2-core CPU machine with the embedded models.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from xqa.records import Question

TARGET_P50_S = 1.0


@dataclass
class MethodLatency:
    method: str
    n: int
    p50: float          # seconds, end to end
    p95: float
    mean: float
    retrieve_p50: float
    read_p50: float
    lang_accuracy: float  # share of questions whose detected language is the gold one

    @property
    def meets_target(self) -> bool:
        return self.p50 < TARGET_P50_S


@dataclass
class DemoBench:
    load_seconds: float
    k: int
    n_passages: int
    methods: list[MethodLatency] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"load_seconds": self.load_seconds, "k": self.k, "n_passages": self.n_passages,
                "target_p50_seconds": TARGET_P50_S,
                "methods": [{**asdict(m), "meets_target": m.meets_target} for m in self.methods]}

    def table(self) -> str:
        w = max([10] + [len(m.method) for m in self.methods])
        lines = [(f"end-to-end answer latency (K={self.k}, {self.n_passages} passages read; "
                 f"cold start {self.load_seconds:.1f} s, not included)"),
                 (f"{'method':<{w}} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} "
                 f"{'retrieve p50':>13} {'read p50':>9} {'langid ok':>9}  p50 < {TARGET_P50_S:g} s")]
        for m in self.methods:
            lines.append(f"{m.method:<{w}} {m.n:>4} {m.p50 * 1e3:>8.0f} {m.p95 * 1e3:>8.0f} {m.mean * 1e3:>8.0f} "
                         f"{m.retrieve_p50 * 1e3:>13.0f} {m.read_p50 * 1e3:>9.0f} {m.lang_accuracy:>9.0%}  "
                         f"{'yes' if m.meets_target else 'NO'}")
        return "\n".join(lines)


def load_all(pipeline, methods: Sequence[str], questions: Sequence[str] = ()) -> float:
    """Open every part the methods need (JVM, indexes, passages, reader) and the language
    identification of ``questions`` (lingua loads a script's models when a question of that
    script first comes); seconds taken."""
    t0 = time.perf_counter()
    for m in methods:
        pipeline.retriever(m)
    pipeline.store  # noqa: B018 - opens the passage store
    pipeline.reader  # noqa: B018 - loads the reader
    for text in questions:   # else the first method timed would carry the identifier's start
        pipeline.question_language(text)
    return time.perf_counter() - t0


def time_method(pipeline, questions: Sequence[Question], method: str, k: int, n_passages: int) -> MethodLatency:
    """Latency of ``method`` over ``questions``, each asked alone as the demo asks it."""
    warm = questions[0]
    pipeline.answer([warm], method=method, k=k, n_passages=n_passages)  # builds the fused retriever
    total, retrieve, read, lang_ok = [], [], [], 0
    for q in questions:
        t0 = time.perf_counter()
        lang = pipeline.question_language(q.question)  # as Pipeline.ask identifies it
        asked = Question(id=q.id, question=q.question, lang=lang)
        ctxs = pipeline.retrieve([asked], k=max(k, n_passages), method=method)
        t1 = time.perf_counter()
        pipeline.answer([asked], n_passages=n_passages, contexts=ctxs)
        t2 = time.perf_counter()
        total.append(t2 - t0)
        retrieve.append(t1 - t0)
        read.append(t2 - t1)
        lang_ok += lang == q.lang
    arr = np.asarray(total)
    return MethodLatency(method=method, n=len(questions), p50=float(np.percentile(arr, 50)),
                         p95=float(np.percentile(arr, 95)), mean=float(arr.mean()),
                         retrieve_p50=float(np.median(retrieve)), read_p50=float(np.median(read)),
                         lang_accuracy=lang_ok / len(questions))


def bench_demo(pipeline, questions: Sequence[Question], methods: Sequence[str] | None = None,
               k: int | None = None, n_passages: int | None = None) -> DemoBench:
    """Cold start once, then per-method latency over ``questions`` (at least one)."""
    if not questions:
        raise ValueError("bench_demo needs at least one question")
    methods = list(methods or pipeline.methods)
    k = k or pipeline.config.retrieval.k
    n = n_passages or pipeline.config.reader.n_passages
    result = DemoBench(load_seconds=load_all(pipeline, methods, [q.question for q in questions]), k=k, n_passages=n)
    for m in methods:
        result.methods.append(time_method(pipeline, questions, m, k, n))
    return result
