"""The int8 fast mode: a cached decoding step's linear layers with int8 weights (dynamic quantisation).

Each weight matrix of the decoder's step (the attention projections, the feed-forward layers and the output
layer) is quantised once per row to 8 bits, and the activations of each call are quantised on the fly (PyTorch's
dynamic quantisation, fbgemm/x86 kernels): a quarter of the bytes read per token, which is what a batch-1 step on
a CPU waits for. Everything else (the encoder, attention itself, the norms, every whole-sequence view) stays in
float32, which stays the default and the exact reference; :func:`compare` says how far the fast mode's output
differs from it. Quantised weights are kept per weight tensor and made again when the tensor changes (training
writes it).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from model.core.layers import DecoderLayer, PerWeight
from model.core.masks import padding_mask
from model.core.transformer import Transformer


class Int8Unavailable(RuntimeError):
    """This PyTorch build cannot run dynamically quantised linear layers."""


def _quantise(weight: Tensor, bias: Tensor | None) -> Callable[[Tensor], Tensor]:
    linear = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None)
    with torch.no_grad():
        linear.weight.copy_(weight.detach().float().cpu())
        if bias is not None:
            linear.bias.copy_(bias.detach().float().cpu())
    with warnings.catch_warnings():  # PyTorch's eager quantisation API says it will move to torchao
        warnings.simplefilter("ignore")
        try:
            from torch.ao.quantization import quantize_dynamic

            quantised: nn.Module = quantize_dynamic(nn.Sequential(linear), {nn.Linear}, dtype=torch.qint8)[0]
        except (ImportError, AttributeError, RuntimeError) as exc:
            raise Int8Unavailable(f"this PyTorch cannot quantise linear layers to int8 ({exc})") from None
    return quantised


class Int8Linears:
    """Called as ``F.linear(x, W, b)`` is, it computes with an int8 copy of ``W`` (made on first use and again
    whenever ``W`` changes). CPU only: on a GPU the step stays in float32."""

    def __init__(self) -> None:
        self._made = PerWeight(_quantise)

    def __call__(self, x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
        if x.device.type != "cpu":
            return F.linear(x, weight, bias)
        return cast("Callable[[Tensor], Tensor]", self._made.get(weight, bias))(x)

    def prepare(self, model: Transformer) -> int:
        """Quantise every weight a cached step reads now, not on the first step; returns how many."""
        tensors: list[tuple[Tensor, Tensor | None]] = [(model.generator.weight, model.generator.bias)]
        for layer in cast("list[DecoderLayer]", list(model.decoder_layers)):
            w = layer.step_weights()
            tensors += [p for p in (w.qkv, w.self_out, w.cross_q, w.cross_out) if p is not None]
            ffn = w.ffn
            tensors += [getattr(ffn, "ff1", None), getattr(ffn, "ff2", None)]  # type: ignore[list-item]
        probe = torch.zeros(1, 1, 1)
        done = 0
        for pair in tensors:
            if pair is None:
                continue
            weight, bias = pair
            self(probe.new_zeros(1, weight.shape[1]), weight, bias)
            done += 1
        return done


@dataclass(frozen=True)
class Int8Comparison:
    """How the int8 fast mode's decoding differs from float32's, on some sentences."""

    sentences: int
    same_tokens: int  # sentences decoded to exactly the same tokens
    max_logprob_change: float  # the largest change of a chosen token's log-probability, over the float32 path


def compare(model: Transformer, sources: list[Tensor], max_len: int, int8: Int8Linears) -> Int8Comparison:
    """Greedy decoding of ``sources`` in float32 and in int8, side by side (the float32 tokens are followed in
    both, so the log-probabilities compared are of the same tokens)."""
    from model.decoding.search import greedy_decode

    same, change = 0, 0.0
    before = model.step_linear
    try:
        for src in sources:
            model.step_linear = model.float_linear
            exact, exact_lp = greedy_decode(model, src, max_len, return_log_probs=True)
            model.step_linear = int8
            fast, _ = greedy_decode(model, src, max_len, return_log_probs=True)
            forced = _forced_log_probs(model, src, exact[0])
            chosen = torch.tensor(exact[0])
            steps = torch.arange(len(chosen))
            diff = (forced[steps, chosen] - exact_lp[0, steps, chosen]).abs().max().item() if len(chosen) else 0.0
            same += fast[0] == exact[0]
            change = max(change, diff)
    finally:
        model.step_linear = before
    return Int8Comparison(len(sources), same, change)


@torch.inference_mode()
def _forced_log_probs(model: Transformer, src: Tensor, tokens: list[int]) -> Tensor:
    """The step's log-probabilities (in whatever mode ``model.step_linear`` is) along ``tokens``."""
    cfg = model.cfg
    src = src.view(1, -1).to(model.device)
    mask = padding_mask(src, cfg.pad_id)
    memory = model.encode(src, mask)
    state = model.start_decoding(memory, mask, 1, capacity=len(tokens) + 1)
    rows, prev = [], cfg.bos_id
    for token in tokens:
        logits = model.decode_step(torch.tensor([prev], device=src.device), state)[0]
        rows.append(logits[0].log_softmax(-1))
        prev = token
    return torch.stack(rows) if rows else torch.zeros(0, cfg.tgt_vocab_size)
