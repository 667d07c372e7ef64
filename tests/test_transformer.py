import dataclasses

import pytest
import torch
from torch import nn

from model.core.config import ModelConfig
from model.core.transformer import Transformer

PAD = 0


def make_model(**changes) -> Transformer:
    cfg = ModelConfig.preset("tiny", src_vocab_size=23, tgt_vocab_size=19, dropout=0.0)
    return Transformer(dataclasses.replace(cfg, **changes)).eval()


def padded_batch():
    src = torch.tensor([[5, 6, 7, 8, 9, 10, 2], [4, 11, 12, 2, PAD, PAD, PAD], [13, 2, PAD, PAD, PAD, PAD, PAD]])
    tgt = torch.tensor([[1, 5, 6, 7, 8], [1, 9, 10, PAD, PAD], [1, 3, 4, 12, PAD]])
    return src, tgt


def reference_for(model: Transformer) -> nn.Transformer:
    """torch.nn.Transformer with our weights. Post-LN: no final stack norms (as in the
    paper; nn.TransformerEncoder/Decoder take norm=None); Pre-LN: final norms, torch's default."""
    cfg = model.cfg
    pre = cfg.norm == "pre"
    kw = dict(
        d_model=cfg.d_model,
        nhead=cfg.n_heads,
        dim_feedforward=cfg.d_ff,
        dropout=0.0,
        activation=cfg.activation,
        batch_first=True,
        norm_first=pre,
        layer_norm_eps=cfg.layer_norm_eps,
    )
    enc = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(**kw),
        cfg.n_encoder_layers,
        norm=nn.LayerNorm(cfg.d_model) if pre else None,
        enable_nested_tensor=False,
    )
    dec = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(**kw), cfg.n_decoder_layers, norm=nn.LayerNorm(cfg.d_model) if pre else None
    )
    ref = nn.Transformer(
        d_model=cfg.d_model, nhead=cfg.n_heads, custom_encoder=enc, custom_decoder=dec, batch_first=True, dropout=0.0
    ).eval()

    def copy_attn(dst: nn.MultiheadAttention, src_attn):
        dst.in_proj_weight.copy_(src_attn.in_proj.weight)
        dst.in_proj_bias.copy_(src_attn.in_proj.bias)
        dst.out_proj.weight.copy_(src_attn.out_proj.weight)
        dst.out_proj.bias.copy_(src_attn.out_proj.bias)

    def copy_common(dst, layer):
        dst.linear1.load_state_dict(layer.ffn.linear1.state_dict())
        dst.linear2.load_state_dict(layer.ffn.linear2.state_dict())
        dst.norm1.load_state_dict(layer.norm1.state_dict())
        dst.norm2.load_state_dict(layer.norm2.state_dict())
        copy_attn(dst.self_attn, layer.self_attn)

    with torch.no_grad():
        for dst, layer in zip(ref.encoder.layers, model.encoder_layers):
            copy_common(dst, layer)
        for dst, layer in zip(ref.decoder.layers, model.decoder_layers):
            copy_common(dst, layer)
            dst.norm3.load_state_dict(layer.norm3.state_dict())
            copy_attn(dst.multihead_attn, layer.cross_attn)
        if pre:
            ref.encoder.norm.load_state_dict(model.encoder_norm.state_dict())
            ref.decoder.norm.load_state_dict(model.decoder_norm.state_dict())
    return ref


def reference_logits(model, ref, src, tgt):
    """Our embeddings and output projection around torch's encoder–decoder stacks."""
    embed = lambda tokens, emb, pos: pos(emb(tokens) * model.embed_scale)  # noqa: E731
    out = ref(
        embed(src, model.src_embed, model.src_pos),
        embed(tgt, model.tgt_embed, model.tgt_pos),
        tgt_mask=torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool).triu(1),  # True = not allowed
        src_key_padding_mask=src == PAD,
        tgt_key_padding_mask=tgt == PAD,
        memory_key_padding_mask=src == PAD,
        tgt_is_causal=True,
    )
    return model.generator(out)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_matches_torch_nn_transformer_on_padded_batches(norm, activation):
    torch.manual_seed(3)
    model = make_model(norm=norm, activation=activation, n_encoder_layers=2, n_decoder_layers=3)
    # perturb the LayerNorm affine parameters so a swapped norm would be caught
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    ref = reference_for(model)
    src, tgt = padded_batch()
    with torch.no_grad():
        ours = model(src, tgt)
        theirs = reference_logits(model, ref, src, tgt)
        ours_captured, _ = model(src, tgt, return_attention=True)
    real = tgt != PAD
    assert torch.allclose(ours[real], theirs[real], atol=1e-5)
    assert torch.allclose(ours_captured[real], theirs[real], atol=1e-5)


