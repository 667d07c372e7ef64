"""Scaled dot-product attention and multi-head attention, written out as in the paper.

Two paths give the same numbers (tested to 1e-5):
- the *capture* path spells out scores = QKᵀ/√d_k, mask, softmax, dropout,
  weighted sum of V, and returns the probabilities so they can be shown;
- the *fast* path, used when nothing is recorded, hands the same computation to
  ``torch.nn.functional.scaled_dot_product_attention``.

Both take the factor of QKᵀ as ``scale``: None is the paper's 1/√d_k; 1.0 leaves the scores unscaled (a model
with ``scaled_attention=False``, an experiment).

Masks follow :mod:`model.core.masks`: boolean, True = may attend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from model.core.positional import RotaryEmbedding


@dataclass(frozen=True)
class AttentionSteps:
    """Every intermediate of one attention computation, for the Q·K explainer."""

    query: Tensor  # [..., Lq, d_k]
    keys: Tensor  # [..., Lk, d_k]
    values: Tensor  # [..., Lk, d_v]
    scores: Tensor  # QKᵀ, [..., Lq, Lk]
    scaled: Tensor  # QKᵀ / √d_k (QKᵀ · scale when a scale is given)
    mask: Tensor  # True = may attend, broadcast to [..., Lq, Lk]
    masked: Tensor  # scaled scores with masked entries at −inf
    weights: Tensor  # softmax over the keys; masked entries exactly 0
    output: Tensor  # weights · V, [..., Lq, d_v]


# The worked example of the study notes: three tokens, d_k = 2.
NOTES_EXAMPLE = {
    "Q": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
    "K": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
    "V": [[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]],
}


def attention_steps(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    bias: Tensor | None = None,
    scale: float | None = None,
) -> AttentionSteps:
    """Attention(Q, K, V) = softmax(QKᵀ / √d_k) V with every step kept (no dropout). ``bias`` (T5's relative
    position bias) is added to the scaled scores, as the model adds it; ``scale``: the factor of QKᵀ when it is
    not 1/√d_k (1.0: a model whose attention is unscaled)."""
    scores = q @ k.transpose(-2, -1)
    scaled = scores / math.sqrt(q.shape[-1]) if scale is None else scores * scale
    if bias is not None:
        scaled = scaled + bias
    full_mask = torch.ones_like(scaled, dtype=torch.bool) if mask is None else mask.expand_as(scaled)
    masked = scaled.masked_fill(~full_mask, float("-inf"))
    weights = _masked_softmax(scaled, full_mask)
    return AttentionSteps(q, k, v, scores, scaled, full_mask, masked, weights, weights @ v)


def _masked_softmax(scaled: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last axis; masked keys get exactly 0, a fully masked row all zeros."""
    if mask is None:
        return scaled.softmax(dim=-1)
    # The lowest finite value instead of −inf keeps a fully masked row finite
    # (it would be 0/0 = NaN); the second fill turns that row's uniform weights into zeros.
    weights = scaled.masked_fill(~mask, torch.finfo(scaled.dtype).min).softmax(dim=-1)
    return weights.masked_fill(~mask, 0.0)


