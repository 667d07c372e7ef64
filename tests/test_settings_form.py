"""The settings form of the Training panel (explorer/panels/settings_form.py): a widget per setting with its range,
the rate row that follows the schedule, presets, the round trip form → spec → run → form, the rows and tasks of each
family, the problems it lists, and when the form's settings need a new model."""

from types import SimpleNamespace

import pytest

pytest.importorskip("pytestqt")

from explorer.commands import NewModelSpec  # noqa: E402
from explorer.panels.settings_form import (  # noqa: E402
    ARCH_FIELDS,
    FILE_ITEM,
    family_problem,
    learns_nsp,
    needs_new_model,
    only_the_data_differs,
    rate_field,
)
from model.core.config import PRESETS, ModelConfig  # noqa: E402
from model.core.settings import form_settings  # noqa: E402
from model.data import MONOLINGUAL_TASKS, DataError, DataSpec  # noqa: E402
from model.data.tokenization import TokenizerSpec  # noqa: E402
from model.families.registry import DECODER_ONLY, ENCODER_DECODER, ENCODER_ONLY  # noqa: E402
from model.training.config import SCHEDULES, TRAIN_PRESETS, TrainConfig  # noqa: E402
from tests.setting_values import other_value  # noqa: E402


@pytest.fixture
def form(qtbot):
    from explorer.panels.settings_form import SettingsForm

    f = SettingsForm()
    qtbot.addWidget(f)
    return f


def _set(widget, value):
    from explorer.panels.settings_form import set_widget_value

    set_widget_value(widget, value)


def test_every_form_setting_has_its_widget_and_range(form):
    from PySide6.QtWidgets import QCheckBox, QComboBox

    form.experts_spin.setValue(64)  # the maximum of "Experts per token" follows the number of experts
    for cls, widgets in ((ModelConfig, form.model_widgets), (TrainConfig, form.train_widgets)):
        for s in form_settings(cls):
            w = form.rate if s.name in ("noam_factor", "lr") else widgets[s.name]
            if s.choices:
                # each item's data is the value (the text may be a readable name, e.g. of the family)
                assert isinstance(w, QComboBox) and tuple(w.itemData(i) for i in range(w.count())) == s.choices
            elif s.kind is bool:
                assert isinstance(w, QCheckBox)
            else:
                low = round(s.setting.low, w.decimals()) if s.kind is float else s.setting.low  # as Qt shows it
                assert (w.minimum(), w.maximum(), w.singleStep()) == pytest.approx(
                    (low, s.setting.high, s.setting.step)
                ), s.name
    assert set(form.model_overrides()) == {s.name for s in form_settings(ModelConfig)}
    for attribute in (
        "d_model",
        "heads",
        "enc_layers",
        "dec_layers",
        "d_ff",
        "dropout",
        "positional",
        "norm",
        "activation",
        "tie",
        "batch",
        "schedule",
        "warmup",
        "rate",
        "smoothing",
        "clip",
        "seed",
        "eval_every",
    ):
        assert getattr(form, attribute) is not None


def test_the_rate_row_follows_the_schedule_by_its_label_not_its_text(form):
    from explorer.i18n import language

    assert form._rate_label.text() == "Noam factor" and form.rate.value() == 1.0 and form.rate.decimals() == 3
    form.schedule.setCurrentText("cosine")
    assert form._rate_label.text() == "Learning rate" and form.rate.value() == 5e-4 and form.rate.decimals() == 6
    language.set("zh")
    try:
        form.retranslate()
        assert form._rate_label.text() == "学习率"
        form.schedule.setCurrentIndex(form.schedule.findData("noam"))  # its text is the value's Chinese name
        assert form._rate_label.text() == "Noam 系数"
    finally:
        language.set("en")
        form.retranslate()
    assert form._rate_label.text() == "Noam factor"


