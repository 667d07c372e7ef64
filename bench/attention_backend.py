"""Which fast path for attention: torch's scaled_dot_product_attention or plain matmuls?

The engine's fast path (used when no weights are recorded) calls
``torch.nn.functional.scaled_dot_product_attention``. This measures, side by side,
the same model with that call swapped for matmul → mask → softmax → matmul, in a
training step (small preset, batch 64, length 20) and in cached greedy decoding
(128 tokens, batch 1). A ratio above 1 means SDPA is the faster choice.

    python -m bench.attention_backend [--repeats 20] [--threads 2]
"""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import Iterator
from unittest import mock

import torch
import torch.nn.functional as F
from torch import Tensor

import model.core.attention as attention
import model.core.layers as layers
from bench.common import interleaved_medians, report
from bench.decoding import TOKENS
from bench.decoding import make_model as make_decoding_model
from bench.train_step import BATCH, LENGTH, VOCAB, make_step
from model.core.config import ModelConfig
from model.core.transformer import Transformer
from model.decoding.search import greedy_decode

_sdpa = attention.scaled_dot_product_attention


def matmul_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    need_weights: bool = False,
    bias: Tensor | None = None,
) -> tuple[Tensor, Tensor | None]:
    """The engine's attention (same arguments, T5's ``bias`` included) with the fast path's SDPA call
    replaced by matmul → mask → softmax → matmul."""
    if need_weights:
        return _sdpa(q, k, v, mask, dropout_p, True, bias)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # [B, H, Lq, Lk]
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(-1)
    if dropout_p:
        weights = F.dropout(weights, dropout_p)
    return weights @ v, None


@contextlib.contextmanager
def matmul_backend() -> Iterator[None]:
    """The engine's fast path through ``matmul_attention`` while inside (layers.py imported it by name)."""
    with (
        mock.patch.object(attention, "scaled_dot_product_attention", matmul_attention),
        mock.patch.object(layers, "scaled_dot_product_attention", matmul_attention),
    ):
        yield


def with_matmul(fn):
    def run():
        with matmul_backend():
            fn()

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = ModelConfig.preset("small", src_vocab_size=VOCAB, tgt_vocab_size=VOCAB)
    src = torch.randint(3, VOCAB, (BATCH, LENGTH))
    src[BATCH // 2 :, LENGTH - 5 :] = 0
    tgt = torch.randint(3, VOCAB, (BATCH, LENGTH + 1))
    a, b = Transformer(cfg), Transformer(cfg)
    med = interleaved_medians(
        {
            "train step, sdpa": make_step(a, src, tgt[:, :-1], tgt[:, 1:]),
            "train step, matmul": with_matmul(make_step(b, src, tgt[:, :-1], tgt[:, 1:])),
        },
        repeats=args.repeats,
    )
    report(
        "training step (small, batch 64, length 20)", med, [("matmul / sdpa", "train step, matmul", "train step, sdpa")]
    )
    m = make_decoding_model("small")
    s = torch.randint(3, 1000, (1, 20))
    med = interleaved_medians(
        {
            "greedy, sdpa": lambda: greedy_decode(m, s, TOKENS),
            "greedy, matmul": with_matmul(lambda: greedy_decode(m, s, TOKENS)),
        },
        repeats=args.repeats,
    )
    report(
        f"cached greedy decoding ({TOKENS} tokens, batch 1)", med, [("matmul / sdpa", "greedy, matmul", "greedy, sdpa")]
    )


if __name__ == "__main__":
    main()
