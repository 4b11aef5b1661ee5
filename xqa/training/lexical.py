"""SPAR's lexical model Λ, trained to imitate BM25 (SPAR: Chen et al., "Salient Phrase Aware
Dense Retrieval: Can a Dense Retriever Imitate a Sparse One?", 2022, §4.1).

The BM25 teacher labels sentence queries sampled from the passages (``retriever.spar.data``;
cached in ``OUT/teacher``); the model is a ``retriever.dense`` bi-encoder trained with the
dense task (DPR loss; one of the n_p positives sampled per step, the others masked); the loop
is :func:`xqa.training.loop.train` (checkpoints, resume, validation MRR, progress). The model
is ``OUT/best``; training again with the same ``OUT`` resumes.

The defaults are the embedded default's on a 2-core CPU (docs/fusion.md).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from xqa.training.dense import DEFAULT_SIZE, ModelConfig

SCRATCH_LR = 1e-3      # Λ's peak learning rate trained from scratch
PRETRAINED_LR = 5e-5   # ... and started from a pretrained encoder (as xqa build trains it)


@dataclass
class LexicalTrainConfig(ModelConfig):
    # the options of ``xqa train lexical`` (:mod:`xqa.cli_config`)
    init: str | None = field(default=None, metadata={
        "metavar": "NAME_OR_DIR", "help": "start from a hub model or a local HF / bi-encoder folder"})
    init_passage: str | None = field(default=None, metadata={
        "metavar": "NAME_OR_DIR", "help": "separate passage tower start"})
    size: str | None = field(default=None, metadata={
        "choices": ("tiny", "small", "base"),
        "help": f"build a random mLUKE-architecture model of this size (needs --tokenizer; default "
                f"{DEFAULT_SIZE} when no --init)"})
    # Λ imitates a bag of words: mean pooling learns faster from scratch
    pooling: str | None = field(default="mean", metadata={
        "choices": ("cls", "mean", "pooler"),
        "help": "representation: mean of the last layer (Λ imitates a bag of words; learns faster from "
                "scratch) or its first token (cls, as DPR)"})
    query_max_length: int = field(default=48, metadata={"min": 1, "help": "query tokens"})
    passage_max_length: int = field(default=96, metadata={"min": 1, "help": "passage tokens"})
    seed: int = field(default=0, metadata={"help": "random seed (sentence sampling and training)"})
    passages: str = field(default="", metadata={
        "required": True, "help": "passage file (JSONL or DPR TSV): queries are its sentences"})
    bm25: str = field(default="", metadata={
        "required": True, "help": "BM25 index folder of these passages (xqa index sparse): the teacher"})
    out: str = field(default="", metadata={
        "required": True, "help": "output folder (OUT/best is Λ; rerun to resume)"})
    lang: str | None = field(default=None, metadata={"help": "language of passage files that carry none (DPR TSV)"})
    # None: held-out sentences
    dev: str | None = field(default=None, metadata={
        "help": "validation questions (any question layout; their text only): the teacher's top-1 is the "
                "positive. Default: held-out sentences"})
    dev_size: int = field(default=500, metadata={"help": "held-out sentences for validation without --dev"})
    depth: int = field(default=50, metadata={"min": 1, "help": "K: teacher hits per query"})
    positives: int = field(default=10, metadata={"help": "n_p: top teacher hits used as positives"})
    negatives: int = field(default=5, metadata={
        "help": "n_n: bottom teacher hits (of the top K) used as hard negatives"})
    sentences_per_passage: int = field(default=1, metadata={"min": 1, "help": "sentence queries sampled per passage"})
    min_words: int = field(default=3, metadata={"help": "shortest sentence used as a query, in words"})
    max_queries: int = field(default=0, metadata={"help": "cap on training queries (0: no cap)"})
    batch_size: int = field(default=64, metadata={"min": 1, "help": "queries per batch and process"})
    epochs: float = field(default=2.0, metadata={"min": 0.0, "help": "passes over the sentence queries"})
    max_steps: int = field(default=0, metadata={"help": "stop after this many steps (0: use --epochs)"})
    # None: SCRATCH_LR for a model trained from scratch, PRETRAINED_LR for --init
    lr: float | None = field(default=None, metadata={
        "min": 0.0, "help": "peak learning rate (AdamW); default 1e-3 from scratch (--size), 5e-5 from a "
                            "pretrained encoder (--init; SPAR used 3e-5 for BERT)"})
    weight_decay: float = field(default=0.01, metadata={"min": 0.0, "help": "AdamW weight decay"})
    warmup_steps: int = field(default=50, metadata={"help": "linear warm-up steps"})
    grad_accum: int = field(default=1, metadata={"min": 1, "help": "gradient accumulation steps"})
    eval_every: int = field(default=0, metadata={"help": "validate every N steps (0: every epoch)"})
    save_every: int = field(default=200, metadata={"min": 1, "help": "checkpoint every N steps"})
    mask_false_negatives: bool = field(default=True, metadata={
        "help": "do not mask a query's other positives out of its softmax"})
    gradient_checkpointing: bool = field(default=False, metadata={"help": "recompute activations (CUDA only)"})
    bf16: bool = field(default=True, metadata={"help": "no bf16 autocast on CUDA"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    progress: bool = field(default=True, metadata={"flag": "--quiet", "help": "no progress bars"})


def check_teacher(bm25: str, passages: str, lang: str | None = None) -> None:
    """Refuse a ``--bm25`` index of other passages than ``--passages`` (by its config's count of
    passages in each language it indexes, or in all for a cross-script index): Λ would learn to imitate BM25
    over a collection it is not given, and passages BM25 ranks would be missing from its data."""
    import json
    from collections import Counter
    from pathlib import Path

    from xqa.errors import XqaError
    from xqa.io import read_passages

    try:
        cfg = json.loads((Path(bm25) / "config.json").read_text(encoding="utf-8"))
        indexed = {code: int(v["num_passages"]) for code, v in cfg["languages"].items()}
        total = int(cfg.get("num_passages", sum(indexed.values())))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return   # not an index of this layout: SparseRetriever.load says what it is
    given = Counter(p.lang for p in read_passages(passages, lang=lang))
    if cfg.get("cross_script"):
        differ = [f"{total} indexed, {sum(given.values())} given"] if total != sum(given.values()) else []
    else:
        differ = [f"{code}: {n} indexed, {given.get(code, 0)} given"   # a language BM25 leaves out is no error
                  for code, n in sorted(indexed.items()) if n != given.get(code, 0)]
    if differ:
        raise XqaError(f"--bm25 {bm25} indexes other passages than --passages {passages} "
                       f"({'; '.join(differ[:4])}{'; ...' if len(differ) > 4 else ''}): give the BM25 index "
                       f"built from them (xqa index sparse --passages {passages} --out DIR)")


def learning_rate(c: LexicalTrainConfig) -> float:
    """``--lr``, else :data:`PRETRAINED_LR` for a pretrained encoder (``--init``), else :data:`SCRATCH_LR`."""
    return c.lr if c.lr is not None else PRETRAINED_LR if c.init else SCRATCH_LR


def train(config: LexicalTrainConfig) -> dict:
    """Label sentence queries with BM25, build Λ and its task, run the shared loop; the loop's
    result (``step``, ``best`` dev MRR, ...). Without ``init`` or ``size``, Λ is a random model of
    :data:`~xqa.training.dense.DEFAULT_SIZE`."""
    from dataclasses import replace

    import torch

    from retriever.spar.data import TeacherConfig
    from retriever.spar.lexical import lexical_task, summary, teacher_data
    from retriever.sparse import SparseRetriever
    from xqa.io import read_passages, read_questions
    from xqa.training.dense import build_model
    from xqa.training.loop import TrainConfig, init_distributed
    from xqa.training.loop import train as run_loop

    config = replace(config, lr=learning_rate(config))   # recorded as used: a rerun with the default resumes
    c = config
    if c.threads:
        torch.set_num_threads(c.threads)
    info = init_distributed()
    say = print if info.main else (lambda *a, **k: None)
    tcfg = TeacherConfig(depth=c.depth, positives=c.positives, negatives=c.negatives,
                         sentences_per_passage=c.sentences_per_passage, min_words=c.min_words,
                         max_queries=c.max_queries, seed=c.seed)
    if c.init:
        from retriever.dense.model import check_init

        check_init(c.init)   # before the teacher's data is written into OUT
    dev_q = read_questions(c.dev, lang=c.lang) if c.dev else None
    check_teacher(c.bm25, c.passages, c.lang)
    with SparseRetriever.load(c.bm25) as teacher:
        train_ex, dev_ex, meta = teacher_data(
            teacher, lambda: read_passages(c.passages, lang=c.lang), c.out, tcfg,
            dev_questions=dev_q, dev_size=c.dev_size, progress=c.progress and info.main)
    say(summary(meta))
    if c.size is None and not c.init:
        c = replace(c, size=DEFAULT_SIZE)
    model = build_model(c)
    task = lexical_task(model, read_passages(c.passages, lang=c.lang), train_ex, dev_ex, tcfg,
                        mask_false_negatives=c.mask_false_negatives, seed=c.seed)
    loop = TrainConfig(out_dir=c.out, batch_size=c.batch_size, epochs=c.epochs, max_steps=c.max_steps, lr=c.lr,
                       weight_decay=c.weight_decay, warmup_steps=c.warmup_steps, grad_accum=c.grad_accum,
                       max_grad_norm=2.0, eval_every=c.eval_every, save_every=c.save_every, seed=c.seed,
                       bf16=c.bf16, gradient_checkpointing=c.gradient_checkpointing)
    return run_loop(task, train_ex, loop, progress=c.progress, settings=asdict(config), init_from_best=True,
                    trains="the lexical model Λ")
