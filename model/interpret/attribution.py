"""Attribution of output tokens to input tokens: integrated gradients, gradient × input and attention rollout.

The model reads token embeddings; an attribution asks how much each token's embedding contributed to the
log-probability of a target token (or to log P(X) − log P(Y), the contrastive question "why X rather than Y",
Yin & Neubig 2022). A :class:`Readout` says which pass to run and where each target is read.

- **Integrated gradients** (Sundararajan et al. 2017): ``(x − x₀) · ∫₀¹ ∇f(x₀ + α(x − x₀)) dα`` with the all-zero
  embedding as baseline x₀, the integral by Gauss–Legendre quadrature over ``steps`` points (as Captum's default
  ``gausslegendre``; tests compare with Captum). Completeness: a target's attributions sum to f(x) − f(x₀).
- **Gradient × input**: ``x · ∇f(x)`` at the input.
- **Attention rollout** (Abnar & Zuidema 2020): per layer the head-averaged attention with the residual added,
  ``Â = ½A + ½I`` with rows renormalised, multiplied through the layers. For an encoder–decoder the decoder's
  rollout carries two parts, over its own prefix and over the source: self-attention mixes both, cross-attention
  moves half of each row (the residual keeps the other half) onto the encoder's rolled-out source.

Positions (sinusoidal, learned, segments) are part of the pass and not attributed: only the tokens' embeddings are
scaled, so each row's attributions sum to what the tokens add. Every embedding ``nn.Embedding`` is replaced, by a
forward hook keyed on the very id tensor handed to the model, with the scaled embeddings for that call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from model.core.transformer import AttentionMaps, Transformer


@dataclass(frozen=True)
class Readout:
    """One teacher-forced pass to explain: the model's inputs (each ``[1, L]``), the embedding module that reads
    each, the logit positions where the targets are read and the target ids, and which input positions are the
    source's and which the prefix's columns."""

    inputs: tuple[Tensor, ...]
    embeddings: tuple[nn.Embedding, ...]
    rows: tuple[int, ...]  # logit position of each target
    targets: tuple[int, ...]  # target id at each row
    source: tuple[int, Sequence[int]]  # (input index, positions) of the source columns
    prefix: tuple[int, Sequence[int]] | None  # (input index, positions) of the prefix columns, or None
    never: tuple[int, ...] = ()  # ids never emitted (masked out of the distribution, as decoding does)
    contrast: int | None = None  # last row: log P(target) − log P(contrast)


def gauss_legendre(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Points α in (0, 1) and their weights for ∫₀¹ (Captum's ``gausslegendre``)."""
    x, w = np.polynomial.legendre.leggauss(steps)
    return 0.5 * (x + 1.0), 0.5 * w


@contextmanager
def embeddings_replaced(model: Transformer, ids: Sequence[Tensor], replacement: Sequence[Tensor]) -> Iterator[None]:
    """While inside, an embedding module called on ``ids[i]`` (that very tensor) returns ``replacement[i]``."""
    chosen = {id(t): r for t, r in zip(ids, replacement)}

    def hook(module: nn.Module, args: tuple[Tensor, ...], output: Tensor) -> Tensor:
        return chosen.get(id(args[0]), output)

    modules = {id(m): m for m in model.modules() if isinstance(m, nn.Embedding)}
    handles = [m.register_forward_hook(hook) for m in modules.values()]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def target_scores(model: Transformer, readout: Readout, embedded: Sequence[Tensor]) -> Tensor:
    """f for a batch of embeddings (each ``[N, L, d]``): the log-probability of each target at its row ``[N, T]``
    (the last minus the contrast's, when there is one)."""
    n = embedded[0].shape[0]
    ids = [t.expand(n, -1) for t in readout.inputs]
    with embeddings_replaced(model, ids, embedded):
        logits = model(*ids).float()
    rows = logits[:, list(readout.rows)]  # [N, T, V]
    if readout.never:
        rows = rows.index_fill(-1, torch.tensor(readout.never, device=rows.device), float("-inf"))
    logp = F.log_softmax(rows, -1)
    picked = logp[:, torch.arange(len(readout.rows)), torch.tensor(readout.targets)]  # [N, T]
    if readout.contrast is not None:
        last = picked[:, -1] - logp[:, -1, readout.contrast]
        picked = torch.cat([picked[:, :-1], last[:, None]], 1)
    return picked


def token_embeddings(readout: Readout) -> list[Tensor]:
    """What each input's embedding module gives (before any scaling and positions), ``[1, L, d]``, detached."""
    with torch.no_grad():
        return [emb(t).detach() for emb, t in zip(readout.embeddings, readout.inputs)]


def _per_token(readout: Readout, attributions: Sequence[Tensor]) -> tuple[np.ndarray, np.ndarray]:
    """Per-token attributions (summed over the embedding) of one target, split into source and prefix columns."""
    summed = [a.sum(-1) for a in attributions]  # each [L]
    i, positions = readout.source
    source = summed[i][list(positions)].cpu().numpy()
    if readout.prefix is None:
        return source, np.zeros(0)
    j, positions = readout.prefix
    return source, summed[j][list(positions)].cpu().numpy()


