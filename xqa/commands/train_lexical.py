"""``xqa train lexical``: train SPAR's lexical model Λ to imitate BM25 (paper 000 §4.1).

Glue only: the BM25 teacher labels sentence queries sampled from the passages
(``retriever.spar.data``; cached in ``OUT/teacher``), the model is a
``retriever.dense`` bi-encoder trained with the dense task (DPR loss; one of
the n_p positives sampled per step, the others masked), the loop is
``xqa.training.train`` (checkpoints, resume, validation MRR, progress). The
model is ``OUT/best``; rerunning with the same ``OUT`` resumes.
"""
from __future__ import annotations

import argparse
from pathlib import Path

# The embedded default on a 2-core CPU (docs/fusion.md).
EMBEDDED_DEFAULTS = {"config": "tiny", "batch_size": 64, "epochs": 2.0, "lr": 1e-3, "warmup_steps": 50,
                     "query_max_length": 48, "passage_max_length": 96}


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = EMBEDDED_DEFAULTS
    g = p.add_argument_group("teacher data")
    g.add_argument("--passages", required=True, help="passage file (JSONL or DPR TSV): queries are its sentences")
    g.add_argument("--bm25", required=True, help="BM25 index folder of these passages (xqa index sparse): the teacher")
    g.add_argument("--lang", help="language of passage files that carry none (DPR TSV)")
    g.add_argument("--dev", help="validation questions (any question layout; their text only): the teacher's "
                                 "top-1 is the positive. Default: held-out sentences")
    g.add_argument("--dev-size", type=int, default=500, help="held-out sentences for validation without --dev")
    g.add_argument("--depth", type=int, default=50, help="K: teacher hits per query")
    g.add_argument("--positives", type=int, default=10, help="n_p: top teacher hits used as positives")
    g.add_argument("--negatives", type=int, default=5, help="n_n: bottom teacher hits (of the top K) used as hard negatives")
    g.add_argument("--sentences-per-passage", type=int, default=1, help="sentence queries sampled per passage")
    g.add_argument("--min-words", type=int, default=3, help="shortest sentence used as a query, in words")
    g.add_argument("--max-queries", type=int, default=0, help="cap on training queries (0: no cap)")
    m = p.add_argument_group("model (as xqa train retriever)")
    m.add_argument("--init", metavar="NAME_OR_DIR", help="start from a hub model or a local HF / bi-encoder folder")
    m.add_argument("--init-passage", metavar="NAME_OR_DIR", help="separate passage tower start")
    m.add_argument("--config", choices=("tiny", "small", "base"), default=None,
                   help=f"build a random mLUKE-architecture model of this size (needs --tokenizer; "
                        f"default {d['config']} when no --init)")
    m.add_argument("--tokenizer", help="tokenizer folder for --config (xqa train tokenizer)")
    m.add_argument("--layers", type=int, default=0,
                   help="with --init: keep the encoder's first N layers (0: all; a cheaper model)")
    m.add_argument("--freeze-embeddings", action="store_true",
                   help="keep the word-embedding matrix fixed (most of a multilingual model's parameters: "
                        "far less optimizer work on CPU)")
    m.add_argument("--separate", action="store_true", help="separate question and passage towers (default shared)")
    m.add_argument("--pooling", choices=("cls", "mean", "pooler"), default="mean",
                   help="representation: mean of the last layer (Λ imitates a bag of words; learns faster "
                        "from scratch) or its first token (cls, as DPR)")
    m.add_argument("--dropout", type=float, default=0.0, help="dropout of a --config model (hub models keep their own)")
    m.add_argument("--query-max-length", type=int, default=d["query_max_length"], help="query tokens")
    m.add_argument("--passage-max-length", type=int, default=d["passage_max_length"], help="passage tokens")
    t = p.add_argument_group("training")
    t.add_argument("--out", required=True, help="output folder (OUT/best is Λ; rerun to resume)")
    t.add_argument("--batch-size", type=int, default=d["batch_size"], help="queries per batch and process")
    t.add_argument("--epochs", type=float, default=d["epochs"], help="passes over the sentence queries")
    t.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: use --epochs)")
    t.add_argument("--lr", type=float, default=d["lr"], help="peak learning rate (AdamW; SPAR used 3e-5 for BERT)")
    t.add_argument("--weight-decay", type=float, default=0.01, help="AdamW weight decay")
    t.add_argument("--warmup-steps", type=int, default=d["warmup_steps"], help="linear warm-up steps")
    t.add_argument("--grad-accum", type=int, default=1, help="gradient accumulation steps")
    t.add_argument("--eval-every", type=int, default=0, help="validate every N steps (0: every epoch)")
    t.add_argument("--save-every", type=int, default=200, help="checkpoint every N steps")
    t.add_argument("--no-mask-false-negatives", action="store_true",
                   help="do not mask a query's other positives out of its softmax")
    t.add_argument("--gradient-checkpointing", action="store_true", help="recompute activations (CUDA only)")
    t.add_argument("--no-bf16", action="store_true", help="no bf16 autocast on CUDA")
    t.add_argument("--seed", type=int, default=0, help="random seed (sentence sampling and training)")
    t.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    t.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from xqa.training import main_process

    result = train_lexical(args)
    if main_process():  # one line per torchrun job, from rank 0
        print(f"Λ written to {Path(args.out) / 'best'} (step {result['step']}, best mrr {result.get('best')})")
    return 0