def test_attention_maps_shapes_and_rows():
    model = make_model()
    src, tgt = padded_batch()
    with torch.no_grad():
        _, maps = model(src, tgt, return_attention=True)
    H = model.cfg.n_heads
    assert len(maps.encoder) == model.cfg.n_encoder_layers and len(maps.cross) == model.cfg.n_decoder_layers
    assert maps.encoder[0].shape == (3, H, 7, 7)
    assert maps.decoder_self[0].shape == (3, H, 5, 5)
    assert maps.cross[0].shape == (3, H, 5, 7)
    for w in (*maps.encoder, *maps.cross):
        assert torch.allclose(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-5)
    # pads receive no attention; decoder self-attention is lower-triangular
    assert (maps.cross[0][1, :, :, 4:] == 0).all()
    assert (maps.decoder_self[0][0].triu(1) == 0).all()


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope"])
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_future_target_tokens_do_not_change_earlier_logits(positional, norm):
    model = make_model(positional=positional, norm=norm)
    src = torch.tensor([[5, 6, 7, 2]])
    tgt = torch.tensor([[1, 4, 5, 6, 7, 8]])
    changed = tgt.clone()
    changed[0, 4:] = torch.tensor([11, 12])
    with torch.no_grad():
        a, b = model(src, tgt), model(src, changed)
    assert torch.allclose(a[0, :4], b[0, :4], atol=1e-6)
    assert not torch.allclose(a[0, 4:], b[0, 4:], atol=1e-3)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope"])
def test_padding_does_not_change_real_positions(positional):
    model = make_model(positional=positional)
    src = torch.tensor([[5, 6, 7, 2]])
    tgt = torch.tensor([[1, 4, 5]])
    src_padded = torch.tensor([[5, 6, 7, 2, PAD, PAD, PAD]])
    tgt_padded = torch.tensor([[1, 4, 5, PAD, PAD]])
    with torch.no_grad():
        base = model(src, tgt)
        padded = model(src_padded, tgt_padded)
        # junk sitting at pad positions is still padding: put embeddings of other
        # ids there by making the model's pad row huge — outputs must not move
        model.src_embed.weight.data[PAD] += 100.0
        model.tgt_embed.weight.data[PAD] -= 100.0
        junk = model(src_padded, tgt_padded)
    assert torch.allclose(base[0], padded[0, :3], atol=1e-5)
    assert torch.allclose(base[0], junk[0, :3], atol=1e-5)
    # a batch-mate of a different length does not leak in either
    other = torch.tensor([[9, 10, 11, 12, 13, 14, 2]])
    with torch.no_grad():
        batch = model(torch.cat([src_padded, other]), torch.cat([tgt_padded, torch.tensor([[1, 7, 8, 9, 10]])]))
    assert torch.allclose(base[0], batch[0, :3], atol=1e-5)


def test_too_long_input_is_refused_with_advice():
    model = make_model(max_len=8)
    with pytest.raises(ValueError, match="longer than the model's max_len"):
        model(torch.ones(1, 9, dtype=torch.long), torch.ones(1, 3, dtype=torch.long))


def paper_parameter_count(d: int, d_ff: int, n: int, vocab: int) -> int:
    """Parameters of the paper's model (§3) with one shared vocabulary and tied embeddings, by formula.

    An attention block has W^Q, W^K, W^V, W^O (d × d, with biases); a feed-forward network d × d_ff and
    d_ff × d (with biases); a LayerNorm a gain and a bias; an encoder layer 1 attention, 1 FFN, 2 norms,
    a decoder layer 2 attentions, 1 FFN, 3 norms (Post-LN: no final norms). One vocab × d matrix serves
    both embeddings and the pre-softmax projection (§3.4), which keeps its own bias.
    """
    attention = 4 * (d * d + d)
    ffn = d * d_ff + d_ff + d_ff * d + d
    norm = 2 * d
    return vocab * d + n * (attention + ffn + 2 * norm) + n * (2 * attention + ffn + 3 * norm) + vocab


@pytest.mark.parametrize(
    "name, d, d_ff, table_3_millions", [("paper_base", 512, 2048, 65), ("paper_big", 1024, 4096, 213)]
)
def test_parameter_counts_match_table_3(name, d, d_ff, table_3_millions):
    # the preset ties embeddings by itself; a shared vocabulary, as in the paper, makes it one matrix
    cfg = ModelConfig.preset(name, src_vocab_size=37000, tgt_vocab_size=37000, shared_vocab=True)
    with torch.device("meta"):  # sizes only; no memory
        model = Transformer(cfg)
    n = model.num_parameters()
    assert n == paper_parameter_count(d, d_ff, 6, 37000)
    assert abs(n / 1e6 - table_3_millions) / table_3_millions < 0.05, n
    breakdown = model.parameter_breakdown()
    assert sum(breakdown.values()) == n
    assert "target_embedding" not in breakdown and "output_projection" in breakdown  # tied, counted once
    assert breakdown["source_embedding"] == 37000 * cfg.d_model


