"""``xqa tune lambda``: pick DHR's dense weight λ on a dev set (score = GIP + λ·dense).

DHR (Lin & Lin, "A Dense Representation Framework for Lexical and Semantic
Matching", TOIS 2023) adds the densified-BM25 score GIP and λ times the dense
inner product. The scores are used raw, not normalised: GIP is on the BM25
scale (about 10-40 for a matching passage) while e5 cosines sit near 0.8 and
differ between passages by a few hundredths, so the useful λ is large; the
default grid runs from 0 (GIP alone) through 0.05 … 2 up to 5000, where the
dense part decides the ranking. Questions are tokenized and encoded once;
each λ is one exact pass over the unchanged index, scored by R@k (top-k
answer accuracy, or recall of ``positive_ids``). Ties go to the smaller λ.
``--write-config`` stores λ in the pipeline config (``retrieval.lam``).
The search is :func:`xqa.evaluation.tuning.tune_lambda`.
"""
from __future__ import annotations

import argparse

from xqa.cli_options import add_question_arguments, add_source_arguments
from xqa.evaluation.judge import METRICS
from xqa.evaluation.tuning import LambdaTuneConfig as D


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_question_arguments(p)
    add_source_arguments(p)
    p.add_argument("--metric", choices=METRICS, default=D.metric,
                   help="top-k answer accuracy (R@k in the ODQA sense), or recall@k of positive_ids")
    p.add_argument("--at", type=int, default=D.at, help="the k of the metric")
    p.add_argument("--grid", type=float, nargs="+",
                   help="λ values to try (default: 0, 0.05 … 2, then up to 5000; raw scores)")
    p.add_argument("--out", help="write the grid (λ → score) and the best λ to this JSON file")
    p.add_argument("--write-config", action="store_true", help="store the best λ in --config (retrieval.lam)")
    p.add_argument("--batch-size", type=int, default=D.batch_size, help="questions per encoding and search batch")


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import config_path, load_pipeline, read_questions, to_config
    from xqa.evaluation.tuning import check_writable, tune_lambda

    write = check_writable(config_path(args), "λ") if args.write_config else None
    questions = read_questions(args)
    pipe = load_pipeline(args, ("dhr",))
    result = tune_lambda(pipe, questions, to_config(D, args, write_config=write))
    print(result.report)
    if result.written:
        print(f"retrieval.lam = {result.best:g} written to {result.written}")
    return 0
