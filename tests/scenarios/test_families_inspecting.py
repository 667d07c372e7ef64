"""Looking inside each family: the attention kinds a model has, GPT's causal hatch, BERT's unmasked map, the
router view of a Mixture-of-Experts model against the engine's own routing, T5's buckets in the positional lab,
the explainer and the probe for every family, and the family help in both languages."""

import dataclasses
import re
import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("pytestqt")

from explorer.help import HELP, help_text  # noqa: E402
from explorer.i18n import language  # noqa: E402
from model.data import DataSpec  # noqa: E402
from model.data.tokenization import TokenizerSpec  # noqa: E402
from model.families.t5 import t5_buckets  # noqa: E402
from model.session import Session  # noqa: E402
from model.training.trainer import TrainConfig, train_config_for  # noqa: E402

ARCHES = ("encoder_decoder", "decoder_only", "encoder_only")


def text_session(arch: str, **overrides) -> Session:
    s = Session.create(
        DataSpec(task="text-hsk-zh"),
        "tiny",
        TrainConfig(warmup_steps=50, eval_every=0),
        arch=arch,
        device="cpu",
        **overrides,
    )
    s.train_steps(5)
    return s


@pytest.fixture(scope="module")
def gpt_moe():
    """A decoder-only model with 4 experts, and its inspection of a prompt and its own continuation."""
    s = text_session("decoder_only", n_experts=4)
    return s, s.inspect("我昨天", tgt_text="")


@pytest.fixture(scope="module")
def bert():
    """An encoder-only (dense) model, and its fill-mask inspection."""
    s = text_session("encoder_only")
    return s, s.fill_mask("我昨天在<mask>看书。").inspection


@pytest.fixture(scope="module")
def translator_moe():
    """An encoder–decoder model whose every layer has 3 experts, 2 per token."""
    data = DataSpec(task="copy", n_train=300, n_valid=20, n_test=20, length=6, min_length=3, alphabet=6)
    train = train_config_for("tiny", eval_every=0, batch_size=16)
    s = Session.create(data, "tiny", train, TokenizerSpec("word"), device="cpu", n_experts=3, experts_top_k=2)
    s.train_steps(3)
    return s, s.inspect("1 2 3", "1 2 3")


RUN_IDS = iter(range(1, 1000))


def run_info(session):
    """What the engine announces when ``session`` is opened: each time a new run (its own id)."""
    from explorer.worker import Engine

    engine = Engine("cpu")
    engine._run_id = next(RUN_IDS)
    return engine._run_info(session)


@pytest.fixture
def panel(qtbot, english):
    from explorer.panels.attention import AttentionPanel

    p = AttentionPanel()
    qtbot.addWidget(p)
    p.resize(900, 700)
    p.show()
    return p


def kinds(panel):
    return [panel.kind.itemData(i) for i in range(panel.kind.count())], [
        panel.kind.itemText(i) for i in range(panel.kind.count())
    ]


# -- the router view -----------------------------------------------------------------------------------------------
def test_the_router_view_draws_the_engines_routing(panel, gpt_moe):
    from explorer.panels.router import expert_loads

    session, inspection = gpt_moe
    panel.on_run(run_info(session))
    panel.on_inspection(inspection)
    router = panel.router
    assert panel.tabs.isTabVisible(panel.tabs.indexOf(router))
    panel.show_tab("router")
    assert len(inspection.routing) == router.layer.count() == session.model_cfg.n_decoder_layers
    for i, engine_view in enumerate(inspection.routing):
        router.layer.setCurrentIndex(i)
        shown = router.heatmap
        assert np.array_equal(shown.values, engine_view.probs)  # the engine's numbers, unchanged
        assert shown.rows == engine_view.tokens == inspection.tgt_tokens
        assert len(shown.cols) == session.model_cfg.n_experts == 4
        chosen = {(t, int(e)) for t, row in enumerate(engine_view.chosen) for e in row}
        assert {tuple(c) for c in shown.outlined.tolist()} == chosen
        # k = 1: each token's outlined cell is the most probable expert of its row as drawn
        assert chosen == {(t, int(np.argmax(row))) for t, row in enumerate(shown.values)}
        loads = expert_loads(engine_view)
        assert loads.sum() == len(engine_view.tokens)
        text = router.caption.text()
        assert "k = 1 of N = 4" in text
        assert " · ".join(f"E{e + 1}: {n}" for e, n in enumerate(loads)) in text


