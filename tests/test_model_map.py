"""The model map draws the configured model (every layer, the norms where the configuration puts them),
says which part was clicked, and shows that part's equation with this model's numbers."""

import dataclasses

import pytest
import torch

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPointF, Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from explorer.i18n import language  # noqa: E402
from explorer.panels.model_map import ModelMapPanel, ModelPart, PartItem  # noqa: E402
from explorer.panels.model_map_text import part_name  # noqa: E402
from model.core.config import ModelConfig  # noqa: E402
from model.core.transformer import Transformer  # noqa: E402


@pytest.fixture(scope="module")
def engine_info(copy_session_factory):
    """A RunInfo as the engine describes a run."""
    from explorer.worker import Engine

    return Engine("cpu")._run_info(copy_session_factory())


@pytest.fixture
def info_for(engine_info):
    """The engine's RunInfo, for another model configuration (its parameter counts as the model reports them)."""

    def make(preset="tiny", **overrides):
        cfg = ModelConfig.preset(preset, src_vocab_size=37, tgt_vocab_size=41, **overrides)
        with torch.device("meta"):
            model = Transformer(cfg)
        counts = model.parameter_breakdown()
        return dataclasses.replace(
            engine_info,
            model_config=cfg,
            vocab_sizes=(37, 41),
            parameters=counts,
            total_parameters=model.num_parameters(),
        )

    return make


@pytest.fixture
def panel(qtbot):
    panel = ModelMapPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 700)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def layers_drawn(panel, stack):
    return sorted({p.layer for p in panel.parts() if p.stack == stack and p.kind == "layer"})


def click(qtbot, panel, part):
    """Click the part's centre (an open layer: its corner, the middle is its sublayers)."""
    view = panel.view
    rect = panel.parts()[part]
    centre = view.mapFromScene(rect.topLeft() + QPointF(5, 5) if part.kind == "layer" else rect.center())
    with qtbot.waitSignal(panel.part_selected, timeout=2000) as caught:
        QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre)
    return caught.args[0]


def test_every_layer_of_each_stack_is_drawn_and_each_opens_on_a_click(qtbot, panel, info_for):
    info = info_for(n_encoder_layers=2, n_decoder_layers=5)
    panel.on_run(info)
    assert layers_drawn(panel, "encoder") == [0, 1]
    assert layers_drawn(panel, "decoder") == [0, 1, 2, 3, 4]
    for layer in range(5):
        part = ModelPart("layer", "decoder", layer)
        assert click(qtbot, panel, part) == part
        opened = {p.layer for p in panel.parts() if p.kind == "cross_attention"}
        assert opened == {layer} and layers_drawn(panel, "decoder") == [0, 1, 2, 3, 4]


def sublayer_y(parts, kind, stack, wraps=None):
    return parts[ModelPart(kind, stack, 0, wraps)].center().y()  # scene y grows downwards; data flows up


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_the_norms_sit_where_the_configuration_puts_them(panel, info_for, norm):
    panel.on_run(info_for(norm=norm))
    parts = panel.parts()
    kinds = {p.kind for p in parts}
    sublayers = {
        "encoder": ["encoder_self_attention", "feed_forward"],
        "decoder": ["decoder_self_attention", "cross_attention", "feed_forward"],
    }
    for stack, kinds_in_order in sublayers.items():
        ys = [sublayer_y(parts, k, stack) for k in kinds_in_order]
        assert ys == sorted(ys, reverse=True)  # bottom to top in the paper's order
        for kind, y in zip(kinds_in_order, ys):
            if norm == "post":  # LayerNorm(x + Sublayer(x)): the norm above its sublayer
                assert sublayer_y(parts, "add_norm", stack, kind) < y
            else:  # x + Sublayer(LayerNorm(x)): the norm below, the residual add above
                assert sublayer_y(parts, "layer_norm", stack, kind) > y > sublayer_y(parts, "residual_add", stack, kind)
        final = ModelPart("final_norm", stack)
        if norm == "pre":  # above every layer of its stack
            assert all(
                parts[final].bottom() <= r.top() + 1e-6
                for p, r in parts.items()
                if p.stack == stack and p.kind == "layer"
            )
        else:
            assert final not in parts
    assert ("add_norm" in kinds) == (norm == "post") and ("layer_norm" in kinds) == (norm == "pre")
    assert parts[ModelPart("output_linear")].bottom() < parts[ModelPart("decoder_self_attention", "decoder", 0)].top()
    assert parts[ModelPart("softmax")].bottom() < parts[ModelPart("output_linear")].top()


