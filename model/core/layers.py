"""Encoder layer (also the block of decoder-only and encoder-only models) and decoder layer.

Post-LN (the paper): x = LayerNorm(x + Dropout(Sublayer(x))).
Pre-LN:              x = x + Dropout(Sublayer(LayerNorm(x))), with a final
                     LayerNorm after the last layer of each stack.

Without residual connections (``residual=False``, an experiment) the ``x +`` goes:
LayerNorm(Dropout(Sublayer(x))) and Dropout(Sublayer(LayerNorm(x))).

LayerNorm is ``torch.nn.LayerNorm``: biased variance, eps inside the square root.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable
from typing import NamedTuple, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from model.core.attention import MultiHeadAttention, scaled_dot_product_attention
from model.core.config import ModelConfig
from model.core.feedforward import FeedForward
from model.core.positional import RotaryEmbedding
from model.families.moe import Routing

__all__ = [
    "DecoderLayer",
    "DecoderStepWeights",
    "EncoderLayer",
    "FeedForward",
    "FeedForwardFactory",
    "FeedForwardSublayer",
    "PerWeight",
    "StepLinear",
    "block_prefill",
    "decoder_step",
]


class FeedForwardSublayer(Protocol):
    """What a layer asks of its feed-forward sublayer: the paper's FFN (:class:`~model.core.feedforward.FeedForward`)
    or, as an option, a Mixture-of-Experts layer (:class:`~model.families.moe.MoEFeedForward`)."""

    def sublayer(self, x: Tensor, real: Tensor | None = None) -> tuple[Tensor, Routing | None]: ...
    def step_function(self) -> Callable[[Tensor, LinearFn], Tensor]: ...
    def inactive_parameters(self) -> int: ...


FeedForwardFactory = Callable[[ModelConfig], FeedForwardSublayer]


def skip(x: Tensor, h: Tensor, residual: bool) -> Tensor:
    """The residual connection x + h around a sublayer's output ``h``; without one (an experiment), h alone."""
    return x + h if residual else h


