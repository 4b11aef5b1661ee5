"""The bi-encoder training task for xqa's shared training loop.

The loop (``xqa.training.train``) owns the optimizer, schedule, distributed
set-up, checkpoints and validation calls; this task says what a batch is, what
the loss is, how to validate and how to save. It is duck-typed against
``xqa.training.TrainTask`` (``retriever`` does not import the loop).

A batch of ``b`` questions holds ``b·(1+h)`` passages: each question's positive
(one sampled from its positives) followed by ``h`` hard negatives (sampled from
its list, topped up with random passages). Every question is scored against
every passage of the global batch (in-batch negatives, gathered across
processes). A passage that is *another* positive of the question — two
questions about the same fact in one batch — is masked out of its softmax
instead of being pushed away (``mask_false_negatives``).

With ``grad_cache_chunk`` set, the loop's backward goes through
:meth:`RetrieverTask.backward_step`, which encodes the batch in chunks and
backpropagates through a gradient cache (``gradcache.py``): the same gradients
as the whole batch at once, with the activations of one chunk in memory.

Validation is DPR-style MRR on a mini-index: the dev questions' positives and
hard (or random) negatives, encoded afresh.
"""
from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from xqa.errors import XqaError
from xqa.records import Passage

from .data import Example, id_key
from .gradcache import grad_cache_backward
from .loss import distributed_contrastive_loss
from .model import BiEncoder


def random_negatives(pool: Sequence[str], n: int, exclude: set[str]) -> list[str]:
    """``n`` passage ids drawn from ``pool`` (``random``), avoiding ``exclude`` within a bounded
    number of draws; a pool of positives only (tiny sets) repeats them, still a valid shape."""
    out: list[str] = []
    for _ in range(20 * n + 20):
        if len(out) == n:
            break
        c = random.choice(pool)
        if c not in exclude:
            out.append(c)
    while len(out) < n:
        out.append(random.choice(pool))
    return out


@dataclass
class TaskConfig:
    hard_negatives: int = 1            # h: hard negatives per question in a batch
    max_positives: int = 8             # positives per question used for false-negative masking
    mask_false_negatives: bool = True
    dev_questions: int = 1000          # validation: at most this many dev questions
    dev_negatives: int = 4             # validation: hard/random negatives per dev question
    seed: int = 0
    grad_cache_chunk: int = 0          # gradient cache: questions per encoder chunk (0: off)
    # softmax temperature of the similarities (0: 0.01 for L2-normalised vectors, as multilingual-e5
    # was trained; 1 for raw dot products, as DPR)
    temperature: float = 0.0


