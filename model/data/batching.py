"""From sentence pairs to padded training batches.

Sources are the tokens followed by EOS. Targets are shifted right: the decoder
reads ``tgt_in = BOS + y`` and learns to predict ``tgt_out = y + EOS``. Batches
are right-padded: inputs with PAD (ignored by attention), targets with IGNORE (−100, ignored by the
loss; a model whose padding token is also its end token, as GPT-2's, still learns to end). The special
ids are the model's own (:class:`Specials`; the project's tokenizers use 0, 1, 2). Sentences longer than
the model's ``max_len`` are cut to fit and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from model.data.tokenization import BOS_ID, EOS_ID, PAD_ID, Tokenizing

IGNORE = -100  # target of a position that is not predicted (PyTorch's cross_entropy ignore_index)


class Specials(NamedTuple):
    """The special token ids a batch is laid out with: padding, the decoder's start token, the end token."""

    pad: int = PAD_ID
    bos: int = BOS_ID
    eos: int = EOS_ID


DEFAULT_SPECIALS = Specials()  # the project's own tokenizers': <pad> 0, <bos> 1, <eos> 2


@dataclass(frozen=True)
class Batch:
    src: Tensor  # [B, S] source ids + EOS, right-padded
    tgt_in: Tensor  # [B, T] BOS + target ids, right-padded
    tgt_out: Tensor  # [B, T] target ids + EOS, right-padded with IGNORE
    n_tokens: int  # real (predicted) tokens in tgt_out

    def to(self, device: torch.device) -> Batch:
        return Batch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device), self.n_tokens)


@dataclass(frozen=True)
class EncodedPairs:
    """A split, tokenised and cut to fit the model."""

    src: list[list[int]]  # each: tokens + EOS, at most max_len
    tgt: list[list[int]]  # each: tokens only, at most max_len − 1 (BOS or EOS is added)
    truncated: int  # pairs that had to be cut
    specials: Specials = Specials()  # the model's special ids


def encode_pairs(
    pairs: list[tuple[str, str]],
    src_tok: Tokenizing,
    tgt_tok: Tokenizing,
    max_len: int,
    specials: Specials = DEFAULT_SPECIALS,
) -> EncodedPairs:
    src_ids = src_tok.encode_batch([s for s, _ in pairs])
    tgt_ids = tgt_tok.encode_batch([t for _, t in pairs])
    truncated = 0
    src_out, tgt_out = [], []
    for s, t in zip(src_ids, tgt_ids):
        if len(s) > max_len - 1 or len(t) > max_len - 1:
            truncated += 1
        src_out.append(s[: max_len - 1] + [specials.eos])
        tgt_out.append(t[: max_len - 1])
    return EncodedPairs(src_out, tgt_out, truncated, specials)


def collate(src: list[list[int]], tgt: list[list[int]], specials: Specials = DEFAULT_SPECIALS) -> Batch:
    """Pad a list of examples into one batch with shifted targets."""
    B = len(src)
    S = max(len(s) for s in src)
    T = max(len(t) for t in tgt) + 1
    src_t = torch.full((B, S), specials.pad, dtype=torch.long)
    tgt_in = torch.full((B, T), specials.pad, dtype=torch.long)
    tgt_out = torch.full((B, T), IGNORE, dtype=torch.long)
    for i, (s, t) in enumerate(zip(src, tgt)):
        src_t[i, : len(s)] = torch.tensor(s)
        tgt_in[i, : len(t) + 1] = torch.tensor([specials.bos, *t])
        tgt_out[i, : len(t) + 1] = torch.tensor([*t, specials.eos])
    return Batch(src_t, tgt_in, tgt_out, int((tgt_out != IGNORE).sum()))


def bucketed_plan(lengths: np.ndarray, batch_size: int, seed: int, epoch: int, pool: int) -> list[np.ndarray]:
    """One epoch's batches (arrays of example indexes): a permutation drawn from ``(seed, epoch)``, pools of
    ``pool`` batches sorted by length (less padding), then the batch order shuffled by the same generator."""
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths))
    batches: list[np.ndarray] = []
    size = batch_size * pool
    for start in range(0, len(order), size):
        chunk = order[start : start + size]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


class BatchStream:
    """Endless, reproducible training batches with length bucketing.

    Each epoch is a permutation drawn from ``(seed, epoch)``; pools of 50
    batches are sorted by length so a batch holds similar lengths (less
    padding), then the batch order is shuffled. The position (epoch, batch) is
    the whole state: a resumed run with the same batch size and seed continues
    with exactly the next batch.
    """

    POOL = 50  # batches per sorting pool

    def __init__(self, data: EncodedPairs, batch_size: int, seed: int, epoch: int = 0, position: int = 0):
        if not data.src:
            raise ValueError("no training pairs to make batches from")
        self.data, self.batch_size, self.seed = data, batch_size, seed
        self.epoch, self.position = epoch, position
        self._lengths = np.array([len(s) + len(t) for s, t in zip(data.src, data.tgt)])
        self._plan = self._epoch_plan(epoch)

    def _epoch_plan(self, epoch: int) -> list[np.ndarray]:
        return bucketed_plan(self._lengths, self.batch_size, self.seed, epoch, self.POOL)

    def __iter__(self) -> BatchStream:
        return self

    def __next__(self) -> Batch:
        if self.position >= len(self._plan):
            self.epoch, self.position = self.epoch + 1, 0
            self._plan = self._epoch_plan(self.epoch)
        idx = self._plan[self.position]
        self.position += 1
        return collate([self.data.src[i] for i in idx], [self.data.tgt[i] for i in idx], self.data.specials)

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}


def batches_in_order(data: EncodedPairs, batch_size: int) -> list[Batch]:
    """Evaluation batches: every pair once, sorted by length for less padding."""
    order = sorted(range(len(data.src)), key=lambda i: len(data.src[i]) + len(data.tgt[i]))
    return [
        collate(
            [data.src[i] for i in order[k : k + batch_size]],
            [data.tgt[i] for i in order[k : k + batch_size]],
            data.specials,
        )
        for k in range(0, len(order), batch_size)
    ]
