"""``xqa train reader``: train the Fusion-in-Decoder reader on retrieval results
(:mod:`xqa.training.fid`), or with ``--arch span`` the span reader on a pretrained encoder
(:mod:`xqa.training.span`).

``OUT/best/`` is the reader artifact, ``OUT/checkpoint/`` lets a rerun resume.
Several processes: ``torchrun --nproc-per-node G -m xqa.cli train reader ...``.
"""
from __future__ import annotations

import argparse

from xqa.evaluation.reading import EVAL_MODES
from xqa.training.fid import FidTrainConfig as F
from xqa.training.reader import ReaderTrainConfig as R
from xqa.training.span import SpanTrainConfig as S


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--arch", dest="family", choices=_trainable(), default="fid",
                   help="fid: Fusion-in-Decoder on (m)T5 (generates); span: the extractive reader on a "
                        "pretrained encoder (--init an 'xqa convert e5' folder, or a span reader to continue "
                        "from, e.g. build/embedded/reader), trained on 'xqa data train' or 'xqa data own' files")
    p.add_argument("--train",
                   help="fid: training retrieval results (JSON list or JSONL); span: xqa data train's or xqa data "
                        "own's train.jsonl (not with --kit)")
    p.add_argument("--dev", help="dev retrieval results for EM/F1 validation (best kept)")
    p.add_argument("--out", required=True, help="run folder: OUT/best is the reader artifact")
    init = p.add_mutually_exclusive_group()
    init.add_argument("--init", help="start from a T5/mT5 checkpoint (hub name, HF folder or xqa reader)")
    init.add_argument("--config", choices=["tiny", "small"],
                      help="start from random weights of this size (needs --tokenizer); default tiny")
    p.add_argument("--set", dest="arch", action="append", default=[], metavar="KEY=VALUE",
                   help="with --config: change one MT5Config field of the size, e.g. --set num_decoder_layers=3 "
                        "(repeatable; integers, floats and strings)")
    p.add_argument("--tokenizer", help="tokenizer folder for --config (xqa train tokenizer)")
    p.add_argument("--n-context", type=int, default=F.n_context, help="passages per question (padded)")
    p.add_argument("--max-length", type=int, default=None,
                   help="tokens per encoded passage (fid: truncated, default 192; span: per window, default 256)")
    p.add_argument("--max-answer-len", type=int, default=R.max_answer_len, help="tokens of the target answer")
    p.add_argument("--sample-answers", action="store_true", help="train on a random gold answer each time")
    p.add_argument("--train-contexts", choices=["top", "gold", "answer", "evidence"], default=F.train_contexts,
                   help="training passages: the first N in fused order (top), or the gold passages "
                        "(positive_ids / has_answer / answer string) among the first --train-pool plus "
                        "the best-ranked others, still in fused order (gold); or as gold, but passages "
                        "holding the target answer itself (question's language) first and questions with "
                        "no such passage in the pool skipped (answer: learns to copy soonest from scratch); "
                        "or as answer, but a question with no such passage trains on its gold passages "
                        "(evidence: cross-lingual questions, whose answer is a translation, are kept)")
    p.add_argument("--labels", metavar="FILE",
                   help="answer label table (JSONL, xqa.world.labels; the embedded world's world/labels.jsonl): a "
                        "question whose answer is in none of its training passages but another name of the "
                        "answer is (the value as a passage in another language writes it) learns to copy that "
                        "name, which the pipeline, given the same table, answers in the question's language")
    p.add_argument("--copy-attention", type=float, default=F.copy_attention, metavar="W",
                   help="guided cross-attention: add W x (-log of the attention one head of the last decoder "
                        "layer puts on the answer's tokens in the passages) to the loss; teaches a reader "
                        "trained from scratch where to copy from (0: off)")
    p.add_argument("--generator-share", type=float, default=F.generator_share, metavar="LAMBDA",
                   help="with --copy-attention: score each answer token as LAMBDA x the generator's probability "
                        "+ (1 - LAMBDA) x the copy head's mass on it in the passages (a pointer-generator "
                        "with a fixed gate), and also read the spans that start where the copy head looks; "
                        "saved with the reader. 0: score with the product of the generator's probability "
                        "and the copy head's mass (weighted by W) instead")
    # another spelling of --generator-share, accepted; not shown in --help
    p.add_argument("--pointer-mix", dest="generator_share", type=float, help=argparse.SUPPRESS)
    p.add_argument("--decoder-prompt", action="store_true",
                   help="the decoder reads 'question: Q lang: L answer:' before the answer, so its first "
                        "answer step (and the copy head's pointer) knows what is asked; saved with the "
                        "reader (a reader given to --init that has one keeps it; any other, e.g. a hub mT5, "
                        "learns to read one)")
    p.add_argument("--eval-span-beams", type=int, default=F.eval_span_beams, metavar="K",
                   help="validate with 4 beams plus K passage-span candidates, as the pipeline reads "
                        "(-1: 8 with --copy-attention, whose pointer only shows there; else greedy)")
    p.add_argument("--train-pool", type=int, default=F.train_pool,
                   help="with --train-contexts gold/answer: look for gold passages among the first K (0: all)")
    p.add_argument("--train-limit", type=int, default=R.train_limit, help="use only the first N training questions (0: all)")
    p.add_argument("--dev-limit", type=int, default=R.dev_limit, help="validate on the first N dev questions (0: all)")
    p.add_argument("--eval-mode", choices=EVAL_MODES, default=R.eval_mode,
                   help="EM/F1 for validation: MIA official, its language-aware variant, or simple normalized")
    p.add_argument("--batch-size", type=int, default=R.batch_size, help="questions per batch per process")
    p.add_argument("--epochs", type=float, default=R.epochs, help="passes over the training set")
    p.add_argument("--max-steps", type=int, default=R.max_steps, help="optimizer steps; >0 overrides --epochs")
    p.add_argument("--lr", type=float, default=None,
                   help="peak learning rate (AdamW, linear schedule; default fid 5e-5, span 1e-4)")
    p.add_argument("--weight-decay", type=float, default=R.weight_decay, help="AdamW weight decay")
    p.add_argument("--warmup-steps", type=int, default=R.warmup_steps, help="linear warm-up steps")
    p.add_argument("--grad-accum", type=int, default=R.grad_accum, help="gradient accumulation steps")
    p.add_argument("--max-grad-norm", type=float, default=R.max_grad_norm, help="gradient clipping (0: off)")
    p.add_argument("--group-by-length", type=int, default=R.group_by_length, metavar="W",
                   help="batch questions of similar input length: sort each window of W batches by length, "
                        "then shuffle the batches (less padding, faster steps; 0: plain random batches)")
    p.add_argument("--eval-every", type=int, default=R.eval_every, help="steps between validations (0: every epoch)")
    p.add_argument("--save-every", type=int, default=R.save_every, help="steps between resumable checkpoints")
    p.add_argument("--max-minutes", type=float, default=R.max_minutes,
                   help="stop after this many minutes of training: a checkpoint is saved, OUT/best kept, and "
                        "running the command again goes on from there (0: no limit)")
    p.add_argument("--log-every", type=int, default=R.log_every, help="steps between loss log lines")
    p.add_argument("--seed", type=int, default=R.seed, help="random seed (model init and data order)")
    p.add_argument("--no-bf16", action="store_true", help="disable bf16 autocast on CUDA")
    p.add_argument("--gradient-checkpointing", action="store_true",
                   help="trade compute for memory (CUDA only)")
    p.add_argument("--threads", type=int, default=R.threads, help="torch CPU threads (0: torch default)")
    _add_span_arguments(p)


