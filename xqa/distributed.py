"""Running one job in the processes of a torchrun job: who reports, how work is shared.

Used by the training loop (:mod:`xqa.training.loop`) and by batch reading and tuning
(:mod:`xqa.evaluation`); torch is imported here, so import this module only where torch is
needed anyway (:func:`main_process` reads the environment alone).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch


@dataclass
class DistInfo:
    rank: int = 0
    processes: int = 1  # processes of the torchrun job (its WORLD_SIZE)
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def main(self) -> bool:
        return self.rank == 0


def main_process() -> bool:
    """False in every process of a torchrun job but rank 0 (which alone reports), before or after
    ``init_distributed``: commands print their summaries only where this holds."""
    return int(os.environ.get("RANK", "0")) == 0


def init_distributed() -> DistInfo:
    """Initialise torch distributed from torchrun's environment (no-op for one process)."""
    processes = int(os.environ.get("WORLD_SIZE", "1"))
    cuda = torch.cuda.is_available()
    if processes <= 1:
        return DistInfo(device=torch.device("cuda" if cuda else "cpu"))
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(local)
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    return DistInfo(rank=dist.get_rank(), processes=dist.get_world_size(), local_rank=local,
                    device=torch.device(f"cuda:{local}" if cuda else "cpu"))


def map_sharded(fn: Callable[[list], list], items: Sequence) -> list | None:
    """``fn(items)`` shared by the processes of a torchrun job (one process: just ``fn``).

    Rank r maps ``items[r::processes]`` (strided, so that sorted inputs spread evenly); rank 0
    gets every result back in the order of ``items``, the other ranks get None. ``fn`` must
    return one result per item.
    """
    info = init_distributed()
    if info.processes == 1:
        return fn(list(items))
    import torch.distributed as dist

    share = list(items[info.rank::info.processes])
    mine = fn(share)
    if len(mine) != len(share):
        raise ValueError(f"map_sharded: {len(mine)} results for {len(share)} items")
    parts: list | None = [None] * info.processes if info.main else None
    dist.gather_object(mine, parts, dst=0)
    if not info.main:
        return None
    out: list = [None] * len(items)
    for rank, part in enumerate(parts):
        out[rank::info.processes] = part
    return out


def _reached(deadline: float, info: DistInfo) -> bool:
    """Has the deadline passed (rank 0's clock, so that every process stops at the same step)?"""
    late = time.monotonic() >= deadline
    if info.processes == 1:
        return late
    import torch.distributed as dist

    t = torch.tensor([float(late)], device=info.device)
    dist.broadcast(t, src=0)
    return bool(t.item())


def _barrier(info: DistInfo) -> None:
    if info.processes > 1:
        import torch.distributed as dist

        dist.barrier()


def _mean_across(value: float, info: DistInfo) -> float:
    if info.processes == 1:
        return value
    import torch.distributed as dist

    t = torch.tensor([value], dtype=torch.float64, device=info.device)
    dist.all_reduce(t)
    return float(t.item()) / info.processes
