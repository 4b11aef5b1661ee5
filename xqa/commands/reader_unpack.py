"""``xqa reader unpack``: a packed reader (``xqa reader pack``; span or FiD) added onto its base
encoder, with its family's CPU runtime checked and timed on this CPU."""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.reader_artifacts import UnpackConfig

COMMAND = ConfigCommand(UnpackConfig, groups={None: ("delta", "base", "out", "int8", "threads")})
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.reader_artifacts import unpack_reader

    unpack_reader(COMMAND.config(args), log=lambda line: print(line, flush=True))
    return 0
