"""Every text true, in English and Chinese (issue 24): the model map's equations built from the model's configuration,
the Q·K explainer on T5 and RoPE models, BLEU and the balance loss, the README, the Chinese terms and punctuation,
the settings' values and help, and each family's own "What am I looking at?" for the Training panel and the map.

New names are imported inside the tests, so that each test fails on its own claim where the code does not hold it."""

import dataclasses
import html
import math
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("pytestqt")

from explorer.help import HELP, help_text  # noqa: E402
from explorer.i18n import language, tr  # noqa: E402
from explorer.i18n_zh import ZH  # noqa: E402
from explorer.panels.model_map_text import ModelPart, equation_html  # noqa: E402
from model.core.config import ModelConfig  # noqa: E402
from model.core.transformer import Transformer  # noqa: E402
from model.hf.folders import model_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHINESE = r"[\u3400-\u9fff]"


@pytest.fixture
def chinese():
    language.set("zh")
    yield
    language.set("en")


@pytest.fixture(scope="module")
def engine_info(copy_session_factory):
    from explorer.worker import Engine

    return Engine("cpu")._run_info(copy_session_factory())


def info_of(engine_info, cfg: ModelConfig):
    """The engine's RunInfo for the model ``cfg`` (its parameter counts as the model reports them)."""
    with torch.device("meta"):
        model = Transformer(cfg)
    sizes = (cfg.src_vocab_size, cfg.tgt_vocab_size)
    return dataclasses.replace(
        engine_info,
        model_config=cfg,
        vocab_sizes=sizes,
        parameters=model.parameter_breakdown(),
        total_parameters=model.num_parameters(),
    )


def tiny(**overrides) -> ModelConfig:
    return ModelConfig.preset("tiny", src_vocab_size=37, tgt_vocab_size=41, **overrides)


