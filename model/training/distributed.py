"""Training on several processes with PyTorch's own distributed engine (``torchrun``).

    torchrun --nproc_per_node 2 -m model.train --task grammar-en-zh --steps 3000 --out runs/ddp

Each rank runs the same program on its own share of the batches; :class:`torch.nn.parallel.
DistributedDataParallel` averages the gradients, so every rank takes the same update. The process group
uses ``gloo`` on the CPU and ``nccl`` on CUDA (each rank on the GPU of its local rank). Losses are weighted
by the number of predicted tokens across all ranks, so that one step of N ranks with batch B each is the
step of one process with batch N·B on the same examples.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist


def world() -> tuple[int, int, int]:
    """(rank, local rank, number of ranks) from torchrun's environment; (0, 0, 1) without it."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("LOCAL_RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def start(device: str) -> str:
    """Join torchrun's process group; → the device this rank trains on (``cuda:LOCAL_RANK`` on CUDA)."""
    _, local, _ = world()
    cuda = device in ("auto", "cuda") and torch.cuda.is_available() or device.startswith("cuda:")
    if cuda:
        torch.cuda.set_device(local)
        device = f"cuda:{local}"
    dist.init_process_group("nccl" if cuda else "gloo")
    return device


def active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def stop() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def share(value: Any) -> Any:
    """Rank 0's ``value`` on every rank (any picklable object)."""
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def wrap(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` under DistributedDataParallel (which first gives every rank rank 0's weights)."""
    from torch.nn.parallel import DistributedDataParallel

    device = next(model.parameters()).device
    moe = bool(getattr(getattr(model, "cfg", None), "moe", False))  # experts no token chose get no gradient
    return DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None, find_unused_parameters=moe
    )


def sums(*values: float) -> list[float]:
    """The sums over all ranks of ``values`` (one collective)."""
    t = torch.tensor(values, dtype=torch.float64)
    if dist.get_backend() == "nccl":
        t = t.cuda()
    dist.all_reduce(t)
    return t.tolist()


class Sharded:
    """Rank ``rank``'s share of a batch stream that every rank draws identically: of each ``world``
    consecutive batches, the ``rank``-th. Its state is the underlying stream's (the same on every rank), so a
    run resumes with another number of ranks from where it stopped."""

    def __init__(self, stream: Any, rank: int, world_size: int) -> None:
        self.stream, self.rank, self.world = stream, rank, world_size

    def __iter__(self) -> Sharded:
        return self

    def __next__(self) -> Any:
        mine = None
        for r in range(self.world):
            batch = next(self.stream)
            if r == self.rank:
                mine = batch
        return mine

    def state_dict(self) -> dict[str, int]:
        return self.stream.state_dict()
