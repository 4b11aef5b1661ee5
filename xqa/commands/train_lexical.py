"""``xqa train lexical``: train SPAR's lexical model Λ to imitate BM25 (:mod:`xqa.training.lexical`).

The model is ``OUT/best``; rerunning with the same ``OUT`` resumes.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from xqa.training.dense import DEFAULT_SIZE
from xqa.training.lexical import LexicalTrainConfig as D


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("teacher data")
    g.add_argument("--passages", required=True, help="passage file (JSONL or DPR TSV): queries are its sentences")
    g.add_argument("--bm25", required=True, help="BM25 index folder of these passages (xqa index sparse): the teacher")
    g.add_argument("--lang", help="language of passage files that carry none (DPR TSV)")
    g.add_argument("--dev", help="validation questions (any question layout; their text only): the teacher's "
                                 "top-1 is the positive. Default: held-out sentences")
    g.add_argument("--dev-size", type=int, default=D.dev_size, help="held-out sentences for validation without --dev")
    g.add_argument("--depth", type=int, default=D.depth, help="K: teacher hits per query")
    g.add_argument("--positives", type=int, default=D.positives, help="n_p: top teacher hits used as positives")
    g.add_argument("--negatives", type=int, default=D.negatives, help="n_n: bottom teacher hits (of the top K) used as hard negatives")
    g.add_argument("--sentences-per-passage", type=int, default=D.sentences_per_passage, help="sentence queries sampled per passage")
    g.add_argument("--min-words", type=int, default=D.min_words, help="shortest sentence used as a query, in words")
    g.add_argument("--max-queries", type=int, default=D.max_queries, help="cap on training queries (0: no cap)")
    m = p.add_argument_group("model (as xqa train retriever)")
    m.add_argument("--init", metavar="NAME_OR_DIR", help="start from a hub model or a local HF / bi-encoder folder")
    m.add_argument("--init-passage", metavar="NAME_OR_DIR", help="separate passage tower start")
    m.add_argument("--config", choices=("tiny", "small", "base"), default=None,
                   help=f"build a random mLUKE-architecture model of this size (needs --tokenizer; "
                        f"default {DEFAULT_SIZE} when no --init)")
    m.add_argument("--tokenizer", help="tokenizer folder for --config (xqa train tokenizer)")
    m.add_argument("--layers", type=int, default=D.layers,
                   help="with --init: keep the encoder's first N layers (0: all; a cheaper model)")
    m.add_argument("--freeze-embeddings", action="store_true",
                   help="keep the word-embedding matrix fixed (most of a multilingual model's parameters: "
                        "far less optimizer work on CPU)")
    m.add_argument("--separate", action="store_true", help="separate question and passage towers (default shared)")
    m.add_argument("--pooling", choices=("cls", "mean", "pooler"), default=D.pooling,
                   help="representation: mean of the last layer (Λ imitates a bag of words; learns faster "
                        "from scratch) or its first token (cls, as DPR)")
    m.add_argument("--dropout", type=float, default=D.dropout, help="dropout of a --config model (hub models keep their own)")
    m.add_argument("--query-max-length", type=int, default=D.query_max_length, help="query tokens")
    m.add_argument("--passage-max-length", type=int, default=D.passage_max_length, help="passage tokens")
    t = p.add_argument_group("training")
    t.add_argument("--out", required=True, help="output folder (OUT/best is Λ; rerun to resume)")
    t.add_argument("--batch-size", type=int, default=D.batch_size, help="queries per batch and process")
    t.add_argument("--epochs", type=float, default=D.epochs, help="passes over the sentence queries")
    t.add_argument("--max-steps", type=int, default=D.max_steps, help="stop after this many steps (0: use --epochs)")
    t.add_argument("--lr", type=float, default=D.lr, help="peak learning rate (AdamW; SPAR used 3e-5 for BERT)")
    t.add_argument("--weight-decay", type=float, default=D.weight_decay, help="AdamW weight decay")
    t.add_argument("--warmup-steps", type=int, default=D.warmup_steps, help="linear warm-up steps")
    t.add_argument("--grad-accum", type=int, default=D.grad_accum, help="gradient accumulation steps")
    t.add_argument("--eval-every", type=int, default=D.eval_every, help="validate every N steps (0: every epoch)")
    t.add_argument("--save-every", type=int, default=D.save_every, help="checkpoint every N steps")
    t.add_argument("--no-mask-false-negatives", action="store_true",
                   help="do not mask a query's other positives out of its softmax")
    t.add_argument("--gradient-checkpointing", action="store_true", help="recompute activations (CUDA only)")
    t.add_argument("--no-bf16", action="store_true", help="no bf16 autocast on CUDA")
    t.add_argument("--seed", type=int, default=D.seed, help="random seed (sentence sampling and training)")
    t.add_argument("--threads", type=int, default=D.threads, help="torch CPU threads (0: torch's default)")
    t.add_argument("--quiet", action="store_true", help="no progress bars")


def config(args: argparse.Namespace) -> D:
    """The training config of the command line."""
    from xqa.cli_options import to_config

    return to_config(D, args, size=args.config, mask_false_negatives=not args.no_mask_false_negatives,
                     bf16=not args.no_bf16, progress=not args.quiet)


def run(args: argparse.Namespace) -> int:
    from xqa.training import lexical, main_process

    result = lexical.train(config(args))
    if main_process():  # one line per torchrun job, from rank 0
        print(f"Λ written to {Path(args.out) / 'best'} (step {result['step']}, best mrr {result.get('best')})")
    return 0
