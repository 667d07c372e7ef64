"""Decoder-only and Mixture-of-Experts speed: training against PyTorch, cached generation, MoE against dense.

- Training step (forward, cross-entropy, backward, Adam) of our decoder-only model against the same
  stack built from torch.nn.TransformerEncoder with a causal mask (same embeddings, sinusoidal
  positions and output projection; both in train mode). Goal: ours / nn.TransformerEncoder ≤ 1.0.
- Greedy generation of 256 new tokens with the key/value cache against re-running the model over
  the whole sequence at every step. Goal: cached ≥ 4× faster.
- Training step of a Mixture-of-Experts model (4 experts, top-1, load-balancing loss added) against
  the dense model of the same active size (one expert is as big as the dense FFN). Goal: MoE / dense ≤ 1.5.

Each comparison is timed side by side, interleaved, medians taken. The models have random weights;
generation has EOS made unreachable, so every run produces exactly the same number of tokens.
The last lines are the figures, with their goals, ready to paste into the README.

    python -m bench.families [--repeats 20] [--threads 2] [--quick]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from bench.common import figure, interleaved_medians, quick_arguments, report
from model.core.config import ModelConfig
from model.core.transformer import Transformer
from model.decoding.search import generate

OURS, REF, REF2 = "ours, decoder-only", "nn.TransformerEncoder (causal)", "nn.TransformerEncoder (second copy)"
CACHED, RECOMPUTED = "generate, cached", "generate, recomputing the sequence"
MOE, DENSE = "MoE (4 experts, top-1)", "dense (same active size)"


@dataclass(frozen=True)
class Sizes:
    """What the three comparisons measure; ``--quick`` shrinks every size (for the tests)."""

    preset: str = "small"
    vocab: int = 8000
    batch: int = 64
    length: int = 64
    tokens: int = 256  # new tokens generated
    prompt: int = 8  # prompt tokens before them
    repeats: int = 20
    warmup: int = 2


QUICK = Sizes(preset="tiny", vocab=300, batch=4, length=16, tokens=24, prompt=4, repeats=2, warmup=1)


class EncoderReference(nn.Module):
    """Our embeddings, positions and output projection around torch.nn.TransformerEncoder, made causal."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.shell = Transformer(cfg)  # embedding, sinusoidal positions, dropout, generator
        layer = nn.TransformerEncoderLayer(
            d_model=cfg.d_model,
            nhead=cfg.n_heads,
            dim_feedforward=cfg.d_ff,
            dropout=cfg.dropout,
            batch_first=True,
        )
        self.core = nn.TransformerEncoder(layer, cfg.n_decoder_layers, norm=None, enable_nested_tensor=False)
        del self.shell.decoder_layers

    def forward(self, ids: Tensor) -> Tensor:
        s = self.shell
        assert s.tgt_pos is not None  # the presets compared have absolute positions
        x = s.dropout(s.tgt_pos(s.tgt_embed(ids) * s.embed_scale))
        mask = nn.Transformer.generate_square_subsequent_mask(ids.shape[1], device=ids.device)
        return s.generator(self.core(x, mask=mask, is_causal=True))


def decoder_config(sizes: Sizes, **overrides) -> ModelConfig:
    return ModelConfig.preset(sizes.preset, arch="decoder_only", vocab_size=sizes.vocab, **overrides)


