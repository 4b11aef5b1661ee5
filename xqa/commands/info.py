"""``xqa info``: what a pipeline holds and how it runs on this machine.

Examples::

    xqa info                                   # the embedded default (build/embedded/pipeline.json)
    xqa info --config build/mine/pipeline.json --json -

It loads nothing: it reads the pipeline config and the config files of the folders it names
(:mod:`xqa.info`), so it answers in about a second even for a full-scale build.
"""
from __future__ import annotations

import argparse
import json

from xqa.cli_config import ConfigCommand, Option
from xqa.cli_options import CONFIG_ENV, DEFAULT_CONFIG
from xqa.info import InfoConfig

CONFIG = Option(name="config", flag="--config", kind=str, default=None, optional=True,
                help=f"pipeline config JSON (default: ${CONFIG_ENV}, else {DEFAULT_CONFIG}, which 'make demo' builds)")
COMMAND = ConfigCommand(InfoConfig, extra=[CONFIG], groups={None: ("config", "json")})
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.artifacts import write_json_atomic
    from xqa.cli_options import config_path, missing_config
    from xqa.info import describe, render

    cfg = COMMAND.config(args)
    path = config_path(args)   # --config, else $XQA_CONFIG, else the embedded build's
    if not path.is_file():
        raise missing_config(path, args)
    described = describe(path)
    if cfg.json == "-":
        print(json.dumps(described, ensure_ascii=False, indent=2))
        return 0
    print("\n".join(render(described)))
    if cfg.json:
        write_json_atomic(cfg.json, described)
    return 0