@pytest.mark.parametrize(
    "part",
    [
        ModelPart("encoder_self_attention", "encoder", 0),
        ModelPart("decoder_self_attention", "decoder", 0),
        ModelPart("cross_attention", "decoder", 0),
        ModelPart("feed_forward", "encoder", 0),
        ModelPart("add_norm", "decoder", 0, "cross_attention"),
        ModelPart("embedding", "decoder"),
        ModelPart("positional", "encoder"),
        ModelPart("output_linear"),
        ModelPart("softmax"),
    ],
)
def test_a_click_on_a_part_sends_that_part(qtbot, panel, info_for, part):
    panel.on_run(info_for(n_encoder_layers=3, n_decoder_layers=2))
    assert click(qtbot, panel, part) == part
    assert panel.chosen == part and panel.items[part].chosen


def test_a_part_of_another_layer_can_be_selected_and_then_clicked(qtbot, panel, info_for):
    panel.on_run(info_for(n_encoder_layers=3, n_decoder_layers=4))
    part = ModelPart("cross_attention", "decoder", 3)
    with qtbot.assertNotEmitted(panel.part_chosen):
        assert panel.select(part)
        assert not panel.select(ModelPart("cross_attention", "decoder", 4))  # no such layer: nothing changes
        assert not panel.select(ModelPart("add_norm", "encoder", 0, "cross_attention"))
    assert panel.chosen == part and panel.items[part].chosen
    assert click(qtbot, panel, part) == part


def equation(panel) -> str:
    return panel.equation.toPlainText()


def test_the_equation_has_this_models_numbers(panel, info_for):
    info = info_for("small", d_model=96, n_heads=6, d_ff=320, n_encoder_layers=2)
    m = info.model_config
    d_k = m.d_model // m.n_heads
    panel.on_run(info)
    panel.select(ModelPart("encoder_self_attention", "encoder", 1))
    text = equation(panel)
    assert "softmax(QK" in text and f"{m.d_model} / {m.n_heads} = {d_k}" in text
    per_layer = info.parameters["encoder_self_attention"] // m.n_encoder_layers
    assert per_layer == 4 * m.d_model**2 + 4 * m.d_model and f"{per_layer:,}" in text
    panel.select(ModelPart("decoder_self_attention", "decoder", 0))
    assert "+ M" in equation(panel) and "−∞" in equation(panel)  # the causal mask
    panel.select(ModelPart("feed_forward", "decoder", 0))
    assert f"dff = {m.d_ff}" in equation(panel) and "max(0," in equation(panel)
    panel.select(ModelPart("softmax"))
    assert f"V = {info.vocab_sizes[1]:,}" in equation(panel)
    panel.select(ModelPart("add_norm", "encoder", 0, "feed_forward"))
    assert "LayerNorm(x + FFN(x))" in equation(panel)
    panel.on_run(info_for("small", activation="gelu", norm="pre", positional="rope"))
    panel.select(ModelPart("feed_forward", "encoder", 0))
    assert "GELU(" in equation(panel)
    panel.select(ModelPart("layer_norm", "encoder", 0, "feed_forward"))
    assert "x + FFN(LayerNorm(x))" in equation(panel)
    panel.select(ModelPart("positional", "decoder"))
    assert "RoPE" in equation(panel) and "θ" in equation(panel)


