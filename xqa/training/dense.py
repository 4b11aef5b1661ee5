"""The dense bi-encoder, trained with the DPR loss (Karpukhin et al., "Dense Passage Retrieval
for Open-Domain Question Answering", 2020).

Files are read with ``xqa.io``, the model and task come from ``retriever.dense``, the loop is
:func:`xqa.training.loop.train`. The trained model is ``OUT/best`` (``BiEncoder.load(OUT)``
finds it); ``OUT/checkpoint`` makes a rerun resume. Under ``torchrun`` every process runs
the same call.

The defaults are the embedded default's, tuned on a 2-core CPU (docs/dense.md): half an epoch
of in-batch negatives (the MIA system used no hard negatives) takes 1-2 minutes. Dev MRR
peaks after about a third of an epoch: longer training memorises the training entities, and
dev/test subjects are unseen ones. Validation every 40 steps keeps the best model.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

# OpenMP threads that spin while waiting are 4-5x slower than sleeping ones when the cores
# are shared (measured: docs/dense.md). Only effective before torch/FAISS load OpenMP.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

DEFAULT_SIZE = "tiny"        # the random model's size without --init
SCRATCH_POOLING = "mean"     # a small model trained from scratch collapses with cls (docs/dense.md)
SCRATCH_LR = 3e-4            # peak learning rate of a model trained from scratch
PRETRAINED_LR = 2e-5         # ... and of one started from a pretrained model


# The fields' metadata are the options of ``xqa train retriever`` (:mod:`xqa.cli_config`): the
# help of a setting that defaults to true says what its ``--no-...`` switch does.
_NAME_OR_DIR = "NAME_OR_DIR"


@dataclass
class ModelConfig:
    """The bi-encoder to train: a pretrained start (``init``) or a random one of ``size``."""

    init: str | None = field(default=None, metadata={
        "metavar": _NAME_OR_DIR,
        "help": "start from a hub model (studio-ousia/mluke-base, bert-base-multilingual-uncased, "
                "facebook/dpr-question_encoder-single-nq-base) or a local HF / bi-encoder folder"})
    init_passage: str | None = field(default=None, metadata={
        "metavar": _NAME_OR_DIR,
        "help": "separate passage tower start (e.g. facebook/dpr-ctx_encoder-single-nq-base)"})
    size: str | None = field(default=None, metadata={
        "choices": ("tiny", "small", "base"),
        "help": f"build a random mLUKE-architecture model of this size instead of --init (needs --tokenizer; "
                f"the embedded default is {DEFAULT_SIZE})"})
    tokenizer: str | None = field(default=None, metadata={
        "help": "tokenizer folder for --size (xqa train tokenizer)"})
    layers: int = field(default=0, metadata={
        "help": "with --init: keep the encoder's first N layers (0: all; a cheaper model)"})
    freeze_embeddings: bool = field(default=False, metadata={
        "help": "keep the word-embedding matrix fixed (most of a multilingual model's parameters: far less "
                "optimizer work on CPU)"})
    separate: bool = field(default=False, metadata={
        "help": "separate question and passage towers (default shared)"})
    # None: cls for init, mean for size
    pooling: str | None = field(default=None, metadata={
        "choices": ("cls", "mean", "pooler"),
        "help": "representation: first token of the last layer (cls; DPR models: pooler), or mean; default cls "
                "for --init, mean for --size (a small model trained from scratch collapses with cls, see "
                "docs/dense.md)"})
    dropout: float = field(default=0.0, metadata={
        "min": 0.0, "max": 1.0, "help": "dropout of a --size model (hub models keep their own)"})
    query_max_length: int = field(default=32, metadata={"min": 1, "help": "question tokens"})
    passage_max_length: int = field(default=80, metadata={"min": 1, "help": "passage tokens"})
    seed: int = field(default=0, metadata={"help": "random seed"})


_REQUIRED = {"required": True}


@dataclass
class DenseTrainConfig(ModelConfig):
    train: str = field(default="", metadata={
        **_REQUIRED, "help": "training questions (JSONL with positive_ids, SQuAD JSON, ...)"})
    passages: str = field(default="", metadata={
        **_REQUIRED, "help": "passage file (JSONL or DPR TSV) the positives point into"})
    out: str = field(default="", metadata={
        **_REQUIRED, "help": "output folder (OUT/best is the model; rerun to resume)"})
    dev: str | None = field(default=None, metadata={
        "help": "dev questions for validation MRR on a mini-index (same layout)"})
    lang: str | None = field(default=None, metadata={
        "help": "language of passage/question files that carry none (DPR TSV)"})
    positives_from: str | None = field(default=None, metadata={
        "metavar": "RESULTS", "help": "retrieval results (DPR layout, ctxs with has_answer) giving positives "
                                      "for questions without positive_ids"})
    hard_negatives: str | None = field(default=None, metadata={
        "metavar": "RESULTS",
        "help": "retrieval results (DPR layout, e.g. BM25 top hits) to take hard negatives from"})
    hard_negatives_depth: int = field(default=20, metadata={"min": 1,
        "help": "keep this many top non-positive hits per question as its hard-negative list"})
    arrow_cache: str | None = field(default=None, metadata={
        "metavar": "DIR", "help": "keep training examples in an Arrow (datasets) cache here, memory-mapped "
                                  "(automatic above 200k questions, in OUT/arrow)"})
    batch_size: int = field(default=64, metadata={"min": 1, "help": "questions per batch and process"})
    num_hard_negatives: int = field(default=0, metadata={
        "help": "hard (or random) negatives per question in a batch, besides in-batch negatives (the MIA "
                "system used none; with 0, --hard-negatives only harden validation)"})
    epochs: float = field(default=0.5, metadata={"min": 0.0, "help": "passes over the training questions"})
    max_steps: int = field(default=0, metadata={"help": "stop after this many steps (0: use --epochs)"})
    # None: SCRATCH_LR for size, PRETRAINED_LR for init
    lr: float | None = field(default=None, metadata={"min": 0.0,
        "help": f"peak learning rate (AdamW); default {SCRATCH_LR} for --size, 2e-5 for --init"})
    weight_decay: float = field(default=0.01, metadata={"min": 0.0, "help": "AdamW weight decay"})
    warmup_steps: int = field(default=30, metadata={"help": "linear warm-up steps"})
    grad_accum: int = field(default=1, metadata={"min": 1, "help": "gradient accumulation steps"})
    grad_cache_chunk: int = field(default=0, metadata={
        "metavar": "N",
        "help": "gradient cache: encode the batch N questions (and their passages) at a time, so a large "
                "--batch-size, and with it many in-batch negatives, fits in memory; same gradients as the "
                "whole batch at the cost of one extra forward pass (0: off)"})
    eval_every: int = field(default=40, metadata={
        "help": "validate every N steps, keeping the best model (0: every epoch)"})
    save_every: int = field(default=200, metadata={"min": 1, "help": "checkpoint every N steps"})
    dev_questions: int = field(default=500, metadata={"help": "validate on at most this many dev questions"})
    mask_false_negatives: bool = field(default=True, metadata={
        "help": "do not mask a question's other positives out of its softmax (plain DPR)"})
    gradient_checkpointing: bool = field(default=False, metadata={"help": "recompute activations (CUDA only)"})
    bf16: bool = field(default=True, metadata={"help": "no bf16 autocast on CUDA"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    progress: bool = field(default=True, metadata={"flag": "--quiet", "help": "no progress bar"})


def build_model(config: ModelConfig):
    """The bi-encoder ``config`` names: loaded from ``init``, or random of ``size``."""
    from retriever.dense.model import BiEncoder
    from xqa.errors import XqaError

    if config.init and config.size:
        raise XqaError("give --init (start from a pretrained model) or --size (random), not both")
    if config.init:
        model = BiEncoder.from_pretrained(config.init, config.init_passage,
                                          shared=False if config.separate else None, pooling=config.pooling,
                                          query_max_length=config.query_max_length,
                                          passage_max_length=config.passage_max_length, layers=config.layers)
        if config.freeze_embeddings:
            model.freeze_embeddings()
        return model
    if not config.tokenizer:
        raise XqaError("--size needs --tokenizer (a folder from `xqa train tokenizer`)")
    return BiEncoder.from_scratch(config.tokenizer, config.size or DEFAULT_SIZE, shared=not config.separate,
                                  pooling=config.pooling or SCRATCH_POOLING,
                                  query_max_length=config.query_max_length,
                                  passage_max_length=config.passage_max_length, dropout=config.dropout,
                                  seed=config.seed)


def train(config: DenseTrainConfig) -> dict:
    """Read the files, build examples, model and task, and run the shared loop; the loop's
    result (``step``, ``best`` dev MRR, ...)."""
    import torch

    from retriever.dense.data import (build_examples, hard_negatives_from_results, load_passages,
                                      needed_ids, positives_from_results, to_dataset)
    from retriever.dense.task import RetrieverTask, TaskConfig
    from xqa.errors import XqaError
    from xqa.io import read_passages, read_questions, read_results
    from xqa.training.loop import TrainConfig, dev_said, init_distributed
    from xqa.training.loop import train as run_loop

    c = config
    if c.grad_cache_chunk < 0:
        raise XqaError(f"--grad-cache-chunk must be 0 (off) or a positive number of questions, "
                       f"got {c.grad_cache_chunk}")
    if c.threads:
        torch.set_num_threads(c.threads)
    info = init_distributed()
    say = print if info.main else (lambda *a, **k: None)
    if c.init:   # a folder or hub name that cannot be had: said before the questions and passages are read
        from retriever.dense.model import check_init

        check_init(c.init)

    positives = hard = None
    if c.positives_from:
        positives = positives_from_results(read_results(c.positives_from))
    if c.hard_negatives:
        results = read_results(c.hard_negatives)
        given = {}
        for r in results:
            given[r.question.id] = list((positives or {}).get(r.question.id) or r.question.meta.get("positive_ids") or [])
        hard = hard_negatives_from_results(results, given, n=c.hard_negatives_depth)
    train_q = read_questions(c.train, lang=c.lang)
    dev_q = read_questions(c.dev, lang=c.lang) if c.dev else []
    train_ex, skipped = build_examples(train_q, positives=positives, hard_negatives=hard)
    dev_ex, dev_skipped = build_examples(dev_q, positives=positives, hard_negatives=hard)
    if not train_ex:
        raise XqaError(f"{c.train}: no question has a positive passage (positive_ids, or --positives-from)")
    say(f"{len(train_ex)} training questions ({skipped} without positives skipped), "
        f"{dev_said(len(dev_ex), c.dev_questions)} ({dev_skipped} skipped)")
    keep = needed_ids(train_ex, dev_ex)
    passages = load_passages(read_passages(c.passages, lang=c.lang), keep, extra=10_000)
    say(f"{len(passages)} passages loaded ({len(keep)} named by the questions)")
    if c.grad_cache_chunk >= c.batch_size:
        say(f"--grad-cache-chunk {c.grad_cache_chunk} >= --batch-size {c.batch_size}: "
            f"one chunk per batch, gradient cache off")
    if hard is not None and c.num_hard_negatives == 0:
        say("hard negatives harden validation only (pass --num-hard-negatives N to train with them)")

    model = build_model(c)
    tcfg = TaskConfig(hard_negatives=c.num_hard_negatives, mask_false_negatives=c.mask_false_negatives,
                      dev_questions=c.dev_questions, seed=c.seed, grad_cache_chunk=c.grad_cache_chunk)
    task = RetrieverTask(model, passages, dev_ex, tcfg)
    dataset = train_ex
    if c.arrow_cache or len(train_ex) > 200_000:
        dataset = to_dataset(train_ex, cache_dir=c.arrow_cache or str(Path(c.out) / "arrow"))
    lr = c.lr if c.lr is not None else (PRETRAINED_LR if c.init else SCRATCH_LR)
    loop = TrainConfig(out_dir=c.out, batch_size=c.batch_size, epochs=c.epochs, max_steps=c.max_steps, lr=lr,
                       weight_decay=c.weight_decay, warmup_steps=c.warmup_steps, grad_accum=c.grad_accum,
                       max_grad_norm=2.0, eval_every=c.eval_every, save_every=c.save_every, seed=c.seed,
                       bf16=c.bf16, gradient_checkpointing=c.gradient_checkpointing)
    return run_loop(task, dataset, loop, progress=c.progress, settings=asdict(config), init_from_best=True,
                    trains="a dense retriever")
