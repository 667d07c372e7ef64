"""Training step (forward, backward, Adam) of our Transformer against torch.nn.Transformer.

Same configuration (by default the small preset, batch 64, length 20, on the CPU), same
embeddings, output projection, loss and optimizer; only the encoder–decoder stacks differ.
The two are interleaved and medians taken; nn.Transformer against a second copy of itself
shows the noise floor. Goal: ours / nn.Transformer ≤ 1.0.

    python -m bench.train_step [--repeats 40] [--threads 2]
    python -m bench.train_step --device cuda --preset paper_base --batch 256 --length 64 --vocab 37000 --bf16
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable

import torch
from torch import nn

from bench.common import interleaved_medians, report
from model.core.config import ModelConfig
from model.core.transformer import Transformer

VOCAB, BATCH, LENGTH = 1000, 64, 20


class TorchReference(nn.Module):
    """Our embeddings and output projection around torch.nn.Transformer (Post-LN, no final norms)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.shell = Transformer(cfg)  # embeddings, positions, generator
        d, heads, d_ff, dropout = cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout
        enc_layer = nn.TransformerEncoderLayer(d, heads, d_ff, dropout, batch_first=True)
        dec_layer = nn.TransformerDecoderLayer(d, heads, d_ff, dropout, batch_first=True)
        enc = nn.TransformerEncoder(enc_layer, cfg.n_encoder_layers, norm=None, enable_nested_tensor=False)
        dec = nn.TransformerDecoder(dec_layer, cfg.n_decoder_layers, norm=None)
        self.core = nn.Transformer(
            d_model=cfg.d_model,
            nhead=cfg.n_heads,
            custom_encoder=enc,
            custom_decoder=dec,
            batch_first=True,
            dropout=cfg.dropout,
        )
        del self.shell.encoder_layers, self.shell.decoder_layers

    def forward(self, src, tgt_in):
        s = self.shell
        pad = s.cfg.pad_id
        assert s.src_pos is not None and s.tgt_pos is not None  # the presets compared have absolute positions
        x = s.dropout(s.src_pos(s.src_embed(src) * s.embed_scale))
        y = s.dropout(s.tgt_pos(s.tgt_embed(tgt_in) * s.embed_scale))
        causal = torch.ones(tgt_in.shape[1], tgt_in.shape[1], dtype=torch.bool, device=tgt_in.device).triu(1)
        out = self.core(
            x,
            y,
            tgt_mask=causal,
            src_key_padding_mask=src == pad,
            tgt_key_padding_mask=tgt_in == pad,
            memory_key_padding_mask=src == pad,
            tgt_is_causal=True,
        )
        return s.generator(out)


def make_step(model: nn.Module, src, tgt_in, tgt_out, bf16: bool = False) -> Callable[[], None]:
    """One training step as the engine takes it; on a GPU it waits for the GPU to finish."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    model.train()
    cuda = src.is_cuda

    def step():
        opt.zero_grad(set_to_none=True)
        autocast = torch.autocast("cuda", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
        with autocast:
            logits = model(src, tgt_in)
        loss = loss_fn(logits.float().reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        opt.step()
        if cuda:
            torch.cuda.synchronize()

    return step


def training_flops(cfg: ModelConfig, batch: int, src_len: int, tgt_len: int) -> float:
    """Floating-point operations of one training step (forward + backward = 3 × forward), counting
    every matrix product: projections, feed-forward layers, attention scores and their weighted sums
    (in full, as the kernels compute them, masked or not) and the output projection."""
    d, f, v = cfg.d_model, cfg.d_ff, cfg.tgt_vocab_size
    S, T = src_len, tgt_len
    encoder = cfg.n_encoder_layers * (S * (4 * d * d + 2 * d * f) + 2 * S * S * d)
    self_attention = T * 4 * d * d + 2 * T * T * d
    cross_attention = T * 2 * d * d + S * 2 * d * d + 2 * T * S * d  # Q, O on T positions; K, V on S
    decoder = cfg.n_decoder_layers * (self_attention + cross_attention + T * 2 * d * f)
    forward = 2 * batch * (encoder + decoder + T * d * v)  # 2 operations per multiply–add
    return 3.0 * forward


def compare(
    preset: str = "small",
    device: str = "cpu",
    batch: int = BATCH,
    length: int = LENGTH,
    vocab: int = VOCAB,
    repeats: int = 40,
    bf16: bool = False,
) -> tuple[dict[str, float], ModelConfig, int]:
    """Medians of ours, nn.Transformer and a second nn.Transformer; the config; our parameter count."""
    torch.manual_seed(0)
    dev = torch.device(device)
    cfg = ModelConfig.preset(preset, src_vocab_size=vocab, tgt_vocab_size=vocab)
    src = torch.randint(3, vocab, (batch, length))
    src[batch // 2 :, length - 5 :] = 0  # half the batch padded, as in real batches
    tgt = torch.randint(3, vocab, (batch, length + 1))
    src, tgt = src.to(dev), tgt.to(dev)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    ours = Transformer(cfg).to(dev)
    ref, ref2 = TorchReference(cfg).to(dev), TorchReference(cfg).to(dev)
    assert abs(sum(p.numel() for p in ref.parameters()) - ours.num_parameters()) < 10, "configs differ"
    med = interleaved_medians(
        {
            "ours (records attention on demand)": make_step(ours, src, tgt_in, tgt_out, bf16),
            "torch.nn.Transformer": make_step(ref, src, tgt_in, tgt_out, bf16),
            "torch.nn.Transformer (second copy)": make_step(ref2, src, tgt_in, tgt_out, bf16),
        },
        repeats=repeats,
    )
    return med, cfg, ours.num_parameters()


RATIOS = [
    ("ours / nn.Transformer (goal <= 1.0)", "ours (records attention on demand)", "torch.nn.Transformer"),
    ("nn.Transformer / its copy (noise)", "torch.nn.Transformer (second copy)", "torch.nn.Transformer"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--length", type=int, default=LENGTH)
    ap.add_argument("--vocab", type=int, default=VOCAB)
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast (CUDA), as the engine trains on a GPU")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    med, cfg, n_params = compare(args.preset, args.device, args.batch, args.length, args.vocab, args.repeats, args.bf16)
    print(
        f"{args.preset} preset: d_model={cfg.d_model}, heads={cfg.n_heads}, layers={cfg.n_encoder_layers}+"
        f"{cfg.n_decoder_layers}, d_ff={cfg.d_ff}, dropout={cfg.dropout}; batch {args.batch}, length "
        f"{args.length}, vocabulary {args.vocab}, {args.device}{', bf16 autocast' if args.bf16 else ''}, "
        f"{args.threads} threads, {n_params:,} parameters"
    )
    report("training step", med, RATIOS)
    tokens = 2 * args.batch * args.length  # source + target
    print(f"  ours: {tokens / med['ours (records attention on demand)']:,.0f} tokens/s (source + target)")


if __name__ == "__main__":
    main()