def test_the_box_names_the_positional_kind_and_notes_tied_weights(panel, info_for):
    for kind, words in (("sinusoidal", "sinusoidal"), ("learned", "learned"), ("rope", "RoPE")):
        panel.on_run(info_for(positional=kind, tie_embeddings=True))
        assert words in panel.items[ModelPart("positional", "encoder")].detail
        assert "tied" in panel.items[ModelPart("output_linear")].detail
        assert "tied" in panel.items[ModelPart("embedding", "decoder")].detail
        assert "tied" not in panel.items[ModelPart("embedding", "encoder")].detail


def test_pointing_at_a_part_shows_its_equation_until_the_pointer_leaves(qtbot, panel, info_for):
    panel.on_run(info_for())
    panel.select(ModelPart("softmax"))
    rect = panel.parts()[ModelPart("feed_forward", "encoder", 0)]
    QTest.mouseMove(panel.view.viewport(), panel.view.mapFromScene(rect.center()))
    qtbot.waitUntil(lambda: "FFN(x)" in equation(panel), timeout=2000)
    QTest.mouseMove(panel.view.viewport(), panel.view.mapFromScene(QPointF(rect.left() - 200, rect.top())))
    qtbot.waitUntil(lambda: "Softmax" in equation(panel), timeout=2000)


def test_a_new_run_redraws_without_stale_parts(panel, info_for):
    panel.on_run(info_for(n_encoder_layers=2, n_decoder_layers=4))
    panel.select(ModelPart("cross_attention", "decoder", 3))
    panel.on_run(info_for(n_encoder_layers=3, n_decoder_layers=2, norm="pre"))
    parts = panel.parts()
    assert layers_drawn(panel, "decoder") == [0, 1] and layers_drawn(panel, "encoder") == [0, 1, 2]
    assert not any(p.kind == "add_norm" for p in parts)
    items = [i for i in panel.scene.items() if isinstance(i, PartItem)]
    assert sorted(map(repr, (i.part for i in items))) == sorted(map(repr, parts))
    assert panel.chosen is None and "Point at a part" in equation(panel)


def test_newer_weights_of_the_same_model_keep_the_drawing(panel, info_for):
    """A followed run's next checkpoint: the same model at another step is not drawn again (the part chosen stays)."""
    info = info_for(n_encoder_layers=2, n_decoder_layers=3)
    panel.on_run(info)
    panel.select(ModelPart("cross_attention", "decoder", 2))
    items = dict(panel.items)
    panel.on_run(dataclasses.replace(info, weights_step=500, parameters=dict(info.parameters)))
    assert panel.items == items and panel.info.weights_step == 500
    assert panel.chosen == ModelPart("cross_attention", "decoder", 2)
    panel.on_run(info_for(n_encoder_layers=2, n_decoder_layers=3, d_ff=64))  # another model: drawn anew
    assert panel.items != items


def test_the_map_speaks_chinese(panel, info_for):
    panel.on_run(info_for())
    try:
        language.set("zh")
        panel.retranslate()
        assert panel.items[ModelPart("feed_forward", "encoder", 0)].label == "前馈网络"
        panel.select(ModelPart("cross_attention", "decoder", 1))
        assert "编码器的输出" in equation(panel)
    finally:
        language.set("en")