def make_step(model: nn.Module, ids: Tensor, extras: bool = False) -> Callable[[], None]:
    """One training step on next-token prediction; ``extras``: our model, its load-balancing loss added."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    inputs, targets = ids[:, :-1], ids[:, 1:]
    aux_loss_coef = 0.0
    if extras:
        assert isinstance(model, Transformer), "only our model has a load-balancing loss"
        aux_loss_coef = model.cfg.aux_loss_coef
    model.train()

    def step():
        opt.zero_grad(set_to_none=True)
        if extras:
            logits, found = model(inputs, return_extras=True)
            aux = aux_loss_coef * found.aux_loss
        else:
            logits, aux = model(inputs), 0.0
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)) + aux
        loss.backward()
        opt.step()

    return step


def training_ids(sizes: Sizes) -> Tensor:
    """Random token ids ``[batch, length + 1]`` (no specials): inputs and their next-token targets."""
    return torch.randint(3, sizes.vocab, (sizes.batch, sizes.length + 1))


def compare_training(sizes: Sizes) -> dict[str, float]:
    """Medians of our decoder-only step, nn.TransformerEncoder's and a second nn.TransformerEncoder's."""
    torch.manual_seed(0)
    cfg = decoder_config(sizes)
    ids = training_ids(sizes)
    ours, ref, ref2 = Transformer(cfg), EncoderReference(cfg), EncoderReference(cfg)
    assert abs(sum(p.numel() for p in ref.parameters()) - ours.num_parameters()) < 10, "configs differ"
    steps = {OURS: make_step(ours, ids), REF: make_step(ref, ids), REF2: make_step(ref2, ids)}
    return interleaved_medians(steps, repeats=sizes.repeats, warmup=sizes.warmup)


def compare_generation(sizes: Sizes) -> dict[str, float]:
    """Medians of cached and recomputing greedy generation, each producing exactly ``sizes.tokens`` tokens."""
    torch.manual_seed(0)
    cfg = decoder_config(sizes, max_len=512)
    assert cfg.max_len >= 1 + sizes.prompt + sizes.tokens, "max_len too small for the prompt and tokens"
    model = Transformer(cfg).eval()
    with torch.no_grad():
        model.generator.bias[cfg.eos_id] = -1e4  # never ends early: equal work in every run
    prompt = torch.randint(3, sizes.vocab, (sizes.prompt,))
    assert len(generate(model, prompt, sizes.tokens)) == sizes.tokens
    runs = {
        CACHED: lambda: generate(model, prompt, sizes.tokens, temperature=0.0, use_cache=True),
        RECOMPUTED: lambda: generate(model, prompt, sizes.tokens, temperature=0.0, use_cache=False),
    }
    return interleaved_medians(runs, repeats=max(2, sizes.repeats // 3), warmup=min(2, sizes.warmup))


def compare_moe(sizes: Sizes) -> dict[str, float]:
    """Medians of the MoE step (aux loss added) and the dense step of the same active size."""
    torch.manual_seed(0)
    moe = Transformer(decoder_config(sizes, n_experts=4, experts_top_k=1))
    dense = Transformer(decoder_config(sizes))
    routers = moe.cfg.n_layers * (moe.cfg.d_model + 1) * moe.cfg.n_experts
    assert moe.active_parameters() - routers == dense.num_parameters(), "active sizes differ"
    ids = training_ids(sizes)
    steps = {MOE: make_step(moe, ids, extras=True), DENSE: make_step(dense, ids, extras=True)}
    return interleaved_medians(steps, repeats=sizes.repeats, warmup=sizes.warmup)


def figures(sizes: Sizes, train: dict[str, float], gen: dict[str, float], moe: dict[str, float]) -> list[str]:
    """The three figures, each with its goal and whether it holds."""
    shape = f"{sizes.preset}, batch {sizes.batch} × {sizes.length}"
    ratio = train[OURS] / train[REF]
    speedup = gen[RECOMPUTED] / gen[CACHED]
    moe_ratio = moe[MOE] / moe[DENSE]
    return [
        figure(f"decoder-only train step vs nn.TransformerEncoder (causal), {shape}", ratio, "goal ≤ 1.0", ratio <= 1),
        figure(
            f"decoder-only greedy generation of {sizes.tokens} tokens, speed-up cached vs recomputing, {sizes.preset}",
            speedup,
            "goal ≥ 4×",
            speedup >= 4,
        ),
        figure(
            f"MoE (4 experts, top-1) train step vs dense of the same active size, {shape}",
            moe_ratio,
            "goal ≤ 1.5×",
            moe_ratio <= 1.5,
        ),
    ]


def main(argv: list[str] | None = None) -> None:
    args = quick_arguments(__doc__.splitlines()[0], Sizes.repeats, argv)
    sizes = QUICK if args.quick else Sizes(repeats=args.repeats)
    print(
        f"{sizes.preset} preset, decoder-only; vocabulary {sizes.vocab}, training batch {sizes.batch} × "
        f"{sizes.length}, generation {sizes.prompt}-token prompt + {sizes.tokens} new tokens; cpu, "
        f"{args.threads} threads, {sizes.repeats} repeats"
    )
    train = compare_training(sizes)
    report("decoder-only training step", train, [("nn.TransformerEncoder / its copy (noise)", REF2, REF)])
    gen = compare_generation(sizes)
    report("greedy generation", gen, [])
    print(f"  cached step: {gen[CACHED] / sizes.tokens * 1e3:.3f} ms per token")
    moe = compare_moe(sizes)
    report("Mixture-of-Experts training step", moe, [])
    print("== figures")
    for line in figures(sizes, train, gen, moe):
        print(line)


if __name__ == "__main__":
    main()
