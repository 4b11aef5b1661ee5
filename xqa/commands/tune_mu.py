"""``xqa tune mu``: pick SPAR's query-side weight μ on a dev set (paper 000, Appendix A).

Questions are encoded once (dense and Λ); each of the 19 grid values
(0.1 … 1.0 step 0.1 and their reciprocals) is one FAISS search of
``[Q ; μ·QΛ]`` against the unchanged SPAR index, scored by R@100 (top-100
answer accuracy, as the paper does for ODQA; or recall of ``positive_ids``).
Ties go to the μ closest to 1. ``--write-config`` stores μ in the pipeline config.
"""
from __future__ import annotations

import argparse
import math

from xqa.commands._fusion_common import (
    METRICS,
    add_question_arguments,
    add_source_arguments,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_question_arguments(p)
    add_source_arguments(p)
    p.add_argument("--metric", choices=METRICS, default="accuracy",
                   help="top-k answer accuracy (R@k in the ODQA sense), or recall@k of positive_ids")
    p.add_argument("--at", type=int, default=100, help="the k of the metric (the paper picks μ by R@100)")
    p.add_argument("--grid", type=float, nargs="+", help="μ values to try (default: the paper's 19)")
    p.add_argument("--out", help="write the grid (μ → score) and the best μ to this JSON file")
    p.add_argument("--write-config", action="store_true", help="store the best μ in --config (retrieval.mu)")
    p.add_argument("--batch-size", type=int, default=128, help="questions per encoding batch")


def run(args: argparse.Namespace) -> int:
    import numpy as np
    from tqdm.auto import tqdm

    from retriever.spar.index import MU_GRID
    from xqa.artifacts import write_json_atomic
    from xqa.commands._fusion_common import (
        Judge,
        format_table,
        load_pipeline,
        read_questions,
        write_tuned,
    )
    from xqa.errors import XqaError

    if args.at < 1:
        raise XqaError(f"--at must be >= 1 (got {args.at})")
    grid = sorted(set(args.grid or MU_GRID))
    if any(not (m >= 0 and math.isfinite(m)) for m in grid):
        raise XqaError("μ values must be finite and >= 0")
    questions = read_questions(args)
    pipe = load_pipeline(args, ("spar",))
    spar = pipe.component("spar").with_mu(1.0)
    qd, ql = [], []
    for i in tqdm(range(0, len(questions), args.batch_size), desc="encoding questions", unit="batch"):
        d, lx = spar.encode([q.question for q in questions[i: i + args.batch_size]])
        qd.append(d)
        ql.append(lx)
    qd, ql = np.concatenate(qd), np.concatenate(ql)
    judge = Judge(questions, pipe.store, args.metric, args.match)
    ks = sorted({20, args.at})
    table, rows = {}, []
    for mu in tqdm(grid, desc="μ grid", unit="μ"):
        sc = judge.scores(spar.search_encoded(qd, ql, max(ks), mu=mu), ks)
        table[mu] = sc[args.at]
        rows.append([f"{mu:.3g}"] + [sc[k] for k in ks])
    best = max(grid, key=lambda m: (table[m], -abs(math.log(m)) if m > 0 else -math.inf))
    name = "accuracy" if args.metric == "accuracy" else "recall"
    print(format_table(["μ"] + [f"{name}@{k}" for k in ks], rows))
    print(f"\nbest μ = {best:.3g} ({name}@{args.at} = {table[best]:.1f}, {len(questions)} questions)")
    if args.out:
        write_json_atomic(args.out, {"best_mu": best, "metric": f"{name}@{args.at}", "questions": len(questions),
                                     "grid": {f"{m:.6g}": v for m, v in table.items()}})
    if args.write_config:
        path = write_tuned(args, "mu", best)
        print(f"retrieval.mu = {best:.3g} written to {path}")
    return 0
