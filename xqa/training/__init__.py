"""Training: one loop for every xqa model, and the tasks that use it.

* :mod:`.loop` — the shared loop (:func:`train`, :class:`TrainConfig`): optimizer and
  schedule, checkpoints and resume, validation keeping the best artifact, torch distributed;
* :mod:`.tokenizer` — the SentencePiece tokenizer of a model trained from scratch;
* :mod:`.dense` — the dense bi-encoder with the DPR loss (Karpukhin et al. 2020);
* :mod:`.lexical` — SPAR's lexical model Λ, taught by BM25 (SPAR, Chen et al. 2022);
* :mod:`.bm25_aug` — BM25 query augmentation learned end to end (Chen & Wiseman 2023);
* :mod:`.span` — the extractive span reader on a pretrained encoder;
* :mod:`.fid` — the Fusion-in-Decoder reader (Izacard & Grave 2021).

Each task module has a config dataclass and ``train(config) -> dict`` (the loop's result:
``step``, ``best``, ...); the commands of ``xqa train`` parse their flags into that config.
"""
from __future__ import annotations

from xqa.lazy import exports

# the loop's names, loaded on first use: a task's config dataclass imports without torch
_LOOP = ("DistInfo", "TrainConfig", "TrainTask", "epoch_order", "init_distributed", "length_grouped_batches",
         "linear_schedule", "main_process", "map_sharded", "train")


__getattr__ = exports(__name__, {name: ".loop" for name in _LOOP})


__all__ = list(_LOOP)
