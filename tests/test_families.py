"""The three families: decoder-only (GPT), encoder-only (BERT), and what they share with the translator.

Stacks are compared with ``torch.nn.TransformerEncoder`` (weights copied), generation with and without the
key/value cache, the steppers with ``generate``, the Mixture-of-Experts layer with hand-computed numbers and
T5's relative-position buckets with an independent re-implementation in plain ``math``.
"""

import itertools
import math

import pytest
import torch
from torch import nn

from model.core.config import ModelConfig
from model.core.feedforward import FeedForward
from model.core.masks import padding_mask
from model.core.positional import sinusoidal_table
from model.core.transformer import Transformer
from model.decoding.search import (
    BeamStepper,
    GreedyStepper,
    SampleStepper,
    Sampling,
    fill_mask,
    filter_logits,
    generate,
    length_normalized_score,
)
from model.families.moe import MoEFeedForward, balance_loss
from model.families.t5 import T5RelativeBias, t5_buckets

V = 12
PAD, BOS, EOS, MASK = 0, 1, 2, 4
SPECIALS = (PAD, BOS, EOS, MASK)
INF = float("inf")


def make(arch="decoder_only", seed=0, **changes) -> Transformer:
    torch.manual_seed(seed)
    fields = dict(
        arch=arch,
        vocab_size=V,
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_encoder_layers=2,
        n_decoder_layers=2,
        dropout=0.0,
        max_len=32,
    )
    return Transformer(ModelConfig.preset("tiny", **{**fields, **changes})).eval()


def no_early_eos(model: Transformer) -> Transformer:
    """EOS (almost) never chosen, so every generation runs its full length."""
    with torch.no_grad():
        model.generator.bias[EOS] = -30.0
    return model


def perturb_norms(model: Transformer) -> None:
    """LayerNorm gains and biases away from 1 and 0, so a swapped norm would show."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))


def embedded(model: Transformer, ids: torch.Tensor) -> torch.Tensor:
    """The paper's input, computed here: √d-scaled embedding plus the sinusoidal table."""
    d = model.cfg.d_model
    return model.src_embed.weight[ids] * math.sqrt(d) + sinusoidal_table(model.cfg.max_len, d)[: ids.shape[1]]


def torch_stack(model: Transformer, layers: nn.ModuleList, final_norm: nn.LayerNorm | None) -> nn.TransformerEncoder:
    """``nn.TransformerEncoder`` holding the weights of ``layers`` (and of the final norm, Pre-LN)."""
    cfg = model.cfg
    pre = cfg.norm == "pre"
    layer = nn.TransformerEncoderLayer(
        cfg.d_model,
        cfg.n_heads,
        cfg.d_ff,
        dropout=0.0,
        activation=cfg.activation,
        batch_first=True,
        norm_first=pre,
        layer_norm_eps=cfg.layer_norm_eps,
    )
    norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if pre else None
    ref = nn.TransformerEncoder(layer, len(layers), norm=norm, enable_nested_tensor=False).eval()
    with torch.no_grad():
        for dst, src in zip(ref.layers, layers):
            dst.self_attn.in_proj_weight.copy_(src.self_attn.in_proj.weight)
            dst.self_attn.in_proj_bias.copy_(src.self_attn.in_proj.bias)
            dst.self_attn.out_proj.load_state_dict(src.self_attn.out_proj.state_dict())
            for name in ("linear1", "linear2"):
                getattr(dst, name).load_state_dict(getattr(src.ffn, name).state_dict())
            for name in ("norm1", "norm2"):
                getattr(dst, name).load_state_dict(getattr(src, name).state_dict())
        if pre:
            assert final_norm is not None
            ref.norm.load_state_dict(final_norm.state_dict())
    return ref


