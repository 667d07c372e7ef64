"""What the program teaches: the Q·K explainer's numbers, the positional lab's normalisation, the paper presets,
and facts and terms in the help texts and the Chinese interface."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from explorer.help import HELP
from explorer.i18n_zh import ZH
from model.core.config import PRESETS, ModelConfig
from model.core.transformer import Transformer
from model.session import explain, notes_example

pytest.importorskip("pytestqt")

ROOT = Path(__file__).resolve().parents[2]


# -- the Q·K explainer ----------------------------------------------------------------------------------------
def test_exp_column_is_exp_of_the_scaled_scores_and_gives_the_weights():
    e = notes_example()
    r = 1 / math.sqrt(2)  # scores 0, 1 or 2 divided by √2, worked by hand
    assert e.exp[0] == pytest.approx([math.exp(r), 1.0, math.exp(r)])
    assert e.exp[2] == pytest.approx([math.exp(r), math.exp(r), math.exp(2 * r)])
    assert e.exp == pytest.approx(np.exp(e.scaled))
    assert e.exp / e.exp.sum(axis=1, keepdims=True) == pytest.approx(e.weights)
    assert e.kind == "example" and "notes" not in e.title


def test_exp_column_with_a_mask_and_with_scores_too_large_for_exp():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(4, 8, generator=gen, dtype=torch.float64) for _ in range(3))
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    e = explain(q, k, v, causal, "t", list("abcd"), list("abcd"), "decoder_self", 0, 1)
    assert (e.exp[~causal.numpy()] == 0).all()
    allowed = causal.numpy()
    assert e.exp[allowed] == pytest.approx(np.exp(e.scaled[allowed]))
    assert e.exp / e.exp.sum(axis=1, keepdims=True) == pytest.approx(e.weights)
    assert (e.shift == 0).all()
    # scores beyond exp's float range: the row is shifted by its largest score, and still gives the weights
    big = explain(q * 300, k * 300, v, None, "t", list("abcd"), list("abcd"), "encoder", 0, 0)
    assert np.isfinite(big.exp).all() and (big.shift > 0).any()
    assert big.exp == pytest.approx(np.exp(big.scaled - big.shift[:, None]))
    assert big.exp / big.exp.sum(axis=1, keepdims=True) == pytest.approx(big.weights)


def per_key_columns(panel):
    """The explainer's per-key table as {header: [cell texts]}."""
    t = panel.explainer.per_key
    headers = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    keys = t.rowCount() - 1  # the last row: the sums and the output
    return {h: [t.item(r, c).text() for r in range(keys)] for c, h in enumerate(headers)}


def test_explainer_shows_an_exp_column_that_checks_the_softmax_by_hand(qtbot, english):
    from explorer.panels.attention import AttentionPanel

    panel = AttentionPanel()
    qtbot.addWidget(panel)
    e = notes_example()
    panel.on_explanation(e)
    for row in range(3):
        panel.explainer.query.setCurrentIndex(row)
        columns = per_key_columns(panel)
        shown_exp = np.array([float(x) for x in columns["exp(·)"]])
        shown_weights = np.array([float(x) for x in columns["softmax"]])
        assert shown_exp == pytest.approx(np.exp(e.scaled[row]), abs=1e-4)
        assert shown_exp / shown_exp.sum() == pytest.approx(shown_weights, abs=1e-4)
    title = panel.explainer.explain_title.text()
    assert "Worked example" in title and "notes" not in title.lower()
    assert "notes" not in panel.explainer.notes_button.text().lower()


def test_worked_example_note_shows_the_correct_row_beside_the_misprint(qtbot, english):
    from explorer.panels.attention import AttentionPanel

    panel = AttentionPanel()
    qtbot.addWidget(panel)
    panel.on_explanation(notes_example())
    note = panel.explainer.explain_note.text()
    assert not panel.explainer.explain_note.isHidden()
    assert "0.85" in note and "cannot be a softmax" in note
    a = math.exp(1 / math.sqrt(2)) / (2 * math.exp(1 / math.sqrt(2)) + 1)  # first row, by hand
    b = 1 / (2 * math.exp(1 / math.sqrt(2)) + 1)
    assert f"[{a:.3f}, {b:.3f}, {a:.3f}]" in note  # [0.401, 0.198, 0.401]
    assert f"[{15 * a:.3f}, {10 * b + 5 * a:.3f}]" in note  # output [6.017, 3.983]
    q = torch.eye(3, 4, dtype=torch.float64)
    panel.on_explanation(explain(q, q, q, None, "x", list("abc"), list("abc"), "cross", 1, 3))
    assert panel.explainer.explain_note.isHidden()
    assert (
        "Cross-attention" in panel.explainer.explain_title.text()
        and "layer 2, head 4" in panel.explainer.explain_title.text()
    )


