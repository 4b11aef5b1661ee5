"""What the two readers' training shares: the training files, validation and the loop's settings."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ReaderTrainConfig:
    out: str = ""                    # run folder: OUT/best is the reader artifact
    train: str | None = None         # training data (fid: retrieval results; span: xqa data train's train.jsonl)
    dev: str | None = None           # dev data for EM/F1 validation (best kept)
    init: str | None = None          # the model to start from
    max_length: int | None = None    # tokens per encoded passage (None: the reader's default)
    max_answer_len: int = 24         # tokens of the target answer
    train_limit: int = 0             # use only the first N training questions (0: all)
    dev_limit: int = 500             # validate on the first N dev questions (0: all)
    eval_mode: str = "official"      # EM/F1 for validation: official | lang_aware | simple
    batch_size: int = 16             # questions per batch per process
    epochs: float = 1.0
    max_steps: int = 0               # >0 overrides epochs
    lr: float | None = None          # None: the reader's default
    weight_decay: float = 0.01
    warmup_steps: int = 0
    grad_accum: int = 1
    max_grad_norm: float = 1.0       # gradient clipping (0: off)
    group_by_length: int = 0         # batch questions of similar length within windows of W batches (0: off)
    eval_every: int = 0              # 0: every epoch
    save_every: int = 500
    max_minutes: float = 0.0         # stop after this many minutes of training (0: no limit)
    log_every: int = 10
    seed: int = 0
    bf16: bool = True                # bf16 autocast on CUDA
    gradient_checkpointing: bool = False
    threads: int = 0                 # torch CPU threads (0: torch's default)