# -- 1. decoder-only = a causal nn.TransformerEncoder ------------------------------------------------------------
@pytest.mark.parametrize("norm, activation", [("post", "relu"), ("pre", "gelu"), ("post", "gelu"), ("pre", "relu")])
def test_decoder_only_matches_torch_encoder_with_causal_mask(norm, activation):
    model = make(norm=norm, activation=activation)
    perturb_norms(model)
    ref = torch_stack(model, model.decoder_layers, model.decoder_norm)
    ids = torch.tensor([[BOS, 5, 6, 7, 8, 9, 3], [BOS, 11, 10, 9, 3, 4, 5]])
    causal = nn.Transformer.generate_square_subsequent_mask(ids.shape[1])
    with torch.no_grad():
        want = ref(embedded(model, ids), mask=causal, is_causal=True)
        hidden, _ = model._decoder_pass(ids, None, None, False)
        logits = model(ids)
        captured, maps = model(ids, return_attention=True)
    assert torch.allclose(hidden, want, atol=1e-5)
    assert torch.allclose(logits, model.generator(want), atol=1e-5)
    assert torch.allclose(captured, logits, atol=1e-5)
    assert len(maps.decoder_self) == 2 and maps.encoder == [] and maps.cross == []
    for w in maps.decoder_self:
        assert w.shape == (2, 4, 7, 7)
        assert (w.triu(1) == 0).all() and torch.allclose(w.sum(-1), torch.ones(2, 4, 7), atol=1e-5)


# -- 2. causality and padding -----------------------------------------------------------------------------------
@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope", "t5_relative"])
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_decoder_only_later_tokens_do_not_change_earlier_logits(positional, norm):
    model = make(positional=positional, norm=norm)
    ids = torch.tensor([[BOS, 5, 6, 7, 8, 9]])
    changed = ids.clone()
    changed[0, 4:] = torch.tensor([10, 11])
    with torch.no_grad():
        a, b = model(ids), model(changed)
    assert torch.allclose(a[0, :4], b[0, :4], atol=1e-6)
    assert not torch.allclose(a[0, 4:], b[0, 4:], atol=1e-3)


PADDING_CASES = [
    ("decoder_only", dict(positional="sinusoidal")),
    ("decoder_only", dict(positional="rope", norm="pre")),
    ("decoder_only", dict(positional="t5_relative", n_experts=3, experts_top_k=2)),
    ("encoder_only", dict(positional="sinusoidal")),
    ("encoder_only", dict(positional="learned", norm="pre")),
    ("encoder_only", dict(positional="rope")),
    ("encoder_only", dict(positional="t5_relative", n_experts=3, experts_top_k=2)),
]


@pytest.mark.parametrize("arch, changes", PADDING_CASES)
def test_right_padding_leaves_real_positions_unchanged(arch, changes):
    model = make(arch, **changes)
    row = torch.tensor([[BOS, 5, 6, 7, EOS]])
    padded = torch.tensor([[BOS, 5, 6, 7, EOS, PAD, PAD, PAD]])
    other = torch.tensor([[BOS, 8, 9, 10, 11, 3, 3, EOS]])  # a longer batch-mate
    with torch.no_grad():
        alone = model(row)
        batch = model(torch.cat([padded, other]))
        model.src_embed.weight[PAD] += 100.0  # junk at the pad positions is still padding
        junk = model(torch.cat([padded, other]))
    assert torch.allclose(alone[0], batch[0, :5], atol=1e-5)
    assert torch.allclose(alone[0], junk[0, :5], atol=1e-5)


# -- 3. generation: cache, seeds, filters -----------------------------------------------------------------------
GENERATION_CASES = {
    "sinusoidal": dict(),
    "pre-rope": dict(positional="rope", norm="pre"),
    "learned": dict(positional="learned"),
    "t5": dict(positional="t5_relative"),
    "moe": dict(n_experts=4, experts_top_k=2),
    "pre-t5-moe": dict(positional="t5_relative", norm="pre", n_experts=3, experts_top_k=1, activation="gelu"),
}
DRAWS = [
    dict(),
    dict(temperature=1.0, seed=3),
    dict(temperature=0.8, top_k=5, seed=7),
    dict(temperature=1.2, top_p=0.9, seed=11),
]


@pytest.mark.parametrize("changes", GENERATION_CASES.values(), ids=GENERATION_CASES.keys())
def test_cached_generation_equals_recomputed(changes):
    model = no_early_eos(make(**changes))
    for draw in DRAWS:
        cached = generate(model, [5, 6, 7], 12, use_cache=True, **draw)
        plain = generate(model, [5, 6, 7], 12, use_cache=False, **draw)
        assert cached == plain, draw
        assert len(cached) == 12 and PAD not in cached and BOS not in cached
    # and the cached steps' logits are the whole forward pass's, position by position
    ids = [BOS, 5, 6, 7, *cached]
    state = model.start_generation(1, len(ids))
    with torch.no_grad():
        steps = torch.cat([model.decode_step(torch.tensor([t]), state)[0] for t in ids])
        full = model(torch.tensor([ids]))[0]
    assert torch.allclose(steps, full, atol=1e-5)