def paper_feed_forward(cfg: ModelConfig) -> FeedForward:
    """The paper's position-wise FFN of width ``cfg.d_ff``."""
    return FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation)


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each wrapped in residual + LayerNorm.

    The encoder's layer; with a causal mask, also the block of a decoder-only (GPT) model, which has no
    encoder to attend to; and the block of an encoder-only (BERT) model.
    """

    def __init__(
        self, cfg: ModelConfig, rope: RotaryEmbedding | None, feed_forward: FeedForwardFactory = paper_feed_forward
    ) -> None:
        super().__init__()
        self.pre_norm, self.residual = cfg.norm == "pre", cfg.residual
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, rope, cfg.scaled_attention)
        self.ffn = feed_forward(cfg)
        self.norm1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.norm2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None,
        need_weights: bool = False,
        bias: Tensor | None = None,
        real: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None, Routing | None]:
        """→ x, the self-attention weights (with need_weights) and the routing (MoE). ``real [B, L]``: the
        positions that are not padding (for the load-balancing statistics)."""
        r = self.residual
        if self.pre_norm:
            h, weights = self.self_attn(self.norm1(x), mask=mask, need_weights=need_weights, bias=bias)
            x = skip(x, self.dropout(h), r)
            h, routing = self.ffn.sublayer(self.norm2(x), real)
            return skip(x, self.dropout(h), r), weights, routing
        h, weights = self.self_attn(x, mask=mask, need_weights=need_weights, bias=bias)
        x = self.norm1(skip(x, self.dropout(h), r))
        h, routing = self.ffn.sublayer(x, real)
        return self.norm2(skip(x, self.dropout(h), r)), weights, routing

    def step_weights(self) -> DecoderStepWeights:
        """The tensors one generation step needs (a decoder-only block: no cross-attention)."""
        sa = self.self_attn
        return DecoderStepWeights(
            pre_norm=self.pre_norm,
            n_heads=sa.n_heads,
            rope=sa.rope,
            qkv=(sa.in_proj.weight, sa.in_proj.bias),
            self_out=(sa.out_proj.weight, sa.out_proj.bias),
            cross_q=None,
            cross_out=None,
            ffn=self.ffn.step_function(),
            norms=_norms(self.norm1, None, self.norm2),
            residual=self.residual,
            scale=sa.scale,
        )


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output, feed-forward."""

    def __init__(
        self, cfg: ModelConfig, rope: RotaryEmbedding | None, feed_forward: FeedForwardFactory = paper_feed_forward
    ) -> None:
        super().__init__()
        self.pre_norm, self.residual = cfg.norm == "pre", cfg.residual
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, rope, cfg.scaled_attention)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, None, cfg.scaled_attention)
        self.ffn = feed_forward(cfg)
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
        bias: Tensor | None = None,
        real: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None, Tensor | None, Routing | None]:
        """Whole target sequence (teacher forcing). → x, self-attention and cross-attention weights, routing."""
        r = self.residual
        if self.pre_norm:
            h, self_w = self.self_attn(self.norm1(x), mask=self_mask, need_weights=need_weights, bias=bias)
            x = skip(x, self.dropout(h), r)
            h, cross_w = self.cross_attn(self.norm2(x), memory, memory_mask, need_weights)
            x = skip(x, self.dropout(h), r)
            h, routing = self.ffn.sublayer(self.norm3(x), real)
            return skip(x, self.dropout(h), r), self_w, cross_w, routing
        h, self_w = self.self_attn(x, mask=self_mask, need_weights=need_weights, bias=bias)
        x = self.norm1(skip(x, self.dropout(h), r))
        h, cross_w = self.cross_attn(x, memory, memory_mask, need_weights)
        x = self.norm2(skip(x, self.dropout(h), r))
        h, routing = self.ffn.sublayer(x, real)
        return self.norm3(skip(x, self.dropout(h), r)), self_w, cross_w, routing

    def step_weights(self) -> DecoderStepWeights:
        """The tensors one decoding step needs, gathered once per decode (see :func:`decoder_step`)."""
        sa, ca = self.self_attn, self.cross_attn
        d = sa.d_model
        return DecoderStepWeights(
            pre_norm=self.pre_norm,
            n_heads=sa.n_heads,
            rope=sa.rope,
            qkv=(sa.in_proj.weight, sa.in_proj.bias),
            self_out=(sa.out_proj.weight, sa.out_proj.bias),
            cross_q=(ca.in_proj.weight[:d], ca.in_proj.bias[:d]),
            cross_out=(ca.out_proj.weight, ca.out_proj.bias),
            ffn=self.ffn.step_function(),
            norms=_norms(self.norm1, self.norm2, self.norm3),
            residual=self.residual,
            scale=sa.scale,
        )


Norm = tuple[Tensor, Tensor, float]
LinearFn = Callable[[Tensor, Tensor, Tensor | None], Tensor]  # F.linear's signature: x, W, b


LARGE_WEIGHT = 1 << 18  # elements (1 MiB of float32): 512 × 512 and up


class PerWeight:
    """Something made from a weight matrix (a packed or an int8 copy), kept per weight and made again when the
    weight changes in place (training writes it, a load copies into it). A decoding step's weights are often views
    (a layer's W^Q is the first third of its fused projection, a new view object at every decode), so a weight is
    known by its storage: the parameter it views, where the view starts, its shape; and the parameter is held
    weakly, so that a freed model's memory taken by another is never mistaken for it."""

    def __init__(self, make: Callable[[Tensor, Tensor | None], object]) -> None:
        self._make = make
        self._made: dict[tuple[int, int, tuple[int, ...]], tuple[weakref.ref[Tensor], int, object]] = {}

    def get(self, weight: Tensor, bias: Tensor | None) -> object:
        base = weight if weight._base is None else weight._base
        key = (id(base), weight.data_ptr(), tuple(weight.shape))
        made = self._made.get(key)
        if made is None or made[0]() is not base or made[1] != weight._version:
            made = (weakref.ref(base), weight._version, self._make(weight, bias))
            self._made[key] = made
        return made[2]

    def clear(self) -> None:
        self._made.clear()


