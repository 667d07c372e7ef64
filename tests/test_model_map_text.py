"""The words of the model map (explorer/panels/model_map_text.py), without a window: each family's stacks and
sublayers, each part's name and the numbers in its box, where it is, and its equation with this model's numbers and
parameter counts (here counted by hand from the paper's formulas)."""

from types import SimpleNamespace

import pytest

from explorer.panels.model_map_text import (
    MOE_NAME,
    ModelPart,
    box_detail,
    equation_html,
    has_mlm_head,
    has_segments,
    input_formula,
    layer_steps,
    model_stacks,
    params_line,
    part_name,
    per_layer,
    sqrt_text,
    stack_sublayers,
    where,
)
from model.core.config import ModelConfig

D, DFF, HEADS = 64, 256, 4  # the tiny preset's widths
ATTENTION = 4 * D * D + 4 * D  # W^Q, W^K, W^V, W^O and their biases
FFN = 2 * D * DFF + DFF + D  # W_1, b_1, W_2, b_2


def cfg(arch: str = "encoder_decoder", **overrides) -> ModelConfig:
    vocab = {"vocab_size": 37} if arch != "encoder_decoder" else {"src_vocab_size": 37, "tgt_vocab_size": 41}
    return ModelConfig.preset("tiny", arch=arch, **{**vocab, **overrides})


def info(m: ModelConfig, **parameters) -> SimpleNamespace:
    """A run as the equations read it: its configuration, vocabularies and parameter counts per group."""
    return SimpleNamespace(model_config=m, vocab_sizes=(m.src_vocab_size, m.tgt_vocab_size), parameters=parameters)


@pytest.fixture(autouse=True)
def _english(english):
    """Every text here is compared in English."""


def test_each_family_has_its_stacks_and_sublayers():
    paper, gpt, bert = cfg(n_decoder_layers=3), cfg("decoder_only", n_decoder_layers=4), cfg("encoder_only")
    assert model_stacks(paper) == {"encoder": 2, "decoder": 3} and model_stacks(gpt) == {"decoder": 4}
    assert model_stacks(bert) == {"encoder": 2}
    assert stack_sublayers(paper, "decoder") == ("decoder_self_attention", "cross_attention", "feed_forward")
    assert stack_sublayers(gpt, "decoder") == ("decoder_self_attention", "feed_forward")  # no encoder to read
    assert stack_sublayers(bert, "encoder") == ("encoder_self_attention", "feed_forward")
    assert [has_mlm_head(m) for m in (paper, gpt, bert)] == [False, False, True]
    assert [has_segments(m) for m in (paper, gpt, bert)] == [False, False, True]


def test_the_names_follow_the_stack_the_family_and_the_switches():
    paper = cfg()
    assert part_name(ModelPart("embedding", "encoder"), paper) == "Input embedding"
    assert part_name(ModelPart("embedding", "decoder"), paper) == "Output embedding"
    assert part_name(ModelPart("embedding", "decoder"), cfg("decoder_only")) == "Token embedding"
    assert part_name(ModelPart("layer", "decoder", 2), paper) == "Decoder layer 3"
    assert part_name(ModelPart("feed_forward", "encoder", 0), cfg(n_experts=4)) == MOE_NAME
    assert part_name(ModelPart("add_norm", "encoder", 0), paper) == "Add & Norm: residual connection, then LayerNorm"
    assert "no residual connection" in part_name(ModelPart("add_norm", "encoder", 0), cfg(residual=False))


def test_the_boxes_hold_this_models_numbers():
    m, vocab = cfg(tie_embeddings=True), (1234, 41)
    assert box_detail(ModelPart("cross_attention", "decoder", 0), m, vocab) == f"h = {HEADS} · d_k = {D // HEADS}"
    assert box_detail(ModelPart("feed_forward", "encoder", 0), m, vocab) == f"d_ff = {DFF} · ReLU"
    assert box_detail(ModelPart("embedding", "encoder"), m, vocab) == f"V = 1,234 · d = {D}"
    assert box_detail(ModelPart("embedding", "decoder"), m, vocab) == f"V = 41 · d = {D} · tied"
    assert box_detail(ModelPart("output_linear"), m, vocab) == f"{D} → 41 · tied"
    assert box_detail(ModelPart("softmax"), m, vocab) == "over 41 pieces"
    assert box_detail(ModelPart("positional", "encoder"), cfg(positional="rope"), vocab) == "RoPE, in self-attention"
    moe = cfg(n_experts=4, experts_top_k=2)
    assert box_detail(ModelPart("feed_forward", "decoder", 1), moe, vocab) == "4 experts · top-2 · router"
    assert box_detail(ModelPart("layer", "encoder", 0), m, vocab) == ""


