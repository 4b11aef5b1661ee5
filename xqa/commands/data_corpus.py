"""``xqa data corpus``: make the shipped multilingual Wikipedia sample from the real QA sets.

Deterministic: the same data folder gives byte-identical files. The repository ships its
output (``xqa/corpus``); run this to check it or to make a larger one (``--per-language``).
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.data.corpus import PER_LANGUAGE

    p.add_argument("--data", default=None, help="the real QA sets folder (default: $XQA_DATA or ../shared/data)")
    p.add_argument("--out", default=None, help="folder for passages.jsonl.gz, questions.jsonl.gz, NOTICE "
                   "(default: the package's own xqa/corpus)")
    p.add_argument("--per-language", type=int, default=PER_LANGUAGE,
                   help="paragraphs taken from each non-MLQA language's set (id, ja, ko, sw, th; 0: none)")
    p.add_argument("--mlqa-pool", action="store_true",
                   help="every MLQA dev paragraph of its 7 languages (the pool of the MLQA retrieval report) "
                        "instead of the shipped share; use with --per-language 0 and another --out")


def run(args: argparse.Namespace) -> int:
    from collections import Counter

    from xqa.data import corpus
    from xqa.data.corpus import CORPUS_DIR

    passages, questions = corpus.build(args.data, args.per_language, mlqa_all=args.mlqa_pool)
    out = args.out or str(CORPUS_DIR)
    corpus.write(out, passages, questions)
    langs = Counter(p["lang"] for p in passages)
    print(f"{len(passages)} passages in {len(langs)} languages "
          f"({', '.join(f'{k} {v}' for k, v in sorted(langs.items()))}), {len(questions)} questions -> {out}")
    return 0
