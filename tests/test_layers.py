"""model/core/layers.py: one encoder layer and one decoder layer against PyTorch's own, and the cached decoding step.

- ``EncoderLayer`` = ``torch.nn.TransformerEncoderLayer`` (batch_first) with the same weights, Post-LN (the paper,
  ``norm_first=False``) and Pre-LN (``norm_first=True``), for every FFN non-linearity the configuration offers,
  with a padding mask and with a causal mask;
- ``DecoderLayer`` = ``torch.nn.TransformerDecoderLayer`` with a causal self-attention mask and a padding mask on
  the memory (and with right-padded targets);
- ``decoder_step``, fed one token at a time with a key/value cache, = the layer's whole-sequence forward at every
  position (decoder layer, and a decoder-only block with and without RoPE), attention weights included.

All in eval mode, to 1e-5. Masks here are True = may attend; torch's boolean masks mean the opposite, so the
torch side is always given the negation (or a key padding mask ``tokens == PAD``).
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from model.core.config import ModelConfig
from model.core.layers import DecoderLayer, DecoderStepWeights, EncoderLayer, StepLinear, decoder_step
from model.core.masks import causal_mask, decoder_self_mask, padding_mask
from model.core.positional import RotaryEmbedding

PAD = 0
D, HEADS, D_FF = 16, 4, 32

# torch's layers take "relu" / "gelu" by name and any other non-linearity as a function
TORCH_ACTIVATION = {
    "relu": "relu",
    "gelu": "gelu",
    "silu": F.silu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


def config(norm: str = "post", activation: str = "relu", **changes) -> ModelConfig:
    return ModelConfig.preset(
        "tiny",
        src_vocab_size=11,
        tgt_vocab_size=11,
        d_model=D,
        n_heads=HEADS,
        d_ff=D_FF,
        dropout=0.0,
        norm=norm,
        activation=activation,
        **changes,
    )


def perturb(layer: nn.Module) -> None:
    """LayerNorm gains/biases away from 1/0 and every bias away from its initial value, so a swapped norm or a
    dropped bias would show."""
    with torch.no_grad():
        for p in layer.parameters():
            if p.dim() == 1:
                p.add_(0.2 * torch.randn_like(p))


def copy_attention(dst: nn.MultiheadAttention, src) -> None:
    dst.in_proj_weight.copy_(src.in_proj.weight)
    dst.in_proj_bias.copy_(src.in_proj.bias)
    dst.out_proj.weight.copy_(src.out_proj.weight)
    dst.out_proj.bias.copy_(src.out_proj.bias)


def torch_kwargs(cfg: ModelConfig) -> dict:
    return dict(
        d_model=cfg.d_model,
        nhead=cfg.n_heads,
        dim_feedforward=cfg.d_ff,
        dropout=0.0,
        activation=TORCH_ACTIVATION[cfg.activation],
        batch_first=True,
        norm_first=cfg.norm == "pre",
        layer_norm_eps=cfg.layer_norm_eps,
    )


def torch_encoder_layer(ours: EncoderLayer, cfg: ModelConfig) -> nn.TransformerEncoderLayer:
    ref = nn.TransformerEncoderLayer(**torch_kwargs(cfg)).eval()
    with torch.no_grad():
        copy_attention(ref.self_attn, ours.self_attn)
        ref.linear1.load_state_dict(ours.ffn.linear1.state_dict())
        ref.linear2.load_state_dict(ours.ffn.linear2.state_dict())
        ref.norm1.load_state_dict(ours.norm1.state_dict())
        ref.norm2.load_state_dict(ours.norm2.state_dict())
    return ref


def torch_decoder_layer(ours: DecoderLayer, cfg: ModelConfig) -> nn.TransformerDecoderLayer:
    ref = nn.TransformerDecoderLayer(**torch_kwargs(cfg)).eval()
    with torch.no_grad():
        copy_attention(ref.self_attn, ours.self_attn)
        copy_attention(ref.multihead_attn, ours.cross_attn)
        ref.linear1.load_state_dict(ours.ffn.linear1.state_dict())
        ref.linear2.load_state_dict(ours.ffn.linear2.state_dict())
        for name in ("norm1", "norm2", "norm3"):
            getattr(ref, name).load_state_dict(getattr(ours, name).state_dict())
    return ref


def encoder_layer(cfg: ModelConfig, rope: RotaryEmbedding | None = None) -> EncoderLayer:
    layer = EncoderLayer(cfg, rope)
    perturb(layer)
    return layer.eval()


def decoder_layer(cfg: ModelConfig) -> DecoderLayer:
    layer = DecoderLayer(cfg, None)
    perturb(layer)
    return layer.eval()


# source-like tokens with right padding: 5, 3 and 6 real positions
SRC = torch.tensor([[5, 6, 7, 8, 9, PAD], [4, 3, 2, PAD, PAD, PAD], [9, 8, 7, 6, 5, 4]])
NORMS = ["post", "pre"]
ACTS = sorted(TORCH_ACTIVATION)


# -- 1. EncoderLayer = nn.TransformerEncoderLayer ----------------------------------------------------------------
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("activation", ACTS)
def test_encoder_layer_with_padding_matches_torch(norm, activation):
    torch.manual_seed(1)
    cfg = config(norm, activation)
    ours = encoder_layer(cfg)
    ref = torch_encoder_layer(ours, cfg)
    x = torch.randn(*SRC.shape, D)
    real = SRC != PAD
    with torch.no_grad():
        got, weights, routing = ours(x, padding_mask(SRC, PAD))
        captured, captured_w, _ = ours(x, padding_mask(SRC, PAD), need_weights=True)
        want = ref(x, src_key_padding_mask=SRC == PAD)
    assert weights is None and routing is None
    assert torch.allclose(got, want, atol=1e-5)  # padding queries too: only keys are masked
    assert torch.allclose(captured, want, atol=1e-5)  # the capture path computes the same
    assert captured_w is not None and captured_w.shape == (3, HEADS, 6, 6)
    assert (captured_w.masked_select(~real[:, None, None, :]) == 0).all()  # padding keys get no weight
    assert torch.allclose(captured_w.sum(-1), torch.ones(3, HEADS, 6), atol=1e-5)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_with_causal_mask_matches_torch(norm, activation):
    """The block of a decoder-only model: an encoder layer under a causal mask."""
    torch.manual_seed(2)
    cfg = config(norm, activation)
    ours = encoder_layer(cfg)
    ref = torch_encoder_layer(ours, cfg)
    x = torch.randn(2, 7, D)
    with torch.no_grad():
        got, _, _ = ours(x, causal_mask(7))
        want = ref(x, src_mask=~causal_mask(7)[0, 0])  # torch: True = may NOT attend
        want_float = ref(x, src_mask=nn.Transformer.generate_square_subsequent_mask(7), is_causal=True)
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(got, want_float, atol=1e-5)


def test_encoder_layer_post_and_pre_ln_differ():
    """The norm placement is read from the configuration (the same weights give different outputs)."""
    torch.manual_seed(3)
    post = encoder_layer(config("post"))
    pre = EncoderLayer(config("pre"), None).eval()
    pre.load_state_dict(post.state_dict())
    x = torch.randn(2, 4, D)
    with torch.no_grad():
        out_post, _, _ = post(x, None)
        out_pre, _, _ = pre(x, None)
    assert not torch.allclose(out_post, out_pre, atol=1e-3)
    # Post-LN ends in LayerNorm (with gain g, bias b): (out − b) / g has mean 0 and variance 1 per position
    g, b = post.norm2.weight, post.norm2.bias
    normed = (out_post - b) / g
    assert torch.allclose(normed.mean(-1), torch.zeros(2, 4), atol=1e-4)
    assert torch.allclose(normed.var(-1, unbiased=False), torch.ones(2, 4), atol=1e-3)


# -- 2. DecoderLayer = nn.TransformerDecoderLayer ----------------------------------------------------------------
TGT = torch.tensor([[1, 5, 6, 7, 8], [1, 9, 10, PAD, PAD], [1, 3, 4, 2, PAD]])


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("activation", ["relu", "gelu", "silu"])
def test_decoder_layer_matches_torch(norm, activation):
    torch.manual_seed(4)
    cfg = config(norm, activation)
    ours = decoder_layer(cfg)
    ref = torch_decoder_layer(ours, cfg)
    x, memory = torch.randn(3, 5, D), torch.randn(*SRC.shape, D)
    with torch.no_grad():
        got, self_w, cross_w, routing = ours(x, memory, causal_mask(5), padding_mask(SRC, PAD))
        captured, self_w, cross_w, _ = ours(x, memory, causal_mask(5), padding_mask(SRC, PAD), need_weights=True)
        want = ref(
            x,
            memory,
            tgt_mask=~causal_mask(5)[0, 0],  # torch: True = may NOT attend
            memory_key_padding_mask=SRC == PAD,
        )
    assert routing is None
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(captured, want, atol=1e-5)
    assert self_w is not None and cross_w is not None
    assert self_w.shape == (3, HEADS, 5, 5) and cross_w.shape == (3, HEADS, 5, 6)
    assert (self_w.triu(1) == 0).all()  # no position looks ahead
    assert (cross_w.masked_select((SRC == PAD)[:, None, None, :]) == 0).all()  # nor at source padding


@pytest.mark.parametrize("norm", NORMS)
def test_decoder_layer_with_padded_targets_matches_torch(norm):
    torch.manual_seed(5)
    cfg = config(norm, "relu")
    ours = decoder_layer(cfg)
    ref = torch_decoder_layer(ours, cfg)
    x, memory = torch.randn(3, 5, D), torch.randn(*SRC.shape, D)
    with torch.no_grad():
        got, _, _, _ = ours(x, memory, decoder_self_mask(TGT, PAD), padding_mask(SRC, PAD))
        want = ref(
            x,
            memory,
            tgt_mask=torch.isneginf(nn.Transformer.generate_square_subsequent_mask(5)),  # True = may NOT attend
            tgt_key_padding_mask=TGT == PAD,
            memory_key_padding_mask=SRC == PAD,
            tgt_is_causal=True,
        )
    assert torch.allclose(got, want, atol=1e-5)  # padding queries too: position 0 is a real key in every row


# -- 3. decoder_step, one token at a time = the whole-sequence forward -------------------------------------------
def new_cache(batch: int, capacity: int) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (batch, HEADS, capacity, D // HEADS)
    return torch.full(shape, float("nan")), torch.full(shape, float("nan"))  # NaN: a slot read before written shows


@pytest.mark.parametrize("norm", NORMS)
def test_decoder_step_equals_decoder_layer_at_every_position(norm):
    torch.manual_seed(6)
    layer = decoder_layer(config(norm, "gelu"))
    x, memory = torch.randn(3, 5, D), torch.randn(*SRC.shape, D)
    memory_mask = padding_mask(SRC, PAD)
    with torch.no_grad():
        full, full_self, full_cross, _ = layer(x, memory, causal_mask(5), memory_mask, need_weights=True)
        w = layer.step_weights()
        memory_k, memory_v = layer.cross_attn.project_memory(memory)
        cache_k, cache_v = new_cache(3, 8)  # capacity beyond the length: the unused tail is never read
        for t in range(5):
            out, self_w, cross_w = decoder_step(
                w, x[:, t : t + 1], cache_k, cache_v, memory_k, memory_v, memory_mask, t, need_weights=True
            )
            fast, no_self_w, no_cross_w = decoder_step(
                w, x[:, t : t + 1], cache_k.clone(), cache_v.clone(), memory_k, memory_v, memory_mask, t
            )
            assert out.shape == (3, 1, D)
            assert torch.allclose(out[:, 0], full[:, t], atol=1e-5), t
            assert torch.allclose(fast, out, atol=1e-5), t
            assert no_self_w is None and no_cross_w is None
            assert self_w is not None and cross_w is not None
            assert torch.allclose(self_w[:, :, 0], full_self[:, :, t, : t + 1], atol=1e-5), t
            assert torch.allclose(cross_w[:, :, 0], full_cross[:, :, t], atol=1e-5), t
        # the cache now holds every position's keys and values, as the layer projects them
        h = layer.norm1(x) if norm == "pre" else x
        _, k, v = layer.self_attn.project_qkv(h)
    assert torch.allclose(cache_k[:, :, :5], k, atol=1e-6)
    assert torch.allclose(cache_v[:, :, :5], v, atol=1e-6)
    assert cache_k[:, :, 5:].isnan().all()  # nothing written past the last position


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("rope", [False, True])
def test_decoder_step_of_a_decoder_only_block(norm, rope):
    """An encoder layer under a causal mask (GPT's block) stepped without memory; with RoPE the step rotates q and k
    by the position it is given."""
    torch.manual_seed(7)
    cfg = config(norm, "relu")
    layer = encoder_layer(cfg, RotaryEmbedding(D // HEADS, cfg.max_len) if rope else None)
    x = torch.randn(2, 6, D)
    with torch.no_grad():
        full, full_w, _ = layer(x, causal_mask(6), need_weights=True)
        w = layer.step_weights()
        cache_k, cache_v = new_cache(2, 6)
        for t in range(6):
            out, self_w, cross_w = decoder_step(w, x[:, t : t + 1], cache_k, cache_v, None, None, None, t, True)
            assert torch.allclose(out[:, 0], full[:, t], atol=1e-5), t
            assert self_w is not None and torch.allclose(self_w[:, :, 0], full_w[:, :, t, : t + 1], atol=1e-5), t
            assert cross_w is None


def test_step_weights_are_the_layers_own_tensors():
    layer = decoder_layer(config())
    w = layer.step_weights()
    assert isinstance(w, DecoderStepWeights)
    assert w.pre_norm is False and w.n_heads == HEADS and w.rope is None
    assert w.qkv[0] is layer.self_attn.in_proj.weight and w.qkv[1] is layer.self_attn.in_proj.bias
    assert w.self_out[0] is layer.self_attn.out_proj.weight
    assert w.cross_out is not None and w.cross_out[0] is layer.cross_attn.out_proj.weight
    # W^Q of the cross-attention: the first d_model rows of its fused projection, a view (same storage)
    assert w.cross_q is not None and w.cross_q[0].shape == (D, D)
    assert w.cross_q[0].data_ptr() == layer.cross_attn.in_proj.weight.data_ptr()
    assert torch.equal(w.cross_q[0], layer.cross_attn.in_proj.weight[:D])
    assert [n[0] if n else None for n in w.norms] == [layer.norm1.weight, layer.norm2.weight, layer.norm3.weight]

    block = encoder_layer(config("pre"))
    bw = block.step_weights()
    assert bw.pre_norm is True and bw.cross_q is None and bw.cross_out is None
    assert bw.norms[1] is None and bw.norms[0] is not None and bw.norms[0][0] is block.norm1.weight
    assert bw.norms[2] is not None and bw.norms[2][2] == block.norm2.eps


def test_decoder_step_sees_a_later_change_to_the_weights():
    """Step weights are gathered once per decode; they must follow the parameters, not a snapshot of them."""
    torch.manual_seed(8)
    layer = encoder_layer(config())
    w = layer.step_weights()
    x = torch.randn(1, 1, D)
    with torch.no_grad():
        before, _, _ = decoder_step(w, x, *new_cache(1, 1), None, None, None, 0)
        layer.ffn.linear2.bias.add_(torch.linspace(-1.0, 1.0, D))  # not a constant: LayerNorm would remove that
        after, _, _ = decoder_step(w, x, *new_cache(1, 1), None, None, None, 0)
        want, _, _ = layer(x, causal_mask(1))
    assert not torch.allclose(before, after, atol=1e-3)
    assert torch.allclose(after, want, atol=1e-5)


def test_single_position_self_attention_passes_its_value_through():
    """At position 0 the only key is the token itself, so self-attention's output is W^O·v + b^O exactly: checked
    by hand for a Post-LN decoder-only block, without a norm or FFN in the way (both set to the identity/zero)."""
    torch.manual_seed(9)
    layer = EncoderLayer(config("post"), None).eval()
    with torch.no_grad():
        layer.ffn.linear2.weight.zero_()
        layer.ffn.linear2.bias.zero_()
    x = torch.randn(1, 1, D)
    sa = layer.self_attn
    v = F.linear(x, sa.in_proj.weight[2 * D :], sa.in_proj.bias[2 * D :])
    h = x + F.linear(v, sa.out_proj.weight, sa.out_proj.bias)
    # LayerNorm by hand: biased variance, eps inside the root; twice (the FFN adds nothing)
    ln = lambda z: (z - z.mean(-1, keepdim=True)) / torch.sqrt(z.var(-1, unbiased=False, keepdim=True) + 1e-5)  # noqa: E731
    want = ln(ln(h))
    with torch.no_grad():
        got, _, _ = decoder_step(layer.step_weights(), x, *new_cache(1, 1), None, None, None, 0)
        whole, _, _ = layer(x, None)
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(whole, want, atol=1e-5)
    assert math.isclose(layer.norm1.eps, 1e-5)


# -- 4. the experiments' switches: no residual connections, unscaled attention -------------------------------------
def ffn_of(ref: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer, x: torch.Tensor) -> torch.Tensor:
    return ref.linear2(F.relu(ref.linear1(x)))


@pytest.mark.parametrize("norm", NORMS)
def test_an_encoder_layer_without_residual_connections_is_its_sublayers_alone(norm):
    """Post-LN: norm2(FFN(norm1(SA(x)))); Pre-LN: FFN(norm2(SA(norm1(x)))) — computed with torch's own modules
    holding the layer's weights."""
    torch.manual_seed(10)
    cfg = config(norm, residual=False)
    ours = encoder_layer(cfg)
    ref = torch_encoder_layer(ours, cfg)
    x = torch.randn(*SRC.shape, D)

    def sa(h):
        return ref.self_attn(h, h, h, key_padding_mask=SRC == PAD, need_weights=False)[0]

    with torch.no_grad():
        got, _, _ = ours(x, padding_mask(SRC, PAD))
        captured, _, _ = ours(x, padding_mask(SRC, PAD), need_weights=True)
        if norm == "post":
            want = ref.norm2(ffn_of(ref, ref.norm1(sa(x))))
        else:
            want = ffn_of(ref, ref.norm2(sa(ref.norm1(x))))
        with_skips = torch_encoder_layer(ours, config(norm))(x, src_key_padding_mask=SRC == PAD)
    assert torch.allclose(got, want, atol=1e-5) and torch.allclose(captured, want, atol=1e-5)
    assert not torch.allclose(got, with_skips, atol=1e-2)  # the switch changes the layer


@pytest.mark.parametrize("norm", NORMS)
def test_a_decoder_layer_without_residual_connections_is_its_sublayers_alone(norm):
    """Post-LN: norm3(FFN(norm2(CA(norm1(SA(x)), m)))); Pre-LN: FFN(norm3(CA(norm2(SA(norm1(x))), m)))."""
    torch.manual_seed(11)
    cfg = config(norm, residual=False)
    ours = decoder_layer(cfg)
    ref = torch_decoder_layer(ours, cfg)
    x, memory = torch.randn(3, 5, D), torch.randn(*SRC.shape, D)

    def sa(h):
        return ref.self_attn(h, h, h, attn_mask=~causal_mask(5)[0, 0], need_weights=False)[0]

    def ca(h):
        return ref.multihead_attn(h, memory, memory, key_padding_mask=SRC == PAD, need_weights=False)[0]

    with torch.no_grad():
        got, _, _, _ = ours(x, memory, causal_mask(5), padding_mask(SRC, PAD))
        if norm == "post":
            want = ref.norm3(ffn_of(ref, ref.norm2(ca(ref.norm1(sa(x))))))
        else:
            want = ffn_of(ref, ref.norm3(ca(ref.norm2(sa(ref.norm1(x))))))
    assert torch.allclose(got, want, atol=1e-5)


def test_unscaled_attention_weights_are_the_softmax_of_qk_from_the_layers_own_projections():
    """scaled_attention=False: weights = softmax(QKᵀ), Q and K worked out from W^Q, W^K by hand; the same layer
    scaled gives softmax(QKᵀ/√d_k), and the fast path gives the capture path's output."""
    torch.manual_seed(12)
    layer = encoder_layer(config(scaled_attention=False))
    scaled = encoder_layer(config())
    scaled.load_state_dict(layer.state_dict())
    x = torch.randn(*SRC.shape, D)
    W, b = layer.self_attn.in_proj.weight, layer.self_attn.in_proj.bias
    Dh = D // HEADS
    q = (x @ W[:D].T + b[:D]).view(3, 6, HEADS, Dh).transpose(1, 2)  # [B, H, L, Dh]
    k = (x @ W[D : 2 * D].T + b[D : 2 * D]).view(3, 6, HEADS, Dh).transpose(1, 2)
    scores = (q @ k.transpose(-1, -2)).masked_fill((SRC == PAD)[:, None, None, :], float("-inf"))
    with torch.no_grad():
        out, w, _ = layer(x, padding_mask(SRC, PAD), need_weights=True)
        fast, _, _ = layer(x, padding_mask(SRC, PAD))
        _, w_scaled, _ = scaled(x, padding_mask(SRC, PAD), need_weights=True)
    assert w is not None and torch.allclose(w, scores.softmax(-1), atol=1e-5)
    assert w_scaled is not None and torch.allclose(w_scaled, (scores / math.sqrt(Dh)).softmax(-1), atol=1e-5)
    assert not torch.allclose(w, w_scaled, atol=1e-2)
    assert torch.allclose(fast, out, atol=1e-5)


SWITCHED = [dict(residual=False), dict(scaled_attention=False), dict(residual=False, scaled_attention=False)]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("switches", SWITCHED, ids=["no-residual", "unscaled", "both"])
def test_decoder_step_follows_the_switches_at_every_position(norm, switches):
    """The cached one-position step of a decoder layer and of a decoder-only block (with RoPE) = their
    whole-sequence forward, without residual connections and without the 1/√d_k."""
    torch.manual_seed(13)
    cfg = config(norm, "gelu", **switches)
    layer = decoder_layer(cfg)
    block = encoder_layer(cfg, RotaryEmbedding(D // HEADS, cfg.max_len))
    w, bw = layer.step_weights(), block.step_weights()
    assert w.residual == bw.residual == cfg.residual and (w.scale == 1.0) == (not cfg.scaled_attention)
    x, memory = torch.randn(3, 5, D), torch.randn(*SRC.shape, D)
    memory_mask = padding_mask(SRC, PAD)
    with torch.no_grad():
        full, full_self, full_cross, _ = layer(x, memory, causal_mask(5), memory_mask, need_weights=True)
        full_block, _, _ = block(x, causal_mask(5))
        memory_k, memory_v = layer.cross_attn.project_memory(memory)
        cache, block_cache = new_cache(3, 5), new_cache(3, 5)
        for t in range(5):
            out, self_w, cross_w = decoder_step(w, x[:, t : t + 1], *cache, memory_k, memory_v, memory_mask, t, True)
            assert torch.allclose(out[:, 0], full[:, t], atol=1e-5), t
            assert self_w is not None and torch.allclose(self_w[:, :, 0], full_self[:, :, t, : t + 1], atol=1e-5)
            assert cross_w is not None and torch.allclose(cross_w[:, :, 0], full_cross[:, :, t], atol=1e-5), t
            out, _, _ = decoder_step(bw, x[:, t : t + 1], *block_cache, None, None, None, t)
            assert torch.allclose(out[:, 0], full_block[:, t], atol=1e-5), t


# -- StepLinear: the cached step's projections on packed weights ------------------------------------------------
WIDE = 512  # 3·512 × 512 and 2048 × 512 are large weights: packed (where this PyTorch has MKL)


def test_step_linear_equals_f_linear_for_large_and_small_weights_and_every_batch():
    """Packed for a beam of 4: 4 rows multiply the packed weights, other counts of rows plain F.linear; all equal
    F.linear to float rounding."""
    step = StepLinear()
    step.pack_for(4)
    torch.manual_seed(0)
    for out, inp in ((3 * WIDE, WIDE), (4 * WIDE, WIDE), (WIDE, 4 * WIDE), (64, 32)):
        w, b = torch.randn(out, inp) * 0.05, torch.randn(out)
        for batch in (1, 2, 4, 5):
            x = torch.randn(batch, 1, inp)
            with torch.inference_mode():
                got = step(x, w, b)
            assert got.shape == (batch, 1, out)
            assert torch.allclose(got, F.linear(x, w, b), atol=1e-5), (out, inp, batch)
        with torch.inference_mode():
            assert torch.allclose(step(x[:4], w), F.linear(x[:4], w), atol=1e-5)  # no bias


def test_step_linear_follows_a_weight_changed_in_place_and_tells_views_apart():
    """A packed copy is made again when training writes the weight; two views of one fused weight (W^Q and W^K of
    one projection) are two weights, not one."""
    step = StepLinear()
    step.pack_for(4)
    fused = nn.Linear(WIDE, 3 * WIDE)
    x = torch.randn(4, WIDE)
    with torch.inference_mode():
        first = step(x, fused.weight, fused.bias)
    with torch.no_grad():
        fused.weight.mul_(-2.0)  # an optimiser's in-place update
    with torch.inference_mode():
        again = step(x, fused.weight, fused.bias)
        wq, wk = fused.weight[:WIDE], fused.weight[WIDE : 2 * WIDE]  # fresh view objects at each decode
        q, k = step(x, wq), step(x, wk)
    assert torch.allclose(again, F.linear(x, fused.weight.detach(), fused.bias.detach()), atol=1e-4)
    assert not torch.allclose(again, first, atol=1e-3)
    assert torch.allclose(q, x @ fused.weight.detach()[:WIDE].T, atol=1e-4)
    assert torch.allclose(k, x @ fused.weight.detach()[WIDE : 2 * WIDE].T, atol=1e-4)


def test_step_linear_is_plain_f_linear_while_a_gradient_is_taken():
    step = StepLinear()
    step.pack_for(2)
    layer = nn.Linear(WIDE, 3 * WIDE)
    x = torch.randn(2, WIDE, requires_grad=True)
    step(x, layer.weight, layer.bias).sum().backward()
    assert x.grad is not None and layer.weight.grad is not None
    assert torch.allclose(x.grad, layer.weight.detach().sum(0).expand(2, -1), atol=1e-4)


def test_a_wide_models_beam_search_and_greedy_decoding_are_those_of_plain_f_linear():
    """A model wide enough for every projection and the output layer to be packed: beam search (packed weights for
    its 4 rows) finds the hypotheses, with their scores to float rounding, that it finds with plain F.linear; cached
    greedy decoding gives the tokens and log-probabilities of recomputing the whole prefix with the layers' own
    forward; a deep copy of the model packs its own weights."""
    import copy

    from model.core.transformer import Transformer
    from model.decoding.search import beam_search, greedy_decode

    torch.manual_seed(0)
    cfg = ModelConfig.preset("tiny", src_vocab_size=600, tgt_vocab_size=600, d_model=WIDE, n_heads=8, d_ff=4 * WIDE)
    model = Transformer(cfg).eval()
    src = torch.randint(4, 600, (1, 9))
    packed = beam_search(model, src[0], 4, 12)
    assert model.float_linear.rows == 4
    model.step_linear = F.linear
    plain = beam_search(model, src[0], 4, 12)
    model.step_linear = model.float_linear
    assert [h.tokens for h in packed] == [h.tokens for h in plain]
    assert [h.score for h in packed] == pytest.approx([h.score for h in plain], abs=1e-4)
    cached, lp_cached = greedy_decode(model, src, 12, return_log_probs=True)
    full, lp_full = greedy_decode(model, src, 12, use_cache=False, return_log_probs=True)
    assert cached == full
    assert torch.allclose(lp_cached, lp_full, atol=1e-4)
    twin = copy.deepcopy(model)
    assert twin.float_linear is not model.float_linear and twin.step_linear is twin.float_linear
    assert greedy_decode(twin, src, 12) == cached


def test_a_single_row_as_a_matrix_product_equals_f_linear():
    from model.core.layers import row_as_product

    torch.manual_seed(1)
    w, b = torch.randn(4 * WIDE, WIDE) * 0.05, torch.randn(4 * WIDE)
    x = torch.randn(1, 1, WIDE)
    assert row_as_product(x, w, b).shape == (1, 1, 4 * WIDE)
    assert torch.allclose(row_as_product(x, w, b), F.linear(x, w, b), atol=1e-5)
    assert torch.allclose(row_as_product(x[0], w), F.linear(x[0], w), atol=1e-5)


def test_a_single_row_is_multiplied_the_way_timed_faster_once_per_shape(monkeypatch):
    """Whichever of F.linear and W·xᵀ is slower here (made slow on purpose), the other is chosen, once per shape."""
    import time

    from model.core import layers

    w, x = torch.randn(2 * WIDE, WIDE), torch.randn(1, WIDE)
    plain, product = layers.F.linear, layers.row_as_product
    calls = {"plain": 0, "product": 0}

    def slow(fn, name):
        def run(*args):
            calls[name] += 1
            time.sleep(0.004)
            return fn(*args)

        return run

    monkeypatch.setattr(layers, "_SINGLE_ROW", {})
    monkeypatch.setattr(layers, "row_as_product", slow(product, "product"))
    layers.single_row(x, w)
    assert layers._SINGLE_ROW[(2 * WIDE, WIDE)] is plain
    before = dict(calls)
    assert torch.allclose(layers.single_row(x, w), F.linear(x, w), atol=1e-5)
    assert calls == before  # chosen once: no more timing

    monkeypatch.setattr(layers, "_SINGLE_ROW", {})
    monkeypatch.setattr(layers, "row_as_product", product)
    monkeypatch.setattr(layers.F, "linear", slow(plain, "plain"))
    layers.single_row(x, w)
    assert layers._SINGLE_ROW[(2 * WIDE, WIDE)] is product