def _mkl_packing() -> bool:
    """Whether this PyTorch multiplies by weights packed once for MKL (x86 builds; not ARM or some others)."""
    try:
        return bool(torch.backends.mkl.is_available()) and hasattr(torch.ops.mkl, "_mkl_linear")
    except (AttributeError, RuntimeError):
        return False


MKL_PACKING = _mkl_packing()


def row_as_product(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``F.linear`` of a single row computed as the matrix product W·xᵀ with the row given twice. Where PyTorch
    multiplies one row by a matrix with a matrix–vector product on one thread, this is a matrix product on every
    thread: on the 2026-12-03 machine the 65,001 × 512 output layer took 4.2 ms instead of 12.2. On the
    2026-12-06 machine it was the other way round (11.4 ms against 4.2 ms), hence :func:`single_row`'s choice."""
    rows = x.reshape(1, x.shape[-1]).expand(2, -1).contiguous()
    y = weight @ rows.T if bias is None else torch.addmm(bias[:, None], weight, rows.T)  # [out, 2]
    return y.T[:1].contiguous().view(*x.shape[:-1], weight.shape[0])


ROW_AS_PRODUCT_GAIN = 1.3  # how much faster W·xᵀ must be to be chosen over F.linear (noise must not flip it)
_SINGLE_ROW: dict[tuple[int, int], LinearFn] = {}  # a weight's shape → the way this machine multiplies a row by it


def single_row(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """A single row times a large weight, the faster of ``F.linear`` and :func:`row_as_product` on this machine:
    timed once per weight shape and process, on the first such step (a few calls of each, ~0.1 s for a model of
    opus-mt-en-zh's size). Which one is faster depends on the processor and its maths library, not on PyTorch:
    each was 2.5–3× faster than the other on one of two machines. The two differ only in float rounding."""
    key = (weight.shape[0], weight.shape[1])
    way = _SINGLE_ROW.get(key)
    if way is None:
        way = _SINGLE_ROW[key] = _faster_single_row(x, weight, bias)
    return way(x, weight, bias)


def _faster_single_row(x: Tensor, weight: Tensor, bias: Tensor | None) -> LinearFn:
    best = {F.linear: math.inf, row_as_product: math.inf}
    for way in best:
        way(x, weight, bias)  # the first call of each pays for what it sets up
    for _ in range(3):  # taking turns, the quickest of three each
        for way in best:
            t0 = time.perf_counter()
            way(x, weight, bias)
            best[way] = min(best[way], time.perf_counter() - t0)
    return row_as_product if best[row_as_product] * ROW_AS_PRODUCT_GAIN < best[F.linear] else F.linear


class StepLinear:
    """``F.linear(x, W, b)`` for the few rows of a cached decoding step (one per prefix). A beam search's step (a
    row per beam) multiplies its large weights packed once into the layout MKL's matrix product reads for that many
    rows (PyTorch's own packing, as its compiler uses for frozen CPU models): the step then reads each weight once,
    instead of repacking it at every call. For a model of opus-mt-en-zh's size, beam 4 takes about 0.75 of the time
    of plain ``F.linear``. A single row (greedy, a beam's first step) gains nothing from packing: it is multiplied
    the way this machine does fastest (:func:`single_row`). The same numbers up to float rounding (the sums are
    taken in another order). Costs memory: the packed copies take 1.3× the large weights (about 400 MB for that
    model), made on a beam's first full step and again when the weights change (training) or the beam width does.
    Small weights (kept in the processor's cache), a GPU, a gradient being taken: plain ``F.linear``; a PyTorch
    without MKL: no packing."""

    def __init__(self) -> None:
        self.rows = 0  # the beam width the weights are packed for (0: none yet)
        self._packed = PerWeight(lambda w, b: torch.ops.mkl._mkl_reorder_linear_weight(w.detach(), self.rows))

    def pack_for(self, rows: int) -> None:
        """A decoding of ``rows`` prefixes begins: a beam of another width than the packed one packs anew."""
        if rows > 1 and rows != self.rows:
            self._packed.clear()
            self.rows = rows

    def __call__(self, x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
        if (
            x.device.type != "cpu"
            or weight.dtype != torch.float32
            or weight.numel() < LARGE_WEIGHT
            or torch.is_grad_enabled()
        ):
            return F.linear(x, weight, bias)
        if x.numel() == x.shape[-1]:
            return single_row(x, weight, bias)
        if not MKL_PACKING or x.numel() != self.rows * x.shape[-1]:
            return F.linear(x, weight, bias)
        packed = self._packed.get(weight, bias)
        b = None if bias is None else bias.detach()
        return torch.ops.mkl._mkl_linear(x, packed, weight.detach(), b, self.rows)

    def release(self) -> None:
        """Let the packed copies go (they are made again by the next beam)."""
        self._packed.clear()
        self.rows = 0

    def __deepcopy__(self, memo: dict) -> StepLinear:
        return StepLinear()  # a copied model packs its own weights

    def __reduce__(self) -> tuple:
        return (StepLinear, ())


def block_prefill(
    w: DecoderStepWeights,
    x: Tensor,
    cache_k: Tensor,
    cache_v: Tensor,
    position: int,
    need_weights: bool = False,
    bias: Tensor | None = None,
    linear: LinearFn = F.linear,
) -> tuple[Tensor, Tensor | None]:
    """:func:`decoder_step` of a decoder-only block for ``T`` new positions at once, ``x [B, T, d]`` from
    ``position`` on (a prompt read into the cache in one call instead of a call per token): their keys and values
    are written into the cache, and each position attends to the cache up to itself, as it would have one step at a
    time. ``bias [1, H, T, position + T]``: T5's relative bias of these rows. → the block's output and, with
    ``need_weights``, the attention rows ``[B, H, T, position + T]`` (zero beyond each row's own position)."""
    B, T, d = x.shape
    H, Dh = w.n_heads, d // w.n_heads
    n1, pre = w.norms[0], w.pre_norm
    h = F.layer_norm(x, (d,), *n1) if pre else x  # type: ignore[misc]
    q, k, v = linear(h, *w.qkv).view(B, T, 3, H, Dh).permute(2, 0, 3, 1, 4)  # each [B, H, T, Dh]
    if w.rope is not None:
        q, k = w.rope(q, position), w.rope(k, position)
    end = position + T
    cache_k[:, :, position:end] = k
    cache_v[:, :, position:end] = v
    rows = torch.arange(position, end, device=x.device)
    mask = torch.arange(end, device=x.device)[None, :] <= rows[:, None]  # [T, end]: a key at or before the row
    a, self_w = scaled_dot_product_attention(
        q, cache_k[:, :, :end], cache_v[:, :, :end], mask, 0.0, need_weights, bias, w.scale
    )
    x = _add_and_norm(x, linear(a.transpose(1, 2).reshape(B, T, d), *w.self_out), n1, pre, w.residual)
    return _feed_forward(w, x, linear), self_w


def _norms(*norms: nn.LayerNorm | None) -> tuple[Norm | None, ...]:
    return tuple(None if n is None else (n.weight, n.bias, n.eps) for n in norms)


class DecoderStepWeights(NamedTuple):
    """Plain references to one decoder layer's parameters (the same tensors, not copies)."""

    pre_norm: bool
    n_heads: int
    rope: RotaryEmbedding | None
    qkv: tuple[Tensor, Tensor]  # fused self-attention W^Q, W^K, W^V and biases
    self_out: tuple[Tensor, Tensor]  # self-attention W^O
    cross_q: tuple[Tensor, Tensor] | None  # cross-attention W^Q (W^K, W^V were applied to the memory once)
    cross_out: tuple[Tensor, Tensor] | None  # cross-attention W^O; None for a decoder-only block
    ffn: Callable[[Tensor, LinearFn], Tensor]  # the feed-forward sublayer (a dense FFN as plain tensors)
    norms: tuple[Norm | None, ...]  # before/after self-attention, cross-attention (None: none), FFN
    residual: bool = True  # x + Sublayer(x); False: Sublayer(x) alone (no residual connections)
    scale: float | None = None  # the factor of QKᵀ in both attentions; None: 1/√d_k (1.0: unscaled)


def _add_and_norm(x: Tensor, h: Tensor, norm: Norm | None, pre: bool, residual: bool) -> Tensor:
    """A sublayer's output ``h`` added to ``x`` (``h`` alone without residual connections), then, in a Post-LN
    layer, the norm after it."""
    x = x + h if residual else h
    return x if pre else F.layer_norm(x, (x.shape[-1],), *norm)  # type: ignore[misc]


def _feed_forward(w: DecoderStepWeights, x: Tensor, linear: LinearFn) -> Tensor:
    """The position-wise feed-forward sublayer of a step (or the experts the router picks), with its residual and
    norm."""
    n3 = w.norms[2]
    h = w.ffn(F.layer_norm(x, (x.shape[-1],), *n3) if w.pre_norm else x, linear)  # type: ignore[misc]
    return _add_and_norm(x, h, n3, w.pre_norm, w.residual)


def decoder_step(
    w: DecoderStepWeights,
    x: Tensor,
    cache_k: Tensor,
    cache_v: Tensor,
    memory_k: Tensor | None,
    memory_v: Tensor | None,
    memory_mask: Tensor | None,
    position: int,
    need_weights: bool = False,
    bias: Tensor | None = None,
    linear: LinearFn = F.linear,
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """One decoder layer for one new position ``x [B, 1, d]`` (inference, no dropout).

    The same computation as :meth:`DecoderLayer.forward` restricted to the newest
    position: self-attention over the key/value cache (this position's k, v are
    written into ``cache_k/cache_v [B, H, capacity, Dh]`` in place), cross-attention
    over precomputed memory keys/values ``[B, H, S, Dh]`` (none in a decoder-only
    block), feed-forward. ``bias [1, H, 1, position + 1]``: T5's relative bias of this
    row. On plain tensors, op by op: at batch 1 each dispatch is a share of a step. ``linear(x, W, b)`` computes
    each projection (:class:`StepLinear`, or the int8 fast mode's).
    """
    B, _, d = x.shape
    H, Dh = w.n_heads, d // w.n_heads
    (n1, n2, _), cross_w = w.norms, None  # (weight, bias, eps) of each norm; a sublayer that exists has one
    shape, pre, residual = (d,), w.pre_norm, w.residual

    # 1. masked self-attention: only positions ≤ this one exist in the cache
    h = F.layer_norm(x, shape, *n1) if pre else x  # type: ignore[misc]
    qkv = linear(h, *w.qkv).view(B, 3, H, 1, Dh)  # q, k, v of each head, [B, H, 1, Dh] each
    q, k = qkv[:, 0], qkv[:, 1]
    if w.rope is not None:
        q, k = w.rope(q, position), w.rope(k, position)
    cache_k[:, :, position : position + 1] = k
    cache_v[:, :, position : position + 1] = qkv[:, 2]
    a, self_w = scaled_dot_product_attention(
        q, cache_k[:, :, : position + 1], cache_v[:, :, : position + 1], None, 0.0, need_weights, bias, w.scale
    )
    # the heads side by side (one position: no transpose needed)
    x = _add_and_norm(x, linear(a.reshape(B, 1, d), *w.self_out), n1, pre, residual)

    # 2. cross-attention over the encoder output
    if w.cross_q is not None and w.cross_out is not None and memory_k is not None and memory_v is not None:
        h = F.layer_norm(x, shape, *n2) if pre else x  # type: ignore[misc]
        q = linear(h, *w.cross_q).view(B, H, 1, Dh)
        a, cross_w = scaled_dot_product_attention(q, memory_k, memory_v, memory_mask, 0.0, need_weights, None, w.scale)
        x = _add_and_norm(x, linear(a.reshape(B, 1, d), *w.cross_out), n2, pre, residual)

    # 3. position-wise feed-forward (or the experts the router picks)
    return _feed_forward(w, x, linear), self_w, cross_w
