"""Position-wise feed-forward network, encoder layer and decoder layer.

Post-LN (the paper): x = LayerNorm(x + Dropout(Sublayer(x))).
Pre-LN:              x = x + Dropout(Sublayer(LayerNorm(x))), with a final
                     LayerNorm after the last layer of each stack.

LayerNorm is ``torch.nn.LayerNorm``: biased variance, eps inside the square root.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple, overload

import torch.nn.functional as F
from torch import Tensor, nn

from model.attention import MultiHeadAttention, scaled_dot_product_attention
from model.config import ModelConfig
from model.positional import RotaryEmbedding


class FeedForward(nn.Module):
    """FFN(x) = W_2 · act(W_1 x + b_1) + b_2, applied to each position alike."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = F.gelu if activation == "gelu" else F.relu

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each wrapped in residual + LayerNorm."""

    def __init__(self, cfg: ModelConfig, rope: RotaryEmbedding | None) -> None:
        super().__init__()
        self.pre_norm = cfg.norm == "pre"
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, rope)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation)
        self.norm1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.norm2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, mask: Tensor | None, need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        if self.pre_norm:
            h, weights = self.self_attn(self.norm1(x), mask=mask, need_weights=need_weights)
            x = x + self.dropout(h)
            return x + self.dropout(self.ffn(self.norm2(x))), weights
        h, weights = self.self_attn(x, mask=mask, need_weights=need_weights)
        x = self.norm1(x + self.dropout(h))
        return self.norm2(x + self.dropout(self.ffn(x))), weights


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output, feed-forward."""

    def __init__(self, cfg: ModelConfig, rope: RotaryEmbedding | None) -> None:
        super().__init__()
        self.pre_norm = cfg.norm == "pre"
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, rope)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation)
        self.norm1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.norm2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.norm3 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None,
        memory_mask: Tensor | None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """Whole target sequence (teacher forcing). → x, self-attention and cross-attention weights."""
        if self.pre_norm:
            h, self_w = self.self_attn(self.norm1(x), mask=self_mask, need_weights=need_weights)
            x = x + self.dropout(h)
            h, cross_w = self.cross_attn(self.norm2(x), memory, memory_mask, need_weights)
            x = x + self.dropout(h)
            return x + self.dropout(self.ffn(self.norm3(x))), self_w, cross_w
        h, self_w = self.self_attn(x, mask=self_mask, need_weights=need_weights)
        x = self.norm1(x + self.dropout(h))
        h, cross_w = self.cross_attn(x, memory, memory_mask, need_weights)
        x = self.norm2(x + self.dropout(h))
        return self.norm3(x + self.dropout(self.ffn(x))), self_w, cross_w

    def step_weights(self) -> DecoderStepWeights:
        """The tensors one decoding step needs, gathered once per decode (see :func:`decoder_step`)."""
        sa, ca, ffn = self.self_attn, self.cross_attn, self.ffn
        d = sa.d_model
        return DecoderStepWeights(
            pre_norm=self.pre_norm,
            n_heads=sa.n_heads,
            rope=sa.rope,
            qkv=(sa.in_proj.weight, sa.in_proj.bias),
            self_out=(sa.out_proj.weight, sa.out_proj.bias),
            cross_q=(ca.in_proj.weight[:d], ca.in_proj.bias[:d]),
            cross_out=(ca.out_proj.weight, ca.out_proj.bias),
            ff1=(ffn.linear1.weight, ffn.linear1.bias),
            ff2=(ffn.linear2.weight, ffn.linear2.bias),
            activation=ffn.activation,
            norms=tuple((n.weight, n.bias, n.eps) for n in (self.norm1, self.norm2, self.norm3)),
        )


class DecoderStepWeights(NamedTuple):
    """Plain references to one decoder layer's parameters (the same tensors, not copies)."""

    pre_norm: bool
    n_heads: int
    rope: RotaryEmbedding | None
    qkv: tuple[Tensor, Tensor]  # fused self-attention W^Q, W^K, W^V and biases
    self_out: tuple[Tensor, Tensor]  # self-attention W^O
    cross_q: tuple[Tensor, Tensor]  # cross-attention W^Q (W^K, W^V were applied to the memory once)
    cross_out: tuple[Tensor, Tensor]  # cross-attention W^O
    ff1: tuple[Tensor, Tensor]
    ff2: tuple[Tensor, Tensor]
    activation: Callable[[Tensor], Tensor]
    norms: tuple[tuple[Tensor, Tensor, float], ...]  # norm1, norm2, norm3: weight, bias, eps


