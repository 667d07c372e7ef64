"""Mixture-of-Experts: the router and the experts that replace a layer's feed-forward network.

A router (one linear map, then softmax) gives each token a probability p_i(x) for each of
N expert FFNs; the token goes to the k most probable, and the layer's output is their outputs weighted by
their probabilities. With k = 1 (Switch Transformer) the weight is p_i(x) itself, not renormalised: were it
p_i / p_i = 1, the output would not depend on the router and the task loss would never train it. With
k ≥ 2 (GShard, Mixtral) the k chosen probabilities are renormalised to sum to 1. Every expert is the paper's
position-wise FFN. Tokens are grouped per expert (``index_select`` in, ``index_add_`` out): one expert call
per expert, never a loop over tokens.

No token is dropped: an expert takes every token sent to it, however many (there is no capacity factor),
so the output never depends on which other tokens share the batch.

Load balancing (Switch Transformer, eq. 4; GShard): ``aux = N · Σ_i f_i · P_i`` where f_i is the share of
the (token, slot) assignments that went to expert i and P_i the mean router probability of expert i, both over
real (non-padding) tokens. With k = 1 f_i is Switch's fraction of tokens. It is exactly 1 when the load is
balanced (every f_i = 1/N) or the router is (every P_i = 1/N), and grows when tokens and probability pile on the
same experts; it is no minimum at 1 (it dips below when f and P disagree: many tokens sent, each barely, to one
expert). A model's ``aux`` is the mean over its MoE layers (still 1 at balance, whatever the depth), and the
training loss adds ``aux_loss_coef · aux``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from model.core.config import ModelConfig
from model.core.feedforward import FeedForward


@dataclass(frozen=True)
class Routing:
    """What the router did in one MoE layer."""

    probs: Tensor  # [B, L, N] router probabilities (softmax over experts)
    chosen: Tensor  # [B, L, k] the experts each token was sent to, most probable first
    weights: Tensor  # [B, L, k] the weights of their outputs: p_i for k = 1, renormalised to sum 1 for k ≥ 2
    aux_loss: Tensor  # scalar: N · Σ f_i · P_i over real tokens
    load: Tensor  # [N] f_i: share of the assignments each expert received (real tokens)


class MoEFeedForward(nn.Module):
    """N expert FFNs and a router; each token is processed by its top-k experts, their outputs weighted by
    p_i(x) for k = 1 (Switch Transformer), by the k probabilities renormalised for k ≥ 2 (GShard, Mixtral).

    Shape: x ``[B, L, d]`` (and ``real [B, L]``, True = not padding) → ``[B, L, d]`` and a :class:`Routing`.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str, n_experts: int, top_k: int):
        super().__init__()
        if not 1 <= top_k <= n_experts:
            raise ValueError(f"top_k must be in 1..{n_experts} (got {top_k})")
        self.n_experts, self.top_k = n_experts, top_k
        self.router = nn.Linear(d_model, n_experts)
        self.experts = nn.ModuleList(FeedForward(d_model, d_ff, dropout, activation) for _ in range(n_experts))

    def sublayer(self, x: Tensor, real: Tensor | None = None) -> tuple[Tensor, Routing]:
        """The sublayer's output and what the router did (``real [B, L]``: the positions that are not padding)."""
        return self(x, real)

    def step_function(self) -> Callable[[Tensor, Callable[..., Tensor]], Tensor]:
        """This layer for one decoding step: the output alone (the routing is not kept; the experts compute in
        float32 whatever ``linear`` the step is given)."""
        return self._output

    def _output(self, x: Tensor, _linear: Callable[..., Tensor] | None = None) -> Tensor:
        return self(x)[0]

    def inactive_parameters(self) -> int:
        """Parameters a token does not pass through: the N − k experts it is not sent to."""
        per_expert = sum(p.numel() for p in self.experts[0].parameters())
        return per_expert * (self.n_experts - self.top_k)

    def forward(self, x: Tensor, real: Tensor | None = None) -> tuple[Tensor, Routing]:
        B, L, d = x.shape
        flat = x.reshape(B * L, d)
        probs = self.router(flat).float().softmax(dim=-1)  # [M, N]
        top_p, top_e = probs.topk(self.top_k, dim=-1)  # [M, k], most probable first
        weights = top_p if self.top_k == 1 else top_p / top_p.sum(dim=-1, keepdim=True)  # Switch; GShard
        out = torch.zeros_like(flat)
        slots = top_e.reshape(-1)  # [M·k]: the expert of each (token, slot)
        order = torch.argsort(slots, stable=True)  # assignments grouped by expert
        counts = torch.bincount(slots, minlength=self.n_experts).tolist()
        token_of = order // self.top_k  # the token of each grouped assignment
        weight_of = weights.reshape(-1)[order].to(x.dtype)
        start = 0
        for e, n in enumerate(counts):  # one call per expert with all of its tokens
            if n:
                rows = token_of[start : start + n]
                y = self.experts[e](flat.index_select(0, rows)) * weight_of[start : start + n, None]
                out.index_add_(0, rows, y)
            start += n
        aux, load = balance_loss(probs, top_e, None if real is None else real.reshape(-1), self.n_experts)
        routing = Routing(probs.view(B, L, -1), top_e.view(B, L, -1), weights.view(B, L, -1), aux, load)
        return out.view(B, L, d), routing


def balance_loss(probs: Tensor, chosen: Tensor, real: Tensor | None, n_experts: int) -> tuple[Tensor, Tensor]:
    """``N · Σ_i f_i · P_i`` and f. probs ``[M, N]``, chosen ``[M, k]``, real ``[M]`` (None: all real)."""
    if real is not None:
        probs, chosen = probs[real], chosen[real]
    if probs.shape[0] == 0:
        zero = probs.new_zeros(())
        return zero, probs.new_zeros(n_experts)
    counts = torch.bincount(chosen.reshape(-1), minlength=n_experts).to(probs.dtype)
    f = counts / counts.sum()  # no gradient: the assignment is discrete
    P = probs.mean(dim=0)  # the gradient reaches the router through P
    return n_experts * (f * P).sum(), f


def make_feed_forward(cfg: ModelConfig) -> FeedForward | MoEFeedForward:
    """Each layer's feed-forward sublayer: the paper's FFN, or with ``cfg.n_experts`` > 1 a Mixture-of-Experts
    layer of that many of them."""
    if cfg.moe:
        return MoEFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation, cfg.n_experts, cfg.experts_top_k)
    return FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation)
