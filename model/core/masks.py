"""Attention masks, one convention throughout the project.

Convention: a mask is a boolean tensor in which **True means "may attend"**
(the same meaning as the boolean ``attn_mask`` of
``torch.nn.functional.scaled_dot_product_attention``; the opposite of
``torch.nn.MultiheadAttention``'s ``key_padding_mask``). Every mask broadcasts
to ``[B, H, Lq, Lk]``: batch, heads, query positions, key positions.

A query row in which every key is masked (only possible for an all-padding
sequence) gets all-zero attention weights and a zero output, never NaN.
"""

from __future__ import annotations

import torch
from torch import Tensor


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """Keys that are real tokens. ``tokens [B, L]`` → ``[B, 1, 1, L]`` (True = real)."""
    return (tokens != pad_id)[:, None, None, :]


def causal_mask(length: int, device: torch.device | str | None = None) -> Tensor:
    """Position i may attend to positions ≤ i. → ``[1, 1, L, L]`` lower-triangular."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()[None, None]


def target_tokens(tgt: Tensor, pad_id: int) -> Tensor:
    """Which positions of a decoder input ``tgt [B, T]`` are real tokens → ``[B, T]``: all but the padding,
    and always the first position (the start token, which is the padding token itself in Marian's models)."""
    real = tgt != pad_id
    real[:, 0] = True
    return real


def decoder_self_mask(tgt: Tensor, pad_id: int, causal: bool = True) -> Tensor:
    """Causal and padding combined for decoder self-attention. ``tgt [B, T]`` → ``[B, 1, T, T]``.

    The first position (the start token) is always a key; decoder inputs are right-padded, so the causal
    mask alone already keeps every real position from the padding after it. ``causal=False`` (a model without
    the causal mask, an experiment): the padding mask alone, every position sees every real token."""
    keys = target_tokens(tgt, pad_id)[:, None, None, :]  # [B, 1, 1, T]
    if not causal:
        T = tgt.shape[1]
        return keys.expand(-1, -1, T, -1)  # [B, 1, T, T]
    return causal_mask(tgt.shape[1], tgt.device) & keys
