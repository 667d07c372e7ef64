"""Switching attention heads off, and how much each head matters (Michel et al. 2019, "Are Sixteen Heads Really
Better than One?").

A head is ablated where its output enters the output projection: MultiHead = Concat(head₁…head_h) W^O, and a head
whose slice of the concatenation is zero adds nothing. Zeroing that slice is the same as zeroing the head's
columns of W^O, which is how it is done here: every path through the model — whole sequences, the cached decoding
step, the key/value cache of beam search — reads the same W^O, so each sees the ablation. Mean ablation replaces
the slice by its mean over held-out text instead: the columns are zeroed and W^O·mean is added to the bias.
The weights are restored exactly on leaving.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch import Tensor

from model.core.attention import MultiHeadAttention
from model.core.transformer import Transformer
from model.data.batching import Batch, EncodedPairs, batches_in_order
from model.data.text_batching import EncodedTexts, text_batches_in_order
from model.families.objectives import run_batch
from model.interpret.results import ABLATION_MODES, HEAD_KINDS, Head, HeadImportance

Means = dict[tuple[str, int], Tensor]  # (kind, layer) → the mean of the concatenated heads, [d_model]


def kinds_of(model: Transformer) -> list[str]:
    """The attention kinds a model has, as :data:`HEAD_KINDS` names them."""
    kinds = ["encoder"] if model.encoder_layers else []
    if model.decoder_layers:
        kinds.append("decoder")
        if "cross" in model.family.attention:
            kinds.append("cross")
    return kinds


def attention_of(model: Transformer, kind: str, layer: int) -> MultiHeadAttention:
    """The multi-head attention block of ``kind`` in ``layer``."""
    if kind not in HEAD_KINDS or kind not in kinds_of(model):
        raise ValueError(f"no {kind!r} attention in a {model.cfg.arch} model; it has {', '.join(kinds_of(model))}")
    stack = model.encoder_layers if kind == "encoder" else model.decoder_layers
    if not 0 <= layer < len(stack):
        raise ValueError(f"no {kind} layer {layer}: the model has {len(stack)} (counted from 0)")
    block = stack[layer]
    attn = block.cross_attn if kind == "cross" else block.self_attn
    assert isinstance(attn, MultiHeadAttention)
    return attn


def _columns(model: Transformer, head: Head) -> tuple[MultiHeadAttention, slice]:
    kind, layer, h = head
    attn = attention_of(model, kind, layer)
    if not 0 <= h < attn.n_heads:
        raise ValueError(f"no head {h} in {kind} layer {layer}: it has {attn.n_heads} (counted from 0)")
    return attn, slice(h * attn.head_dim, (h + 1) * attn.head_dim)


@contextmanager
def ablated(
    model: Transformer, heads: Iterable[Head], mode: str = "zero", means: Means | None = None
) -> Iterator[None]:
    """Inside, ``heads`` add nothing (``mode="zero"``) or their mean output (``"mean"``, from ``means``)."""
    if mode not in ABLATION_MODES:
        raise ValueError(f"unknown ablation mode {mode!r}; one of {', '.join(ABLATION_MODES)}")
    unique: dict[Head, None] = dict.fromkeys((str(k), int(layer), int(h)) for k, layer, h in heads)
    chosen = [(head, *_columns(model, head)) for head in unique]
    if mode == "mean" and chosen and means is None:
        raise ValueError("mean ablation needs the heads' means (head_means)")
    saved = {
        id(attn): (attn, attn.out_proj.weight.detach().clone(), attn.out_proj.bias.detach().clone())
        for _, attn, _ in chosen
    }
    try:
        with torch.no_grad():
            for (kind, layer, _), attn, cols in chosen:
                w = attn.out_proj.weight
                if mode == "mean" and means is not None:
                    attn.out_proj.bias.add_(w[:, cols] @ means[(kind, layer)][cols].to(w.dtype))
                w[:, cols] = 0.0
        yield
    finally:
        with torch.no_grad():
            for attn, weight, bias in saved.values():
                attn.out_proj.weight.copy_(weight)
                attn.out_proj.bias.copy_(bias)


@torch.no_grad()
def head_means(model: Transformer, batches: Sequence[Any]) -> Means:
    """Each block's concatenated head outputs averaged over the real (not padding) positions of ``batches``."""
    sums: dict[tuple[str, int], Tensor] = {}
    counts: dict[tuple[str, int], float] = {}
    real: dict[str, Tensor] = {}
    handles = []
    for kind in kinds_of(model):
        stack = model.encoder_layers if kind == "encoder" else model.decoder_layers
        for layer in range(len(stack)):
            key, query_side = (kind, layer), "encoder" if kind == "encoder" else "decoder"

            def catch(
                module: Any, args: tuple[Tensor, ...], key: tuple[str, int] = key, side: str = query_side
            ) -> None:
                keep = real[side].reshape(-1)
                rows = args[0].reshape(-1, args[0].shape[-1])[keep]
                sums[key] = sums.get(key, 0) + rows.float().sum(0)
                counts[key] = counts.get(key, 0.0) + float(keep.sum())

            handles.append(attention_of(model, kind, layer).out_proj.register_forward_pre_hook(catch))
    try:
        model.eval()
        for batch in batches:
            batch = batch.to(model.device)
            inputs = (batch.src, batch.tgt_in) if isinstance(batch, Batch) else (batch.ids,)
            real["encoder"] = inputs[0] != model.cfg.pad_id
            real["decoder"] = inputs[-1] != model.cfg.pad_id
            if isinstance(batch, Batch):
                real["decoder"][:, 0] = True  # BOS: a real position even where it shares the padding id
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return {key: total / max(1.0, counts[key]) for key, total in sums.items()}


