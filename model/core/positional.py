"""Positional information: sinusoidal (the paper), learned, and rotary (RoPE).

T5's relative-position bias, added to the attention scores rather than to the inputs, is an option of its own
(:mod:`model.families.t5`).

The formulas here are also what the explorer's positional-encoding lab plots.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoidal_table(max_len: int, d_model: int, layout: str = "interleaved") -> Tensor:
    """The paper's encoding, section 3.5. → ``[max_len, d_model]``.

    PE(pos, 2i)   = sin(pos / 10000^(2i/d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))

    With ``layout="split"`` (Marian's) the same sines fill the first half of the dimensions and the
    cosines the second half: PE(pos, i) = sin(pos·ω_i), PE(pos, ⌈d/2⌉ + i) = cos(pos·ω_i).
    """
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # [L, 1]
    omega = inverse_frequencies(d_model)  # [ceil(d/2)]
    angles = position * omega  # [L, ceil(d/2)]
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    if layout == "split":
        half = angles.shape[1]
        pe[:, :half] = torch.sin(angles)
        pe[:, half:] = torch.cos(angles[:, : d_model // 2])
    else:
        pe[:, 0::2] = torch.sin(angles)
        pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe.float()


def inverse_frequencies(d_model: int, base: float = 10000.0) -> Tensor:
    """ω_i = 1 / base^(2i/d) for each dimension pair i. → ``[ceil(d/2)]`` (float64)."""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return torch.exp(-math.log(base) * two_i / d_model)


def relative_shift_matrix(k: int, d_model: int) -> Tensor:
    """M_k with PE(pos + k) = M_k · PE(pos) for every pos. → ``[d_model, d_model]``.

    For each pair (sin ωp, cos ωp) the shift by k is a rotation by ωk:
    sin ω(p+k) =  cos ωk · sin ωp + sin ωk · cos ωp
    cos ω(p+k) = −sin ωk · sin ωp + cos ωk · cos ωp
    M_k does not depend on pos — why a model can attend by relative position.
    """
    if d_model % 2:
        raise ValueError("the shift matrix needs an even d_model (sin/cos pairs)")
    theta = inverse_frequencies(d_model) * k
    c, s = torch.cos(theta), torch.sin(theta)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    m[idx, idx], m[idx, idx + 1] = c, s
    m[idx + 1, idx], m[idx + 1, idx + 1] = -s, c
    return m


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table: x + PE[offset : offset + L]."""

    pe: Tensor  # [max_len, d_model], a buffer (not saved: it is recomputed)

    def __init__(self, d_model: int, max_len: int, layout: str = "interleaved") -> None:
        super().__init__()
        self.register_buffer("pe", sinusoidal_table(max_len, d_model, layout), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        # x: [B, L, d]
        return x + self.pe[offset : offset + x.shape[1]]

    def table(self) -> Tensor:
        return self.pe


class LearnedPositionalEncoding(nn.Module):
    """Adds a trained table of position vectors (one per position up to max_len)."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(max_len, d_model))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        return x + self.weight[offset : offset + x.shape[1]]

    def table(self) -> Tensor:
        return self.weight


class RotaryEmbedding(nn.Module):
    """RoPE (Su et al., RoFormer): rotates each (2i, 2i+1) pair of q and k per head.

    The pair i at position p is rotated by the angle p · ω_i, ω_i = base^(−2i/d_head),
    so q_m · k_n depends on the positions only through the offset n − m.
    """

    rotation: Tensor  # [max_len, head_dim / 2] complex64, a buffer

    def __init__(self, head_dim: int, max_len: int, base: float = 10000.0) -> None:
        super().__init__()
        if head_dim % 2:
            raise ValueError("RoPE needs an even head size")
        angles = torch.arange(max_len, dtype=torch.float64)[:, None] * inverse_frequencies(head_dim, base)
        # e^{i·p·ω}: [max_len, head_dim / 2] complex
        self.register_buffer(
            "rotation", torch.polar(torch.ones_like(angles), angles).to(torch.complex64), persistent=False
        )

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        # x: [B, H, L, Dh] → same shape, each pair rotated by its position's angle
        B, H, L, Dh = x.shape
        pairs = torch.view_as_complex(x.float().reshape(B, H, L, Dh // 2, 2))  # [B, H, L, Dh/2]
        rotated = pairs * self.rotation[offset : offset + L]
        return torch.view_as_real(rotated).reshape(B, H, L, Dh).type_as(x)