def test_tying_and_sharing_share_storage():
    cfg = ModelConfig.preset("tiny", src_vocab_size=30, tgt_vocab_size=30, shared_vocab=True, tie_embeddings=True)
    model = Transformer(cfg)
    assert model.src_embed.weight is model.tgt_embed.weight is model.generator.weight
    untied = Transformer(dataclasses.replace(cfg, shared_vocab=False, tie_embeddings=False))
    assert model.num_parameters() == untied.num_parameters() - 2 * 30 * cfg.d_model


def test_layer_norm_is_the_standard_one():
    model = make_model()
    norm = model.encoder_layers[0].norm1
    x = torch.randn(4, model.cfg.d_model)
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)  # biased variance
    expected = (x - mean) / torch.sqrt(var + model.cfg.layer_norm_eps) * norm.weight + norm.bias
    assert torch.allclose(norm(x), expected, atol=1e-5)


def test_xavier_initialisation():
    model = make_model()
    w = model.encoder_layers[0].ffn.linear1.weight
    bound = (6 / sum(w.shape)) ** 0.5
    assert w.abs().max() <= bound
    assert w.abs().max() > 0.9 * bound  # uniform over the full Xavier range
    assert (model.encoder_layers[0].ffn.linear1.bias == 0).all()


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope"])
def test_embeddings_scaled_by_sqrt_d_model_before_positions(positional):
    from model.core.positional import sinusoidal_table

    model = make_model(positional=positional)
    src = torch.tensor([[5, 6, 7, 2]])
    d = model.cfg.d_model
    expected = model.src_embed.weight[src[0]] * d**0.5
    if positional == "sinusoidal":
        expected = expected + sinusoidal_table(model.cfg.max_len, d)[:4]
    elif positional == "learned":
        expected = expected + model.src_pos.weight[:4]
    got = model._embed(src, model.src_embed, model.src_pos)[0]
    assert torch.allclose(got, expected, atol=1e-5)


# -- the experiments' switches: no positions, no residual connections, unscaled attention, no causal mask --------
def one_stream_model(arch: str, seed: int = 0, **changes) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig.preset("tiny", arch=arch, vocab_size=19, dropout=0.0, **changes)
    return Transformer(cfg).eval()


@pytest.mark.parametrize("causal", [True, False])
def test_without_the_causal_mask_a_gpt_reads_later_tokens(causal):
    """Teacher-forced, position 0's logits follow token 3 only when the causal mask is off."""
    model = one_stream_model("decoder_only", causal=causal)
    ids = torch.tensor([[1, 5, 6, 7, 8, 9]])
    changed = ids.clone()
    changed[0, 3] = 12
    with torch.no_grad():
        a, maps = model(ids, return_attention=True)
        b = model(changed)
    assert torch.allclose(a[0, :3], b[0, :3], atol=1e-6) == causal
    upper = maps.decoder_self[0][0].triu(1)
    assert (upper == 0).all() == causal  # weights on later keys only without the mask


def test_without_the_causal_mask_the_translators_decoder_reads_later_target_tokens():
    model = make_model(causal=False)
    src, tgt = torch.tensor([[5, 6, 7, 2]]), torch.tensor([[1, 4, 5, 6, 7, 8]])
    changed = tgt.clone()
    changed[0, 4] = 11
    with torch.no_grad():
        assert not torch.allclose(model(src, tgt)[0, 0], model(src, changed)[0, 0], atol=1e-4)


@pytest.mark.parametrize("arch", ["decoder_only", "encoder_decoder"])
def test_without_the_causal_mask_padding_is_still_hidden(arch):
    model = one_stream_model(arch, causal=False) if arch == "decoder_only" else make_model(causal=False)
    src = () if arch == "decoder_only" else (torch.tensor([[5, 6, 7, 2]]),)
    ids, padded = torch.tensor([[1, 4, 5, 6]]), torch.tensor([[1, 4, 5, 6, PAD, PAD]])
    with torch.no_grad():
        base = model(*src, ids)
        with_padding, maps = model(*src, padded, return_attention=True)
        model.tgt_embed.weight.data[PAD] += 100.0  # junk at the padding: still nothing reaches real positions
        junk = model(*src, padded)
    assert torch.allclose(base[0], with_padding[0, :4], atol=1e-5)
    assert torch.allclose(base[0], junk[0, :4], atol=1e-5)
    assert (maps.decoder_self[0][0, :, :, 4:] == 0).all() and (maps.decoder_self[0][0, :, :4, 1:4] > 0).all()


