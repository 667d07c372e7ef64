"""One source of truth for the settings: each ModelConfig / TrainConfig field a person sets declares its label,
help and range once, and the command line, the settings form and the plain-data round trip follow from it."""

import dataclasses
import json
import typing
from pathlib import Path
from types import SimpleNamespace

import pytest

from model.core.config import ACTIVATIONS, NORM_KINDS, POSITIONAL_KINDS, PRESETS, ModelConfig
from model.core.settings import form_settings, from_plain, settings_of
from model.data import DataError, DataSpec
from model.data.tokenization import TokenizerSpec
from model.training.config import OPTIMIZERS, SCHEDULES, TRAIN_PRESETS, TrainConfig, train_config_for

ROOT = Path(__file__).resolve().parents[1]
SETTINGS_CLASSES = (ModelConfig, TrainConfig)


def all_settings():
    return [(cls, s) for cls in SETTINGS_CLASSES for s in settings_of(cls)]


def test_choices_are_those_of_the_literal_types():
    hints = {**typing.get_type_hints(ModelConfig), **typing.get_type_hints(TrainConfig)}
    for name, choices in (
        ("positional", POSITIONAL_KINDS),
        ("norm", NORM_KINDS),
        ("activation", ACTIVATIONS),
        ("optimizer", OPTIMIZERS),
        ("schedule", SCHEDULES),
    ):
        assert typing.get_args(hints[name]) == choices
    by_name = {s.name: s for _, s in all_settings()}
    assert by_name["positional"].choices + ("none",) == POSITIONAL_KINDS  # "none" is hidden (below)
    assert by_name["schedule"].choices == SCHEDULES
    with pytest.raises(ValueError, match=r"optimizer must be one of \('adam', 'adamw'\) \(got 'sgd'\)"):
        TrainConfig(optimizer="sgd")


def test_a_hidden_choice_is_valid_but_neither_the_form_nor_the_command_line_offers_it(parser):
    """``positional="none"`` (an experiment's model without positions) is a valid configuration set in code; the
    settings (the form's boxes, the command line's choices) leave it out."""
    positional = next(s for s in settings_of(ModelConfig) if s.name == "positional")
    assert "none" in POSITIONAL_KINDS and "none" not in positional.choices
    assert ModelConfig.preset("tiny", src_vocab_size=9, tgt_vocab_size=9, positional="none").positional == "none"
    flag = next(a for a in parser._actions if "--positional" in a.option_strings)
    assert "none" not in flag.choices and "rope" in flag.choices


def test_every_setting_is_complete():
    for cls, s in all_settings():
        assert s.setting.label and s.setting.help, (cls.__name__, s.name)
        assert s.default == getattr(cls, s.name)
        if s.setting.form and s.kind in (int, float):
            assert s.setting.low <= s.default <= s.setting.high, s.name
            assert s.setting.step > 0
        if s.setting.form and s.kind is float:
            assert s.setting.decimals > 0, s.name


# -- the command line ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def parser():
    from model.cli.train import build_parser

    return build_parser()


def test_every_setting_has_a_flag_listed_in_help(parser):
    options = {o: a for a in parser._actions for o in a.option_strings}
    text = parser.format_help()
    for _, s in all_settings():
        action = options[f"--{s.flag}"]
        assert action.default is None, s.flag  # so that only flags given override the preset
        assert f"--{s.flag}" in text
        if s.choices:
            assert tuple(action.choices) == s.choices
        if s.kind is bool:
            assert f"--no-{s.flag}" in options
    assert "--preset" in options and "--shared-vocab" in options


def test_flags_keep_their_names(parser):
    options = {o for a in parser._actions for o in a.option_strings}
    for flag in (
        "--heads",
        "--encoder-layers",
        "--decoder-layers",
        "--warmup",
        "--tie-embeddings",
        "--d-model",
        "--noam-factor",
        "--eval-sentences",
        "--clip-norm",
        "--weight-decay",
    ):
        assert flag in options


def _example(s):
    """A value for setting ``s`` other than its default."""
    if s.choices:
        return next(c for c in s.choices if c != s.default)
    if s.kind is bool:
        return not s.default
    return s.default + 1 if s.kind is int else s.default + 0.125


def test_flags_given_become_fields_and_override_the_preset(parser):
    from model.cli.common import given_flags, given_settings

    for cls, s in all_settings():
        value = _example(s)
        if s.kind is bool:
            argv = [f"--{s.flag}" if value else f"--no-{s.flag}"]
        else:
            argv = [f"--{s.flag}", str(value)]
        args = parser.parse_args([*argv, "--steps", "1", "--out", "x"])
        assert given_settings(args, cls) == {s.name: value}
        assert given_flags(args, cls) == [f"--{s.flag}"]
    args = parser.parse_args(["--preset", "small", "--warmup", "7", "--steps", "1", "--out", "x"])
    assert given_settings(args, ModelConfig) == {}
    train = train_config_for(args.preset, **given_settings(args, TrainConfig))
    assert train.warmup_steps == 7 and train.eval_every == TRAIN_PRESETS["small"]["eval_every"]


