"""Attribution of output tokens to input tokens: integrated gradients, gradient × input and attention rollout.

The model reads token embeddings; an attribution asks how much each token's embedding contributed to the
log-probability of a target token (or to log P(X) − log P(Y), the contrastive question "why X rather than Y",
Yin & Neubig 2022). A :class:`Readout` says which pass to run and where each target is read.

- **Integrated gradients** (Sundararajan et al. 2017): ``(x − x₀) · ∫₀¹ ∇f(x₀ + α(x − x₀)) dα`` with the all-zero
  embedding as baseline x₀, the integral by Gauss–Legendre quadrature over ``steps`` points (as Captum's default
  ``gausslegendre``; tests compare with Captum). Completeness: a target's attributions sum to f(x) − f(x₀). A
  trained model's nearly hard attention can make f step within a ten-thousandth of the path, where fixed points
  miss it; a row that does not add up within 1% is integrated again by adaptive quadrature (``refine``).
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


Progress = Callable[[int, int], None]  # (points of the path done, points planned); raise from it to stop
ACTIVATION_BYTES = 2 << 30  # what one pass through the model may keep for its backward, about (points per pass)


def points_per_pass(model: Transformer, readout: Readout) -> int:
    """How many points of the path go through the model in one pass: all of a short text's; a long text's as many
    as keep the activations a backward pass needs (≈ 32 floats of d_model per token and layer, measured) within
    :data:`ACTIVATION_BYTES` — 64 points of a 512-token text through GPT-2 small would keep ~30 GB."""
    layers = len(model.encoder_layers) + len(model.decoder_layers)
    tokens = sum(t.shape[-1] for t in readout.inputs)
    per_point = 4 * 32 * model.cfg.d_model * tokens * max(1, layers)
    return max(1, ACTIVATION_BYTES // per_point)


def _passes(n: int, size: int) -> Iterator[slice]:
    """``n`` points in passes of ``size`` (the last one shorter)."""
    return (slice(start, min(n, start + size)) for start in range(0, n, size))


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
    model: Transformer,
    readout: Readout,
    steps: int = 64,
    rows: Sequence[int] | None = None,
    refine: bool = True,
    progress: Progress | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """→ source ``[T, S]`` and prefix ``[T, P]`` attributions, f at the input and at the baseline ``[T]``, for every
    target row (or the ``rows`` asked for; the others stay zero). The ``steps`` points go through the model in
    batches (:func:`points_per_pass`: one for a short text), one backward per target and batch (Captum's
    ``gausslegendre``); ``progress`` is told after each batch. With ``refine``, a row that does not add up to
    f(input) − f(baseline) within :data:`TOLERANCE` is integrated again over points placed where f changes
    (:func:`_refined_row`)."""
    x = token_embeddings(readout)
    alphas, weights = gauss_legendre(steps)
    wanted = list(range(len(readout.targets)) if rows is None else rows)
    with torch.no_grad():
        ends = target_scores(model, readout, [torch.cat([torch.zeros_like(e), e]) for e in x])
    sums = _weighted_gradients(model, readout, x, alphas, weights, wanted, progress)
    source, prefix = _empty(readout, len(readout.targets))
    for t, summed in zip(wanted, sums):  # (x − 0) · Σ w_k ∇f(α_k x)
        source[t], prefix[t] = _per_token(readout, [e[0] * g for e, g in zip(x, summed)])
    logprob, baseline = ends[1].cpu().numpy(), ends[0].cpu().numpy()
    if refine:
        for t in wanted:
            if not _adds_up(source[t].sum() + prefix[t].sum(), logprob[t] - baseline[t]):
                source[t], prefix[t] = _refined_row(model, readout, x, t, steps, progress)
    return source, prefix, logprob, baseline


def _weighted_gradients(
    model: Transformer,
    readout: Readout,
    x: list[Tensor],
    alphas: np.ndarray,
    weights: np.ndarray,
    wanted: Sequence[int],
    progress: Progress | None,
) -> list[list[Tensor]]:
    """Σ_k w_k ∇f_t(α_k x) for each target t of ``wanted``: per target, per input ``[L, d]``; the points in batches of
    :func:`points_per_pass`, each batch one forward and a backward per target."""
    sums = [[torch.zeros_like(e[0]) for e in x] for _ in wanted]
    a = torch.tensor(alphas, dtype=x[0].dtype, device=x[0].device)[:, None, None]
    w = torch.tensor(weights, dtype=x[0].dtype, device=x[0].device)[:, None, None]
    for batch in _passes(len(alphas), points_per_pass(model, readout)):
        scaled = [(a[batch] * e).requires_grad_(True) for e in x]  # baseline 0: x₀ + α(x − x₀) = αx
        with torch.enable_grad():
            out = target_scores(model, readout, scaled)  # [points, T]
            for k, t in enumerate(wanted):
                grads = torch.autograd.grad(out[:, t].sum(), scaled, retain_graph=k < len(wanted) - 1)
                sums[k] = [acc + (w[batch] * g).sum(0).detach() for acc, g in zip(sums[k], grads)]
        if progress is not None:
            progress(batch.stop, len(alphas))
    return sums


PIECES = 16  # the adaptive rule's first pieces of the path
TOLERANCE = 0.01  # a row adds up within 1% of what it explains (or 5·10⁻⁴ nats, for a change of almost nothing)


def _adds_up(total: float, explained: float) -> bool:
    return abs(total - explained) <= TOLERANCE * max(abs(explained), 0.05)


@torch.no_grad()
def _scan(model: Transformer, readout: Readout, x: list[Tensor], t: int, alphas: np.ndarray) -> np.ndarray:
    """f of target ``t`` at ``alphas`` (no gradients; batches of 4 × :func:`points_per_pass`)."""
    a = torch.tensor(alphas, dtype=x[0].dtype, device=x[0].device)[:, None, None]
    f = [
        target_scores(model, readout, [a[batch] * e for e in x])[:, t]
        for batch in _passes(len(alphas), 4 * points_per_pass(model, readout))
    ]
    return torch.cat(f).cpu().numpy().astype(np.float64)


def _refined_row(
    model: Transformer, readout: Readout, x: list[Tensor], t: int, steps: int, progress: Progress | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Integrated gradients of target ``t`` by adaptive quadrature: a trained model's attention can be nearly hard,
    and then f steps from one value to another within a ten-thousandth of the path, between any fixed points. The
    path is cut into pieces; on each, 4 Gauss–Legendre points give the gradients' integral, checked against f's
    change over the piece (f at its ends, no gradients needed); a piece that disagrees is cut in four, until the
    pieces agree or ``8·steps`` gradient points are spent (``progress`` told after each round)."""
    edges = np.linspace(0.0, 1.0, PIECES + 1)
    f_edges = _scan(model, readout, x, t, edges)
    pending = [(edges[i], edges[i + 1], f_edges[i + 1] - f_edges[i]) for i in range(PIECES)]
    nodes, node_w = gauss_legendre(4)
    total = [torch.zeros_like(e[0]) for e in x]
    explained = float(f_edges[-1] - f_edges[0])
    spent, budget, allowed = 0, 8 * steps, 0.002 * max(abs(explained), 0.05)
    while pending:
        a = np.concatenate([lo + (hi - lo) * nodes for lo, hi, _ in pending])
        w = np.concatenate([(hi - lo) * node_w for lo, hi, _ in pending])
        pieces = _piece_attributions(model, readout, x, t, a, w)  # per piece, per input: [L, d]
        spent += len(a)
        split: list[tuple[float, float]] = []
        for (lo, hi, change), got in zip(pending, pieces):
            estimate = float(sum(g.sum() for g in got))
            if abs(estimate - change) <= allowed or hi - lo < 1e-7 or spent + 16 * (len(split) + 1) > budget:
                total = [acc + g for acc, g in zip(total, got)]
            else:
                split.append((lo, hi))
        pending = _quartered(model, readout, x, t, split)
        if progress is not None:  # (the first pass's points all done)
            progress(steps, steps)
    return _per_token(readout, total)


