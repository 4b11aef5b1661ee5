"""``xqa reader kit``: the span reader's training, packed to travel (``reader.span.kit``).

Reads ``xqa data train``'s files and the converted encoder; writes one folder (about 40 MB
for every train split of ``../shared/data``) that ``xqa train reader --family span --kit KIT``
trains from on any machine: a GPU machine that can fetch nothing needs nothing else.
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.reader_artifacts import KitConfig

COMMAND = ConfigCommand(KitConfig)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.reader_artifacts import describe_kit, make_kit

    cfg = COMMAND.config(args)
    print(describe_kit(make_kit(cfg), cfg.out))
    return 0