@pytest.mark.parametrize("positional", ["none", "sinusoidal"])
def test_without_positions_the_encoder_reads_its_input_as_a_set(positional):
    """Permuting the tokens permutes the outputs (to 1e-5) exactly when the model has no positions: an
    encoder-only model's logits and the translator's encoder output."""
    perm = torch.tensor([2, 0, 5, 1, 4, 3])
    ids = torch.tensor([[3, 4, 5, 6, 7, 8]])
    bert = one_stream_model("encoder_only", positional=positional)
    translator = make_model(positional=positional)
    with torch.no_grad():
        logits, shuffled = bert(ids), bert(ids[:, perm])
        memory, shuffled_memory = translator.encode(ids), translator.encode(ids[:, perm])
    none = positional == "none"
    assert torch.allclose(shuffled, logits[:, perm], atol=1e-5) == none
    assert torch.allclose(shuffled_memory, memory[:, perm], atol=1e-5) == none
    if none:  # nothing positional was built
        assert translator.src_pos is None and translator.rope is None and translator.encoder_bias is None


@pytest.mark.parametrize(
    "changes",
    [dict(positional="none"), dict(residual=False), dict(scaled_attention=False), dict(causal=False)],
    ids=["no-positions", "no-residual", "unscaled", "not-causal"],
)
def test_a_switched_model_trains_a_step(changes):
    """One optimiser step lowers the loss of its batch, and the gradient reaches both embeddings."""
    torch.manual_seed(3)
    model = make_model(**changes).train()
    src, tgt = padded_batch()
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)

    def loss() -> torch.Tensor:
        logits = model(src, tgt_in)
        return nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)

    before = loss()
    before.backward()
    assert model.src_embed.weight.grad is not None and model.src_embed.weight.grad.abs().sum() > 0
    assert model.tgt_embed.weight.grad is not None and model.tgt_embed.weight.grad.abs().sum() > 0
    optimiser.step()
    assert loss().item() < before.item()


@pytest.mark.parametrize(
    "changes",
    [dict(positional="none"), dict(residual=False), dict(scaled_attention=False), dict(norm="pre", residual=False)],
    ids=["no-positions", "no-residual", "unscaled", "pre-ln-no-residual"],
)
def test_a_switched_models_cached_decoding_equals_recomputing(changes):
    """Greedy decoding with the key/value cache gives the tokens and log-probabilities that recomputing every
    prefix gives (translator), and the same continuation (GPT)."""
    from model.decoding.search import generate, greedy_decode

    torch.manual_seed(3)
    model = make_model(**changes)
    gpt = one_stream_model("decoder_only", seed=4, **changes)
    src, _ = padded_batch()
    with torch.no_grad():
        model.generator.weight.mul_(4.0)  # sharper: the greedy choices are not near ties
        gpt.generator.weight.mul_(4.0)
        cached, lp_cached = greedy_decode(model, src, 8, return_log_probs=True)
        plain, lp_plain = greedy_decode(model, src, 8, use_cache=False, return_log_probs=True)
        assert generate(gpt, [5, 6, 7], 8) == generate(gpt, [5, 6, 7], 8, use_cache=False)
    assert cached == plain
    for i, tokens in enumerate(cached):
        assert torch.allclose(lp_cached[i, : len(tokens)], lp_plain[i, : len(tokens)], atol=1e-4)


def test_without_the_causal_mask_only_the_teacher_forced_pass_changes():
    """Cached generation sees only the past whatever the switch: its logits at every position are those of the
    same weights with the causal mask, which the teacher-forced pass without it does not give."""
    causal = one_stream_model("decoder_only", seed=5)
    free = one_stream_model("decoder_only", seed=6, causal=False)
    free.load_state_dict(causal.state_dict())
    ids = torch.tensor([[1, 5, 6, 7, 8, 9]])
    with torch.no_grad():
        masked, unmasked = causal(ids)[0], free(ids)[0]
        state = free.start_generation(1, ids.shape[1])
        stepped = torch.stack([free.decode_step(ids[:, t], state)[0][0] for t in range(ids.shape[1])])
    assert torch.allclose(stepped, masked, atol=1e-5)
    assert not torch.allclose(unmasked[:-1], masked[:-1], atol=1e-3)