@pytest.mark.parametrize("changes", GENERATION_CASES.values(), ids=GENERATION_CASES.keys())
def test_a_prompt_read_in_blocks_equals_it_read_a_token_at_a_time(changes):
    """prefill over positions 0–6, then 7–10, in one call each: the logits, the attention rows and the cache's keys
    and values of eleven decode_step calls (a row's weights beyond its own position are zero)."""
    model = make(**changes)
    perturb_norms(model)
    ids = [BOS, 5, 6, 7, 9, 10, 4, 8, 8, 3, 11]
    stepped = model.start_generation(1, len(ids) + 2)
    blocks = model.start_generation(1, len(ids) + 2)
    with torch.no_grad():
        steps = [model.decode_step(torch.tensor([t]), stepped, need_weights=True) for t in ids]
        first, maps_a = model.prefill(torch.tensor([ids[:7]]), blocks, need_weights=True)
        second, maps_b = model.prefill(torch.tensor([ids[7:]]), blocks, need_weights=True)
    assert blocks.length == stepped.length == len(ids)
    assert torch.allclose(torch.cat([first, second], 1)[0], torch.cat([s[0] for s in steps]), atol=1e-5)
    for layer in range(model.cfg.n_decoder_layers):
        for pos in range(len(ids)):
            block, row = (maps_a, pos) if pos < 7 else (maps_b, pos - 7)
            got = block[layer][0, :, row]  # [H, keys of the block's end]
            want = steps[pos][1][layer][0, :, 0]  # [H, pos + 1]
            assert torch.allclose(got[:, : pos + 1], want, atol=1e-5), (layer, pos)
            assert not got[:, pos + 1 :].any()
    assert torch.allclose(blocks.cache[:, :, :, :, : len(ids)], stepped.cache[:, :, :, :, : len(ids)], atol=1e-5)


def test_a_stepper_reads_a_long_prompt_in_blocks_with_the_rows_of_a_token_at_a_time(monkeypatch):
    """A prompt longer than a block: the recorded rows, P(next prompt token) and the steps after it are those of
    reading it a token per call."""
    from model.decoding import search

    model = no_early_eos(make(max_len=64))
    prompt = torch.tensor([5 + i % 6 for i in range(40)])
    monkeypatch.setattr(search, "PREFILL_BLOCK", 16)  # 41 positions: three blocks
    blocks = GreedyStepper(model, prompt, max_len=6)
    blocks.run()
    monkeypatch.setattr(search.BeamStepper, "_read_prompt", search.BeamStepper._read_prompt_by_token)
    tokens = GreedyStepper(model, prompt, max_len=6)
    tokens.run()
    assert len(blocks.prompt_rows) == len(tokens.prompt_rows) == 40
    for got, want in zip(blocks.prompt_rows, tokens.prompt_rows):
        assert got.self_attention.shape == want.self_attention.shape
        assert abs(got.self_attention - want.self_attention).max() < 1e-5
        assert abs(got.eos_probs - want.eos_probs).max() < 1e-5
    assert abs(blocks.prompt_probs - tokens.prompt_probs).max() < 1e-5
    assert blocks.output == tokens.output and len(blocks.output) == 6


def test_seeded_sampling_repeats_and_other_seeds_differ():
    model = no_early_eos(make())
    with torch.no_grad():
        model.generator.weight.mul_(0.05)  # a flat-ish distribution: draws vary a lot
    a = generate(model, [5, 6], 15, temperature=1.0, seed=1)
    assert a == generate(model, [5, 6], 15, temperature=1.0, seed=1)
    assert a != generate(model, [5, 6], 15, temperature=1.0, seed=2)
    assert len(set(a)) > 3


@pytest.mark.parametrize("seed", range(3))
def test_top_k_one_sampling_is_greedy(seed):
    model = no_early_eos(make(seed=seed))
    greedy = generate(model, [5, 6, 7], 10)
    assert generate(model, [5, 6, 7], 10, temperature=3.0, top_k=1, seed=seed) == greedy
    assert generate(model, [5, 6, 7], 10, temperature=3.0, seed=seed) != greedy  # not by luck


