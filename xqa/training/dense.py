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
from dataclasses import dataclass
from pathlib import Path

# OpenMP threads that spin while waiting are 4-5x slower than sleeping ones when the cores
# are shared (measured: docs/dense.md). Only effective before torch/FAISS load OpenMP.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

DEFAULT_SIZE = "tiny"        # the random model's size without --init
SCRATCH_POOLING = "mean"     # a small model trained from scratch collapses with cls (docs/dense.md)
SCRATCH_LR = 3e-4            # peak learning rate of a model trained from scratch
PRETRAINED_LR = 2e-5         # ... and of one started from a pretrained model


@dataclass
class ModelConfig:
    """The bi-encoder to train: a pretrained start (``init``) or a random one of ``size``."""

    init: str | None = None            # hub model or a local HF / bi-encoder folder
    init_passage: str | None = None    # separate passage tower start
    size: str | None = None            # tiny | small | base: random mLUKE-architecture model (needs tokenizer)
    tokenizer: str | None = None       # tokenizer folder for size (xqa train tokenizer)
    layers: int = 0                    # with init: keep the encoder's first N layers (0: all)
    freeze_embeddings: bool = False    # keep the word-embedding matrix fixed
    separate: bool = False             # separate question and passage towers (default shared)
    pooling: str | None = None         # cls | mean | pooler; None: cls for init, mean for size
    dropout: float = 0.0               # dropout of a random model (hub models keep their own)
    query_max_length: int = 32
    passage_max_length: int = 80
    seed: int = 0


@dataclass
class DenseTrainConfig(ModelConfig):
    train: str = ""                    # training questions (JSONL with positive_ids, SQuAD JSON, ...)
    passages: str = ""                 # passage file the positives point into
    out: str = ""                      # output folder (OUT/best is the model; rerun to resume)
    dev: str | None = None             # dev questions for validation MRR on a mini-index
    lang: str | None = None            # language of files that carry none (DPR TSV)
    positives_from: str | None = None  # retrieval results giving positives to questions without positive_ids
    hard_negatives: str | None = None  # retrieval results to take hard negatives from
    hard_negatives_depth: int = 20     # top non-positive hits kept per question as its hard negatives
    arrow_cache: str | None = None     # memory-mapped Arrow cache of the examples (automatic above 200k)
    batch_size: int = 64
    num_hard_negatives: int = 0        # hard negatives per question in a batch, besides in-batch ones
    epochs: float = 0.5
    max_steps: int = 0                 # 0: use epochs
    lr: float | None = None            # None: SCRATCH_LR for size, PRETRAINED_LR for init
    weight_decay: float = 0.01
    warmup_steps: int = 30
    grad_accum: int = 1
    grad_cache_chunk: int = 0          # gradient cache: encode N questions at a time (0: off)
    eval_every: int = 40               # validate every N steps (0: every epoch)
    save_every: int = 200
    dev_questions: int = 500
    mask_false_negatives: bool = True  # mask a question's other positives out of its softmax
    gradient_checkpointing: bool = False
    bf16: bool = True                  # bf16 autocast on CUDA
    threads: int = 0                   # torch CPU threads (0: torch's default)
    progress: bool = True


def build_model(config: ModelConfig):
    """The bi-encoder ``config`` names: loaded from ``init``, or random of ``size``."""
    from retriever.dense.model import BiEncoder
    from xqa.errors import XqaError

    if config.init and config.size:
        raise XqaError("give --init (start from a pretrained model) or --config (random), not both")
    if config.init:
        model = BiEncoder.from_pretrained(config.init, config.init_passage,
                                          shared=False if config.separate else None, pooling=config.pooling,
                                          query_max_length=config.query_max_length,
                                          passage_max_length=config.passage_max_length, layers=config.layers)
        if config.freeze_embeddings:
            model.freeze_embeddings()
        return model
    if not config.tokenizer:
        raise XqaError("--config needs --tokenizer (a folder from `xqa train tokenizer`)")
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
    from xqa.training.loop import TrainConfig, init_distributed
    from xqa.training.loop import train as run_loop

    c = config
    if c.grad_cache_chunk < 0:
        raise XqaError(f"--grad-cache-chunk must be 0 (off) or a positive number of questions, "
                       f"got {c.grad_cache_chunk}")
    if c.threads:
        torch.set_num_threads(c.threads)
    info = init_distributed()
    say = print if info.main else (lambda *a, **k: None)

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
        f"{len(dev_ex)} dev questions ({dev_skipped} skipped)")
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
    return run_loop(task, dataset, loop, progress=c.progress)
