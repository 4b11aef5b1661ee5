"""``xqa search``: retrieve passages for a question set, in the DPR / FiD result layout
(:func:`xqa.runs.search_questions`)."""
from __future__ import annotations

import argparse

from xqa.cli_options import add_pipeline_arguments, add_selection_arguments
from xqa.runs import SEARCH_BATCH_SIZE


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions", nargs="+", required=True,
                   help="question files (XOR/MIA/MKQA JSONL, SQuAD JSON, NQ-open JSONL)")
    p.add_argument("--lang", default=None, help="language of questions whose records carry none")
    p.add_argument("--out", required=True, help="results file: .json (list) or .jsonl")
    p.add_argument("--trec", default=None, help="also write a TREC run file here")
    p.add_argument("--batch-size", type=int, default=SEARCH_BATCH_SIZE, help="questions per search call")
    add_pipeline_arguments(p)
    add_selection_arguments(p)


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import load_pipeline, read_questions
    from xqa.runs import search_questions

    questions = read_questions(args)
    results = search_questions(load_pipeline(args), questions, args.out, args.trec, args.batch_size)
    print(f"{len(results)} questions → {args.out}")
    return 0