@overload
def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    need_weights: Literal[False] = False,
    bias: Tensor | None = None,
    scale: float | None = None,
) -> tuple[Tensor, None]: ...
@overload
def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    dropout_p: float,
    need_weights: Literal[True],
    bias: Tensor | None = None,
    scale: float | None = None,
) -> tuple[Tensor, Tensor]: ...
@overload
def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    need_weights: Literal[True],
    bias: Tensor | None = None,
    scale: float | None = None,
) -> tuple[Tensor, Tensor]: ...
@overload
def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    need_weights: bool = False,
    bias: Tensor | None = None,
    scale: float | None = None,
) -> tuple[Tensor, Tensor | None]: ...
def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    need_weights: bool = False,
    bias: Tensor | None = None,
    scale: float | None = None,
) -> tuple[Tensor, Tensor | None]:
    """Attention over the last two axes. q ``[B, H, Lq, Dh]``, k/v ``[B, H, Lk, Dh]``.

    ``bias`` (broadcastable to ``[B, H, Lq, Lk]``) is added to the scaled scores before the softmax
    (T5's relative positions); ``scale`` multiplies QKᵀ in place of 1/√d_k (None: 1/√d_k). Returns the output
    ``[B, H, Lq, Dh]`` and, with ``need_weights``, the probabilities ``[B, H, Lq, Lk]`` (before dropout).
    """
    if not need_weights:
        attn_mask = mask
        if bias is not None:  # one additive mask: the bias where attending, the lowest value where not
            attn_mask = bias if mask is None else torch.where(mask, bias, torch.finfo(bias.dtype).min)
            attn_mask = attn_mask.to(q.dtype)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, scale=scale)
        return out, None
    scores = q @ k.transpose(-2, -1)  # [B, H, Lq, Lk]
    scaled = scores / math.sqrt(q.shape[-1]) if scale is None else scores * scale
    if bias is not None:
        scaled = scaled + bias
    weights = _masked_softmax(scaled, mask)
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    The projections W^Q, W^K, W^V of all heads are one ``[3·d_model, d_model]``
    matrix (``in_proj``, the layout of ``torch.nn.MultiheadAttention``): self-attention
    projects q, k, v in one matmul; cross-attention projects q from the decoder and
    k, v from the encoder memory (once per source when decoding).

    Args:
        d_model: width of the input and output.
        n_heads: number of heads h; each has d_k = d_v = d_model / h.
        dropout: dropout on the attention probabilities (training only).
        rope: rotary embedding applied to q and k (self-attention only), or None.
        scaled: divide the scores by √d_k (the paper); False leaves them unscaled (an experiment).

    Shape:
        x ``[B, Lq, d_model]``, memory ``[B, Lk, d_model]``, mask broadcastable to
        ``[B, H, Lq, Lk]`` → ``[B, Lq, d_model]`` and weights ``[B, H, Lq, Lk]`` or None.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        rope: RotaryEmbedding | None = None,
        scaled: bool = True,
    ):
        super().__init__()
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, d_model // n_heads
        self.dropout = dropout
        self.scale = None if scaled else 1.0  # the factor of QKᵀ; None: 1/√d_k
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.rope = rope

    # -- projections -------------------------------------------------------
    def _split_heads(self, x: Tensor) -> Tensor:
        B, L, _ = x.shape
        return x.view(B, L, self.n_heads, self.head_dim).transpose(1, 2)  # [B, H, L, Dh]

    def _merge_heads(self, x: Tensor) -> Tensor:
        B, H, L, Dh = x.shape
        return x.transpose(1, 2).reshape(B, L, H * Dh)  # [B, L, d_model]

    def project_qkv(self, x: Tensor, offset: int = 0) -> tuple[Tensor, Tensor, Tensor]:
        """Self-attention q, k, v in one matmul (RoPE applied). → 3 × ``[B, H, L, Dh]``."""
        B, L, _ = x.shape
        qkv = self.in_proj(x).view(B, L, 3, self.n_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each [B, H, L, Dh]
        if self.rope is not None:
            q, k = self.rope(q, offset), self.rope(k, offset)
        return q, k, v

    def project_query(self, x: Tensor) -> Tensor:
        d = self.d_model
        return self._split_heads(F.linear(x, self.in_proj.weight[:d], self.in_proj.bias[:d]))

    def project_memory(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Cross-attention keys and values of the encoder output. → 2 × ``[B, H, S, Dh]``."""
        B, S, _ = memory.shape
        d = self.d_model
        kv = F.linear(memory, self.in_proj.weight[d:], self.in_proj.bias[d:]).view(B, S, 2, self.n_heads, self.head_dim)
        k, v = kv.permute(2, 0, 3, 1, 4)  # each [B, H, S, Dh]
        return k, v

    # -- whole sequences -------------------------------------------------------
    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        mask: Tensor | None = None,
        need_weights: bool = False,
        bias: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Self-attention over ``x`` (memory None) or cross-attention from ``x`` to ``memory``; ``bias`` is added
        to the scaled scores (T5's relative positions)."""
        if memory is None:
            q, k, v = self.project_qkv(x)
        else:
            q = self.project_query(x)
            k, v = self.project_memory(memory)
        return self.attend(q, k, v, mask, need_weights, bias)

    def attend(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, need_weights: bool, bias: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """Attention of projected heads, merge, output projection W^O."""
        dropout_p = self.dropout if self.training else 0.0
        out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p, need_weights, bias, self.scale)
        return self.out_proj(self._merge_heads(out)), weights
