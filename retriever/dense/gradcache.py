"""Gradient cache: the contrastive loss of a large batch on the memory of a small one.

The DPR loss couples every question of a batch to every passage, so the batch
cannot simply be split into accumulated micro-batches: each micro-batch would
see only its own negatives. The gradient cache (Gao et al., 2021, "Scaling Deep
Contrastive Learning Batch Size under Memory Limited Setup") splits the
*encoder* work instead, in three passes over chunks of the batch:

1. encode every chunk without autograd, keeping only the vectors;
2. make the vectors leaf tensors, compute the full-batch loss on them (under
   torch distributed: the gathered global loss) and backpropagate it to the
   vectors, caching ``d loss / d vector``;
3. encode every chunk again, this time with autograd, and backpropagate the
   cached vector gradients through it; parameter gradients accumulate.

Only one chunk's activations are alive at a time. Dropout draws the same masks
in passes 1 and 3 because the random-number state (CPU, and CUDA when the
batch is there) is saved before each chunk in pass 1 and restored before it in
pass 3, so the parameter gradients equal those of the loss over the whole batch
(``tests/test_dense.py`` checks every parameter). Afterwards the generators
stand where one pass over the chunks leaves them.

Under DDP, passes 1 and 2 bypass the wrapper; pass 3 runs every chunk but the
last inside ``no_sync()``, so gradients are averaged across processes once,
on the last chunk's backward. A chunk holds ``chunk`` questions and their
passages (``chunk·m/b`` of the ``m`` passages), so both towers take part in
every chunk's forward, as DDP requires of the synchronising one.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import torch

LossFromVectors = Callable[[torch.Tensor, torch.Tensor, dict[str, Any]], tuple[torch.Tensor, torch.Tensor]]


def chunk_bounds(b: int, m: int, chunk: int) -> list[tuple[slice, slice]]:
    """``(question slice, passage slice)`` per chunk of ``chunk`` questions.

    ``b`` questions, ``m`` passages laid out question by question (``m/b`` each,
    as ``RetrieverTask.collate`` does); the last chunk may be smaller.
    """
    if chunk < 1:
        raise ValueError(f"gradient cache chunk must be >= 1, got {chunk}")
    if b < 1 or m % b:
        raise ValueError(f"gradient cache needs the same number of passages per question "
                         f"(got {m} passages for {b} questions)")
    k = m // b
    return [(slice(s, min(s + chunk, b)), slice(s * k, min(s + chunk, b) * k)) for s in range(0, b, chunk)]


class _RngState:
    """The CPU generator's state and, for a CUDA device, that device's."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cpu = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None

    def restore(self) -> None:
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state(self.cuda, self.device)


def grad_cache_backward(model: torch.nn.Module, batch: dict[str, Any], chunk: int,
                        loss_from_vectors: LossFromVectors, *, scale: float = 1.0,
                        autocast: Callable[[], AbstractContextManager] = contextlib.nullcontext) -> torch.Tensor:
    """Accumulate ``scale ×`` the gradient of the full-batch loss into the parameters' ``.grad``.

    Args:
        model: a :class:`~retriever.dense.model.BiEncoder`, possibly DDP-wrapped;
            called as ``model(q_ids, q_mask, p_ids, p_mask) -> (q [b, d], p [m, d])``.
        batch: ``q_input_ids``/``q_attention_mask`` ``[b, Lq]``,
            ``p_input_ids``/``p_attention_mask`` ``[m, Lp]`` and whatever the loss reads.
        chunk: questions per chunk (their passages come along).
        loss_from_vectors: ``(q, p, batch) -> (loss_to_backward, loss_value)``.
        scale: factor on the backpropagated loss (``1 / grad_accum``).
        autocast: context factory for the forward computations (bf16 on CUDA).

    Returns: the detached loss value.
    """
    q_ids, q_mask = batch["q_input_ids"], batch["q_attention_mask"]
    p_ids, p_mask = batch["p_input_ids"], batch["p_attention_mask"]
    bounds = chunk_bounds(q_ids.shape[0], p_ids.shape[0], chunk)
    inner = getattr(model, "module", model)  # pass 1 needs no DDP bookkeeping
    device = q_ids.device

    # 1. vectors of every chunk, no activations kept
    states, q_parts, p_parts = [], [], []
    with torch.no_grad():
        for qs, ps in bounds:
            states.append(_RngState(device))
            with autocast():
                q, p = inner(q_ids[qs], q_mask[qs], p_ids[ps], p_mask[ps])
            q_parts.append(q)
            p_parts.append(p)
    after = _RngState(device)

    # 2. the full-batch loss on leaf vectors, backpropagated to the vectors only
    q_all = torch.cat(q_parts).requires_grad_(True)
    p_all = torch.cat(p_parts).requires_grad_(True)
    with autocast():
        to_backward, value = loss_from_vectors(q_all, p_all, batch)
    (to_backward * scale).backward()
    q_grad, p_grad = q_all.grad, p_all.grad
    del q_all, p_all, q_parts, p_parts

    # 3. each chunk again with autograd, its cached vector gradients pushed through
    no_sync = getattr(model, "no_sync", None)
    for i, (qs, ps) in enumerate(bounds):
        last = i == len(bounds) - 1
        with (no_sync() if no_sync is not None and not last else contextlib.nullcontext()):
            states[i].restore()
            with autocast():
                q, p = model(q_ids[qs], q_mask[qs], p_ids[ps], p_mask[ps])
            torch.autograd.backward([q, p], [q_grad[qs], p_grad[ps]])
    after.restore()
    return value.detach()