def smallest_set_reaching(probs: list[float], p: float) -> set[int]:
    """By brute force: of the smallest subsets whose mass reaches p, the most probable one."""
    for size in range(1, len(probs) + 1):
        reaching = [s for s in itertools.combinations(range(len(probs)), size) if sum(probs[i] for i in s) >= p]
        if reaching:
            return set(max(reaching, key=lambda s: sum(probs[i] for i in s)))
    raise AssertionError("the whole vocabulary reaches every p ≤ 1")


def test_top_p_keeps_the_smallest_set_whose_mass_reaches_p():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(60, 7, generator=gen) * torch.linspace(0.3, 4.0, 60)[:, None]
    ps = (torch.rand(60, generator=gen) * 0.98 + 0.01).tolist()
    sizes = set()
    for row, p in zip(logits, ps):
        kept = filter_logits(row[None], top_p=p)[0]
        expected = smallest_set_reaching(row.double().softmax(-1).tolist(), p)
        assert set(kept.isfinite().nonzero().view(-1).tolist()) == expected, p
        assert torch.equal(kept[kept.isfinite()], row[kept.isfinite()])  # survivors keep their logits
        sizes.add(len(expected))
    assert len(sizes) >= 4  # many different set sizes were exercised
    batch = torch.stack([filter_logits(row[None], top_p=0.7)[0] for row in logits])
    assert torch.equal(filter_logits(logits, top_p=0.7), batch)  # rows are filtered independently


def test_top_k_keeps_exactly_the_k_most_probable():
    logits = torch.randn(30, 9)
    for k in range(1, 10):
        out = filter_logits(logits, top_k=k)
        kept = out.isfinite()
        assert (kept.sum(-1) == k).all()
        assert kept.gather(1, logits.topk(k, dim=-1).indices).all()
        assert torch.equal(out[kept], logits[kept])


# -- 4. steppers ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "temperature, top_k, top_p, seed", [(1.0, None, None, 1), (2.0, 3, None, 2), (2.0, None, 0.5, 3), (1.5, 4, 0.7, 4)]
)
def test_sample_stepper_reproduces_generate(temperature, top_k, top_p, seed):
    model = no_early_eos(make(positional="rope"))
    prompt = torch.tensor([5, 6])
    stepper = SampleStepper(model, prompt, max_len=10, sampling=Sampling(temperature, top_k, top_p, seed), top_k=8)
    hyps = stepper.run()
    want = generate(model, prompt, 10, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    assert len(want) == 10
    assert hyps[0].tokens == want and stepper.output == want


def test_sample_stepper_cut_marks_what_filter_logits_removed():
    model = no_early_eos(make(seed=1))
    temperature, top_k, top_p = 0.9, 4, 0.6
    stepper = SampleStepper(model, torch.tensor([5, 6]), 8, Sampling(temperature, top_k, top_p, seed=5), top_k=8)
    stepper.run()
    ids = [BOS, 5, 6, *stepper.output]
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0]
    logits[:, [PAD, BOS]] = -INF
    counts = []
    for step in stepper.history:
        tempered = (logits[2 + step.index].log_softmax(-1) / temperature).log_softmax(-1)
        removed = filter_logits(tempered, top_k, top_p).isneginf()
        top = step.top_tokens[0].tolist()
        assert top == tempered.topk(8).indices.tolist()
        assert step.top_probs[0] == pytest.approx(tempered.exp()[top].tolist(), abs=1e-5)
        assert step.cut[0].tolist() == removed[top].tolist()
        assert step.sampled and not removed[step.kept[0].token]
        counts.append(int(step.cut[0].sum()))
    assert min(counts) >= 4 and max(counts) > 4  # top-k cut 4 of the 8 shown, top-p sometimes more


@pytest.mark.parametrize("changes", [dict(), dict(positional="t5_relative", norm="pre"), dict(n_experts=3)])
def test_greedy_stepper_equals_greedy_generate(changes):
    model = make(**changes)
    with torch.no_grad():
        model.generator.bias[EOS] = -2.0  # EOS possible, but not at once
    prompt = torch.tensor([5, 6, 7])
    stepper = GreedyStepper(model, prompt, max_len=12)
    stepper.run()
    want = generate(model, prompt, 12)
    assert len(want) >= 3
    assert stepper.output == want and stepper.hypotheses()[0].tokens == want


