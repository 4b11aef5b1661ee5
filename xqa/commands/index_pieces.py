"""``xqa index pieces``: one Lucene BM25 index of every passage's multilingual-e5 SentencePiece
pieces (all languages together), searched by the methods ``pieces`` and ``bm25-aug``.

A thin wrapper over :func:`xqa.indexes.build_pieces`.
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.indexes import PiecesIndexConfig

COMMAND = ConfigCommand(PiecesIndexConfig, settings=True)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.indexes import build_pieces, describe_pieces

    cfg = COMMAND.config(args)
    print(describe_pieces(build_pieces(cfg), cfg.out))
    return 0
