"""``xqa train retriever``: train a dense bi-encoder with the DPR loss.

Glue only: files are read with ``xqa.io``, the model/task come from
``retriever.dense``, the loop is ``xqa.training.train``. The trained model is
``OUT/best`` (``BiEncoder.load(OUT)`` finds it); ``OUT/checkpoint`` makes a
rerun resume. Under ``torchrun`` every process runs this same command.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

# OpenMP threads that spin while waiting are 4-5x slower than sleeping ones when the cores
# are shared (measured: docs/dense.md). Only effective before torch/FAISS load OpenMP.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Tuned for the embedded world on a 2-core CPU (docs/dense.md): half an epoch of in-batch
# negatives (the MIA system used no hard negatives) takes ~1-2 minutes. Dev MRR peaks after
# about a third of an epoch: longer training memorises the training entities, and dev/test
# subjects are unseen ones. Validation every 40 steps keeps the best model.
EMBEDDED_DEFAULTS = dict(config="tiny", pooling="mean", dropout=0.0, batch_size=64, epochs=0.5, lr=3e-4,
                         warmup_steps=30, query_max_length=32, passage_max_length=80, hard_negatives=0,
                         dev_questions=500, eval_every=40)


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = EMBEDDED_DEFAULTS
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
    g.add_argument("--hard-negatives-depth", type=int, default=20,
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
                        f"(needs --tokenizer; the embedded default is {d['config']})")
    m.add_argument("--tokenizer", help="tokenizer folder for --config (xqa train tokenizer)")
    m.add_argument("--layers", type=int, default=0,
                   help="with --init: keep the encoder's first N layers (0: all; a cheaper model)")
    m.add_argument("--freeze-embeddings", action="store_true",
                   help="keep the word-embedding matrix fixed (most of a multilingual model's parameters: "
                        "far less optimizer work on CPU)")
    m.add_argument("--separate", action="store_true", help="separate question and passage towers (default shared)")
    m.add_argument("--pooling", choices=("cls", "mean", "pooler"), default=None,
                   help="representation: first token of the last layer (cls; DPR models: pooler), or mean; "
                        "default cls for --init, mean for --config (a small model trained from scratch "
                        "collapses with cls, see docs/dense.md)")
    m.add_argument("--dropout", type=float, default=d["dropout"],
                   help="dropout of a --config model (hub models keep their own)")
    m.add_argument("--query-max-length", type=int, default=d["query_max_length"], help="question tokens")
    m.add_argument("--passage-max-length", type=int, default=d["passage_max_length"], help="passage tokens")
    t = p.add_argument_group("training")
    t.add_argument("--out", required=True, help="output folder (OUT/best is the model; rerun to resume)")
    t.add_argument("--batch-size", type=int, default=d["batch_size"], help="questions per batch and process")
    t.add_argument("--num-hard-negatives", type=int, default=d["hard_negatives"],
                   help="hard (or random) negatives per question in a batch, besides in-batch negatives "
                        "(the MIA system used none; with 0, --hard-negatives only harden validation)")
    t.add_argument("--epochs", type=float, default=d["epochs"], help="passes over the training questions")
    t.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: use --epochs)")
    t.add_argument("--lr", type=float, default=None,
                   help=f"peak learning rate (AdamW); default {d['lr']} for --config, 2e-5 for --init")
    t.add_argument("--weight-decay", type=float, default=0.01, help="AdamW weight decay")
    t.add_argument("--warmup-steps", type=int, default=d["warmup_steps"], help="linear warm-up steps")
    t.add_argument("--grad-accum", type=int, default=1, help="gradient accumulation steps")
    t.add_argument("--grad-cache-chunk", type=int, default=0, metavar="N",
                   help="gradient cache: encode the batch N questions (and their passages) at a time, "
                        "so a large --batch-size, and with it many in-batch negatives, fits in memory; "
                        "same gradients as the whole batch at the cost of one extra forward pass (0: off)")
    t.add_argument("--eval-every", type=int, default=d["eval_every"],
                   help="validate every N steps, keeping the best model (0: every epoch)")
    t.add_argument("--save-every", type=int, default=200, help="checkpoint every N steps")
    t.add_argument("--dev-questions", type=int, default=d["dev_questions"],
                   help="validate on at most this many dev questions")
    t.add_argument("--no-mask-false-negatives", action="store_true",
                   help="do not mask a question's other positives out of its softmax (plain DPR)")
    t.add_argument("--gradient-checkpointing", action="store_true", help="recompute activations (CUDA only)")
    t.add_argument("--no-bf16", action="store_true", help="no bf16 autocast on CUDA")
    t.add_argument("--seed", type=int, default=0, help="random seed")
    t.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from xqa.training import main_process

    result = train_retriever(args)
    if main_process():  # one line per torchrun job, from rank 0
        print(f"model written to {Path(args.out) / 'best'} (step {result['step']}, best mrr {result.get('best')})")
    return 0


def build_model(args: argparse.Namespace):
    from retriever.dense.model import BiEncoder
    from xqa.errors import XqaError

    if args.init and args.config:
        raise XqaError("give --init (start from a pretrained model) or --config (random), not both")
    if args.init:
        model = BiEncoder.from_pretrained(args.init, args.init_passage, shared=False if args.separate else None,
                                          pooling=args.pooling, query_max_length=args.query_max_length,
                                          passage_max_length=args.passage_max_length,
                                          layers=getattr(args, "layers", 0))
        if getattr(args, "freeze_embeddings", False):
            model.freeze_embeddings()
        return model
    if not args.tokenizer:
        raise XqaError("--config needs --tokenizer (a folder from `xqa train tokenizer`)")
    return BiEncoder.from_scratch(args.tokenizer, args.config or EMBEDDED_DEFAULTS["config"],
                                  shared=not args.separate, pooling=args.pooling or EMBEDDED_DEFAULTS["pooling"],
                                  query_max_length=args.query_max_length,
                                  passage_max_length=args.passage_max_length, dropout=args.dropout,
                                  seed=args.seed)


def train_retriever(args: argparse.Namespace) -> dict:
    """Read the files, build examples, model and task, and run the shared loop."""
    import torch

    from retriever.dense.data import (build_examples, hard_negatives_from_results, load_passages,
                                      needed_ids, positives_from_results, to_dataset)
    from retriever.dense.task import RetrieverTask, TaskConfig
    from xqa.errors import XqaError
    from xqa.io import read_passages, read_questions, read_results
    from xqa.training import TrainConfig, init_distributed, train

    if args.grad_cache_chunk < 0:
        raise XqaError(f"--grad-cache-chunk must be 0 (off) or a positive number of questions, "
                       f"got {args.grad_cache_chunk}")
    if args.threads:
        torch.set_num_threads(args.threads)
    info = init_distributed()
    say = print if info.main else (lambda *a, **k: None)

    positives = hard = None
    if args.positives_from:
        positives = positives_from_results(read_results(args.positives_from))
    if args.hard_negatives:
        results = read_results(args.hard_negatives)
        given = {}
        for r in results:
            given[r.question.id] = list((positives or {}).get(r.question.id) or r.question.meta.get("positive_ids") or [])
        hard = hard_negatives_from_results(results, given, n=args.hard_negatives_depth)
    train_q = read_questions(args.train, lang=args.lang)
    dev_q = read_questions(args.dev, lang=args.lang) if args.dev else []
    train_ex, skipped = build_examples(train_q, positives=positives, hard_negatives=hard)
    dev_ex, dev_skipped = build_examples(dev_q, positives=positives, hard_negatives=hard)
    if not train_ex:
        raise XqaError(f"{args.train}: no question has a positive passage (positive_ids, or --positives-from)")
    say(f"{len(train_ex)} training questions ({skipped} without positives skipped), "
        f"{len(dev_ex)} dev questions ({dev_skipped} skipped)")
    keep = needed_ids(train_ex, dev_ex)
    passages = load_passages(read_passages(args.passages, lang=args.lang), keep, extra=10_000)
    say(f"{len(passages)} passages loaded ({len(keep)} named by the questions)")
    if args.grad_cache_chunk >= args.batch_size:
        say(f"--grad-cache-chunk {args.grad_cache_chunk} >= --batch-size {args.batch_size}: "
            f"one chunk per batch, gradient cache off")
    if hard is not None and args.num_hard_negatives == 0:
        say("hard negatives harden validation only (pass --num-hard-negatives N to train with them)")

    model = build_model(args)
    tcfg = TaskConfig(hard_negatives=args.num_hard_negatives, mask_false_negatives=not args.no_mask_false_negatives,
                      dev_questions=args.dev_questions, seed=args.seed, grad_cache_chunk=args.grad_cache_chunk)
    task = RetrieverTask(model, passages, dev_ex, tcfg)
    dataset = train_ex
    if args.arrow_cache or len(train_ex) > 200_000:
        dataset = to_dataset(train_ex, cache_dir=args.arrow_cache or str(Path(args.out) / "arrow"))
    lr = args.lr if args.lr is not None else (2e-5 if args.init else EMBEDDED_DEFAULTS["lr"])
    config = TrainConfig(out_dir=args.out, batch_size=args.batch_size, epochs=args.epochs,
                         max_steps=args.max_steps, lr=lr, weight_decay=args.weight_decay,
                         warmup_steps=args.warmup_steps, grad_accum=args.grad_accum,
                         max_grad_norm=2.0, eval_every=args.eval_every, save_every=args.save_every,
                         seed=args.seed, bf16=not args.no_bf16,
                         gradient_checkpointing=args.gradient_checkpointing)
    return train(task, dataset, config, progress=not args.quiet)


def embedded_args(world_dir: str | Path, tokenizer_dir: str | Path, out_dir: str | Path,
                  bm25_results: str | Path | None = None, **overrides) -> argparse.Namespace:
    """The exact arguments of the embedded default's retriever training."""
    world = Path(world_dir)
    argv = ["--train", str(world / "train.jsonl"), "--dev", str(world / "dev.jsonl"),
            "--passages", str(world / "passages.jsonl"), "--out", str(out_dir),
            "--config", EMBEDDED_DEFAULTS["config"], "--tokenizer", str(tokenizer_dir)]
    if bm25_results:
        argv += ["--hard-negatives", str(bm25_results)]
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(argv)
    for k, v in overrides.items():
        setattr(args, k, v)
    return args


def train_embedded_retriever(world_dir: str | Path, tokenizer_dir: str | Path, out_dir: str | Path,
                             bm25_results: str | Path | None = None, **overrides) -> Path:
    """Train the embedded default's tiny bi-encoder; returns the model folder (``OUT/best``).

    Same as ``xqa train retriever --train W/train.jsonl --dev W/dev.jsonl
    --passages W/passages.jsonl --config tiny --tokenizer TOK --out OUT``
    (plus ``--hard-negatives BM25`` when given). Resumes / skips when done.
    """
    train_retriever(embedded_args(world_dir, tokenizer_dir, out_dir, bm25_results, **overrides))
    return Path(out_dir) / "best"