def sequence_log_prob(model: Transformer, prompt: list[int], tokens: list[int]) -> float:
    """log P(tokens | prompt) from one forward pass over BOS, the prompt and the tokens, PAD and BOS forbidden."""
    with torch.no_grad():
        logits = model(torch.tensor([[BOS, *prompt, *tokens[:-1]]]))[0, len(prompt) :]
    logits[:, [PAD, BOS]] = -INF
    lp = logits.log_softmax(-1)
    return sum(lp[i, t].item() for i, t in enumerate(tokens))


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_wide_beam_on_decoder_only_finds_the_exhaustive_optimum(seed, alpha):
    model = make(vocab_size=6, seed=seed)  # PAD, BOS, EOS and 3 regular tokens
    with torch.no_grad():
        model.generator.weight.mul_(2.0)
    prompt, max_len, regular = [3, 4], 3, [3, 4, 5]
    complete = [[*body, EOS] for n in range(max_len) for body in itertools.product(regular, repeat=n)]
    complete += [list(body) for body in itertools.product(regular, repeat=max_len)]
    scored = sorted(
        ((length_normalized_score(sequence_log_prob(model, prompt, s), len(s), alpha), s) for s in complete),
        key=lambda x: x[0],
        reverse=True,
    )
    stepper = BeamStepper(model, torch.tensor(prompt), len(complete), max_len, alpha, record=False)
    hyps = stepper.run()
    assert len(hyps) == len(complete) == 40  # nothing pruned: every complete sequence was reached
    assert hyps[0].tokens == scored[0][1]
    assert hyps[0].score == pytest.approx(scored[0][0], abs=1e-4)
    assert [h.tokens for h in hyps[:8]] == [s for _, s in scored[:8]]


# -- 5. encoder-only ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm, activation", [("post", "gelu"), ("pre", "relu"), ("pre", "gelu")])
def test_encoder_only_matches_torch_encoder(norm, activation):
    model = make("encoder_only", norm=norm, activation=activation)
    perturb_norms(model)
    with torch.no_grad():
        model.segment_embed.weight.zero_()
    ref = torch_stack(model, model.encoder_layers, model.encoder_norm)
    ids = torch.tensor([[BOS, 5, 6, 7, 8, EOS], [BOS, 9, 10, EOS, PAD, PAD]])
    real = ids != PAD
    with torch.no_grad():
        want = ref(embedded(model, ids), src_key_padding_mask=~real)
        hidden, _ = model._encoder_pass(ids, padding_mask(ids, PAD), False)
        logits = model(ids)
        captured, maps = model(ids, return_attention=True)
        want_logits = model.generator(model.mlm_transform(want))
    assert torch.allclose(hidden[real], want[real], atol=1e-5)
    assert torch.allclose(logits[real], want_logits[real], atol=1e-5)
    assert torch.allclose(captured[real], want_logits[real], atol=1e-5)
    assert len(maps.encoder) == 2 and maps.decoder_self == [] and maps.cross == []
    assert (maps.encoder[0][1, :, :, 4:] == 0).all()  # padding gets no attention


def test_encoder_only_looks_both_ways():
    model = make("encoder_only")
    ids = torch.tensor([[BOS, 5, 6, 7, 8, EOS]])
    changed = ids.clone()
    changed[0, 4] = 9
    with torch.no_grad():
        a, b = model(ids), model(changed)
        _, maps = model(ids, return_attention=True)
    assert (a[0, :4] - b[0, :4]).abs().amax(-1).min() > 1e-4  # every earlier position moved
    later = torch.ones(6, 6, dtype=torch.bool).triu(1)
    assert (maps.encoder[0][0][:, later] > 0).all()  # and attends to later positions


