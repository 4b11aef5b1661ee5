"""``xqa data corpus``: make the shipped multilingual Wikipedia sample from the real QA sets.

Deterministic: the same data folder gives byte-identical files. The repository ships its
output (``xqa/corpus``); run this to check it or to make a larger one (``--per-language``).
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.data.corpus import CorpusConfig

COMMAND = ConfigCommand(CorpusConfig)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from collections import Counter

    from xqa.data import corpus
    from xqa.data.corpus import CORPUS_DIR

    cfg = COMMAND.config(args)
    passages, questions = corpus.build(cfg.data, cfg.per_language, mlqa_all=cfg.mlqa_pool)
    out = cfg.out or str(CORPUS_DIR)
    corpus.write(out, passages, questions)
    langs = Counter(p["lang"] for p in passages)
    print(f"{len(passages)} passages in {len(langs)} languages "
          f"({', '.join(f'{k} {v}' for k, v in sorted(langs.items()))}), {len(questions)} questions -> {out}")
    return 0