class RetrieverTask:
    """DPR contrastive training of a :class:`BiEncoder`."""

    metric = "mrr"

    def __init__(self, model: BiEncoder, passages: Mapping[str, Passage],
                 dev: Sequence[Example] = (), config: TaskConfig | None = None):
        self.model = model
        self.passages = passages
        self.config = config or TaskConfig()
        if self.config.grad_cache_chunk < 0:
            raise XqaError(f"grad_cache_chunk must be >= 0 (0: off), got {self.config.grad_cache_chunk}")
        self._pool = list(passages)  # random-negative pool
        self.dev = list(dev)[: self.config.dev_questions]
        self._mini_index = self._build_mini_index() if self.dev else None

    # ---------------------------------------------------------------- batches
    def collate(self, examples: list[Example]) -> dict[str, Any]:
        """Tokenized questions ``[b, Lq]``, passages ``[b(1+h), Lp]``, targets and id keys."""
        h, kmax = self.config.hard_negatives, self.config.max_positives
        questions, pids, positive = [], [], []
        pos_keys = torch.full((len(examples), kmax + 1), 0, dtype=torch.long)
        pos_keys_valid = torch.zeros((len(examples), kmax + 1), dtype=torch.bool)
        for i, ex in enumerate(examples):
            pos_list = list(ex["positive_ids"])
            pos = random.choice(pos_list)
            negs = list(ex["hard_negative_ids"])
            chosen = random.sample(negs, h) if len(negs) >= h else negs + self._random_negatives(
                h - len(negs), exclude=set(pos_list) | set(negs))
            positive.append(len(pids))
            pids.append(pos)
            pids.extend(chosen)
            questions.append(ex["question"])
            keys = [pos] + [p for p in pos_list if p != pos][:kmax]
            pos_keys[i, : len(keys)] = torch.tensor([id_key(p) for p in keys])
            pos_keys_valid[i, : len(keys)] = True
        q = self.model.tokenize_queries(questions)
        p = self.model.tokenize_passages([self.passages[i] for i in pids])
        return {"q_input_ids": q["input_ids"], "q_attention_mask": q["attention_mask"],
                "p_input_ids": p["input_ids"], "p_attention_mask": p["attention_mask"],
                "positive": torch.tensor(positive, dtype=torch.long),
                "pos_keys": pos_keys, "pos_keys_valid": pos_keys_valid,
                "p_keys": torch.tensor([id_key(i) for i in pids], dtype=torch.long)}

    def _random_negatives(self, n: int, exclude: set[str]) -> list[str]:
        return random_negatives(self._pool, n, exclude)

    def loss(self, model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        """Global-batch NLL; its value is the loss, its gradient world-size-scaled (see ``loss.py``)."""
        q, p = model(batch["q_input_ids"], batch["q_attention_mask"],
                     batch["p_input_ids"], batch["p_attention_mask"])
        scaled, value = self.loss_from_vectors(q, p, batch)
        return scaled - (scaled - value).detach()

    def loss_from_vectors(self, q: torch.Tensor, p: torch.Tensor,
                          batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loss_to_backward, loss_value)`` of local vectors ``q`` ``[b, d]``, ``p`` ``[m, d]``."""
        mask = None
        if self.config.mask_false_negatives:
            mask = (batch["pos_keys"], batch["pos_keys_valid"], batch["p_keys"])
        return distributed_contrastive_loss(q / self.temperature, p, batch["positive"], false_negatives=mask)

    @property
    def temperature(self) -> float:
        if self.config.temperature > 0:
            return self.config.temperature
        return 0.01 if getattr(self.model.config, "normalize", False) else 1.0

    def backward_step(self, model: torch.nn.Module, batch: dict[str, Any], *, scale: float = 1.0,
                      autocast: Callable[[], AbstractContextManager] | None = None) -> torch.Tensor:
        """Backpropagate ``scale ×`` the batch loss into ``.grad``; returns the detached loss.

        The training loop's hook (``xqa.training``). With ``grad_cache_chunk``
        smaller than the batch, the gradient cache; otherwise one forward and
        backward, as without the hook.
        """
        autocast = autocast or contextlib.nullcontext
        chunk = self.config.grad_cache_chunk
        if 0 < chunk < batch["q_input_ids"].shape[0]:
            return grad_cache_backward(model, batch, chunk, self.loss_from_vectors,
                                       scale=scale, autocast=autocast)
        with autocast():
            loss = self.loss(model, batch)
        (loss * scale).backward()
        return loss.detach()

    # -------------------------------------------------------------- validation
    def _build_mini_index(self) -> tuple[list[str], list[list[int]]]:
        """Passage ids of the mini-index and, per dev question, the rows of its positives."""
        rng = random.Random(self.config.seed)
        ids: dict[str, int] = {}
        for ex in self.dev:
            negs = list(ex["hard_negative_ids"])[: self.config.dev_negatives]
            excl = set(ex["positive_ids"]) | set(negs)
            while len(negs) < self.config.dev_negatives and len(self._pool) > len(excl):
                c = rng.choice(self._pool)
                if c not in excl:
                    negs.append(c)
                    excl.add(c)
            for pid in list(ex["positive_ids"]) + negs:
                ids.setdefault(pid, len(ids))
        rows = [[ids[p] for p in ex["positive_ids"]] for ex in self.dev]
        return list(ids), rows

    @torch.no_grad()
    def evaluate(self, model: torch.nn.Module) -> dict[str, float]:
        """MRR, acc@1 and acc@5 of the dev questions over the mini-index."""
        if self._mini_index is None:
            return {}
        ids, rows = self._mini_index
        bi: BiEncoder = getattr(model, "module", model)
        qv = bi.encode_queries([ex["question"] for ex in self.dev])  # [n, d]
        pv = bi.encode_passages([self.passages[i] for i in ids])  # [m, d]
        return mini_index_metrics(qv, pv, rows)

    def save(self, model: torch.nn.Module, folder) -> None:
        getattr(model, "module", model).write(folder)

    def enable_gradient_checkpointing(self) -> None:
        self.model.enable_gradient_checkpointing()


def mini_index_metrics(qv: np.ndarray, pv: np.ndarray, positives: Sequence[Sequence[int]]) -> dict[str, float]:
    """MRR / acc@1 / acc@5 where a question's rank is that of its best-ranked positive.

    ``qv`` ``[n, d]``, ``pv`` ``[m, d]``; ``positives[i]`` are row indices into ``pv``.
    Ties count against the question.
    """
    scores = qv @ pv.T  # [n, m]
    rr, a1, a5 = [], [], []
    for i, pos in enumerate(positives):
        best = scores[i, list(pos)].max()
        rank = int((scores[i] > best).sum()) + int((scores[i] == best).sum()) - int(
            (scores[i, list(pos)] == best).sum()) + 1
        rr.append(1.0 / rank)
        a1.append(rank <= 1)
        a5.append(rank <= 5)
    n = max(1, len(rr))
    return {"mrr": float(sum(rr) / n), "acc@1": float(sum(a1) / n), "acc@5": float(sum(a5) / n)}