def test_the_router_names_the_stacks_of_an_encoder_decoder_and_outlines_k_experts(panel, translator_moe):
    session, inspection = translator_moe
    panel.on_run(run_info(session))
    panel.on_inspection(inspection)
    router = panel.router
    names = [router.layer.itemText(i) for i in range(router.layer.count())]
    assert names == ["Encoder, layer 1", "Encoder, layer 2", "Decoder, layer 1", "Decoder, layer 2"]
    router.layer.setCurrentIndex(names.index("Decoder, layer 2"))
    view = inspection.routing[3]
    assert (view.stack, view.layer) == ("decoder", 1)
    assert router.heatmap.rows == inspection.tgt_tokens and np.array_equal(router.heatmap.values, view.probs)
    outlined = router.heatmap.outlined
    assert len(outlined) == 2 * len(view.tokens)
    for t, row in enumerate(view.chosen):  # the 2 most probable experts of each token, as the engine chose them
        assert {int(e) for e in outlined[outlined[:, 0] == t, 1]} == {int(e) for e in row}
        assert set(np.argsort(view.probs[t])[-2:].tolist()) == {int(e) for e in row}
    assert "k = 2 of N = 3" in router.caption.text()
    # the same layer stays chosen when the next inspection comes
    panel.on_inspection(session.inspect("3 2 1", "3 2 1"))
    assert router.layer.currentText() == "Decoder, layer 2" and router.heatmap.rows[1:] == ["3", "2", "1"]


def test_a_dense_model_has_no_router_tab(panel, bert):
    session, inspection = bert
    panel.on_run(run_info(session))
    panel.on_inspection(inspection)
    assert inspection.routing == ()
    assert not panel.tabs.isTabVisible(panel.tabs.indexOf(panel.router))


# -- the kinds of attention and the causal hatch ----------------------------------------------------------------------
def test_the_kinds_offered_follow_the_family(panel, gpt_moe, bert, translator_moe):
    expected = {
        "encoder_decoder": (
            ["encoder", "decoder_self", "cross"],
            ["Encoder self-attention", "Decoder self-attention (masked)", "Cross-attention (decoder → encoder)"],
        ),
        "decoder_only": (["decoder_self"], ["Self-attention (causal)"]),
        "encoder_only": (["encoder"], ["Self-attention (both ways)"]),
    }
    assert kinds(panel) == expected["encoder_decoder"]  # before any model: the paper's
    for session, inspection in (gpt_moe, bert, translator_moe, gpt_moe):
        arch = session.model_cfg.arch
        panel.on_run(run_info(session))
        assert kinds(panel) == expected[arch], arch
        panel.on_inspection(inspection)
        assert panel.heatmap.values.shape[0] > 0
        if arch != "encoder_decoder":  # its one kind is what is drawn
            maps = inspection.decoder_self if arch == "decoder_only" else inspection.encoder
            assert np.array_equal(panel.shown_matrix(), maps[0, 0])
            assert panel.heatmap.title.text().startswith(expected[arch][1][0])
    # an inspection of another family switches the kinds, even before its run is announced
    panel.on_inspection(bert[1])
    assert kinds(panel) == expected["encoder_only"]
    # a view asking for a kind this family lacks (the model map, the first launch) gets the family's own
    panel.follow_cross_attention(1)
    assert panel.kind.currentData() == "encoder" and panel.heatmap.values.size