def integrated_gradients(
    model: Transformer, readout: Readout, steps: int = 64, rows: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """→ source ``[T, S]`` and prefix ``[T, P]`` attributions, f at the input and at the baseline ``[T]``, for every
    target row (or the ``rows`` asked for; the others stay zero). One batched pass over the ``steps`` points, one
    backward per target."""
    x = token_embeddings(readout)
    alphas, weights = gauss_legendre(steps)
    a = torch.tensor(alphas, dtype=x[0].dtype, device=x[0].device)[:, None, None]
    w = torch.tensor(weights, dtype=x[0].dtype, device=x[0].device)[:, None, None]
    scaled = [(a * e).requires_grad_(True) for e in x]  # baseline 0: x₀ + α(x − x₀) = αx
    with torch.enable_grad():
        out = target_scores(model, readout, scaled)  # [steps, T]
        ends = target_scores(model, readout, [torch.cat([torch.zeros_like(e), e]) for e in x]).detach()
        return _integrate(readout, out, scaled, x, w, ends, rows)


def _integrate(
    readout: Readout,
    out: Tensor,
    scaled: list[Tensor],
    x: list[Tensor],
    w: Tensor,
    ends: Tensor,
    rows: Sequence[int] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    T = out.shape[1]
    wanted = range(T) if rows is None else rows
    source, prefix = _empty(readout, T)
    for t in wanted:
        grads = torch.autograd.grad(out[:, t].sum(), scaled, retain_graph=True)
        attributions = [(e[0] * (w * g).sum(0)).detach() for e, g in zip(x, grads)]  # (x − 0) · Σ w_k ∇f(α_k x)
        source[t], prefix[t] = _per_token(readout, attributions)
    return source, prefix, ends[1].cpu().numpy(), ends[0].cpu().numpy()


def _empty(readout: Readout, T: int) -> tuple[np.ndarray, np.ndarray]:
    S = len(readout.source[1])
    P = 0 if readout.prefix is None else len(readout.prefix[1])
    return np.zeros((T, S), np.float64), np.zeros((T, P), np.float64)


def gradient_x_input(model: Transformer, readout: Readout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """→ source ``[T, S]`` and prefix ``[T, P]`` attributions x · ∇f(x), and f(x) ``[T]``."""
    x = token_embeddings(readout)
    leaves = [e.clone().requires_grad_(True) for e in x]
    with torch.enable_grad():
        out = target_scores(model, readout, leaves)  # [1, T]
        source, prefix = _empty(readout, out.shape[1])
        for t in range(out.shape[1]):
            grads = torch.autograd.grad(out[0, t], leaves, retain_graph=True)
            source[t], prefix[t] = _per_token(readout, [(e[0] * g[0]).detach() for e, g in zip(x, grads)])
    return source, prefix, out[0].detach().cpu().numpy()


def rollout(maps: Sequence[np.ndarray]) -> np.ndarray:
    """Abnar & Zuidema's rollout of one stack: ``maps`` per layer ``[H, L, L]`` → ``[L, L]``, the product over the
    layers (first layer rightmost) of ½·mean_h(A) + ½·I, each with rows renormalised."""
    L = maps[0].shape[-1]
    out = np.eye(L)
    for layer in maps:
        a = 0.5 * layer.mean(0) + 0.5 * np.eye(L)
        a = a / a.sum(-1, keepdims=True)
        out = a @ out
    return out


def encoder_decoder_rollout(
    encoder: Sequence[np.ndarray], decoder: Sequence[np.ndarray], cross: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The decoder's rollout over the source ``[T, S]`` and over its own input ``[T, T]``: each layer's
    self-attention mixes both parts as :func:`rollout` does; its cross-attention then gives half of each row to the
    encoder's rolled-out source and keeps the other half (the residual). Each row of the two parts sums to 1."""
    memory = rollout(encoder) if encoder else np.eye(cross[0].shape[-1])
    T, S = cross[0].shape[-2], cross[0].shape[-1]
    own, source = np.eye(T), np.zeros((T, S))
    for self_maps, cross_maps in zip(decoder, cross):
        a = 0.5 * self_maps.mean(0) + 0.5 * np.eye(T)
        a = a / a.sum(-1, keepdims=True)
        own, source = a @ own, a @ source
        own, source = 0.5 * own, 0.5 * source + 0.5 * cross_maps.mean(0) @ memory
    return source, own


def attention_maps(model: Transformer, readout: Readout) -> AttentionMaps:
    """The pass's attention maps (batch row 0 kept by the caller)."""
    with torch.no_grad():
        _, maps = model(*readout.inputs, return_attention=True)
    return maps


def layers_of(maps: Sequence[Tensor]) -> list[np.ndarray]:
    return [m[0].float().cpu().numpy().astype(np.float64) for m in maps]


Explainer = Callable[[Transformer, Readout], tuple[np.ndarray, np.ndarray]]
