"""``xqa reader pack``: a trained reader (span or FiD; a folder, a training run, or a run of
``xqa train reader --kit``) as the int8 difference to its base encoder.

The repository ships its default reader this way (``xqa/models/span-reader``, 21.8 MB instead
of the reader folder's 449 MiB of fp32 weights); ``xqa reader unpack`` (and ``xqa build``) adds
it back onto the converted encoder.
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.reader_artifacts import PackConfig

COMMAND = ConfigCommand(PackConfig)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.reader_artifacts import pack_reader

    out = pack_reader(COMMAND.config(args))
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"wrote {out} ({size / 1e6:.1f} MB)")
    return 0