def test_the_causal_hatch_covers_exactly_the_masked_cells(panel, gpt_moe, bert):
    from explorer.widgets.heatmap import hatched_cells

    session, inspection = gpt_moe
    panel.on_run(run_info(session))
    panel.on_inspection(inspection)
    T = len(inspection.tgt_tokens)
    later = np.triu(np.ones((T, T), dtype=bool), 1)  # the keys after each query
    assert np.array_equal(~inspection.masks["decoder_self"], later)
    assert np.array_equal(panel.heatmap.hatched(), later)
    # hatched, not just dark: the masked cells are drawn light grey with grey lines over the map
    overlay = panel.heatmap.overlay.image
    side = overlay.shape[0] // T
    hidden = np.kron(later, np.ones((side, side), bool))
    assert (overlay[hidden][:, :3] >= 150).all() and (overlay[~hidden][:, 3] == 0).all()
    assert len(np.unique(overlay[hidden][:, 0])) == 2  # light grey and the lines' grey
    panel.all_heads.setChecked(True)  # the grid hatches the same cells of every map
    grid = panel.grid
    L, H, _, _ = inspection.decoder_self.shape
    step = T + grid._gap
    expected = np.zeros((L * step - grid._gap, H * step - grid._gap), dtype=bool)
    for layer in range(L):
        for head in range(H):
            expected[layer * step : layer * step + T, head * step : head * step + T] = later
    assert grid.overlay.isVisible()
    assert np.array_equal(hatched_cells(grid.overlay.image, expected.shape), expected)
    panel.all_heads.setChecked(False)
    # BERT looks both ways: nothing is masked, nothing hatched
    panel.on_run(run_info(bert[0]))
    panel.on_inspection(bert[1])
    assert not panel.heatmap.hatched().any() and not panel.heatmap.overlay.isVisible()
    assert "No cell is hatched" in panel.caption.text() and "Hatched" not in panel.caption.text()


# -- the explainer and the probe, for every family --------------------------------------------------------------
@pytest.mark.parametrize("which", ["gpt_moe", "bert"])
def test_the_explainer_spells_out_the_heads_of_a_single_stream_model(panel, which, request):
    session, inspection = request.getfixturevalue(which)
    kind = "decoder_self" if session.model_cfg.arch == "decoder_only" else "encoder"
    maps = getattr(inspection, kind)
    for layer in range(maps.shape[0]):
        e = session.explain_attention(inspection.source, list(inspection.target_ids), kind, layer, 1)
        assert e.weights == pytest.approx(maps[layer, 1], abs=1e-5)
        assert e.query_tokens == (inspection.tgt_tokens or inspection.src_tokens)
    panel.on_run(run_info(session))
    panel.on_explanation(e)
    name = "Self-attention (causal)" if kind == "decoder_self" else "Self-attention (both ways)"
    assert name in panel.explainer.explain_title.text()
    with pytest.raises(ValueError, match="no attention of kind"):
        session.explain_attention(inspection.source, None, "cross", 0, 0)


@pytest.mark.parametrize("which", ["gpt_moe", "bert"])
def test_the_probe_records_and_plots_every_family(panel, which, request):
    from explorer.answers import ProbeSnapshot
    from explorer.engine_base import attention_entropy

    session, inspection = request.getfixturevalue(which)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty kind once warned "Mean of empty slice"
        entropy = {k: attention_entropy(getattr(inspection, k)) for k in ("encoder", "decoder_self", "cross")}
    kind = "decoder_self" if session.model_cfg.arch == "decoder_only" else "encoder"
    maps = getattr(inspection, kind)
    p = np.clip(maps, 1e-12, 1)
    assert entropy[kind] == pytest.approx((-(maps * np.log(p)).sum(-1)).mean(-1))
    info = run_info(session)
    panel.on_run(info)
    panel.on_probe(ProbeSnapshot(info.run_id, 5, inspection.source, "", inspection, entropy))
    panel.over_training._absorb()
    assert panel.source.currentData() == "probe" and np.array_equal(panel.shown_matrix(), maps[0, 0])
    panel.show_tab("over_training")
    curve = panel.over_training.entropy
    assert curve.plot.listDataItems(), "no entropy curve drawn"


