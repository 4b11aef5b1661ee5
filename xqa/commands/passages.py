"""``xqa passages``: documents (a folder of .txt/.md/.html/.pdf/.docx files, or WikiExtractor
``--json`` output) → one passage JSONL with each passage's provenance, and its report.

The step ``xqa build --documents`` runs first; on its own it prepares passages for
``xqa build --passages`` or for inspection. Streams (a Wikipedia dump in constant memory),
shows documents/s, resumes when run again after an interruption, and writes ``OUT`` whole
or not at all; ``OUT``'s ``-report.json`` sibling lists what was read and skipped.
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.documents.options import PassagesConfig

COMMAND = ConfigCommand(PassagesConfig)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.documents.options import write_passages

    write_passages(COMMAND.config(args))
    return 0