def test_fill_mask_returns_the_top_k_of_the_softmax_without_specials():
    model = make("encoder_only")
    with torch.no_grad():
        model.generator.bias[list(SPECIALS)] += 4.0  # the specials would lead if they were not left out
    ids = [BOS, 5, MASK, 7, MASK, EOS]
    fills = fill_mask(model, ids, MASK, top_k=3)
    with torch.no_grad():
        probs = model(torch.tensor([ids]))[0].softmax(-1)
    assert [f.position for f in fills] == [2, 4]
    for f in fills:
        row = probs[f.position].tolist()
        assert max(range(V), key=row.__getitem__) in SPECIALS
        ranked = sorted((t for t in range(V) if t not in SPECIALS), key=lambda t: -row[t])[:3]
        assert f.tokens == ranked
        assert f.probs == pytest.approx([row[t] for t in ranked], abs=1e-6)


# -- 6. Mixture of Experts --------------------------------------------------------------------------------------------
def test_one_expert_is_the_dense_feed_forward():
    torch.manual_seed(1)
    moe = MoEFeedForward(16, 32, 0.0, "gelu", n_experts=1, top_k=1).eval()
    dense = FeedForward(16, 32, 0.0, "gelu").eval()
    dense.load_state_dict(moe.experts[0].state_dict())
    x = torch.randn(3, 5, 16)
    with torch.no_grad():
        out, routing = moe(x)
    assert torch.allclose(out, dense(x), atol=1e-6)
    assert (routing.weights == 1).all() and (routing.chosen == 0).all()


def test_equal_router_logits_and_all_experts_give_their_mean():
    torch.manual_seed(2)
    moe = MoEFeedForward(16, 32, 0.0, "relu", n_experts=4, top_k=4).eval()
    with torch.no_grad():
        moe.router.weight.zero_()
        moe.router.bias.zero_()
        x = torch.randn(2, 6, 16)
        out, routing = moe(x)
        mean = torch.stack([expert(x) for expert in moe.experts]).mean(0)
    assert torch.allclose(out, mean, atol=1e-6)
    assert torch.allclose(routing.weights, torch.full((2, 6, 4), 0.25))


def test_balance_loss_by_hand():
    probs = torch.tensor([[0.7, 0.3], [0.6, 0.4], [0.2, 0.8], [0.9, 0.1]])
    # top-1: experts 0, 0, 1, 0 → f = (3/4, 1/4); P = (2.4/4, 1.6/4) = (0.6, 0.4); 2·(0.45 + 0.1) = 1.1
    aux, f = balance_loss(probs, torch.tensor([[0], [0], [1], [0]]), None, 2)
    assert f.tolist() == pytest.approx([0.75, 0.25]) and aux.item() == pytest.approx(1.1)
    # the third token is padding: f = (1, 0); P = (2.2/3, 0.8/3); 2·(2.2/3) = 4.4/3
    real = torch.tensor([True, True, False, True])
    aux, f = balance_loss(probs, torch.tensor([[0], [0], [1], [0]]), real, 2)
    assert f.tolist() == pytest.approx([1.0, 0.0]) and aux.item() == pytest.approx(4.4 / 3)
    # top-2 of 2: each expert gets half the assignments; 2·(0.5·0.6 + 0.5·0.4) = 1
    aux, f = balance_loss(probs, torch.tensor([[0, 1], [0, 1], [1, 0], [0, 1]]), None, 2)
    assert f.tolist() == pytest.approx([0.5, 0.5]) and aux.item() == pytest.approx(1.0)


@pytest.mark.parametrize("top_k", [1, 2])
def test_routing_returned_is_the_routing_used(top_k):
    torch.manual_seed(3)
    moe = MoEFeedForward(16, 32, 0.0, "gelu", n_experts=4, top_k=top_k).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        out, r = moe(x)
        assert torch.allclose(r.probs, moe.router(x).softmax(-1), atol=1e-6)
        top_p, top_e = r.probs.topk(top_k, dim=-1)
        assert torch.equal(r.chosen, top_e)
        if top_k == 1:  # Switch: the expert's own probability p_i(x), not p_i / p_i = 1
            assert torch.equal(r.weights, top_p) and (r.weights < 0.9).all()
        else:  # GShard, Mixtral: the k chosen probabilities renormalised
            assert torch.allclose(r.weights, top_p / top_p.sum(-1, keepdim=True), atol=1e-6)
            assert torch.allclose(r.weights.sum(-1), torch.ones(2, 5), atol=1e-6)
        for b, t in itertools.product(range(2), range(5)):
            mix = sum(w * moe.experts[e](x[b, t]) for w, e in zip(r.weights[b, t], r.chosen[b, t].tolist()))
            assert torch.allclose(out[b, t], mix, atol=1e-5)