# -- the settings form ---------------------------------------------------------------------------------------------
@pytest.fixture
def form(qtbot):
    from explorer.panels.settings_form import SettingsForm

    f = SettingsForm()
    qtbot.addWidget(f)
    return f


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


def test_every_form_label_has_a_chinese_translation():
    from explorer.i18n_zh import ZH

    labels = {s.setting.label for cls in SETTINGS_CLASSES for s in form_settings(cls)}
    assert {"Heads", "Noam factor", "Learning rate", "Tied embeddings"} <= labels
    assert not sorted(label for label in labels if label not in ZH)


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
            _set(form.model_widgets[s.name], _example(s))
    form.schedule.setCurrentText(schedule)
    for s in form_settings(TrainConfig):
        if s.name in form.train_widgets and s.name != "schedule":
            _set(form.train_widgets[s.name], _example(s))
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


def _set(widget, value):
    from explorer.panels.settings_form import set_widget_value

    set_widget_value(widget, value)


# -- plain data ----------------------------------------------------------------------------------------------------
PLAIN = [
    (ModelConfig, ModelConfig.preset("tiny", src_vocab_size=20, tgt_vocab_size=20), ValueError),
    (TrainConfig, TrainConfig(schedule="cosine", lr=1e-3), ValueError),
    (DataSpec, DataSpec(task="reverse", length=6), DataError),
    (TokenizerSpec, TokenizerSpec("bpe", 300), ValueError),
]


@pytest.mark.parametrize("cls, value, error", PLAIN, ids=[c.__name__ for c, _, _ in PLAIN])
def test_one_plain_data_policy(cls, value, error):
    plain = value.to_dict()
    assert json.loads(json.dumps(plain)) == plain
    assert cls.from_dict(plain) == value
    with pytest.raises(error, match=rf"Unknown .* keys for {cls.__name__}: 'colour', 'size'"):
        cls.from_dict({**plain, "size": 3, "colour": "blue"})
    defaults = {f.name for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
    some_left_out = {k: v for k, v in plain.items() if k not in defaults or k == sorted(defaults)[0]}
    built = cls.from_dict(some_left_out)  # missing keys take the defaults
    for name in defaults - set(some_left_out):
        assert getattr(built, name) == getattr(cls, name)
    with pytest.raises(error, match="table of named values"):
        cls.from_dict([1, 2])


def test_missing_required_keys_and_retired_keys():
    plain = ModelConfig.preset("tiny", src_vocab_size=20, tgt_vocab_size=20).to_dict()
    with pytest.raises(ValueError, match="ModelConfig.*needs src_vocab_size"):
        ModelConfig.from_dict({k: v for k, v in plain.items() if k != "src_vocab_size"})
    old = {**{k: v for k, v in plain.items() if k != "d_ff"}, "ffn_width": 96, "colourful": True}
    retired = {"ffn_width": "d_ff", "colourful": None}
    assert from_plain(ModelConfig, old, "model configuration", retired=retired).d_ff == 96
    assert from_plain(ModelConfig, {**old, "d_ff": 80}, "model configuration", retired=retired).d_ff == 80


def test_the_bundled_checkpoint_reads_with_the_one_policy():
    import torch

    for path in sorted((ROOT / "resources" / "models").glob("*.ckpt")):
        meta = json.loads(torch.load(path, weights_only=True)["meta"])
        for key, cls in (
            ("model_config", ModelConfig),
            ("train_config", TrainConfig),
            ("data_spec", DataSpec),
            ("tokenizer_spec", TokenizerSpec),
        ):
            read = cls.from_dict(meta[key]).to_dict()
            assert {k: read[k] for k in meta[key]} == meta[key], (path.name, key)
            # fields newer than the file take their defaults (a file of the translator family reads as one)
            defaults = {f.name: f.default for f in dataclasses.fields(cls)}
            assert {k: v for k, v in read.items() if k not in meta[key]} == {
                k: defaults[k] for k in read if k not in meta[key]
            }, (path.name, key)


def test_the_form_lists_the_problems_without_the_engine_s_heading(qtbot):
    pytest.importorskip("pytestqt")
    from explorer.panels.settings_form import SettingsForm

    form = SettingsForm()
    qtbot.addWidget(form)
    form.heads.setValue(7)  # d_model 64 is not divisible by 7
    assert not form.validate()
    text = form.error_label.text()
    assert "divisible" in text and "Invalid" not in text
