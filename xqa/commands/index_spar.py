"""``xqa index spar``: one FAISS index of ``[P(p) ; PΛ(p)]`` (SPAR, Chen et al. 2022, §4.2).

The dense passage vectors are read from the dense index's own encoded shards
when it kept them (no re-encoding); Λ's are encoded in resumable chunks under
``OUT/lexical``. μ is applied to queries, so ``xqa tune mu`` never rebuilds this.
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.indexes import SparIndexConfig

COMMAND = ConfigCommand(SparIndexConfig, settings=True)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.indexes import build_spar, describe_spar

    from xqa.artifacts import bars_unless

    cfg = COMMAND.config(args)
    with bars_unless(cfg.progress):   # --quiet: transformers' loading bars too
        print(describe_spar(build_spar(cfg), cfg.out))
    return 0