def train_lexical(args: argparse.Namespace) -> dict:
    """Label sentence queries with BM25, build Λ and its task, run the shared loop."""
    import torch

    from retriever.spar.data import TeacherConfig
    from retriever.spar.lexical import lexical_task, summary, teacher_data
    from retriever.sparse import SparseRetriever
    from xqa.commands.train_retriever import build_model
    from xqa.io import read_passages, read_questions
    from xqa.training import TrainConfig, init_distributed, train

    if args.threads:
        torch.set_num_threads(args.threads)
    info = init_distributed()
    say = print if info.main else (lambda *a, **k: None)
    tcfg = TeacherConfig(depth=args.depth, positives=args.positives, negatives=args.negatives,
                         sentences_per_passage=args.sentences_per_passage, min_words=args.min_words,
                         max_queries=args.max_queries, seed=args.seed)
    dev_q = read_questions(args.dev, lang=args.lang) if args.dev else None
    with SparseRetriever.load(args.bm25) as teacher:
        train_ex, dev_ex, meta = teacher_data(
            teacher, lambda: read_passages(args.passages, lang=args.lang), args.out, tcfg,
            dev_questions=dev_q, dev_size=args.dev_size, progress=not args.quiet and info.main)
    say(summary(meta))
    if args.config is None and not args.init:
        args.config = EMBEDDED_DEFAULTS["config"]
    model = build_model(args)
    task = lexical_task(model, read_passages(args.passages, lang=args.lang), train_ex, dev_ex, tcfg,
                        mask_false_negatives=not args.no_mask_false_negatives, seed=args.seed)
    config = TrainConfig(out_dir=args.out, batch_size=args.batch_size, epochs=args.epochs,
                         max_steps=args.max_steps, lr=args.lr, weight_decay=args.weight_decay,
                         warmup_steps=args.warmup_steps, grad_accum=args.grad_accum, max_grad_norm=2.0,
                         eval_every=args.eval_every, save_every=args.save_every, seed=args.seed,
                         bf16=not args.no_bf16, gradient_checkpointing=args.gradient_checkpointing)
    return train(task, train_ex, config, progress=not args.quiet)


def embedded_args(world_dir: str | Path, bm25_dir: str | Path, tokenizer_dir: str | Path,
                  out_dir: str | Path, **overrides) -> argparse.Namespace:
    """The exact arguments of the embedded default's Λ: ``xqa train lexical --passages
    W/passages.jsonl --bm25 BM25 --dev W/dev.jsonl --config tiny --tokenizer TOK --out OUT``."""
    world = Path(world_dir)
    argv = ["--passages", str(world / "passages.jsonl"), "--bm25", str(bm25_dir),
            "--dev", str(world / "dev.jsonl"), "--out", str(out_dir),
            "--config", EMBEDDED_DEFAULTS["config"], "--tokenizer", str(tokenizer_dir)]
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(argv)
    for k, v in overrides.items():
        setattr(args, k, v)
    return args


def train_embedded_lexical(world_dir: str | Path, bm25_dir: str | Path, tokenizer_dir: str | Path,
                           out_dir: str | Path, **overrides) -> Path:
    """Train (or resume, or skip when done) the embedded Λ; returns ``OUT/best``."""
    train_lexical(embedded_args(world_dir, bm25_dir, tokenizer_dir, out_dir, **overrides))
    return Path(out_dir) / "best"