@overload
def decoder_step(
    w: DecoderStepWeights,
    x: Tensor,
    cache_k: Tensor,
    cache_v: Tensor,
    memory_k: Tensor,
    memory_v: Tensor,
    memory_mask: Tensor | None,
    position: int,
    need_weights: Literal[False] = False,
) -> tuple[Tensor, None, None]: ...
@overload
def decoder_step(
    w: DecoderStepWeights,
    x: Tensor,
    cache_k: Tensor,
    cache_v: Tensor,
    memory_k: Tensor,
    memory_v: Tensor,
    memory_mask: Tensor | None,
    position: int,
    need_weights: Literal[True],
) -> tuple[Tensor, Tensor, Tensor]: ...
@overload
def decoder_step(
    w: DecoderStepWeights,
    x: Tensor,
    cache_k: Tensor,
    cache_v: Tensor,
    memory_k: Tensor,
    memory_v: Tensor,
    memory_mask: Tensor | None,
    position: int,
    need_weights: bool = False,
) -> tuple[Tensor, Tensor | None, Tensor | None]: ...
def decoder_step(
    w: DecoderStepWeights,
    x: Tensor,
    cache_k: Tensor,
    cache_v: Tensor,
    memory_k: Tensor,
    memory_v: Tensor,
    memory_mask: Tensor | None,
    position: int,
    need_weights: bool = False,
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """One decoder layer for one new position ``x [B, 1, d]`` (inference, no dropout).

    The same computation as :meth:`DecoderLayer.forward` restricted to the newest
    position: self-attention over the key/value cache (this position's k, v are
    written into ``cache_k/cache_v [B, H, capacity, Dh]`` in place), cross-attention
    over precomputed memory keys/values ``[B, H, S, Dh]``, feed-forward. Written on
    plain tensors because at batch 1 the per-call overhead of module dispatch is a
    large share of a step.
    """
    B, _, d = x.shape
    H = w.n_heads
    Dh = d // H
    (n1w, n1b, eps1), (n2w, n2b, eps2), (n3w, n3b, eps3) = w.norms

    # 1. masked self-attention: only positions ≤ this one exist in the cache
    h = F.layer_norm(x, (d,), n1w, n1b, eps1) if w.pre_norm else x
    q, k, v = F.linear(h, *w.qkv).view(B, 1, 3, H, Dh).permute(2, 0, 3, 1, 4)  # each [B, H, 1, Dh]
    if w.rope is not None:
        q, k = w.rope(q, position), w.rope(k, position)
    cache_k[:, :, position : position + 1] = k
    cache_v[:, :, position : position + 1] = v
    a, self_w = scaled_dot_product_attention(
        q, cache_k[:, :, : position + 1], cache_v[:, :, : position + 1], None, 0.0, need_weights
    )
    x = x + F.linear(a.transpose(1, 2).reshape(B, 1, d), *w.self_out)
    if not w.pre_norm:
        x = F.layer_norm(x, (d,), n1w, n1b, eps1)

    # 2. cross-attention over the encoder output
    h = F.layer_norm(x, (d,), n2w, n2b, eps2) if w.pre_norm else x
    q = F.linear(h, *w.cross_q).view(B, 1, H, Dh).transpose(1, 2)  # [B, H, 1, Dh]
    a, cross_w = scaled_dot_product_attention(q, memory_k, memory_v, memory_mask, 0.0, need_weights)
    x = x + F.linear(a.transpose(1, 2).reshape(B, 1, d), *w.cross_out)
    if not w.pre_norm:
        x = F.layer_norm(x, (d,), n2w, n2b, eps2)

    # 3. position-wise feed-forward
    h = F.layer_norm(x, (d,), n3w, n3b, eps3) if w.pre_norm else x
    x = x + F.linear(w.activation(F.linear(h, *w.ff1)), *w.ff2)
    if not w.pre_norm:
        x = F.layer_norm(x, (d,), n3w, n3b, eps3)
    return x, self_w, cross_w
