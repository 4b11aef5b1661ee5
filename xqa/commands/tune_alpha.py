"""``xqa tune alpha``: grid-search the score-hybrid weight α on a dev set
(:func:`xqa.evaluation.tuning.tune_alpha`).

Dense and BM25 are each searched once to depth k'; for every α in [0, 2]
step 0.05 the hybrid ``dense + α·BM25`` over the union is re-ranked and scored
(top-k answer accuracy, or recall@k of ``positive_ids``). Ties go to the
smaller α. ``--write-config`` stores the best α in the pipeline config.

``--pair METHOD`` tunes another score hybrid of two parts the same way (a method whose
tunable weight has ``sides`` in :mod:`xqa.methods`): ``--pair sparse+roman``, BM25 in the
question's language plus w × cross-script BM25 (``retrieval.roman_weight``).
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.cli_options import add_question_arguments, add_source_arguments, write_config_option
from xqa.evaluation.tuning import AlphaTuneConfig

COMMAND = ConfigCommand(AlphaTuneConfig, exclude=("match", "write_config"), groups={
    None: ("metric", "at", "depth", "normalize", "step", "max_alpha", "out", "write_config", "batch_size", "pair")},
    extra=(write_config_option("store the best α in --config (retrieval.alpha, with retrieval.normalize as tuned)"),))


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_question_arguments(p)
    add_source_arguments(p)
    COMMAND.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import config_path, load_pipeline, read_questions
    from xqa.evaluation.tuning import check_writable, tune_alpha

    write = check_writable(config_path(args)) if args.write_config else None
    from xqa.methods import hybrid_pair

    cfg = COMMAND.config(args, match=args.match, write_config=write)
    _, tunable = hybrid_pair(cfg.pair)
    questions = read_questions(args)
    pipe = load_pipeline(args, tunable.sides)
    result = tune_alpha(pipe, questions, cfg)
    print(result.report)
    if result.written:
        also = (f" (and retrieval.normalize = {str(result.record['normalize']).lower()}, the scores it was tuned on)"
                if tunable.field == "alpha" else "")
        print(f"retrieval.{tunable.field} = {result.best:.2f}{also} written to {result.written}")
    return 0