def test_explainer_titles_are_chinese_in_the_chinese_interface(qtbot):
    from explorer.i18n import language
    from explorer.panels.attention import AttentionPanel

    panel = AttentionPanel()
    qtbot.addWidget(panel)
    language.set("zh")
    try:
        panel.retranslate()
        panel.on_explanation(notes_example())
        assert (
            panel.explainer.explain_title.text().startswith("<b>算例")
            and "查询 1" in panel.explainer.explain_title.text()
        )
        assert "印刷" in panel.explainer.explain_note.text()
        q = torch.eye(3, 4, dtype=torch.float64)
        panel.on_explanation(explain(q, q, q, None, "x", list("abc"), list("abc"), "cross", 1, 3))
        title = re.sub(r"<[^>]+>", "", panel.explainer.explain_title.text())
        assert "第 2 层，第 4 个头" in title
        assert not re.search(r"\b(worked|example|layer|head|query|weights|output)\b", title)
        assert panel.explainer.per_key.horizontalHeaderItem(2).text() == "掩码"
    finally:
        language.set("en")


# -- the positional lab --------------------------------------------------------------------------------------
def test_similarity_tab_plots_what_its_title_says(qtbot, english):
    from explorer.panels.positional import PositionalPanel

    panel = PositionalPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.d_model.setValue(16)
    panel.positions.setValue(30)
    panel.redraw()
    d, pos = 16, np.arange(30)[:, None]
    angles = pos / 10000 ** (np.arange(0, d, 2) / d)  # the paper's formula, written out here
    pe = np.zeros((30, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
    raw = pe @ pe.T
    title = panel.similarity.title.text()
    assert "PE(p)·PE(q) / (d_model/2)" in title and "1 at p = q" in title
    assert panel.similarity.values == pytest.approx(raw / (d / 2), abs=1e-6)
    assert np.diag(panel.similarity.values) == pytest.approx(1.0)


# -- the paper presets ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["paper_base", "paper_big"])
def test_paper_presets_tie_embeddings_as_in_section_3_4(name):
    assert PRESETS[name]["tie_embeddings"] is True
    with torch.device("meta"):
        shared = Transformer(ModelConfig.preset(name, src_vocab_size=100, tgt_vocab_size=100, shared_vocab=True))
        separate = Transformer(ModelConfig.preset(name, src_vocab_size=100, tgt_vocab_size=120))
    assert shared.src_embed.weight is shared.tgt_embed.weight is shared.generator.weight
    assert separate.generator.weight is separate.tgt_embed.weight
    assert separate.src_embed.weight is not separate.tgt_embed.weight


def test_the_command_line_can_untie_a_paper_preset():
    from model.cli.common import given_settings
    from model.cli.train import build_parser

    base = ["--task", "copy", "--steps", "1", "--out", "x", "--preset", "paper_base"]
    for flags, tied in (([], True), (["--no-tie-embeddings"], False), (["--tie-embeddings"], True)):
        overrides = given_settings(build_parser().parse_args(base + flags), ModelConfig)
        cfg = ModelConfig.preset("paper_base", src_vocab_size=50, tgt_vocab_size=60, **overrides)
        assert cfg.tie_embeddings is tied, flags


def test_embedding_share_the_model_help_quotes():
    """The help says the base model with three separate 37,000-token tables spends 56% on embeddings."""
    cfg = ModelConfig.preset("paper_base", src_vocab_size=37000, tgt_vocab_size=37000, tie_embeddings=False)
    with torch.device("meta"):
        parts = Transformer(cfg).parameter_breakdown()
    tables = parts["source_embedding"] + parts["target_embedding"] + parts["output_projection"]
    share = f"{round(100 * tables / sum(parts.values()))}%"
    assert share == "56%"
    assert share in HELP["model"]["en"] and share in HELP["model"]["zh"]


def test_the_engine_page_parameter_counts_are_the_models():
    page = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")  # the README's engine section moved there
    for name in ("paper_base", "paper_big"):
        cfg = ModelConfig.preset(name, src_vocab_size=37000, tgt_vocab_size=37000, shared_vocab=True)
        with torch.device("meta"):
            n = Transformer(cfg).num_parameters()
        assert f"{n / 1e6:.1f}M" in page, (name, n)


# -- help texts and the Chinese table ------------------------------------------------------------------------
def flat(text: str) -> str:
    """Help text as it reads: line breaks of the source are spaces (none between Chinese characters)."""
    text = " ".join(text.split())
    return re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef]) (?=[\u3000-\u9fff\uff00-\uffef])", "", text)


