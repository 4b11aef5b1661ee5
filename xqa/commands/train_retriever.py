"""``xqa train retriever``: train a dense bi-encoder with the DPR loss (:mod:`xqa.training.dense`).

The trained model is ``OUT/best`` (``BiEncoder.load(OUT)`` finds it); ``OUT/checkpoint`` makes a
rerun resume. Under ``torchrun`` every process runs this same command.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from xqa.training.dense import DEFAULT_SIZE, SCRATCH_LR
from xqa.training.dense import DenseTrainConfig as D


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--train", required=True, help="training questions (JSONL with positive_ids, SQuAD JSON, ...)")
    g.add_argument("--dev", help="dev questions for validation MRR on a mini-index (same layout)")
    g.add_argument("--passages", required=True, help="passage file (JSONL or DPR TSV) the positives point into")
    g.add_argument("--lang", help="language of passage/question files that carry none (DPR TSV)")
    g.add_argument("--positives-from", metavar="RESULTS",
                   help="retrieval results (DPR layout, ctxs with has_answer) giving positives for "
                        "questions without positive_ids")
    g.add_argument("--hard-negatives", metavar="RESULTS",
                   help="retrieval results (DPR layout, e.g. BM25 top hits) to take hard negatives from")
    g.add_argument("--hard-negatives-depth", type=int, default=D.hard_negatives_depth,
                   help="keep this many top non-positive hits per question as its hard-negative list")
    g.add_argument("--arrow-cache", metavar="DIR",
                   help="keep training examples in an Arrow (datasets) cache here, memory-mapped "
                        "(automatic above 200k questions, in OUT/arrow)")
    m = p.add_argument_group("model")
    m.add_argument("--init", metavar="NAME_OR_DIR",
                   help="start from a hub model (studio-ousia/mluke-base, bert-base-multilingual-uncased, "
                        "facebook/dpr-question_encoder-single-nq-base) or a local HF / bi-encoder folder")
    m.add_argument("--init-passage", metavar="NAME_OR_DIR",
                   help="separate passage tower start (e.g. facebook/dpr-ctx_encoder-single-nq-base)")
    m.add_argument("--config", choices=("tiny", "small", "base"), default=None,
                   help=f"build a random mLUKE-architecture model of this size instead of --init "
                        f"(needs --tokenizer; the embedded default is {DEFAULT_SIZE})")
    m.add_argument("--tokenizer", help="tokenizer folder for --config (xqa train tokenizer)")
    m.add_argument("--layers", type=int, default=D.layers,
                   help="with --init: keep the encoder's first N layers (0: all; a cheaper model)")
    m.add_argument("--freeze-embeddings", action="store_true",
                   help="keep the word-embedding matrix fixed (most of a multilingual model's parameters: "
                        "far less optimizer work on CPU)")
    m.add_argument("--separate", action="store_true", help="separate question and passage towers (default shared)")
    m.add_argument("--pooling", choices=("cls", "mean", "pooler"), default=None,
                   help="representation: first token of the last layer (cls; DPR models: pooler), or mean; "
                        "default cls for --init, mean for --config (a small model trained from scratch "
                        "collapses with cls, see docs/dense.md)")
    m.add_argument("--dropout", type=float, default=D.dropout,
                   help="dropout of a --config model (hub models keep their own)")
    m.add_argument("--query-max-length", type=int, default=D.query_max_length, help="question tokens")
    m.add_argument("--passage-max-length", type=int, default=D.passage_max_length, help="passage tokens")
    t = p.add_argument_group("training")
    t.add_argument("--out", required=True, help="output folder (OUT/best is the model; rerun to resume)")
    t.add_argument("--batch-size", type=int, default=D.batch_size, help="questions per batch and process")
    t.add_argument("--num-hard-negatives", type=int, default=D.num_hard_negatives,
                   help="hard (or random) negatives per question in a batch, besides in-batch negatives "
                        "(the MIA system used none; with 0, --hard-negatives only harden validation)")
    t.add_argument("--epochs", type=float, default=D.epochs, help="passes over the training questions")
    t.add_argument("--max-steps", type=int, default=D.max_steps, help="stop after this many steps (0: use --epochs)")
    t.add_argument("--lr", type=float, default=None,
                   help=f"peak learning rate (AdamW); default {SCRATCH_LR} for --config, 2e-5 for --init")
    t.add_argument("--weight-decay", type=float, default=D.weight_decay, help="AdamW weight decay")
    t.add_argument("--warmup-steps", type=int, default=D.warmup_steps, help="linear warm-up steps")
    t.add_argument("--grad-accum", type=int, default=D.grad_accum, help="gradient accumulation steps")
    t.add_argument("--grad-cache-chunk", type=int, default=D.grad_cache_chunk, metavar="N",
                   help="gradient cache: encode the batch N questions (and their passages) at a time, "
                        "so a large --batch-size, and with it many in-batch negatives, fits in memory; "
                        "same gradients as the whole batch at the cost of one extra forward pass (0: off)")
    t.add_argument("--eval-every", type=int, default=D.eval_every,
                   help="validate every N steps, keeping the best model (0: every epoch)")
    t.add_argument("--save-every", type=int, default=D.save_every, help="checkpoint every N steps")
    t.add_argument("--dev-questions", type=int, default=D.dev_questions,
                   help="validate on at most this many dev questions")
    t.add_argument("--no-mask-false-negatives", action="store_true",
                   help="do not mask a question's other positives out of its softmax (plain DPR)")
    t.add_argument("--gradient-checkpointing", action="store_true", help="recompute activations (CUDA only)")
    t.add_argument("--no-bf16", action="store_true", help="no bf16 autocast on CUDA")
    t.add_argument("--seed", type=int, default=D.seed, help="random seed")
    t.add_argument("--threads", type=int, default=D.threads, help="torch CPU threads (0: torch's default)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")


def config(args: argparse.Namespace) -> D:
    """The training config of the command line."""
    from xqa.cli_options import to_config

    return to_config(D, args, size=args.config, mask_false_negatives=not args.no_mask_false_negatives,
                     bf16=not args.no_bf16, progress=not args.quiet)


def run(args: argparse.Namespace) -> int:
    from xqa.training import dense, main_process

    result = dense.train(config(args))
    if main_process():  # one line per torchrun job, from rank 0
        print(f"model written to {Path(args.out) / 'best'} (step {result['step']}, best mrr {result.get('best')})")
    return 0
