"""T5's relative positions (Raffel et al., 2020, §2.1): a learned bias per (offset bucket, head) added to the
attention scores of every self-attention, one table per stack; nothing is added to the embeddings.

An option any family may have (``positional="t5_relative"``); the positional lab plots :func:`t5_buckets`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from model.core.config import ModelConfig
from model.families.registry import T5_BIAS


def t5_buckets(offset: Tensor, bidirectional: bool, n_buckets: int, max_distance: int) -> Tensor:
    """T5's relative-position buckets (Raffel et al., 2020, §2.1) of ``offset = key − query`` (long tensor).

    Bidirectional (encoder): half the buckets for keys before the query, half for keys after. In each half,
    the first half of its buckets hold the exact offsets 0, 1, …; the rest cover larger offsets on a
    logarithmic scale up to ``max_distance``, beyond which every offset shares the last bucket.
    Unidirectional (decoder): only keys at or before the query exist; all buckets describe ``query − key``.
    """
    if bidirectional:
        n_buckets //= 2
        side = (offset > 0).long() * n_buckets  # keys after the query: the upper half
        distance = offset.abs()
    else:
        side = torch.zeros_like(offset)
        distance = (-offset).clamp(min=0)
    exact = n_buckets // 2
    # log-spaced buckets: exact + log(distance / exact) / log(max_distance / exact) · (n_buckets − exact)
    far = distance.float().clamp(min=1) / exact
    log_bucket = exact + (far.log() / math.log(max_distance / exact) * (n_buckets - exact)).long()
    log_bucket = log_bucket.clamp(max=n_buckets - 1)
    return side + torch.where(distance < exact, distance, log_bucket)


class T5RelativeBias(nn.Module):
    """A learned scalar per (offset bucket, head), added to the attention scores: T5's positions.

    One table per stack, shared by all its layers (the encoder's is bidirectional, the decoder's causal).
    """

    def __init__(self, n_heads: int, n_buckets: int, max_distance: int, bidirectional: bool) -> None:
        super().__init__()
        self.n_buckets, self.max_distance, self.bidirectional = n_buckets, max_distance, bidirectional
        self.weight = nn.Parameter(torch.zeros(n_buckets, n_heads))
        nn.init.normal_(self.weight, std=0.02)

    def buckets(self, n_queries: int, n_keys: int, offset: int = 0) -> Tensor:
        """``[Lq, Lk]`` bucket of each (query, key); the queries are positions offset … offset + Lq − 1."""
        device = self.weight.device
        q = torch.arange(offset, offset + n_queries, device=device)[:, None]
        k = torch.arange(n_keys, device=device)[None, :]
        return t5_buckets(k - q, self.bidirectional, self.n_buckets, self.max_distance)

    def forward(self, n_queries: int, n_keys: int, offset: int = 0) -> Tensor:
        """The bias ``[1, H, Lq, Lk]`` for queries at positions offset … offset + Lq − 1 over keys 0 … Lk − 1."""
        return self.weight[self.buckets(n_queries, n_keys, offset)].permute(2, 0, 1)[None]


def relative_bias(cfg: ModelConfig, bidirectional: bool) -> T5RelativeBias | None:
    """A stack's bias table when ``cfg`` has T5's relative positions (the encoder's looks both ways, the decoder's
    back); else None."""
    if not T5_BIAS.applies(cfg):
        return None
    return T5RelativeBias(cfg.n_heads, cfg.t5_buckets, cfg.t5_max_distance, bidirectional=bidirectional)