def plain(markup: str) -> str:
    """An equation as it reads: no tags (sub- and superscripts run on), entities resolved, spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", markup)).split())


def equation(info, kind, stack=None, layer=None, wraps=None) -> str:
    return plain(equation_html(ModelPart(kind, stack, layer, wraps), info))


# The configurations the Hugging Face importer builds from config.json (model/hf/folders.py), small.
HF_CONFIGS = {
    "marian": (
        {
            "model_type": "marian",
            "vocab_size": 100,
            "d_model": 64,
            "encoder_attention_heads": 4,
            "decoder_attention_heads": 4,
            "encoder_ffn_dim": 128,
            "decoder_ffn_dim": 128,
            "encoder_layers": 2,
            "decoder_layers": 2,
            "max_position_embeddings": 64,
            "scale_embedding": True,
            "pad_token_id": 99,
            "decoder_start_token_id": 99,
            "eos_token_id": 0,
        },
        {},
    ),
    "gpt2": (
        {
            "model_type": "gpt2",
            "vocab_size": 100,
            "n_embd": 64,
            "n_head": 4,
            "n_layer": 2,
            "n_positions": 64,
            "eos_token_id": 2,
        },
        {},
    ),
    "bert": (
        {
            "model_type": "bert",
            "vocab_size": 100,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_hidden_layers": 2,
            "intermediate_size": 128,
            "max_position_embeddings": 64,
        },
        {"pad": 0, "bos": 1, "eos": 2},
    ),
}


def hf(kind: str) -> ModelConfig:
    config, specials = HF_CONFIGS[kind]
    return model_config(config, f"/models/{kind}", specials or {"pad": 0, "bos": 1, "eos": 2})


# -- the model map ------------------------------------------------------------------------------------------------
def test_the_map_says_rope_positions_enter_only_through_the_offset(engine_info, english):
    info = info_of(engine_info, tiny(positional="rope"))
    text = equation(info, "positional", "encoder")
    assert "only through the offset n − m" in text and "what q and k contain still matters" in text
    assert "depends only on how far apart" not in text
    language.set("zh")
    text = equation(info, "positional", "encoder")
    assert "只通过偏移 n − m" in text and "内容仍然起作用" in text and "只取决于两个位置相隔多远" not in text


@pytest.mark.parametrize("norm, kind", [("post", "add_norm"), ("pre", "layer_norm")])
def test_a_norms_count_over_the_layers_is_that_norms(engine_info, english, norm, kind):
    info = info_of(engine_info, tiny(norm=norm))
    d, n = info.model_config.d_model, info.model_config.n_encoder_layers
    text = equation(info, kind, "encoder", 0, "feed_forward")
    assert f"Parameters: {2 * d:,} (all {n} layers: {2 * d * n:,})" in text  # γ and β of this norm, in each layer
    all_norms = info.parameters["encoder_norms"]
    assert all_norms == 2 * 2 * d * n and f"{all_norms:,})" not in text  # not every norm of the stack


def test_the_router_has_its_bias_in_the_formula_and_the_count(engine_info, english):
    info = info_of(engine_info, tiny(n_experts=4, experts_top_k=2))
    m = info.model_config
    text = equation(info, "feed_forward", "encoder", 0)
    assert "p(x) = softmax(x Wr + br)" in text and f"br ∈ ℝ{m.n_experts}" in text
    router = m.d_model * m.n_experts + m.n_experts
    per_layer = info.parameters["encoder_feed_forward"] // m.n_encoder_layers
    assert per_layer == m.n_experts * (2 * m.d_model * m.d_ff + m.d_ff + m.d_model) + router


def test_the_map_gives_no_reason_for_scaling_the_embeddings(engine_info, english):
    info = info_of(engine_info, tiny())
    text = equation(info, "embedding", "encoder")
    assert "√dmodel = √64 = 8" in text and "§3.4" in text and "does not say why" in text
    assert "so that" not in text and "similar sizes" not in text
    assert not [v for v in ZH.values() if "大小相近" in v]


def test_marians_equations_are_built_from_its_config(engine_info, english):
    cfg = hf("marian")
    assert cfg.activation == "silu" and cfg.sinusoid_layout == "split" and cfg.scale_embedding
    info = info_of(engine_info, cfg)
    ffn = equation(info, "feed_forward", "encoder", 0)
    assert "FFN(x) = SiLU(xW1 + b1) W2 + b2" in ffn and "SiLU(x) = x · σ(x)" in ffn and "GELU" not in ffn
    pe = equation(info, "positional", "encoder")
    assert "PE(pos, i) = sin(pos / 100002i/dmodel)" in pe and "PE(pos, dmodel/2 + i) = cos(" in pe
    assert "PE(pos, 2i)" not in pe and "sines fill the first half" in pe
    assert "x = Embedding(token) · √dmodel + PEpos" in pe


def test_gpt2s_and_berts_embeddings_are_not_scaled_and_berts_are_normalised(engine_info, english):
    gpt2, bert = hf("gpt2"), hf("bert")
    assert not gpt2.scale_embedding and not bert.scale_embedding and bert.embed_norm
    gpt = info_of(engine_info, gpt2)
    for text in (equation(gpt, "embedding", "decoder"), equation(gpt, "positional", "decoder")):
        assert "x = Embedding(token) + Ppos" in text and "· √dmodel" not in text
    assert "tanh" in equation(gpt, "feed_forward", "decoder", 0)  # GPT-2's GELU is the tanh approximation
    b = info_of(engine_info, bert)
    text = equation(b, "embedding", "encoder")
    assert "x = LayerNorm(Embedding(token) + Ppos + Ssegment)" in text and "· √dmodel" not in text
    assert "does not multiply its embeddings by √d_model" in text
    expected = sum(b.parameters[k] for k in ("source_embedding", "segment_embedding", "embedding_norm"))
    assert f"Parameters: {expected:,}" in text  # the norm's γ and β counted with the embeddings
    assert "x = LayerNorm(Embedding(token) + Ppos + Ssegment)" in equation(b, "positional", "encoder")


def test_t5_self_attention_adds_the_bias_and_the_map_says_what_t5_itself_does(engine_info, english):
    info = info_of(engine_info, tiny(positional="t5_relative"))
    assert "softmax(QKT / √dk + B) V" in equation(info, "encoder_self_attention", "encoder", 0)
    assert "+ B" not in equation(info, "cross_attention", "decoder", 0)  # cross-attention gets no bias
    text = equation(info, "positional", "encoder")
    assert "RMS norm" in text and "folded into the initialisation" in text and "scales as the paper does" in text
    assert "the scale set by the distance 128" in text and "up to 128" not in text  # the last bucket starts at 91


# -- the Q·K explainer --------------------------------------------------------------------------------------------
def explainer_session(positional: str):
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.session import Session
    from model.training.trainer import train_config_for

    data = DataSpec(task="copy", n_train=400, n_valid=20, n_test=20, length=6, min_length=2, alphabet=8)
    train = train_config_for("tiny", eval_every=0)
    return Session.create(data, "tiny", train, TokenizerSpec("word"), device="cpu", positional=positional)


def explained(qtbot, explanation):
    from explorer.panels.attention_parts import QkExplainer

    explainer = QkExplainer()
    qtbot.addWidget(explainer)
    explainer.show_explanation(explanation)
    t = explainer.per_key
    headers = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    return explainer, headers


def test_the_explainer_labels_t5s_biased_scores_and_says_how_t5_itself_scales(qtbot, english):
    session = explainer_session("t5_relative")
    with torch.no_grad():  # a bias that is not zero, so the column differs from q·k / √d_k
        session.model.encoder_bias.weight.normal_()
    e = session.explain_attention("1 2 3", [4, 5], "encoder", 0, 1)
    d_k = e.q.shape[1]
    bias = e.scaled - e.scores / math.sqrt(d_k)
    assert abs(bias).max() > 1e-3  # the column holds q·k / √d_k + b
    explainer, headers = explained(qtbot, e)
    assert headers[1] == "q·k / √d_k + b" and "÷ √d_k" not in headers
    assert "softmax(q·kᵀ / √d_k + b)" in explainer.explain_title.text()
    note = explainer.explain_note.text()
    assert not explainer.explain_note.isHidden()
    assert "RMS norm" in note and "folded into the initialisation of W^Q" in note and "scales as the paper does" in note
    cross = session.explain_attention("1 2 3", [4, 5], "cross", 0, 1)  # no bias in cross-attention
    explainer.show_explanation(cross)
    assert explainer.per_key.horizontalHeaderItem(1).text() == "÷ √d_k" and explainer.explain_note.isHidden()
    language.set("zh")
    explainer.show_explanation(e)
    assert (
        "RMS 归一化" in explainer.explain_note.text() and "softmax(q·kᵀ / √d_k + b)" in explainer.explain_title.text()
    )


def test_the_explainer_says_roped_q_and_k_are_shown_after_the_rotation(qtbot, english):
    session = explainer_session("rope")
    explainer, headers = explained(qtbot, session.explain_attention("1 2 3", [4, 5], "encoder", 0, 0))
    assert headers[1] == "÷ √d_k" and not explainer.explain_note.isHidden()
    assert "q and k are shown after the rotation" in explainer.explain_note.text()
    explainer.show_explanation(session.explain_attention("1 2 3", [4, 5], "cross", 0, 0))  # RoPE: self-attention only
    assert explainer.explain_note.isHidden()


# -- BLEU, the balance loss ----------------------------------------------------------------------------------------
def flat(text: str) -> str:
    text = " ".join(text.split())
    return re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef]) (?=[\u3000-\u9fff\uff00-\uffef])", "", text)


def test_bleu_is_described_as_clipped_n_gram_precisions_a_geometric_mean_and_a_brevity_penalty():
    en, zh = flat(HELP["training"]["en"]), flat(HELP["training"]["zh"])
    for words in ("n = 1 to 4", "clipped", "geometric mean", "brevity penalty"):
        assert words in en, words
    for words in ("n = 1 到 4", "截断", "几何平均", "简短惩罚"):
        assert words in zh, words
    assert "with a penalty for outputs shorter" not in en


def test_the_balance_loss_is_one_when_balanced_and_grows_when_tokens_and_probability_pile_up(engine_info, english):
    import model.families.moe
    from model.families.moe import balance_loss

    even = torch.tensor([[0.9, 0.1], [0.1, 0.9]])  # each expert one token: f even, so 1 whatever P
    assert float(balance_loss(even, even.argmax(-1, keepdim=True), None, 2)[0]) == pytest.approx(1.0)
    piled = torch.tensor([[0.9, 0.1], [0.8, 0.2]])
    assert float(balance_loss(piled, piled.argmax(-1, keepdim=True), None, 2)[0]) > 1.5
    apart = torch.tensor([[0.51, 0.49]] * 3 + [[0.0, 1.0]])  # f and P disagree: below 1, so 1 is no minimum
    assert float(balance_loss(apart, apart.argmax(-1, keepdim=True), None, 2)[0]) < 0.9
    assert "the minimum" not in model.families.moe.__doc__
    text = equation(info_of(engine_info, tiny(n_experts=4)), "feed_forward", "encoder", 0)
    assert "pile on the same experts" in text and "as a few take most of them" not in text
    for entry in (HELP["router"],):
        assert "pile on the same experts" in flat(entry["en"])
    assert not [v for v in ZH.values() if "少数专家分走大部分词元" in v]


# -- the README and docs/ --------------------------------------------------------------------------------------------
def test_the_engine_page_sentence_on_rope_and_the_paper_presets_is_whole():
    page = " ".join((ROOT / "docs" / "engine.md").read_text(encoding="utf-8").split())  # moved from the README
    assert "depend on positions only through `paper_base`" not in page
    assert "RoPE scores of fixed q and k depend on positions only through the offset n − m; `paper_base`" in page


# -- Chinese terms and punctuation -----------------------------------------------------------------------------------
def zh_texts() -> list[str]:
    return [*ZH.values(), *(entry["zh"] for entry in HELP.values())]


def test_the_temperature_divides_the_scores_in_chinese():
    assert "把得分除以温度 T" in flat(HELP["generation"]["zh"])
    key = next(k for k in ZH if k.startswith("Divides the scores before the softmax"))
    assert "把得分除以温度 T" in ZH[key]
    assert not [t for t in zh_texts() if "去除得分" in t or "去除分数" in t]


def test_the_decoder_only_looks_at_earlier_keys_in_chinese():
    assert ZH["decoder (looks back)"] == "解码器（只看之前的键）"
    assert "只看之前的键" in flat(HELP["family_encoder_decoder"]["zh"])
    assert not [t for t in zh_texts() if "只向前看" in t or "全部向前看" in t]


def test_one_chinese_term_each():
    texts = zh_texts()
    assert ZH["segment embedding"] == "片段嵌入" and not [t for t in texts if "句段" in t]
    assert ZH["Masked-token accuracy (valid)"] == "掩码词元准确率（验证集）"
    assert not [t for t in texts if "遮住" in t]  # masked tokens are 掩码词元
    assert not [t for t in texts if "源语言" in t or "目标语言" in t or "目标前缀" in t]  # source 原文, target 译文
    assert ZH["E{n}"] == "E{n}" and not [t for t in texts if re.search(r"专家\s*(\d|\{)", t)]  # E1, as the router


def test_the_seconds_of_a_followed_run_are_chinese(qtbot, chinese):
    from explorer.answers import FollowStatus
    from explorer.status_row import StatusRow

    row = StatusRow()
    qtbot.addWidget(row)
    notes = []
    for idle in (5.2, 60, 300):
        row.on_follow(FollowStatus("/runs/t2019", step=166, idle_s=idle))
        notes.append(row.note_label.text())
    assert "上次更新于 5 秒前" in notes[0] and "上次更新于 60 秒前" in notes[1] and "5 分钟" in notes[2]
    assert not [n for n in notes if re.search(r"\d (s|min)\b", n)]


def test_the_t5_lab_note_counts_the_exact_offsets_each_side(english):
    from explorer.panels.positional_t5 import t5_note
    from model.families.registry import ENCODER_DECODER

    note = t5_note(ENCODER_DECODER, 32, 128)
    assert "8 exact offsets before the query (0 included), 7 after" in note
    assert "16 exact offsets (0 included)" in note  # the decoder's, looking back
    assert "every distance from 91 on" in note and "every distance from 113 on" in note
    language.set("zh")
    note = t5_note(ENCODER_DECODER, 32, 128)
    assert "查询之前 8 个精确的偏移（含 0），之后 7 个" in note and "只看之前的键" in note


def test_the_family_help_lays_out_t5s_buckets_and_says_how_t5_itself_scales():
    en, zh = flat(HELP["family_encoder_decoder"]["en"]), flat(HELP["family_encoder_decoder"]["zh"])
    assert "8 exact offsets before the query, 0 included, and 7 after" in en and "from 91 on" in en
    assert "RMS norm" in en and "this app scales as the paper does" in en
    assert "查询之前 8 个精确的偏移，含 0，之后 7 个" in zh and "RMS 归一化" in zh and "缩放与论文相同" in zh
    assert "up to 128 positions" not in en


def test_the_sinusoids_legend_names_dimensions_not_the_papers_i(qtbot, english):
    from explorer.panels.positional import PositionalPanel

    lab = PositionalPanel()
    qtbot.addWidget(lab)
    lab.show()
    lab.redraw()
    names = list(lab.curves.series)
    assert names and all(re.fullmatch(r"dim \d+", n) for n in names), names
    language.set("zh")
    lab.redraw()
    assert all(re.fullmatch(r"第 \d+ 维", n) for n in lab.curves.series)


def test_the_settings_show_their_values_in_chinese_with_their_help_as_tooltips(qtbot, chinese):
    from explorer.panels.settings_form import SettingsForm

    form = SettingsForm()
    qtbot.addWidget(form)
    form.retranslate()
    shown = {
        name: [getattr(form, name).itemText(i) for i in range(getattr(form, name).count())]
        for name in ("positional", "norm", "activation", "schedule")
    }
    assert shown["positional"] == ["正弦", "可学习", "RoPE（旋转）", "T5 相对偏置"]
    assert shown["norm"] == ["Post-LN（后置）", "Pre-LN（前置）"] and "GELU（tanh 近似）" in shown["activation"]
    assert shown["schedule"] == ["Noam", "恒定", "余弦"]
    assert form.positional.currentData() in ("sinusoidal", "learned", "rope", "t5_relative")  # the data: the value
    for widget in (form.positional, form.norm, form.activation, form.d_model, form.heads, form.balance_spin):
        tip = widget.toolTip()
        assert re.search(CHINESE, tip) and form.model_form.labelForField(widget).toolTip() == tip
    assert "位置编码" in form.positional.toolTip() and re.search(CHINESE, form.schedule.toolTip())


def test_the_model_panel_translates_values_and_uses_full_width_punctuation(qtbot, engine_info, chinese):
    from explorer.panels.model_info import ModelPanel

    panel = ModelPanel()
    qtbot.addWidget(panel)
    panel.on_run(info_of(engine_info, hf("bert")))
    summary = plain(panel.summary.text())
    assert "可学习" in summary and "learned" not in summary and "GELU" in summary
    assert not re.search(rf"{CHINESE}[;:,] ", summary), summary  # "位置编码：", not "位置编码: "
    rows = [panel.table.item(r, 0).text() for r in range(panel.table.rowCount())]
    assert "嵌入归一化" in rows and "embedding norm" not in rows


def test_the_map_joins_chinese_parts_with_full_width_marks(engine_info, chinese):
    info = info_of(engine_info, tiny(n_experts=4))
    for part in (("add_norm", "encoder", 0, "feed_forward"), ("feed_forward", "encoder", 0), ("embedding", "encoder")):
        text = equation(info, *part)
        assert not re.search(rf"{CHINESE}[;:,] ", text), text
        assert not re.search(rf"{CHINESE}, 第", text)  # "编码器，第 1 层"
    assert "参数量：" in equation(info, "add_norm", "encoder", 0, "feed_forward")


def test_chinese_help_has_no_space_between_two_chinese_characters(chinese):
    wide = "[\u3000-\u303f\u3400-\u9fff\uff00-\uffef“”]"
    for key in ("training", "decoding", "attention", "positional", "model", "map", "data", "generation"):
        text = re.sub(r"<[^>]+>", "", re.sub(r"</p>\s*<p>", "", help_text(key)))  # a line break of the source
        gaps = re.findall(f"{wide} *\n *{wide}", text)  # shows as a space
        assert not gaps, (key, gaps[:3])


# -- each family's own explanation ----------------------------------------------------------------------------------
def help_boxes_after(qtbot, cfg: ModelConfig):
    """The main window's help boxes, after a run of the model ``cfg`` (the window's own _follow_family)."""
    from PySide6.QtWidgets import QDockWidget

    from explorer.help import HelpBox
    from explorer.main_window import MainWindow

    boxes = {key: HelpBox(key) for key in ("decoding", "training", "map")}
    for box in boxes.values():
        qtbot.addWidget(box)
    window = SimpleNamespace(docks={"decoding": QDockWidget()}, help_boxes=boxes)
    qtbot.addWidget(window.docks["decoding"])
    MainWindow._follow_family(window, cfg)
    return {key: plain(box.sheet.text.text()) for key, box in boxes.items()}


def test_a_gpt_gets_its_own_training_and_map_help(qtbot, english):
    shown = help_boxes_after(qtbot, hf("gpt2"))
    training, drawn = shown["training"], shown["map"]
    assert "Perplexity" in training and "plain" in training and "without label smoothing" in training
    assert "label smoothing included" in training  # why the plotted loss differs from perplexity's
    assert "exact match" not in training and "BLEU</b> (0–100)" not in training  # the translator's plots
    assert "decoder-only" in drawn and "the translation looks at the source" not in drawn
    assert "cross-attention" in drawn  # the one the GPT lacks


def test_a_bert_gets_its_own_training_and_map_help(qtbot, english):
    shown = help_boxes_after(qtbot, hf("bert"))
    training, drawn = shown["training"], shown["map"]
    assert "Masked-token accuracy" in training and "Next-sentence accuracy" in training
    assert "RoBERTa" in training and "dropped next-sentence prediction" in training
    assert "masked-LM head" in drawn and "Fill the mask" in drawn and "writes the translation" not in drawn


def test_experts_and_t5_add_their_paragraphs(qtbot, english):
    shown = help_boxes_after(qtbot, tiny(n_experts=4, experts_top_k=2, positional="t5_relative"))
    training, drawn = shown["training"], shown["map"]
    assert "teacher forcing" in training  # the translator's, then the experts'
    assert "capacity" in training and "No token is dropped" in training and "balance loss" in training
    assert "stores" in drawn and "computed" in drawn and "capacity" in drawn
    assert "Switch Transformer" in drawn and "renormalised" in drawn
    assert "RMS norm" in drawn and "8 exact offsets, 0 included" in drawn and "from 91 on" in drawn
    assert "−113" in drawn  # the decoder's last bucket


def test_every_map_help_ends_with_how_the_map_is_used(qtbot, english):
    for cfg in (tiny(), hf("gpt2"), hf("bert")):
        drawn = help_boxes_after(qtbot, cfg)["map"]
        assert "Click it to keep its equation" in drawn and "double-click it" in drawn, cfg.arch
        assert drawn.count("Click a closed layer to open it") == 1 and "click it to open the view" not in drawn


def test_each_familys_help_has_chinese_too(qtbot, chinese):
    for cfg in (hf("gpt2"), hf("bert"), tiny(n_experts=4, positional="t5_relative")):
        shown = help_boxes_after(qtbot, cfg)
        for key in ("training", "map"):
            assert len(re.findall(CHINESE, shown[key])) > 200, (cfg.arch, key)
    shown = help_boxes_after(qtbot, hf("gpt2"))
    assert "困惑度" in shown["training"] and "不带" in shown["training"]
    shown = help_boxes_after(qtbot, hf("bert"))
    assert "掩码词元准确率" in shown["training"] and "RoBERTa" in shown["training"]
    assert tr("What am I looking at?") == "我看到的是什么？"
