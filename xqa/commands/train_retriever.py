"""``xqa train retriever``: train a dense bi-encoder with the DPR loss (:mod:`xqa.training.dense`).

The trained model is ``OUT/best`` (``BiEncoder.load(OUT)`` finds it); ``OUT/checkpoint`` makes a
rerun resume. Under ``torchrun`` every process runs this same command.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from xqa.cli_config import ConfigCommand
from xqa.training.dense import DenseTrainConfig

COMMAND = ConfigCommand(DenseTrainConfig, settings=True, aliases={"size": ("--config",)}, groups={
    "data": ("train", "dev", "passages", "lang", "positives_from", "hard_negatives", "hard_negatives_depth",
             "arrow_cache"),
    "model": ("init", "init_passage", "size", "tokenizer", "layers", "freeze_embeddings", "separate", "pooling",
              "dropout", "query_max_length", "passage_max_length"),
    "training": ("out", "batch_size", "num_hard_negatives", "epochs", "max_steps", "lr", "weight_decay",
                 "warmup_steps", "grad_accum", "grad_cache_chunk", "eval_every", "save_every", "dev_questions",
                 "mask_false_negatives", "gradient_checkpointing", "bf16", "seed", "threads", "progress")})
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.training import dense
    from xqa.training.loop import run_summary, written
    from xqa.distributed import main_process

    from xqa.artifacts import bars_unless

    cfg = COMMAND.config(args)
    with bars_unless(cfg.progress):   # --quiet: transformers' loading and saving bars too
        result = dense.train(cfg)
    if main_process():  # one line per torchrun job, from rank 0
        print(f"model {written(result)} {Path(args.out) / 'best'} ({run_summary(result)})")
    return 0
