"""The Model panel: the parameter table names each group as its family does, in English and Chinese, from the
engine's counts keyed by group id (model.families.registry)."""

import dataclasses

import pytest

pytest.importorskip("pytestqt")

from explorer.i18n import language  # noqa: E402
from explorer.panels.model_info import ModelPanel  # noqa: E402
from model.core.config import ModelConfig  # noqa: E402
from model.core.transformer import Transformer  # noqa: E402


@pytest.fixture(scope="module")
def engine_info(copy_session_factory):
    from explorer.worker import Engine

    return Engine("cpu")._run_info(copy_session_factory())


def table_rows(panel: ModelPanel) -> list[tuple[str, ...]]:
    table = panel.table
    return [tuple(table.item(r, c).text() for c in range(3)) for r in range(table.rowCount())]


# what the panel showed for a tiny GPT with 4 experts (top-2), learned positions and Pre-LN, before the counts were
# keyed by group id: written from the screen, largest group first
GPT_WITH_EXPERTS_ROWS = {
    "en": [
        ("decoder feed-forward (4 experts and the router)", "265,224", "85.0%"),
        ("decoder self-attention", "33,280", "10.7%"),
        ("positions (learned)", "8,192", "2.6%"),
        ("output projection", "2,405", "0.8%"),
        ("token embedding", "2,368", "0.8%"),
        ("decoder norms", "512", "0.2%"),
        ("decoder final norm", "128", "0.0%"),
    ],
    "zh": [
        ("解码器前馈网络 （4 个专家和路由器）", "265,224", "85.0%"),
        ("解码器自注意力", "33,280", "10.7%"),
        ("位置（可学习）", "8,192", "2.6%"),
        ("输出投影", "2,405", "0.8%"),
        ("词元嵌入", "2,368", "0.8%"),
        ("解码器归一化", "512", "0.2%"),
        ("解码器最终归一化", "128", "0.0%"),
    ],
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_parameter_table_names_each_group_as_the_family_does(qtbot, engine_info, lang):
    cfg = ModelConfig.preset(
        "tiny", arch="decoder_only", vocab_size=37, n_experts=4, experts_top_k=2, positional="learned", norm="pre"
    )
    model = Transformer(cfg)
    info = dataclasses.replace(
        engine_info,
        model_config=cfg,
        vocab_sizes=(37, 37),
        parameters=model.parameter_breakdown(),
        total_parameters=model.num_parameters(),
        active_parameters=model.active_parameters(),
    )
    assert all(" " not in group for group in info.parameters)  # ids, not labels
    panel = ModelPanel()
    qtbot.addWidget(panel)
    language.set(lang)
    try:
        panel.on_run(info)
        assert table_rows(panel) == GPT_WITH_EXPERTS_ROWS[lang]
    finally:
        language.set("en")


def test_a_model_with_parts_switched_off_says_so(qtbot, engine_info):
    """The summary of an experiment's variant names what it goes without; the paper's model names nothing."""
    panel = ModelPanel()
    qtbot.addWidget(panel)
    panel.on_run(engine_info)
    assert "Switched off" not in panel.summary.text()
    cfg = dataclasses.replace(engine_info.model_config, residual=False, scaled_attention=False, positional="none")
    panel.on_run(dataclasses.replace(engine_info, model_config=cfg))
    text = panel.summary.text()
    assert "<b>Switched off</b>: positional encoding" in text and "residual connections" in text
    assert "the √d_k in attention" in text and "causal mask" not in text  # (its causal mask is on)
    assert "positional encoding: none" in text