# -- the positional lab -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["decoder_only", "encoder_only"])
def test_the_positional_lab_shows_t5_buckets(qtbot, english, gpt_moe, bert, arch):
    from explorer.panels.positional import PositionalPanel

    session = gpt_moe[0] if arch == "decoder_only" else bert[0]
    info = run_info(session)
    info = dataclasses.replace(info, model_config=dataclasses.replace(info.model_config, positional="t5_relative"))
    lab = PositionalPanel()
    qtbot.addWidget(lab)
    lab.show()
    lab.on_run(info)
    lab.tabs.setCurrentIndex(4)
    lab.redraw()
    m = info.model_config
    n = lab.t5_matrix.values.shape[0]
    pos = torch.arange(n)
    both = arch == "encoder_only"
    expected = t5_buckets(pos[None, :] - pos[:, None], both, m.t5_buckets, m.t5_max_distance).numpy()
    assert np.array_equal(lab.t5_matrix.values, expected)
    assert lab.t5_matrix.hatched().any() != both  # GPT's later keys are masked, BERT's are not
    series = "encoder (both ways)" if both else "decoder (looks back)"
    assert list(lab.t5_plot.series) == [series]
    offsets, buckets = lab.t5_plot.series[series]
    assert buckets == pytest.approx(t5_buckets(torch.tensor(offsets), both, m.t5_buckets, m.t5_max_distance).numpy())
    assert "T5" in lab.model_note.text() and not lab.t5_plot.isHidden() and lab.learned.isHidden()


@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "rope", "t5_relative"])
@pytest.mark.parametrize("arch", ARCHES)
def test_the_positional_lab_draws_every_kind_of_every_family(qtbot, english, gpt_moe, bert, translator_moe, kind, arch):
    from explorer.panels.positional import PositionalPanel

    session = {"decoder_only": gpt_moe, "encoder_only": bert, "encoder_decoder": translator_moe}[arch][0]
    info = run_info(session)
    info = dataclasses.replace(info, model_config=dataclasses.replace(info.model_config, positional=kind))
    lab = PositionalPanel()
    qtbot.addWidget(lab)
    lab.show()
    lab.on_run(info)
    for i in range(lab.tabs.count()):
        lab.tabs.setCurrentIndex(i)
        lab.redraw()
    assert lab.model_note.text() and "No model" not in lab.model_note.text()
    assert lab.t5_matrix.isHidden() != (kind == "t5_relative")


# -- the help --------------------------------------------------------------------------------------------------------
def flat(text: str) -> str:
    text = " ".join(text.split())
    return re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef]) (?=[\u3000-\u9fff\uff00-\uffef])", "", text)


FACTS = {  # what each family's help must say, in English and in Chinese
    "family_encoder_decoder": [
        ("cross-attention", "交叉注意力"),
        ("relative position bias", "相对位置偏置"),
        ("causal", "因果"),
    ],
    "family_decoder_only": [
        ("predicts the next token", "预测下一个词元"),
        ("self-attention (causal)", "自注意力（带因果掩码）"),
        ("without its cross-attention", "去掉交叉注意力"),
    ],
    "family_encoder_only": [
        ("15%", "15%"),
        ("80%", "80%"),
        ("10% by a random token", "10% 换成随机词元"),
        ("no cheating", "不算作弊"),
        ("&lt;cls&gt;", "&lt;cls&gt;"),
        ("next-sentence prediction", "下一句预测"),
    ],
    "router": [
        ("N · Σ<sub>i</sub> f<sub>i</sub> · P<sub>i</sub>", "N · Σ<sub>i</sub> f<sub>i</sub> · P<sub>i</sub>"),
        ("renormalised", "重新归一化"),
        ("no token is dropped", "不丢弃任何词元"),
        ("softmax", "softmax"),
    ],
}