def _piece_attributions(
    model: Transformer, readout: Readout, x: list[Tensor], t: int, alphas: np.ndarray, weights: np.ndarray
) -> list[list[Tensor]]:
    """x · Σ w ∇f over each run of 4 points (one piece each): per piece, per input ``[L, d]``; whole pieces in
    batches of about :func:`points_per_pass` points."""
    a = torch.tensor(alphas, dtype=x[0].dtype, device=x[0].device)[:, None, None]
    w = torch.tensor(weights, dtype=x[0].dtype, device=x[0].device)[:, None, None]
    pieces: list[list[Tensor]] = []
    for batch in _passes(len(alphas), 4 * max(1, points_per_pass(model, readout) // 4)):
        scaled = [(a[batch] * e).requires_grad_(True) for e in x]
        with torch.enable_grad():
            out = target_scores(model, readout, scaled)
            grads = torch.autograd.grad(out[:, t].sum(), scaled)
        weighted = [(w[batch] * g).detach() for g in grads]  # [n, L, d] per input
        n = len(weighted[0]) // 4
        pieces += [[e[0] * wg[4 * i : 4 * i + 4].sum(0) for e, wg in zip(x, weighted)] for i in range(n)]
    return pieces


def _quartered(
    model: Transformer, readout: Readout, x: list[Tensor], t: int, pieces: list[tuple[float, float]]
) -> list[tuple[float, float, float]]:
    """Each piece cut in four, with f's change over each quarter (one batched pass over the new points)."""
    if not pieces:
        return []
    cuts = [np.linspace(lo, hi, 5) for lo, hi in pieces]
    f = _scan(model, readout, x, t, np.concatenate(cuts)).reshape(len(pieces), 5)
    return [(c[i], c[i + 1], fc[i + 1] - fc[i]) for c, fc in zip(cuts, f) for i in range(4)]


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
