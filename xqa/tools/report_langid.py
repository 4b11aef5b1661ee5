"""``xqa report langid``: language identification accuracy per language and question set.

The script and word rules, lingua alone, and the two combined (what xqa uses),
each mapped onto the pipeline's languages, "unknown" for any other; on the
question sets of ``../shared/data`` (skipped with a message when absent) and
on hand-written questions in languages outside the pipeline's. See
:mod:`xqa.tools.lib.langid` and docs/langid.md.

Examples::

    xqa report langid                          # 1000 questions per set and language
    xqa report langid --per-language 200 --out build/langid.md
    xqa report langid --grid                   # the veto threshold on the train splits
    xqa report langid --documents              # documents' languages (xqa build --documents)
"""
from __future__ import annotations

import argparse
from pathlib import Path



def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.tools.lib.langid import PIPELINE_LANGUAGES

    p.add_argument("--data", default=None, metavar="DIR",
                   help="the shared data folder (default: $XQA_DATA, else ../shared/data beside the repository; "
                        "its sets are skipped when absent)")
    p.add_argument("--languages", default=",".join(PIPELINE_LANGUAGES),
                   help="comma-separated languages the pipeline has (others must come out unknown)")
    p.add_argument("--per-language", type=int, default=1000, help="questions sampled per set and language")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument("--grid", action="store_true",
                   help="instead: mean accuracy on the train splits for each veto threshold")
    p.add_argument("--documents", nargs="?", const="", default=None, metavar="PASSAGES",
                   help="instead: the language of documents as xqa build --documents identifies it, on a "
                        "passage file whose languages are known (default: the shipped corpus's paragraphs), "
                        "whole and cut to --cuts characters")
    p.add_argument("--cuts", type=int, nargs="+", default=[0, 200, 80], metavar="CHARS",
                   help="--documents: text lengths measured, in characters (0: the whole passage)")
    p.add_argument("--out", metavar="FILE", help="also write the table (Markdown) to FILE")


def run(args: argparse.Namespace) -> int:
    from xqa.tools.lib import langid as bench

    if args.documents is not None:   # "": the shipped corpus's paragraphs
        samples = bench.document_samples(args.documents or None, args.cuts)
        text = bench.document_table(bench.measure_documents(samples))
    else:
        text = _questions(args)
        if text is None:
            return 0
    print(text)
    if args.out:
        from xqa.artifacts import write_text_atomic

        write_text_atomic(Path(args.out), text + "\n")
    return 0


def _questions(args: argparse.Namespace) -> str | None:
    """The questions' table (or, with --grid, the threshold's); None where --grid finds no train split."""
    import sys

    from xqa.tools.lib import langid as bench

    languages = [c.strip() for c in args.languages.split(",") if c.strip()]
    from xqa.data.sets import shared_data

    data = Path(args.data) if args.data else shared_data()
    samples = []
    if data.is_dir():
        samples = bench.load_samples(data, args.per_language, args.seed)
    else:
        print(f"xqa report langid: skipped the public question sets: {data} not found "
              f"(pass --data DIR); measuring the hand-written probe only", file=sys.stderr)
    if args.grid:
        train = [s for s in samples if s.use == "train"]
        if not train:
            print("xqa report langid --grid: skipped: no train split found", file=sys.stderr)
            return None
        return bench.grid_table(bench.veto_grid(train, languages))
    return bench.table(bench.measure(samples + bench.probe_samples(), languages))
