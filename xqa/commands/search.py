"""``xqa search``: retrieve passages for a question set, in the DPR / FiD result layout."""
from __future__ import annotations

import argparse

from xqa.commands._common import add_pipeline_arguments, add_selection_arguments


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions", nargs="+", required=True,
                   help="question files (XOR/MIA/MKQA JSONL, SQuAD JSON, NQ-open JSONL)")
    p.add_argument("--lang", default=None, help="language of questions whose records carry none")
    p.add_argument("--out", required=True, help="results file: .json (list) or .jsonl")
    p.add_argument("--trec", default=None, help="also write a TREC run file here")
    p.add_argument("--batch-size", type=int, default=64, help="questions per search call")
    add_pipeline_arguments(p)
    add_selection_arguments(p)


def run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from xqa.commands._common import load_pipeline, read_question_files
    from xqa.io import write_results, write_trec_run
    from xqa.records import RetrievalResult

    questions = read_question_files(args.questions, args.lang, args.where, args.per_lang)
    pipe = load_pipeline(args)
    results = []
    with tqdm(total=len(questions), desc=f"search ({pipe.config.retrieval.method})", unit="q") as bar:
        for i in range(0, len(questions), args.batch_size):
            chunk = questions[i:i + args.batch_size]
            for q, ctxs in zip(chunk, pipe.retrieve(chunk)):
                results.append(RetrievalResult(q, tuple(ctxs)))
            bar.update(len(chunk))
    write_results(args.out, results)
    if args.trec:
        write_trec_run(args.trec, results, tag=pipe.config.retrieval.method)
    print(f"{len(results)} questions → {args.out}")
    return 0
