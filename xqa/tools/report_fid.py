"""``xqa report fid``: a FiD against the span reader on the same questions, by the same metrics.

The tables of docs/reader.md's comparison, from the folder ``scripts/fid_report.sh`` fills (gold
paragraph, end to end on the shipped corpus and the MLQA pool for each number of passages read,
CPU time a question, the tuned evidence fusion); a file not there leaves its table out and is
named at the end. See :mod:`xqa.tools.lib.fid_report`.

Examples::

    xqa report fid runs/fid-report
    xqa report fid runs/fid-report --fid fid --passages 5 10 20 --out docs/fid-report.md
"""
from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="the folder scripts/fid_report.sh wrote")
    p.add_argument("--fid", default="fid", help="the FiD's name in the build (its files are named after it)")
    p.add_argument("--passages", type=int, nargs="+", default=[5, 10, 20], metavar="N",
                   help="the numbers of passages the FiD read end to end")
    p.add_argument("--out", metavar="FILE", help="also write the tables (Markdown) to FILE")


def run(args: argparse.Namespace) -> int:
    from xqa.tools.lib.fid_report import report

    folder = Path(args.folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder (scripts/fid_report.sh writes it)")
    text = report(folder, args.fid, tuple(args.passages))
    print(text)
    if args.out:
        from xqa.artifacts import write_text_atomic

        write_text_atomic(Path(args.out), text + "\n")
    return 0
