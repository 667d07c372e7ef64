"""The Training panel for the three model families and Mixture-of-Experts models: the form offers what applies
to the family chosen, each family trains from the window with the curves it has, the experts' load is drawn
from the engine's own numbers, and the Model panel and the model map describe the model built."""

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from explorer.answers import MetricsBatch  # noqa: E402
from explorer.panels.model_map import ModelPart  # noqa: E402
from explorer.panels.settings_form import FILE_ITEM, PAIR_TASKS, TEXT_TASKS  # noqa: E402
from model.data import DataSpec  # noqa: E402

STEPS = 4  # updates each window test trains (one evaluation, at the last)


@pytest.fixture
def panel(qtbot):
    from explorer.panels.training import TrainingPanel

    p = TrainingPanel()
    qtbot.addWidget(p)
    return p


def choose_family(panel, arch: str) -> None:
    panel.arch_combo.setCurrentIndex(panel.arch_combo.findData(arch))


def tasks_offered(form) -> list[str]:
    return [form.task_combo.itemData(i) for i in range(form.task_combo.count())]


# -- the form --------------------------------------------------------------------------------------------------
def test_the_family_combo_names_the_families_and_keeps_their_values(panel):
    combo = panel.arch_combo
    assert [combo.itemData(i) for i in range(combo.count())] == ["encoder_decoder", "decoder_only", "encoder_only"]
    texts = [combo.itemText(i) for i in range(combo.count())]
    assert "GPT" in texts[1] and "BERT" in texts[2] and "paper" in texts[0]
    choose_family(panel, "encoder_only")
    assert panel.form.spec().model_overrides["arch"] == "encoder_only"


def test_the_form_shows_the_rows_and_tasks_of_each_family(panel):
    form = panel.form
    shown = form.row_shown
    # the paper's translator: both stacks, translation tasks, no experts' options, no NSP
    assert shown(form.enc_layers) and shown(form.dec_layers) and not shown(form.nsp_check)
    assert not shown(panel.experts_top_k_spin) and not shown(form.balance_spin)
    assert tasks_offered(form) == [*PAIR_TASKS, FILE_ITEM]
    form.task_combo.setCurrentIndex(form.task_combo.findData("grammar-en-zh"))
    # GPT: no encoder; the tasks are texts, and the form switches to one
    choose_family(panel, "decoder_only")
    assert not shown(form.enc_layers) and shown(form.dec_layers) and not shown(form.nsp_check)
    assert tasks_offered(form) == [*TEXT_TASKS, FILE_ITEM]
    assert form.spec().data == DataSpec(task="text-hsk-zh") and not form.error_label.text()
    form.task_combo.setCurrentIndex(form.task_combo.findData("text-grammar-en"))
    # BERT: no decoder; the text task chosen stays; next-sentence prediction may be chosen
    choose_family(panel, "encoder_only")
    assert shown(form.enc_layers) and not shown(form.dec_layers) and shown(form.nsp_check)
    assert form.task_combo.currentData() == "text-grammar-en"
    form.nsp_check.setChecked(True)
    assert form.spec().train.nsp is True
    choose_family(panel, "decoder_only")  # NSP is BERT's: another family never asks for it
    assert form.spec().train.nsp is False
    # back to the translator: the translation task chosen before
    choose_family(panel, "encoder_decoder")
    assert form.task_combo.currentData() == "grammar-en-zh" and form.validate()
    choose_family(panel, "decoder_only")
    assert form.task_combo.currentData() == "text-grammar-en"


def test_the_experts_rows_follow_the_number_of_experts(panel):
    form, experts, top_k = panel.form, panel.experts_spin, panel.experts_top_k_spin
    assert experts.value() == 1 and top_k.maximum() == 1
    experts.setValue(4)
    assert form.row_shown(top_k) and form.row_shown(form.balance_spin) and top_k.maximum() == 4
    top_k.setValue(3)
    experts.setValue(2)  # a token cannot go to more experts than there are
    assert top_k.maximum() == 2 and top_k.value() == 2 and form.validate()
    assert form.spec().model_overrides["experts_top_k"] == 2
    experts.setValue(1)
    assert not form.row_shown(top_k) and not form.row_shown(form.balance_spin)


