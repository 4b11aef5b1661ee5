"""``xqa train lexical``: train SPAR's lexical model Λ to imitate BM25 (:mod:`xqa.training.lexical`).

The model is ``OUT/best``; rerunning with the same ``OUT`` resumes.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from xqa.cli_config import ConfigCommand
from xqa.training.lexical import LexicalTrainConfig

COMMAND = ConfigCommand(LexicalTrainConfig, settings=True, aliases={"size": ("--config",)}, groups={
    "teacher data": ("passages", "bm25", "lang", "dev", "dev_size", "depth", "positives", "negatives",
                     "sentences_per_passage", "min_words", "max_queries"),
    "model (as xqa train retriever)": ("init", "init_passage", "size", "tokenizer", "layers", "freeze_embeddings",
                                       "separate", "pooling", "dropout", "query_max_length", "passage_max_length"),
    "training": ("out", "batch_size", "epochs", "max_steps", "lr", "weight_decay", "warmup_steps", "grad_accum",
                 "eval_every", "save_every", "mask_false_negatives", "gradient_checkpointing", "bf16", "seed",
                 "threads", "progress")})
add_arguments = COMMAND.add_arguments


def config(args: argparse.Namespace) -> LexicalTrainConfig:
    """The training config of the command line."""
    return COMMAND.config(args)


def run(args: argparse.Namespace) -> int:
    from xqa.training import lexical
    from xqa.training.loop import run_summary, written
    from xqa.distributed import main_process

    from xqa.artifacts import bars_unless

    cfg = config(args)
    with bars_unless(cfg.progress):   # --quiet: transformers' loading and saving bars too
        result = lexical.train(cfg)
    if main_process():  # one line per torchrun job, from rank 0
        print(f"Λ {written(result)} {Path(args.out) / 'best'} ({run_summary(result)})")
        if cfg.freeze_embeddings:   # the init's word embeddings, as every such Λ's: one copy on disk
            from xqa.runtime_cache import share_files

            share_files(Path(args.out) / "best", "Λ's frozen word embeddings")
    return 0
