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

from xqa.cli_config import ConfigCommand
from xqa.cli_options import add_question_arguments, add_source_arguments, write_config_option
from xqa.evaluation.tuning import LambdaTuneConfig

COMMAND = ConfigCommand(LambdaTuneConfig, exclude=("match", "write_config"), groups={
    None: ("metric", "at", "grid", "out", "write_config", "batch_size")},
    extra=(write_config_option("store the best λ in --config (retrieval.lam)"),))


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_question_arguments(p)
    add_source_arguments(p)
    COMMAND.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import config_path, load_pipeline, read_questions
    from xqa.evaluation.tuning import check_writable, tune_lambda

    write = check_writable(config_path(args), "λ") if args.write_config else None
    questions = read_questions(args)
    pipe = load_pipeline(args, ("dhr",))
    result = tune_lambda(pipe, questions, COMMAND.config(args, match=args.match, write_config=write))
    print(result.report)
    if result.written:
        print(f"retrieval.lam = {result.best:g} written to {result.written}")
    return 0
