"""``xqa search``: retrieve passages for a question set, in the DPR / FiD result layout
(:func:`xqa.runs.search_questions`)."""
from __future__ import annotations

import argparse
from pathlib import Path

from xqa.cli_config import ConfigCommand
from xqa.cli_options import add_pipeline_arguments, add_selection_arguments
from xqa.errors import XqaError
from xqa.runs import QuestionFiles, SearchConfig

QUESTIONS = ConfigCommand(QuestionFiles)
COMMAND = ConfigCommand(SearchConfig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    QUESTIONS.add_arguments(p)
    COMMAND.add_arguments(p)
    add_pipeline_arguments(p)
    add_selection_arguments(p)


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import load_pipeline, read_questions
    from xqa.runs import search_questions, warn_unaskable

    cfg = COMMAND.config(args)
    for flag, out in (("--out", cfg.out), ("--trec", cfg.trec)):
        if out is not None and Path(out).is_dir():   # said before the search, not after it
            raise XqaError(f"{flag} {out} is a folder; name the file to write (e.g. {Path(out) / 'results.jsonl'})")
    from xqa.records import AUTO_LANG

    # a spoiled question file is said before the pipeline loads; --lang auto: onto the pipeline's languages
    languages = load_pipeline(args).config.languages if args.lang == AUTO_LANG else ()
    questions = read_questions(args, languages)
    warn_unaskable(questions, "search", "each gets no passages")
    results = search_questions(load_pipeline(args), questions, cfg.out, cfg.trec, cfg.batch_size)
    print(f"{len(results)} questions → {cfg.out}")
    return 0