def first_batches(data: EncodedPairs | EncodedTexts, n: int, kind: str, options: dict[str, Any]) -> list[Any]:
    """Teacher-forced evaluation batches of the first ``n`` sentences (texts: ``kind`` "lm" or "mlm", with the
    same masks every time)."""
    if isinstance(data, EncodedPairs):
        return batches_in_order(replace(data, src=data.src[:n], tgt=data.tgt[:n]), 64)
    return text_batches_in_order(replace(data, ids=data.ids[:n]), 64, kind, **options)


@torch.no_grad()
def scores(model: Transformer, batches: Sequence[Any]) -> dict[str, float]:
    """Plain cross-entropy per target token (no label smoothing) and token accuracy over ``batches``."""
    total = correct = counted = 0.0
    for batch in batches:
        out = run_batch(model, batch.to(model.device), 0.0)
        total += float(out.loss) * out.counted
        correct += float(out.correct)
        counted += out.counted
    return {"loss": total / max(1.0, counted), "accuracy": correct / max(1.0, counted)}


def head_importance(
    model: Transformer,
    batches: Sequence[Any],
    metric: str = "loss",
    mode: str = "zero",
    progress: Callable[[int, int], bool] | None = None,
    step: int = 0,
) -> HeadImportance:
    """Δloss and Δaccuracy per head, each head ablated alone."""
    model.eval()
    base = scores(model, batches)
    means = head_means(model, batches) if mode == "mean" else None
    kinds = kinds_of(model)
    layers = {k: len(model.encoder_layers if k == "encoder" else model.decoder_layers) for k in kinds}
    H = model.cfg.n_heads
    d_loss = {k: np.full((layers[k], H), np.nan) for k in kinds}
    d_acc = {k: np.full((layers[k], H), np.nan) for k in kinds}
    heads = [(k, layer, h) for k in kinds for layer in range(layers[k]) for h in range(H)]
    complete = True
    for done, (kind, layer, h) in enumerate(heads, 1):
        with ablated(model, [(kind, layer, h)], mode, means):
            got = scores(model, batches)
        d_loss[kind][layer, h] = got["loss"] - base["loss"]
        d_acc[kind][layer, h] = got["accuracy"] - base["accuracy"]
        if progress is not None and not progress(done, len(heads)) and done < len(heads):
            complete = False
            break
    n = sum(len(getattr(b, "src", getattr(b, "ids", []))) for b in batches)
    return HeadImportance(metric, base, d_loss, d_acc, n, step, mode, complete)