@pytest.mark.parametrize(
    "key, en, zh",
    [
        ("positional", "hypothesised", "推测"),  # a hypothesis of the paper, not a fact
        ("positional", "Table 3, row E", "表 3 第 E 行"),  # learned positions did about as well
        ("positional", "extrapolate", "外推"),  # the paper's reason for sinusoids
        ("positional", "only through the offset n − m", "只通过偏移 n − m"),  # RoPE: content still matters
        ("positional", "sin(a + b) = sin a cos b + cos a sin b", "sin(a + b) = sin a cos b + cos a sin b"),
        ("decoding", "α = 0.6 with beam 4", "α = 0.6、束宽 4"),
        ("decoding", "biased toward short", "偏向短的输出"),
        ("training", "before clipping", "裁剪之前"),
        ("training", "faint: the raw curve before display smoothing", "浅色细线是“曲线平滑”之前的原始曲线"),
        ("training", "teacher forcing", "教师强制"),
        ("attention", "W<sup>O</sup>", "W<sup>O</sup>"),
        ("attention", "ln n", "ln n"),
        ("data", "char, word and wordpiece tokenizers split Chinese into single characters", "char、word 和 wordpiece"),
        ("data", "李华买一本有意思的书。", "李华买一本有意思的书。"),
        ("data", "安娜在图书馆看一本小说吗？", "安娜在图书馆看一本小说吗？"),
    ],
)
def test_help_states_the_corrected_facts_in_both_languages(key, en, zh):
    assert en in flat(HELP[key]["en"])
    assert zh in flat(HELP[key]["zh"])


def test_help_no_longer_states_the_wrong_ones():
    text = flat(" ".join(t for entry in HELP.values() for t in entry.values()))
    for wrong in (
        "q·k depends only on the offset",
        "使 q·k 只取决于偏移量",
        "would always win",
        "短句总会获胜",
        "how hard the update",
        "推得有多猛",
        "Here Chinese is split into single characters",
        "most sit in the feed-forward networks and the attention projections",
        "遮盖",
    ):
        assert wrong not in text, wrong
    assert "valid" not in HELP["training"]["zh"]  # the legend says 验证


def test_chinese_table_uses_the_notes_terms():
    assert not [k for k, v in ZH.items() if "遮盖" in v]
    assert "掩码" in ZH["mask"] and "因果掩码" in ZH["Decoder self-attention (masked)"]
    assert ZH["Smoothing"] == "曲线平滑"
    assert ZH["Parameters"] == "参数量"
    assert ZH["Source"] == "原文" and ZH["Target"] == "译文"
    steps = [k for k in ZH if re.search(r"\bstep \{", k, re.IGNORECASE)]
    assert len(steps) >= 4
    for key in steps:
        assert re.search(r"第 \{\w+\} 步", ZH[key]), (key, ZH[key])
    assert ZH["Step {n}, finished"].format(n=19) == "第 19 步，已结束"
    assert ZH["Step {n}: after “{prefix}”"].format(n=3, prefix="我 昨天") == "第 3 步：在“我 昨天”之后"
    for key, value in ZH.items():  # target-side words are 译文, tokens 词元
        assert "目标端" not in value and "目标嵌入" not in value and "目标词元" not in value, key


def test_every_placeholder_survives_translation():
    for english, chinese in ZH.items():
        fields = re.compile(r"\{(\w*)(?::[^}]*)?\}")
        assert sorted(fields.findall(english)) == sorted(fields.findall(chinese)), english


def test_explainer_puts_each_value_beside_its_weight_and_sums_the_output(qtbot, english):
    from explorer.panels.attention import AttentionPanel

    panel = AttentionPanel()
    qtbot.addWidget(panel)
    e = notes_example()
    panel.on_explanation(e)
    t = panel.explainer.per_key
    headers = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    first_v = headers.index("v[1]")
    for row in range(3):
        panel.explainer.query.setCurrentIndex(row)
        shown = np.array([[float(t.item(r, first_v + c).text()) for c in range(e.v.shape[1])] for r in range(4)])
        weights = np.array([float(x) for x in per_key_columns(panel)["softmax"]])
        assert shown[:3] == pytest.approx(e.v, abs=1e-3)  # each key's value beside its weight
        assert shown[3] == pytest.approx(weights @ e.v, abs=1e-2)  # the output: Σ weight · v
        assert float(t.item(3, headers.index("softmax")).text()) == pytest.approx(1.0)
