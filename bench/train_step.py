"""Training step (forward, backward, Adam) of our Transformer against torch.nn.Transformer.

Same configuration (small preset, batch 64, length 20, CPU), same embeddings,
output projection, loss and optimizer; only the encoder–decoder stacks differ.
The two are interleaved and medians taken; nn.Transformer against a second copy
of itself shows the noise floor. Goal: ours / nn.Transformer ≤ 1.0.

    python -m bench.train_step [--repeats 40] [--threads 2]
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

from bench.common import interleaved_medians, report
from model.config import ModelConfig
from model.transformer import Transformer

VOCAB, BATCH, LENGTH = 1000, 64, 20


class TorchReference(nn.Module):
    """Our embeddings and output projection around torch.nn.Transformer (Post-LN, no final norms)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.shell = Transformer(cfg)  # embeddings, positions, generator
        kw = dict(
            d_model=cfg.d_model, nhead=cfg.n_heads, dim_feedforward=cfg.d_ff, dropout=cfg.dropout, batch_first=True
        )
        enc = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(**kw), cfg.n_encoder_layers, norm=None, enable_nested_tensor=False
        )
        dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(**kw), cfg.n_decoder_layers, norm=None)
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
        x = s.dropout(s.src_pos(s.src_embed(src) * s.embed_scale))
        y = s.dropout(s.tgt_pos(s.tgt_embed(tgt_in) * s.embed_scale))
        causal = torch.ones(tgt_in.shape[1], tgt_in.shape[1], dtype=torch.bool).triu(1)
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


def make_step(model: nn.Module, src, tgt_in, tgt_out):
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    model.train()

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(src, tgt_in)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        opt.step()

    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = ModelConfig.preset("small", src_vocab_size=VOCAB, tgt_vocab_size=VOCAB)
    src = torch.randint(3, VOCAB, (BATCH, LENGTH))
    src[BATCH // 2 :, LENGTH - 5 :] = 0  # half the batch padded, as in real batches
    tgt = torch.randint(3, VOCAB, (BATCH, LENGTH + 1))
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    ours = Transformer(cfg)
    ref, ref2 = TorchReference(cfg), TorchReference(cfg)
    assert abs(sum(p.numel() for p in ref.parameters()) - ours.num_parameters()) < 10, "configs differ"
    med = interleaved_medians(
        {
            "ours (records attention on demand)": make_step(ours, src, tgt_in, tgt_out),
            "torch.nn.Transformer": make_step(ref, src, tgt_in, tgt_out),
            "torch.nn.Transformer (second copy)": make_step(ref2, src, tgt_in, tgt_out),
        },
        repeats=args.repeats,
    )
    print(
        f"small preset: d_model={cfg.d_model}, heads={cfg.n_heads}, layers={cfg.n_encoder_layers}+"
        f"{cfg.n_decoder_layers}, d_ff={cfg.d_ff}, dropout={cfg.dropout}; batch {BATCH}, length {LENGTH}, "
        f"{args.threads} threads, {ours.num_parameters():,} parameters"
    )
    report(
        "training step",
        med,
        [
            ("ours / nn.Transformer (goal <= 1.0)", "ours (records attention on demand)", "torch.nn.Transformer"),
            ("nn.Transformer / its copy (noise)", "torch.nn.Transformer (second copy)", "torch.nn.Transformer"),
        ],
    )


if __name__ == "__main__":
    main()