@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only", "encoder_only"])
def test_each_familys_map_is_drawn_from_its_spec(panel, engine_info, english, arch):
    """The stacks, their sublayers, the MLM head and the words under and on top of the stacks come from the
    family's spec (model.families.registry), as do each attention's sources and the softmax's probability."""
    from explorer.panels.model_map import LabelItem
    from explorer.panels.model_map_text import equation_html, model_stacks, stack_sublayers
    from model.families.registry import FAMILIES

    spec = FAMILIES[arch]
    vocab = {"vocab_size": 37} if spec.single_stream else {"src_vocab_size": 37, "tgt_vocab_size": 37}
    cfg = ModelConfig.preset("tiny", arch=arch, **vocab)
    with torch.device("meta"):
        counts = Transformer(cfg).parameter_breakdown()
    info = dataclasses.replace(engine_info, model_config=cfg, vocab_sizes=(37, 37), parameters=counts)
    panel.on_run(info)
    assert tuple(model_stacks(cfg)) == spec.stacks
    for stack in spec.stacks:
        assert ("cross_attention" in stack_sublayers(cfg, stack)) == (stack == "decoder" and "cross" in spec.attention)
    texts = {item.text for item in panel.scene.items() if isinstance(item, LabelItem)}
    assert {spec.labels[f"input:{stack}"] for stack in spec.stacks} | {spec.labels["output"]} <= texts
    parts = panel.parts()
    assert (ModelPart("mlm_head") in parts) == ("masked_lm_head" in spec.parameter_groups)
    for part in parts:
        if part.kind.endswith("attention"):
            kind = {"encoder_self_attention": "encoder", "decoder_self_attention": "decoder_self"}.get(
                part.kind, "cross"
            )
            assert spec.labels[f"sources:{kind}"] in equation_html(part, info)
    softmax = equation_html(ModelPart("softmax"), info)
    assert spec.output_probability in softmax and spec.labels["output_use"] in softmax


def test_a_model_with_parts_switched_off_is_drawn_and_said_as_it_is(panel, info_for):
    """The experiments' switches: no residual path is drawn where there is none, no √d_k or mask in the formula
    of a model without them, and a model without positions says so."""
    from PySide6.QtWidgets import QGraphicsPolygonItem

    def arrow_heads() -> int:
        return sum(isinstance(item, QGraphicsPolygonItem) for item in panel.scene.items())

    panel.on_run(info_for())
    with_paths = arrow_heads()
    panel.on_run(info_for(residual=False, scaled_attention=False, causal=False, positional="none"))
    assert 0 < arrow_heads() < with_paths  # the residual lanes are gone, the other arrows stay
    assert "no residual connection" in part_name(
        ModelPart("add_norm", "encoder", 0, "feed_forward"), panel.info.model_config
    )
    panel.select(ModelPart("decoder_self_attention", "decoder", 0))
    text = equation(panel)
    assert "Attention(Q, K, V) = softmax(QKT) V" in text.splitlines()  # neither / √dk nor + M
    assert "no causal mask" in text and "does not divide the scores" in text
    assert "not told where tokens are" in panel.items[ModelPart("positional", "encoder")].detail


def test_behind_another_tab_a_new_model_is_drawn_when_the_map_is_looked_at(panel, info_for):
    """A new model's drawing (15–20 ms) waits while the map is a tab behind another; bringing it to the front, or
    asking for its parts, draws the newest model (never one of an older model in between)."""
    panel.on_run(info_for(n_encoder_layers=2, n_decoder_layers=2))
    panel.select(ModelPart("cross_attention", "decoder", 1))
    panel.set_on_screen(False)
    before = dict(panel.items)
    panel.on_run(info_for(n_encoder_layers=3, n_decoder_layers=1))
    panel.on_run(info_for(n_encoder_layers=4, n_decoder_layers=1))
    assert panel.items == before  # nothing drawn meanwhile
    panel.set_on_screen(True)
    assert layers_drawn(panel, "encoder") == [0, 1, 2, 3] and layers_drawn(panel, "decoder") == [0]
    assert panel.chosen is None and "Point at a part" in equation(panel)  # layer 1 of the decoder is gone
    panel.set_on_screen(False)
    panel.on_run(info_for(n_encoder_layers=1, n_decoder_layers=5))
    assert layers_drawn(panel, "decoder") == [0, 1, 2, 3, 4]  # asked for: drawn at once
    assert panel.select(ModelPart("cross_attention", "decoder", 4))