def test_a_text_file_is_plain_text_for_a_single_stream_family_and_pairs_otherwise(panel, tmp_path):
    form = panel.form
    path = tmp_path / "lines.txt"
    path.write_text("one sentence\nanother sentence\na third one\n", encoding="utf-8")
    choose_family(panel, "decoder_only")
    form.set_data_file(str(path))
    assert form.spec().data == DataSpec(task=None, path=str(path), file_format="text")
    choose_family(panel, "encoder_decoder")  # the translator's own choice comes back: a task, not this file
    assert form.spec().data == DataSpec(task="copy")
    choose_family(panel, "encoder_only")
    assert form.spec().data == DataSpec(task=None, path=str(path), file_format="text")


def test_a_run_of_another_family_fills_the_form_with_its_family(panel, qtbot):
    from types import SimpleNamespace

    from model.core.config import ModelConfig
    from model.data.tokenization import TokenizerSpec
    from model.training.config import TrainConfig

    cfg = ModelConfig.preset("tiny", vocab_size=50, arch="encoder_only", n_experts=4, experts_top_k=3, n_classes=2)
    run = SimpleNamespace(
        model_config=cfg,
        train_config=TrainConfig(nsp=True),
        data=DataSpec(task="text-hsk-en"),
        tokenizer=TokenizerSpec("word"),
        preset="tiny",
    )
    panel.form.show_run(run)
    form = panel.form
    assert panel.arch_combo.currentData() == "encoder_only" and tasks_offered(form) == [*TEXT_TASKS, FILE_ITEM]
    assert form.task_combo.currentData() == "text-hsk-en" and panel.experts_top_k_spin.value() == 3
    assert form.row_shown(form.nsp_check) and form.nsp_check.isChecked() and not form.row_shown(form.dec_layers)
    spec = form.spec()
    assert spec.train.nsp and spec.model_overrides["n_experts"] == 4 and not form.edited


def test_the_families_speak_chinese(panel):
    from explorer.i18n import language

    try:
        language.set("zh")
        panel.retranslate()
        assert panel.arch_combo.itemText(1) == "GPT（仅解码器）"  # short: read whole in a laptop's settings column
        assert panel.arch_combo.itemData(1, Qt.ItemDataRole.ToolTipRole).startswith("GPT：仅解码器")
        choose_family(panel, "decoder_only")
        assert panel.form.task_combo.itemText(panel.form.task_combo.count() - 1) == "你的文本文件…"
    finally:
        language.set("en")
        panel.retranslate()


# -- training from the window ----------------------------------------------------------------------------------
def set_up(window, arch, task, experts=1, top_k=1, nsp=False) -> list[MetricsBatch]:
    """The form at a small model of ``arch`` on ``task``; → the list that collects what the engine sends."""
    training, form = window.training, window.training.form
    choose_family(training, arch)
    form.task_combo.setCurrentIndex(form.task_combo.findData(task))
    form.preset_combo.setCurrentText("tiny")
    training.experts_spin.setValue(experts)
    training.experts_top_k_spin.setValue(top_k)
    form.batch.setValue(16)
    form.eval_every.setValue(STEPS)
    form.nsp_check.setChecked(nsp)
    assert form.validate(), form.error_label.text()
    batches: list[MetricsBatch] = []
    window.engine.metrics_logged.connect(batches.append)
    return batches


def train(window, qtbot) -> int:
    """Step N from the window; → the run, once the engine has trained it and its evaluation is drawn."""
    training = window.training
    training.step_n.setValue(STEPS)
    qtbot.mouseClick(training.step_n_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.status.step == STEPS and window.status.state == "paused", timeout=180000)
    run = window.status.run_id
    qtbot.waitUntil(lambda: len(training.plots["loss_plot"].data(run, "valid")[0]) == 1, timeout=60000)
    training.redraw()
    return run


def engine_columns(batches, run):
    """The engine's step columns of ``run``, in order, as it sent them."""
    mine = [b.steps for b in batches if b.run_id == run and len(b.steps)]
    return np.concatenate([c.step for c in mine]), np.concatenate([c.expert_load for c in mine])


def engine_evaluation(batches, run):
    (evaluation,) = [e for b in batches if b.run_id == run for e in b.evals if e.split == "valid"]
    return evaluation


