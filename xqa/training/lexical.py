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

from dataclasses import dataclass

from xqa.training.dense import DEFAULT_SIZE, ModelConfig


@dataclass
class LexicalTrainConfig(ModelConfig):
    passages: str = ""                 # passage file: the queries are its sentences
    bm25: str = ""                     # BM25 index folder of these passages (xqa index sparse): the teacher
    out: str = ""                      # output folder (OUT/best is Λ; rerun to resume)
    lang: str | None = None            # language of passage files that carry none (DPR TSV)
    dev: str | None = None             # validation questions (their text only); None: held-out sentences
    dev_size: int = 500                # held-out sentences for validation without dev
    depth: int = 50                    # K: teacher hits per query
    positives: int = 10                # n_p: top teacher hits used as positives
    negatives: int = 5                 # n_n: bottom teacher hits (of the top K) used as hard negatives
    sentences_per_passage: int = 1
    min_words: int = 3                 # shortest sentence used as a query, in words
    max_queries: int = 0               # cap on training queries (0: no cap)
    pooling: str | None = "mean"       # Λ imitates a bag of words: mean pooling learns faster from scratch
    query_max_length: int = 48
    passage_max_length: int = 96
    batch_size: int = 64
    epochs: float = 2.0
    max_steps: int = 0
    lr: float = 1e-3                   # SPAR used 3e-5 for BERT
    weight_decay: float = 0.01
    warmup_steps: int = 50
    grad_accum: int = 1
    eval_every: int = 0                # 0: every epoch
    save_every: int = 200
    mask_false_negatives: bool = True
    gradient_checkpointing: bool = False
    bf16: bool = True
    threads: int = 0
    progress: bool = True


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

    c = config
    if c.threads:
        torch.set_num_threads(c.threads)
    info = init_distributed()
    say = print if info.main else (lambda *a, **k: None)
    tcfg = TeacherConfig(depth=c.depth, positives=c.positives, negatives=c.negatives,
                         sentences_per_passage=c.sentences_per_passage, min_words=c.min_words,
                         max_queries=c.max_queries, seed=c.seed)
    dev_q = read_questions(c.dev, lang=c.lang) if c.dev else None
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
    return run_loop(task, train_ex, loop, progress=c.progress)
