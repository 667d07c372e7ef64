"""One training step on fixed examples, for tests/test_distributed.py.

    python tests/ddp_one_step.py OUT.pt B                                  # one process, the 2·B examples
    torchrun --standalone --nproc_per_node 2 tests/ddp_one_step.py OUT.pt B  # rank r: examples r·B … (r+1)·B

Rank 0 saves the weights and the gradients after the step to OUT.pt.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from model.data import DataSpec
from model.data.batching import collate
from model.session import Session
from model.training import distributed
from model.training.trainer import TrainConfig


class Fixed:
    """A batch stream of one given batch."""

    def __init__(self, batch: object) -> None:
        self.batch = batch

    def __next__(self) -> object:
        return self.batch

    def state_dict(self) -> dict[str, int]:
        return {"epoch": 0, "position": 0}


def main() -> None:
    out, per_rank = Path(sys.argv[1]), int(sys.argv[2])
    rank, _, world = distributed.world()
    if world > 1:
        distributed.start("cpu")
    torch.set_num_threads(1)
    data = DataSpec(task="reverse", n_train=400, length=14, min_length=2, alphabet=12)  # lengths vary: padding
    train = TrainConfig(
        batch_size=2 * per_rank,
        eval_every=0,
        seed=5,
        schedule="constant",
        lr=1e-3,
        warmup_steps=0,
        label_smoothing=0.1,
        eps=1e-4,
    )
    session = Session.create(data, "tiny", train, device="cpu", dropout=0.0)
    session.rank, session.world = rank, world
    encoded = session.encoded("train")
    lo, hi = (rank * per_rank, (rank + 1) * per_rank) if world > 1 else (0, 2 * per_rank)
    trainer = session.trainer
    trainer.stream = Fixed(collate(encoded.src[lo:hi], encoded.tgt[lo:hi], encoded.specials))  # type: ignore[assignment]
    record = trainer.train_step()
    if rank == 0:
        grads = {n: p.grad.detach().clone() for n, p in session.model.named_parameters() if p.grad is not None}
        torch.save({"weights": session.model.state_dict(), "grads": grads, "loss": record["loss"]}, out)
    distributed.stop()


if __name__ == "__main__":
    main()