@pytest.mark.parametrize("arch", ["decoder_only", "encoder_only"])
def test_model_reports_routing_of_every_layer(arch):
    model = make(arch, n_experts=4, experts_top_k=2)
    ids = torch.tensor([[BOS, 5, 6, 7, EOS], [BOS, 8, 9, PAD, PAD]])
    with torch.no_grad():
        _, maps, extras = model(ids, return_attention=True, return_extras=True)
    mine, other = (
        (maps.decoder_routing, maps.encoder_routing)
        if arch == "decoder_only"
        else (maps.encoder_routing, maps.decoder_routing)
    )
    assert len(mine) == 2 and other == []
    for r in mine:
        assert r.probs.shape == (2, 5, 4) and r.chosen.shape == r.weights.shape == (2, 5, 2)
        assert torch.equal(r.chosen, r.probs.topk(2, dim=-1).indices)
        assert r.load.shape == (4,) and r.load.sum().item() == pytest.approx(1.0)
    # the model's balance loss is the layers' mean, so 1 at balance whatever the depth
    assert extras.aux_loss.item() == pytest.approx(sum(r.aux_loss.item() for r in mine) / len(mine), abs=1e-6)
    assert [f.tolist() for f in extras.load] == [r.load.tolist() for r in mine]


def test_padding_is_left_out_of_load_and_aux_loss():
    torch.manual_seed(4)
    moe = MoEFeedForward(16, 32, 0.0, "relu", n_experts=4, top_k=1).eval()
    x = torch.randn(2, 5, 16)
    real = torch.tensor([[True] * 5, [True, True, False, False, False]])
    junk = x.clone()
    junk[~real] = 5 * torch.randn(3, 16)
    with torch.no_grad():
        _, r = moe(x, real)
        _, r_junk = moe(junk, real)
        _, r_counted = moe(junk)  # no mask: the padding counts
    aux, f = balance_loss(r.probs[real], r.chosen[real], None, 4)
    assert torch.allclose(r.aux_loss, aux) and torch.equal(r.load, f)
    assert torch.allclose(r_junk.aux_loss, r.aux_loss) and torch.equal(r_junk.load, r.load)
    assert not torch.allclose(r_counted.aux_loss, r.aux_loss)
    # in a model: a right-padded row has the statistics of the row alone
    for arch in ("decoder_only", "encoder_only"):
        model = make(arch, n_experts=4, experts_top_k=2)
        with torch.no_grad():
            _, alone = model(torch.tensor([[BOS, 5, 6, 7]]), return_extras=True)
            _, padded = model(torch.tensor([[BOS, 5, 6, 7, PAD, PAD, PAD]]), return_extras=True)
        assert padded.aux_loss.item() == pytest.approx(alone.aux_loss.item(), abs=1e-6)
        for a, b in zip(alone.load, padded.load):
            assert torch.allclose(a, b)


# -- 7. T5 relative bias ----------------------------------------------------------------------------------------------
def t5_bucket_by_hand(offset: int, bidirectional: bool, n_buckets: int, max_distance: int) -> int:
    """T5's bucket of ``offset = key − query`` in plain Python: exact small distances, then log-spaced, capped."""
    side = 0
    if bidirectional:
        n_buckets //= 2
        side = n_buckets if offset > 0 else 0
        distance = abs(offset)
    else:
        distance = max(-offset, 0)
    exact = n_buckets // 2
    if distance < exact:
        return side + distance
    log_spaced = exact + int(math.log(distance / exact) / math.log(max_distance / exact) * (n_buckets - exact))
    return side + min(log_spaced, n_buckets - 1)


@pytest.mark.parametrize("n_buckets, max_distance", [(32, 128), (8, 20), (16, 64)])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_buckets_equal_the_formula(bidirectional, n_buckets, max_distance):
    offsets = torch.arange(-300, 301)
    got = t5_buckets(offsets, bidirectional, n_buckets, max_distance).tolist()
    want = [t5_bucket_by_hand(o, bidirectional, n_buckets, max_distance) for o in offsets.tolist()]
    assert got == want


