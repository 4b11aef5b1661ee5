"""``xqa index dhr``: densified BM25 over e5 pieces + the dense vectors, one index (DHR).

DLR / DHR (Lin & Lin, "A Dense Representation Framework for Lexical and
Semantic Matching", TOIS 2023), without training: each passage's BM25 vector
over the dense encoder's tokenizer pieces is cut into M slices, each slice
keeps its maximum and that maximum's position; the dense passage vectors are
read from the dense index (not re-encoded). Searching scores
``GIP + λ·dense`` in one exact pass; λ is query-side (``xqa tune lambda``).
"""
from __future__ import annotations

import argparse

from retriever.dhr.index import DEFAULT_LAMBDA, DEFAULT_SLICES
from xqa.cli_config import ConfigCommand
from xqa.indexes import DhrIndexConfig

COMMAND = ConfigCommand(DhrIndexConfig, settings=True, defaults={"slices": DEFAULT_SLICES, "lam": DEFAULT_LAMBDA})
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.indexes import build_dhr, describe_dhr

    cfg = COMMAND.config(args)
    print(describe_dhr(build_dhr(cfg), cfg.out))
    return 0
