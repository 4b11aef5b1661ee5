"""``xqa reader runtime``: a reader's CPU runtime, checked against fp32 on shipped tuning questions
and timed on this CPU: the span reader's ``model.int8.onnx`` (``reader.span.runtime``), a
warm-started FiD's int8 and bf16 reading (``reader.fid.runtime``).

``xqa reader unpack`` runs it for the reader it writes; this command does it for any span reader
folder, e.g. one trained with ``xqa train reader --family span``. A runtime this machine built
before for the same folder contents is copied from xqa's cache (``xqa cache``;
``XQA_CACHE=off`` builds it anew).
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.reader_artifacts import RuntimeConfig

COMMAND = ConfigCommand(RuntimeConfig)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.reader_artifacts import build_runtime

    build_runtime(COMMAND.config(args), log=lambda line: print(line, flush=True))
    return 0