def test_where_a_part_is():
    paper = cfg(n_encoder_layers=3)
    assert where(ModelPart("feed_forward", "encoder", 1), paper) == "Encoder, layer 2 of 3"
    assert where(ModelPart("embedding", "decoder"), paper) == "Decoder"
    assert where(ModelPart("softmax"), paper) == "on top of the decoder"
    assert where(ModelPart("softmax"), cfg("encoder_only")) == "on top of the encoder"


def test_the_small_pieces_of_text():
    assert params_line(None) == "<p>No parameters: nothing here is learned.</p>"
    assert params_line(1234) == "<p><b>Parameters: 1,234</b></p>"
    assert params_line(1000, 3000, 3) == "<p><b>Parameters: 1,000</b> (all 3 layers: 3,000)</p>"
    assert params_line(1000, 1000, 1) == "<p><b>Parameters: 1,000</b></p>"
    assert (sqrt_text(64), sqrt_text(96)) == ("8", "9.80")
    assert per_layer(info(cfg(), encoder_norms=512), "encoder_norms", 2, 2) == (128, 512)
    assert per_layer(info(cfg()), "encoder_norms", 2) == (None, None)


def test_the_first_layers_input_is_computed_as_this_model_does():
    root = " · √d<sub>model</sub>"
    assert input_formula(cfg()) == f"x = Embedding(token){root} + PE<sub>pos</sub>"
    assert input_formula(cfg(positional="rope")) == f"x = Embedding(token){root}"  # positions inside attention
    bert = cfg("encoder_only", positional="learned", embed_norm=True, scale_embedding=False)
    assert input_formula(bert) == "x = LayerNorm(Embedding(token) + P<sub>pos</sub> + S<sub>segment</sub>)"


def test_a_layer_is_its_sublayers_steps_post_ln_or_pre_ln():
    assert layer_steps(cfg(), "encoder") == ["x ← LayerNorm(x + MultiHead(x, x, x))", "x ← LayerNorm(x + FFN(x))"]
    assert layer_steps(cfg(norm="pre"), "decoder") == [
        "x ← x + MaskedMultiHead(LayerNorm(x), LayerNorm(x), LayerNorm(x))",
        "x ← x + MultiHead(LayerNorm(x), m, m)",
        "x ← x + FFN(LayerNorm(x))",
    ]


def test_the_attention_and_the_feed_forward_equations_count_their_parameters():
    m = cfg()
    run = info(m, encoder_self_attention=2 * ATTENTION, encoder_feed_forward=2 * FFN)
    text = equation_html(ModelPart("encoder_self_attention", "encoder", 1), run)
    assert "<h3>Multi-head self-attention</h3><p><i>Encoder, layer 2 of 2</i></p>" in text
    assert f"d<sub>model</sub> / h = {D} / {HEADS} = <b>{D // HEADS}</b>" in text and "√d<sub>k</sub> = 4;" in text
    assert f"Parameters: {ATTENTION:,}</b> (all 2 layers: {2 * ATTENTION:,})" in text
    assert f"= 4·{D}<sup>2</sup> + 4·{D}" in text
    text = equation_html(ModelPart("feed_forward", "encoder", 0), run)
    assert "FFN(x) = max(0, xW<sub>1</sub> + b<sub>1</sub>) W<sub>2</sub> + b<sub>2</sub>" in text
    assert f"d<sub>ff</sub> = <b>{DFF}</b> = 4 · d<sub>model</sub>" in text
    assert f"Parameters: {FFN:,}</b>" in text and f"= 2·{D}·{DFF} + {DFF} + {D}" in text
    moe = cfg(n_experts=4, experts_top_k=2)
    experts = 4 * FFN + D * 4 + 4  # the experts and the router
    text = equation_html(ModelPart("feed_forward", "decoder", 0), info(moe, decoder_feed_forward=2 * experts))
    assert f"Parameters: {experts:,}</b>" in text and f"= 4·(2·{D}·{DFF} + {DFF} + {D}) + {D}·4 + 4" in text
    assert "renormalised" in text


def test_the_norms_embeddings_and_softmax_equations():
    m = cfg(shared_vocab=True, tgt_vocab_size=37)
    norms = 2 * 2 * 2 * D  # 2 layers × 2 sublayers × (γ, β)
    run = info(m, encoder_norms=norms, source_embedding=37 * D)
    text = equation_html(ModelPart("add_norm", "encoder", 0, "feed_forward"), run)
    assert "LayerNorm(x + FFN(x))" in text and f"Parameters: {2 * D:,}</b> (all 2 layers: {4 * D:,})" in text
    text = equation_html(ModelPart("embedding", "decoder"), run)  # one shared table, counted with the input's
    assert "Counted once, with the input embedding." in text and f"Parameters: {37 * D:,}" in text
    assert f"√d<sub>model</sub> = √{D} = 8" in text
    text = equation_html(ModelPart("softmax"), run)
    assert "V = <b>37</b>" in text and "No parameters" in text
