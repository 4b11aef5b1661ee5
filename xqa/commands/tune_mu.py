"""``xqa tune mu``: pick SPAR's query-side weight μ on a dev set (SPAR, Chen et al. 2022,
Appendix A; :func:`xqa.evaluation.tuning.tune_mu`).

Questions are encoded once (dense and Λ); each of the 19 grid values
(0.1 … 1.0 step 0.1 and their reciprocals) is one FAISS search of
``[Q ; μ·QΛ]`` against the unchanged SPAR index, scored by R@100 (top-100
answer accuracy, as the paper does for ODQA; or recall of ``positive_ids``).
Ties go to the μ closest to 1. ``--write-config`` stores μ in the pipeline config.
"""
from __future__ import annotations

import argparse

from xqa.cli_options import add_question_arguments, add_source_arguments
from xqa.evaluation.judge import METRICS
from xqa.evaluation.tuning import MuTuneConfig as D


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_question_arguments(p)
    add_source_arguments(p)
    p.add_argument("--metric", choices=METRICS, default=D.metric,
                   help="top-k answer accuracy (R@k in the ODQA sense), or recall@k of positive_ids")
    p.add_argument("--at", type=int, default=D.at, help="the k of the metric (the paper picks μ by R@100)")
    p.add_argument("--grid", type=float, nargs="+", help="μ values to try (default: the paper's 19)")
    p.add_argument("--out", help="write the grid (μ → score) and the best μ to this JSON file")
    p.add_argument("--write-config", action="store_true", help="store the best μ in --config (retrieval.mu)")
    p.add_argument("--batch-size", type=int, default=D.batch_size, help="questions per encoding batch")


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import config_path, load_pipeline, read_questions, to_config
    from xqa.evaluation.tuning import check_writable, tune_mu

    write = check_writable(config_path(args)) if args.write_config else None
    questions = read_questions(args)
    pipe = load_pipeline(args, ("spar",))
    result = tune_mu(pipe, questions, to_config(D, args, write_config=write))
    print(result.report)
    if result.written:
        print(f"retrieval.mu = {result.best:.3g} written to {result.written}")
    return 0