def test_a_preset_sets_the_fields_it_names(form):
    form.tie.setChecked(False)
    form.positional.setCurrentText("rope")
    form.seed.setValue(9)
    form.preset_combo.setCurrentText("paper_base")
    overrides = form.model_overrides()
    assert all(overrides[k] == v for k, v in PRESETS["paper_base"].items() if k in overrides)
    assert overrides["tie_embeddings"] is True and overrides["positional"] == "rope"  # not named: kept
    assert form.seed.value() == 0 and form.warmup.value() == TRAIN_PRESETS["paper_base"]["warmup_steps"]
    form.preset_combo.setCurrentText("tiny")
    assert form.tie.isChecked() is False


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_form_spec_show_run_form_round_trip(form, qtbot, schedule):
    from explorer.panels.settings_form import SettingsForm

    form.preset_combo.setCurrentText("small")
    for s in form_settings(ModelConfig):
        if s.name not in ("d_model", "n_heads", "d_ff"):  # keep d_model divisible by n_heads
            _set(form.model_widgets[s.name], other_value(s))
    form.schedule.setCurrentText(schedule)
    for s in form_settings(TrainConfig):
        if s.name in form.train_widgets and s.name != "schedule":
            _set(form.train_widgets[s.name], other_value(s))
    form.rate.setValue(0.25)
    spec = form.spec()
    assert spec.train.schedule == schedule
    assert getattr(spec.train, "noam_factor" if schedule == "noam" else "lr") == 0.25
    run = SimpleNamespace(
        model_config=ModelConfig.preset(spec.preset, src_vocab_size=30, tgt_vocab_size=30, **spec.model_overrides),
        train_config=spec.train,
        data=spec.data,
        tokenizer=spec.tokenizer,
        preset=spec.preset,
    )
    other = SettingsForm()
    qtbot.addWidget(other)
    other.schedule.setCurrentText("noam" if schedule != "noam" else "constant")
    other.show_run(run)
    assert other.spec() == spec and not other.edited


def test_the_form_lists_the_problems_without_the_engine_s_heading(qtbot):
    pytest.importorskip("pytestqt")
    from explorer.panels.settings_form import SettingsForm

    form = SettingsForm()
    qtbot.addWidget(form)
    form.heads.setValue(7)  # d_model 64 is not divisible by 7
    assert not form.validate()
    text = form.error_label.text()
    assert "divisible" in text and "Invalid" not in text


# -- the family: its rows, its tasks, its problems -------------------------------------------------------------------
def test_the_rate_field_is_the_noam_factor_only_under_noam():
    assert rate_field("noam") == "noam_factor"
    assert {rate_field(s) for s in SCHEDULES if s != "noam"} == {"lr"}


def test_only_an_encoder_only_model_learns_next_sentence_prediction():
    assert learns_nsp(ENCODER_ONLY)
    assert not learns_nsp(ENCODER_DECODER) and not learns_nsp(DECODER_ONLY)


def test_a_family_is_told_which_data_suit_it(english):
    pairs, text = DataSpec(task="reverse"), DataSpec(task="text-grammar-en")
    assert family_problem(ENCODER_DECODER, pairs, nsp=False) == ""
    assert family_problem(DECODER_ONLY, text, nsp=False) == ""
    assert family_problem(ENCODER_ONLY, text, nsp=True) == ""
    assert "learns from plain text" in family_problem(DECODER_ONLY, pairs, nsp=False)
    assert "learns from plain text" in family_problem(ENCODER_ONLY, pairs, nsp=False)
    assert "translate sentence pairs" in family_problem(ENCODER_DECODER, text, nsp=False)
    assert "Next-sentence prediction" in family_problem(DECODER_ONLY, text, nsp=True)


def _choose_family(form, arch):
    form.arch_combo.setCurrentIndex(form.arch_combo.findData(arch))


def _tasks(form):
    return [form.task_combo.itemData(i) for i in range(form.task_combo.count())]