def _add_span_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("span reader (--arch span)")
    g.add_argument("--passages", help="passage file the questions' positive_ids and negative_ids point into")
    g.add_argument("--layers", type=int, default=S.layers,
                   help="keep the encoder's first N layers (0: all); half the layers read twice as fast")
    g.add_argument("--negatives", type=int, default=S.negatives,
                   help="negative passages per question in a batch (its BM25 negatives, topped up at random)")
    g.add_argument("--stride", type=int, default=S.stride, help="tokens shared by two windows of a long passage")
    g.add_argument("--train-embeddings", action="store_true",
                   help="train the word-embedding matrix too (frozen by default: 96M of e5-small's 118M "
                        "parameters; frozen, a CPU step is cheaper and the shipped weights need none of it)")
    g.add_argument("--per-source", type=int, default=S.per_source, metavar="N",
                   help="at most N training questions from one source set (0: all), sampled with --seed")
    g.add_argument("--dropout", type=float, default=None, help="hidden dropout (default: the encoder's)")
    g.add_argument("--kit", metavar="KIT",
                   help="train from a kit ('xqa reader kit': the questions, paragraphs and encoder in one small "
                        "folder) instead of --train/--passages/--init; OUT/best then holds what training changed, "
                        "which 'xqa reader pack --reader OUT' adds to the converted encoder")
    g.add_argument("--mix", type=float, default=None, metavar="ALPHA",
                   help="draw training questions over the source sets with probability proportional to "
                        "n_set^ALPHA (temperature sampling: 1 as the data holds them, 0 every set alike); "
                        "--epochs counts draws of the whole training set's size (default with --kit: 0.7; "
                        "else off)")


def _trainable() -> list[str]:
    """The reader families with a training entry (``reader.registry``)."""
    from reader.registry import families

    return [f.name for f in families() if f.training]


def _trainer(args: argparse.Namespace):
    """The training module of ``--arch``'s family: ``CONFIG``, ``train(config)``, ``summary``."""
    import importlib

    from reader.registry import get

    return importlib.import_module(get(args.family).training)


def config(args: argparse.Namespace):
    """The training config of the command line: the ``--arch`` family's (``SpanTrainConfig``,
    ``FidTrainConfig``); ``--config`` is the size of a model trained from random weights."""
    from dataclasses import fields

    from xqa.cli_options import to_config

    cls = _trainer(args).CONFIG
    size = {"size": args.config} if any(f.name == "size" for f in fields(cls)) else {}
    return to_config(cls, args, bf16=not args.no_bf16, **size)


def run(args: argparse.Namespace) -> int:
    from xqa.training import main_process

    trainer = _trainer(args)
    c = config(args)
    result = trainer.train(c)
    if main_process():
        print(trainer.summary(result, c))
    return 0
