"""``xqa build``: a passage collection (or a folder of documents, cut into passages first) -> BM25,
cross-script BM25, dense and SPAR indexes, a reader and ``OUT/pipeline.json``, for
``xqa ask``/``answer``/``demo --config OUT/pipeline.json``.

Passages: JSONL (``{"id", "title", "text", "lang"}``; ``.gz`` too), DPR TSV (``--lang``) or a
Pyserini JsonCollection folder; or ``--documents``: files cut into passages with their
provenance (:mod:`xqa.documents`; report in ``OUT/passages-report.json``). A bad record fails
with file:line before anything is built; every stage is skipped when built and resumes when
interrupted (run the same command again).
"""
from __future__ import annotations

import argparse

from xqa.recipes.corpus import BuildConfig
from xqa.cli_config import ConfigCommand

COMMAND = ConfigCommand(BuildConfig, settings=True, exclusive=[("passages", "documents")], groups={
    None: ("passages", "documents", "out", "lang", "dev", "reader", "also_reader", "method", "k", "n_passages",
           "dense_model", "dense_max_length", "lexical_steps", "precision", "dhr_slices", "pieces", "bm25_aug",
           "threads"),
    "with --documents": ("split", "max_tokens", "overlap", "strict")})
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from xqa.recipes.corpus import corpus_build

    corpus_build(COMMAND.config(args)).run()
    return 0
