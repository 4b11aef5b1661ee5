"""``xqa train bm25-aug``: learn BM25 query augmentation end to end (Chen & Wiseman 2023,
"BM25 Query Augmentation Learned End-to-End") over multilingual-e5's pieces
(:mod:`xqa.training.bm25_aug`). The trained model is ``OUT/best``; a rerun resumes.
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.training.bm25_aug import Bm25AugTrainConfig

COMMAND = ConfigCommand(Bm25AugTrainConfig, settings=True, groups={
    "data": ("train", "dev", "passages", "per_set", "dev_questions"),
    "model": ("init", "top_terms", "query_max_length", "activation"),
    "training": ("out", "batch_size", "hard_negatives", "lr", "head_lr_scale", "reg", "weight_decay",
                 "warmup_steps", "epochs", "max_steps", "max_minutes", "eval_every", "save_every", "seed",
                 "threads", "progress")})
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from xqa.training import bm25_aug
    from xqa.training.loop import run_summary, written

    from xqa.artifacts import bars_unless

    cfg = COMMAND.config(args)
    with bars_unless(cfg.progress):   # --quiet: transformers' loading and saving bars too
        result = bm25_aug.train(cfg)
    print(f"model {written(result)} {Path(args.out) / 'best'} ({run_summary(result)})")
    return 0