@pytest.mark.parametrize("key", list(FACTS))
def test_the_family_and_router_help_say_it_in_both_languages(key):
    for en, zh in FACTS[key]:
        assert en in flat(HELP[key]["en"]), en
        assert zh in flat(HELP[key]["zh"]), zh
    for word in ("目标词元", "目标端", "目标嵌入", "遮盖"):
        assert word not in HELP[key]["zh"]


def test_the_family_help_opens_from_the_panel_in_the_interface_language(panel, gpt_moe, bert):
    for (session, _), arch, en, zh in (
        (gpt_moe, "decoder_only", "Decoder-only (GPT)", "仅解码器（GPT）"),
        (bert, "encoder_only", "Encoder-only (BERT)", "仅编码器（BERT）"),
    ):
        panel.on_run(run_info(session))
        help_box = panel.family_help
        assert help_box.key == f"family_{arch}" and help_box.button.text().strip() == en
        help_box.button.click()
        assert help_box.sheet.isVisible() and help_box.sheet.text.text() == HELP[f"family_{arch}"]["en"]
        language.set("zh")
        panel.retranslate()
        assert help_box.button.text().strip() == zh
        assert help_box.sheet.text.text() == help_text(f"family_{arch}") != HELP[f"family_{arch}"]["en"]
        language.set("en")
        panel.retranslate()
        help_box.button.click()
        assert not help_box.sheet.isVisible()
    router_help = panel.router.help
    assert router_help.key == "router" and router_help.sheet.text.text() == HELP["router"]["en"]


@pytest.mark.parametrize("arch", ["decoder_only", "encoder_only"])
def test_the_positional_lab_draws_each_heads_learned_t5_bias(qtbot, english, arch):
    from explorer.panels.positional import PositionalPanel

    session = text_session(arch, positional="t5_relative")
    info = run_info(session)
    t = session.positional_tables()
    stack = session.model.decoder_bias if arch == "decoder_only" else session.model.encoder_bias
    assert np.array_equal(t.t5_decoder if arch == "decoder_only" else t.t5_encoder, stack.weight.detach().numpy())
    lab = PositionalPanel()
    qtbot.addWidget(lab)
    lab.show()
    lab.on_run(info)
    lab.on_tables(t)  # what the engine sends the window: the session's own tables
    m = info.model_config
    assert len(lab.t5_bias.series) == m.n_heads and not lab.t5_bias.isHidden()
    for h, (offsets, bias) in enumerate(lab.t5_bias.series.values()):
        # the bias the model itself adds (T5RelativeBias.forward) for a query at position q, at each offset
        q = max(0, -int(offsets.min()))
        full = stack(1, q + int(offsets.max()) + 1, offset=q)[0, h, 0].detach().numpy()  # keys 0 … for query q
        assert bias == pytest.approx(full[offsets + q], abs=1e-6)
    assert f"step {session.step}" in lab.t5_bias.title.text()


def test_the_positional_lab_draws_marians_split_sinusoids_as_the_model_adds_them(qtbot, english, translator_moe):
    from explorer.panels.positional import PositionalPanel
    from model.core.positional import sinusoidal_table

    info = run_info(translator_moe[0])
    m = dataclasses.replace(info.model_config, positional="sinusoidal", sinusoid_layout="split", scale_embedding=False)
    lab = PositionalPanel()
    qtbot.addWidget(lab)
    lab.show()
    lab.on_run(dataclasses.replace(info, model_config=m))
    lab.redraw()
    shown = lab.learned.values
    paper = sinusoidal_table(shown.shape[0], m.d_model).numpy()  # the other tabs: sin, cos, sin, cos, …
    half = m.d_model // 2
    assert not lab.learned.isHidden() and shown.shape[1] == m.d_model
    assert np.allclose(shown[:, :half], paper[:, 0::2]) and np.allclose(shown[:, half:], paper[:, 1::2])
    note = lab.model_note.text()
    assert "sines in the first half" in note and "not scaled by √d_model" in note
    lab.on_run(info)  # the paper's own layout: no table of its own, the usual words
    lab.redraw()
    assert lab.learned.isHidden() and "after scaling them by √d_model" in lab.model_note.text()