def test_a_decoder_only_mixture_of_experts_trains_and_shows_its_experts(make_window, qtbot):
    window = make_window()
    batches = set_up(window, "decoder_only", "text-grammar-en", experts=4, top_k=2)
    run = train(window, qtbot)
    training = window.training
    info = training.current
    assert info.model_config.arch == "decoder_only" and info.model_config.n_experts == 4
    # the experts' load: one line per expert, exactly the engine's numbers, and the balanced share
    plot = training.expert_load_plot
    assert not plot.isHidden()
    steps, load = engine_columns(batches, run)
    assert load.shape == (STEPS, 4) and np.allclose(load.sum(axis=1), 1.0)
    for i in range(4):
        x, y = plot.data(run, f"expert_{i + 1}")
        np.testing.assert_array_equal(x, steps)
        np.testing.assert_array_equal(y, load[:, i])
    assert np.all(plot.data(run, "balanced")[1] == 0.25)
    assert len(plot.legend.items) == 5 and plot.legend.columnCount == 5  # one row
    # the evaluation of a language model: its perplexity, no translation scores
    quality = training.plots["quality_plot"]
    evaluation = engine_evaluation(batches, run)
    assert quality.title.text() == "Perplexity (valid)"
    assert quality.data(run, "perplexity")[1] == pytest.approx([evaluation.perplexity])
    assert np.isfinite(evaluation.perplexity) and quality.data(run, "bleu")[0].size == 0
    assert training.plots["loss_plot"].data(run, "aux")[0].size == STEPS
    # the Model panel: all the parameters, and the fewer one token passes through
    assert window.model_panel.info is info and info.active_parameters < info.total_parameters
    text = window.model_panel.summary.text()
    assert f"{info.total_parameters:,}" in text and f"{info.active_parameters:,} active per token" in text
    assert "Decoder-only" in text
    # the model map: one stack, no cross-attention, experts in the feed-forward box
    parts = window.model_map.parts()
    assert {p.stack for p in parts} <= {"decoder", None} and not any(p.kind == "cross_attention" for p in parts)
    assert window.model_map.items[ModelPart("feed_forward", "decoder", 0)].label == "Experts (MoE)"


def test_an_encoder_only_model_trains_with_its_masked_token_curves(make_window, qtbot):
    window = make_window()
    batches = set_up(window, "encoder_only", "text-grammar-en", nsp=True)
    run = train(window, qtbot)
    training = window.training
    assert training.current.model_config.arch == "encoder_only" and training.current.train_config.nsp
    quality = training.plots["quality_plot"]
    evaluation = engine_evaluation(batches, run)
    assert quality.title.text() == "Masked-token and next-sentence accuracy (valid)"
    assert quality.data(run, "mlm_accuracy")[1] == pytest.approx([100 * evaluation.mlm_accuracy])
    assert quality.data(run, "nsp_accuracy")[1] == pytest.approx([100 * evaluation.nsp_accuracy])
    assert quality.data(run, "exact_match")[0].size == 0 and quality.data(run, "perplexity")[0].size == 0
    assert training.expert_load_plot.isHidden()  # a dense model has no experts to show
    assert "Encoder-only" in window.model_panel.summary.text()
    parts = window.model_map.parts()
    assert {p.stack for p in parts} <= {"encoder", None} and ModelPart("mlm_head") in parts


def test_an_encoder_decoder_with_two_experts_trains_and_shows_both(make_window, qtbot):
    window = make_window()
    batches = set_up(window, "encoder_decoder", "copy", experts=2)
    run = train(window, qtbot)
    training = window.training
    quality = training.plots["quality_plot"]
    evaluation = engine_evaluation(batches, run)
    assert quality.title.text() == "Exact match and BLEU (valid)"
    assert quality.data(run, "bleu")[1] == pytest.approx([evaluation.bleu])
    assert quality.data(run, "exact_match")[1] == pytest.approx([100 * evaluation.exact_match])
    assert quality.data(run, "perplexity")[0].size == 0
    steps, load = engine_columns(batches, run)
    for i in range(2):
        np.testing.assert_array_equal(training.expert_load_plot.data(run, f"expert_{i + 1}")[1], load[:, i])
    assert np.all(training.expert_load_plot.data(run, "balanced")[1] == 0.5)
    info = window.model_panel.info
    assert info.active_parameters < info.total_parameters
    parts = window.model_map.parts()
    assert ModelPart("cross_attention", "decoder", 0) in parts
    assert window.model_map.items[ModelPart("feed_forward", "encoder", 0)].detail.startswith("2 experts")
