"""``xqa tune alpha``: grid-search the score-hybrid weight α on a dev set
(:func:`xqa.evaluation.tuning.tune_alpha`).

Dense and BM25 are each searched once to depth k'; for every α in [0, 2]
step 0.05 the hybrid ``dense + α·BM25`` over the union is re-ranked and scored
(top-k answer accuracy, or recall@k of ``positive_ids``). Ties go to the
smaller α. ``--write-config`` stores the best α in the pipeline config.

``--pair sparse+roman`` tunes the other score hybrid the same way: BM25 in the
question's language plus w × cross-script BM25 (``retrieval.roman_weight``).
"""
from __future__ import annotations

import argparse

from xqa.cli_options import add_question_arguments, add_source_arguments
from xqa.evaluation.judge import METRICS
from xqa.evaluation.tuning import PAIRS
from xqa.evaluation.tuning import AlphaTuneConfig as D


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_question_arguments(p)
    add_source_arguments(p)
    p.add_argument("--metric", choices=METRICS, default=D.metric,
                   help="top-k answer accuracy, or recall@k of the questions' positive_ids")
    p.add_argument("--at", type=int, default=D.at, help="the k of the metric (Ma et al. tune top-20)")
    p.add_argument("--depth", type=int, default=D.depth, help="k': each side's depth; the union is re-ranked")
    p.add_argument("--normalize", action="store_true", help="min-max normalise each list first (Hybrid_norm)")
    p.add_argument("--step", type=float, default=D.step, help="grid step over [0, 2]")
    p.add_argument("--max-alpha", type=float, default=D.max_alpha, help="grid upper end")
    p.add_argument("--out", help="write the grid (α → score) and the best α to this JSON file")
    p.add_argument("--write-config", action="store_true", help="store the best α in --config (retrieval.alpha)")
    p.add_argument("--batch-size", type=int, default=D.batch_size, help="questions per search call")
    p.add_argument("--pair", choices=PAIRS, default=D.pair,
                   help="which hybrid: dense + α·BM25 (retrieval.alpha), or BM25 + w·cross-script BM25 "
                        "(retrieval.roman_weight, method sparse+roman)")


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import config_path, load_pipeline, read_questions, to_config
    from xqa.evaluation.tuning import check_writable, tune_alpha

    roman = args.pair == "sparse+roman"
    write = check_writable(config_path(args)) if args.write_config else None
    questions = read_questions(args)
    pipe = load_pipeline(args, ("sparse", "roman") if roman else ("dense", "sparse"))
    result = tune_alpha(pipe, questions, to_config(D, args, write_config=write))
    print(result.report)
    if result.written and roman:
        print(f"retrieval.roman_weight = {result.best:.2f} written to {result.written}")
    elif result.written:
        print(f"retrieval.alpha = {result.best:.2f} written to {result.written}")
    return 0
