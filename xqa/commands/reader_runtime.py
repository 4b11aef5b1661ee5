"""``xqa reader runtime``: a span reader's int8 CPU runtime (``model.int8.onnx``), checked against
fp32 on shipped tuning questions and timed on this CPU (``reader.span.runtime``).

``xqa reader unpack`` runs it for the reader it writes; this command does it for any span reader
folder, e.g. one trained with ``xqa train reader --arch span``.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reader", required=True, help="span reader folder (or a training run: its best/)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads the check times with (0: torch's default)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from reader.span.runtime import build_and_report
    from xqa.errors import XqaError

    folder = Path(args.reader)
    if not (folder / "encoder").is_dir() and (folder / "best" / "encoder").is_dir():
        folder = folder / "best"
    if not (folder / "encoder").is_dir():
        raise XqaError(f"{folder}: not a span reader folder (no encoder/)")
    build_and_report(folder, threads=args.threads, log=lambda line: print(line, flush=True))
    return 0
