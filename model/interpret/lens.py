"""The logit lens (nostalgebraist 2020): what the residual stream after each layer would predict, read through
the model's final norm and its output layer as if the layers above were not there."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from model.core.transformer import Transformer
from model.families.bert import Heads


def read_out(model: Transformer, hidden: Tensor) -> Tensor:
    """Logits of a residual stream ``[B, L, d]`` of the last stack: the stack's final norm (Pre-LN models have one),
    the family's heads (BERT's masked-LM transform), the output layer."""
    return model.generator(final_states(model, hidden))


def final_states(model: Transformer, hidden: Tensor) -> Tensor:
    """A residual stream ``[B, L, d]`` of the last stack as the output layer reads it: through the stack's final
    norm (Pre-LN models have one) and the family's heads (BERT's masked-LM transform)."""
    stack_norm = model.decoder_norm if model.decoder_layers else model.encoder_norm
    if stack_norm is not None:
        hidden = stack_norm(hidden)
    hidden, _ = model.parts.read_out(hidden, Heads(model.mlm_transform, model.pooler, model.classifier))
    return hidden


@torch.inference_mode()  # as Session.inspect: no autograd bookkeeping at all, ~10% quicker than no_grad
def layer_probs(
    model: Transformer, inputs: Sequence[Tensor], rows: Sequence[int], never: Sequence[int] = ()
) -> np.ndarray:
    """``[n_layers, T, vocab]``: the distribution each layer of the last stack (the decoder's; a single-stack
    model's one) would give at positions ``rows`` of one input; the last layer's is the model's own. ``never``:
    ids masked out as decoding does."""
    layers: nn.ModuleList = model.decoder_layers if model.decoder_layers else model.encoder_layers
    streams: list[Tensor] = []
    handles = [layer.register_forward_hook(lambda m, a, out: streams.append(out[0])) for layer in layers]
    try:
        model(*inputs)
    finally:
        for h in handles:
            h.remove()
    stacked = torch.cat([s[:1, list(rows)] for s in streams])  # [n_layers, T, d]
    logits = read_out(model, stacked).float()
    if never:
        logits[..., list(never)] = float("-inf")
    return logits.softmax(-1).cpu().numpy()
