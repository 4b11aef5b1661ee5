"""``xqa world build``: generate the embedded multilingual world (passages + questions)."""
from __future__ import annotations

import argparse
import sys

from xqa.cli_config import ConfigCommand
from xqa.world.generate import WorldBuildConfig

COMMAND = ConfigCommand(WorldBuildConfig)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.world.generate import build_world, describe_build

    c = COMMAND.config(args)
    stats = build_world(c.out, size=c.size, seed=c.seed, overwrite=c.overwrite, progress=sys.stderr.isatty())
    print(describe_build(stats, c.out))
    return 0
