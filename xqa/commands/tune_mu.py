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

from xqa.cli_config import ConfigCommand
from xqa.cli_options import add_question_arguments, add_source_arguments, write_config_option
from xqa.evaluation.tuning import MuTuneConfig

COMMAND = ConfigCommand(MuTuneConfig, exclude=("match", "write_config"), groups={
    None: ("metric", "at", "grid", "out", "write_config", "batch_size")},
    extra=(write_config_option("store the best μ in --config (retrieval.mu)"),))


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_question_arguments(p)
    add_source_arguments(p)
    COMMAND.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import config_path, load_pipeline, read_questions
    from xqa.evaluation.tuning import check_writable, tune_mu

    write = check_writable(config_path(args)) if args.write_config else None
    questions = read_questions(args)
    pipe = load_pipeline(args, ("spar",))
    result = tune_mu(pipe, questions, COMMAND.config(args, match=args.match, write_config=write))
    print(result.report)
    if result.written:
        print(f"retrieval.mu = {result.best:.3g} written to {result.written}")
    return 0
