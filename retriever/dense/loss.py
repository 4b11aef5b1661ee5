"""DPR's contrastive loss, with negatives gathered across processes.

For ``B`` questions and ``P`` candidate passages (each question's positive,
the other questions' passages — in-batch negatives — and any hard negatives),
the loss is the mean negative log-likelihood of each question's positive under
a softmax over dot products with all ``P`` passages (DPR eq. 2).

Under torch distributed, every process holds a slice of the batch. The
question and passage vectors of all processes are gathered with
``all_gather``; the process's own slice is put back *with* its autograd graph,
so its gradient flows, and the loss is computed over the whole global batch.
Gradients of the other slices are computed by their own processes; since DDP
(or :func:`average_gradients`) divides the summed gradients by the world size,
each process scales its loss by the world size. The result is exactly the
gradient of a single process running the full batch (tested in
``tests/test_dense.py``).
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F


def contrastive_loss(q: torch.Tensor, p: torch.Tensor, positive: torch.Tensor,
                     exclude: torch.Tensor | None = None) -> torch.Tensor:
    """Mean NLL of each question's positive passage.

    Args:
        q: question vectors ``[B, d]``.
        p: passage vectors ``[P, d]``.
        positive: ``[B]`` long, index into ``p`` of each question's positive.
        exclude: optional ``[B, P]`` bool, passages left out of a question's
            softmax (its other positives; never its target).

    Returns: a scalar tensor.
    """
    scores = (q @ p.T).float()  # [B, P]
    if exclude is not None:
        scores = scores.masked_fill(exclude, float("-inf"))
    return F.cross_entropy(scores, positive)


def false_negative_mask(positive: torch.Tensor, pos_keys: torch.Tensor, pos_valid: torch.Tensor,
                        p_keys: torch.Tensor) -> torch.Tensor:
    """``[B, P]`` bool: passage ``j`` is a positive of question ``i`` other than its target.

    ``pos_keys`` ``[B, K]`` id keys of each question's positives (``pos_valid``
    marks real entries), ``p_keys`` ``[P]`` id keys of the passages.
    """
    match = ((pos_keys.unsqueeze(2) == p_keys.view(1, 1, -1)) & pos_valid.unsqueeze(2)).any(1)  # [B, P]
    target = torch.zeros_like(match)
    target[torch.arange(len(positive), device=positive.device), positive] = True
    return match & ~target


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def gather_with_grad(x: torch.Tensor) -> torch.Tensor:
    """Concatenate ``x`` ``[n, d]`` from every process (rank order) → ``[sum n, d]``.

    All processes must pass the same ``n`` (pad or drop the last batch). Only
    this process's slice carries a gradient.
    """
    if not is_distributed():
        return x
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x.detach().contiguous())
    parts[dist.get_rank()] = x
    return torch.cat(parts, dim=0)


def distributed_contrastive_loss(q: torch.Tensor, p: torch.Tensor, positive: torch.Tensor,
                                 false_negatives: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
                                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """The global-batch loss seen from one process.

    Args:
        q: local question vectors ``[b, d]``.
        p: local passage vectors ``[m, d]`` (``m`` equal on every process).
        positive: ``[b]`` indices into the *local* ``p``.
        false_negatives: optional local ``(pos_keys [b, K], pos_valid [b, K], p_keys [m])``
            (see :func:`false_negative_mask`), gathered like the vectors.

    Returns: ``(loss_to_backward, loss_value)``: the first is the global loss
    scaled by the world size (so averaged gradients equal the full-batch
    gradient); the second, detached, is the global loss itself for logging.
    """
    world = dist.get_world_size() if is_distributed() else 1
    rank = dist.get_rank() if is_distributed() else 0
    all_q = gather_with_grad(q)  # [B, d]
    all_p = gather_with_grad(p)  # [P, d]
    all_pos = gather_with_grad((positive + rank * p.shape[0]).unsqueeze(1)).squeeze(1)  # [B]
    exclude = None
    if false_negatives is not None:
        keys, valid, p_keys = false_negatives
        exclude = false_negative_mask(all_pos, gather_with_grad(keys), gather_with_grad(valid.long()).bool(),
                                      gather_with_grad(p_keys.unsqueeze(1)).squeeze(1))
    loss = contrastive_loss(all_q, all_p, all_pos, exclude)
    return loss * world, loss.detach()


def average_gradients(parameters) -> None:
    """All-reduce-average ``.grad`` over processes (what DDP does, for code without DDP)."""
    if not is_distributed():
        return
    world = dist.get_world_size()
    for prm in parameters:
        if prm.grad is not None:
            dist.all_reduce(prm.grad, op=dist.ReduceOp.SUM)
            prm.grad /= world


def ranks(q: torch.Tensor, p: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    """1-based rank of each question's positive among ``p`` (ties count against it). ``[B]``."""
    scores = q @ p.T  # [B, P]
    pos_score = scores.gather(1, positive.unsqueeze(1))  # [B, 1]
    return (scores > pos_score).sum(1) + (scores == pos_score).sum(1)