def test_each_family_is_offered_its_tasks_and_rows_and_gets_back_its_last_task(form, english):
    form.task_combo.setCurrentIndex(form.task_combo.findData("reverse"))
    assert not set(MONOLINGUAL_TASKS) & set(_tasks(form)) and _tasks(form)[-1] == FILE_ITEM
    assert form.row_shown(form.enc_layers) and form.row_shown(form.dec_layers) and not form.row_shown(form.nsp_check)
    _choose_family(form, "decoder_only")
    assert _tasks(form) == [*MONOLINGUAL_TASKS, FILE_ITEM]
    assert not form.row_shown(form.enc_layers) and form.row_shown(form.dec_layers)
    assert form.validate() and form.spec().data == DataSpec(task=form.task_combo.currentData())
    _choose_family(form, "encoder_only")
    assert form.row_shown(form.enc_layers) and not form.row_shown(form.dec_layers) and form.row_shown(form.nsp_check)
    _choose_family(form, "encoder_decoder")
    assert form.task_combo.currentData() == "reverse"  # the pair task chosen before


def test_the_experts_rows_show_for_more_than_one_expert(form):
    form.experts_spin.setValue(1)
    assert not form.row_shown(form.experts_top_k_spin) and not form.row_shown(form.balance_spin)
    form.experts_spin.setValue(4)
    assert form.row_shown(form.experts_top_k_spin) and form.row_shown(form.balance_spin)
    assert form.experts_top_k_spin.maximum() == 4  # a token goes to at most every expert


def test_a_data_file_is_asked_for_and_read_as_the_familys_kind_of_data(form, english):
    form.set_data_file(None)
    form.task_combo.blockSignals(True)  # (choosing the file item opens a file dialog when none is chosen)
    form.task_combo.setCurrentIndex(form.task_combo.findData(FILE_ITEM))
    form.task_combo.blockSignals(False)
    with pytest.raises(DataError, match="Choose a data file"):
        form.data_spec()
    form.set_data_file("/data/pairs.tsv")
    assert form.data_spec() == DataSpec(task=None, path="/data/pairs.tsv")
    assert form.file_label.text() == "pairs.tsv"
    _choose_family(form, "decoder_only")
    form.set_data_file("/data/book.txt")
    assert form.data_spec() == DataSpec(task=None, path="/data/book.txt", file_format="text")


# -- the settings against the loaded model ---------------------------------------------------------------------------
def _loaded(**model):
    """A run as the form compares with it: its model, data and tokenizer."""
    cfg = ModelConfig.preset("tiny", src_vocab_size=30, tgt_vocab_size=30, **model)
    return SimpleNamespace(model_config=cfg, data=DataSpec(task="copy"), tokenizer=TokenizerSpec("word"))


def _spec_for(info, data=None, tokenizer=None, nsp=False, **model):
    overrides = {name: getattr(info.model_config, name) for name in ARCH_FIELDS} | model
    return NewModelSpec(data or info.data, "tiny", overrides, TrainConfig(nsp=nsp), tokenizer or info.tokenizer)


def test_a_new_model_is_needed_when_the_architecture_data_or_tokenizer_differ():
    info = _loaded()
    assert needs_new_model(_spec_for(info), None)
    assert not needs_new_model(_spec_for(info), info)
    assert needs_new_model(_spec_for(info, d_model=2 * info.model_config.d_model), info)
    assert needs_new_model(_spec_for(info, data=DataSpec(task="reverse")), info)
    assert needs_new_model(_spec_for(info, tokenizer=TokenizerSpec("bpe", 300)), info)
    assert needs_new_model(_spec_for(info, nsp=True), info)  # no next-sentence classifier in this model


def test_only_the_data_differs_when_nothing_else_needs_a_new_model():
    info = _loaded()
    other = DataSpec(task="reverse")
    assert only_the_data_differs(_spec_for(info, data=other), info)
    assert not only_the_data_differs(_spec_for(info), info)  # the same data
    assert not only_the_data_differs(_spec_for(info, data=other, d_model=2 * info.model_config.d_model), info)
    assert not only_the_data_differs(_spec_for(info, data=other), None)