def test_t5_bucket_scheme_boundaries():
    bucket = lambda offsets, bi: t5_buckets(torch.tensor(offsets), bi, 32, 128).tolist()  # noqa: E731
    # bidirectional: keys before (or at) the query in 0..15, exact up to 7; keys after in 16..31
    assert bucket([0, -1, -2, -7], True) == [0, 1, 2, 7]
    assert bucket([1, 2, 7], True) == [17, 18, 23]
    assert bucket([-8, 8], True) == [8, 24]
    # the last log bucket of a half starts at 8·16^(7/8) ≈ 90.5 and holds every distance ≥ 128 too
    assert bucket([-90, -91, -128, -300, 90, 91, 128, 300], True) == [14, 15, 15, 15, 30, 31, 31, 31]
    # unidirectional: future keys in bucket 0, distances 0..15 exact, ≥ 128 in the last bucket
    assert bucket([1, 5, 300], False) == [0, 0, 0]
    assert bucket(list(range(0, -16, -1)), False) == list(range(16))
    assert bucket([-112, -113, -128, -1000], False) == [30, 31, 31, 31]  # 16·8^(15/16) ≈ 112.4
    # log-spaced: the far buckets hold more and more distances
    far = bucket(list(range(-16, -128, -1)), False)
    sizes = [far.count(b) for b in range(16, 32)]  # distances 16..127 per bucket: 3, 2, 3, 3, 4, … 14, 15
    quarters = [sum(sizes[i : i + 4]) for i in range(0, 16, 4)]
    assert min(sizes) >= 1 and quarters == sorted(quarters) and quarters[-1] > 3 * quarters[0]


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_bias_depends_only_on_the_offset_bucket(bidirectional):
    torch.manual_seed(5)
    table = T5RelativeBias(4, 8, 20, bidirectional)
    with torch.no_grad():
        table.weight.normal_()
        L = 40
        bias = table(L, L)[0]  # [H, L, L]
        offsets = (torch.arange(L)[None, :] - torch.arange(L)[:, None]).tolist()
        buckets = torch.tensor([[t5_bucket_by_hand(o, bidirectional, 8, 20) for o in row] for row in offsets])
        for b in buckets.unique().tolist():
            values = bias[:, buckets == b]  # [H, pairs in bucket b]
            assert torch.equal(values, table.weight[b][:, None].expand_as(values))
        assert len({tuple(bias[:, i, j].tolist()) for i in range(L) for j in range(L)}) == len(buckets.unique())
        s = 7  # queries and keys shifted together: the same bias
        assert torch.equal(bias[:, s:, s:], bias[:, :-s, :-s])
        for t in (0, 1, 9, 39):  # queries from position `offset` on (as in cached decoding): rows of the full matrix
            assert torch.equal(table(1, t + 1, offset=t)[0, :, 0], bias[:, t, : t + 1])
        assert torch.equal(table(3, L, offset=10)[0], bias[:, 10:13])


@pytest.mark.parametrize("arch", ["decoder_only", "encoder_only"])
def test_t5_model_adds_the_bucket_bias_to_the_attention_scores(arch):
    model = make(arch, positional="t5_relative")
    decoder = arch == "decoder_only"
    layers, table = (
        (model.decoder_layers, model.decoder_bias) if decoder else (model.encoder_layers, model.encoder_bias)
    )
    d, L = model.cfg.d_model, 9
    with torch.no_grad():
        table.weight.normal_()
        for layer in layers:  # q = k = 0: the scores are the bias alone
            layer.self_attn.in_proj.weight[: 2 * d] = 0
            layer.self_attn.in_proj.bias[: 2 * d] = 0
        _, maps = model(torch.tensor([[BOS, 5, 6, 7, 8, 9, 10, 11, EOS]]), return_attention=True)
    offsets = torch.arange(L)[None, :] - torch.arange(L)[:, None]
    scores = table.weight[t5_buckets(offsets, not decoder, 32, 128)].permute(2, 0, 1)  # [H, L, L]
    if decoder:
        scores = scores.masked_fill(offsets > 0, -INF)
    for w in maps.decoder_self if decoder else maps.encoder:
        assert torch.allclose(w[0], scores.softmax(-1), atol=1e-6)
