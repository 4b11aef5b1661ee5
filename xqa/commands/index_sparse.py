"""``xqa index sparse``: one BM25 (Lucene) index per language of a passage file,
or with ``--cross-script`` one romanized index of all of them.

A thin wrapper over :func:`xqa.indexes.build_sparse`; prints
which analyzer each language got, marking fallbacks.
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.indexes import SparseIndexConfig

COMMAND = ConfigCommand(SparseIndexConfig, settings=True)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.indexes import build_sparse, describe_sparse

    cfg = COMMAND.config(args)
    print(describe_sparse(build_sparse(cfg), cfg.out))
    return 0
