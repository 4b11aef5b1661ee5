"""``xqa train reader``: train the Fusion-in-Decoder reader on retrieval results
(:mod:`xqa.training.fid`), or with ``--family span`` the span reader on a pretrained encoder
(:mod:`xqa.training.span`).

``OUT/best/`` is the reader artifact, ``OUT/checkpoint/`` lets a rerun resume.
Several processes: ``torchrun --nproc-per-node G -m xqa.cli train reader ...``.
"""
from __future__ import annotations

import argparse
import functools

from xqa.cli_config import ConfigCommand

# Where --help lists the options: these (those the trainable families have) first; a family's
# other fields in a group of their own ("span reader (--family span)").
MAIN = ("family", "train", "dev", "out", "init", "size", "arch", "tokenizer", "n_context", "max_length",
        "max_answer_len", "sample_answers", "train_contexts", "labels", "copy_attention", "generator_share",
        "decoder_prompt", "eval_span_beams", "train_pool", "train_limit", "dev_limit", "eval_mode", "batch_size",
        "epochs", "max_steps", "lr", "weight_decay", "warmup_steps", "grad_accum", "max_grad_norm",
        "group_by_length", "eval_every", "save_every", "max_minutes", "log_every", "seed", "bf16",
        "gradient_checkpointing", "threads")


@functools.cache
def _configs() -> dict:
    """The training config of each reader family with a training entry (``reader.registry``)."""
    import importlib

    from reader.registry import families

    return {f.name: importlib.import_module(f.training).CONFIG for f in families() if f.training}


@functools.cache
def _command() -> ConfigCommand:
    from dataclasses import fields

    from xqa.training.reader import training_options

    configs = _configs()
    options = training_options(configs)
    names = [f.name for f in fields(options)]
    groups: dict[str | None, list[str]] = {None: [n for n in MAIN if n in names]}
    has = {family: {f.name for f in fields(cls) if f.init} for family, cls in configs.items()}
    for family, cls in configs.items():   # a family's group: what no other family has
        own = [f.name for f in fields(cls) if f.init and f.name in names
               and not any(f.name in g for g in groups.values())
               and not any(f.name in theirs for other, theirs in has.items() if other != family)]
        if own:
            groups[f"{family} reader (--family {family})"] = own
    groups[None] += [n for n in names if not any(n in g for g in groups.values())]
    return ConfigCommand(options, groups=groups, settings=True,
                         exclusive=[("init", "size")] if "size" in names else ())


def add_arguments(p: argparse.ArgumentParser) -> None:
    _command().add_arguments(p)


def config(args: argparse.Namespace):
    """The training config of the command line: the ``--family`` family's (``SpanTrainConfig``,
    ``FidTrainConfig``) from the options it has."""
    from xqa.training.reader import family_config

    return family_config(_command().config(args), _configs())


def run(args: argparse.Namespace) -> int:
    import importlib

    from reader.registry import get
    from xqa.distributed import main_process

    trainer = importlib.import_module(get(args.family).training)
    c = config(args)
    result = trainer.train(c)
    if main_process():
        print(trainer.summary(result, c))
    return 0
