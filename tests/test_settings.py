"""One source of truth for the settings: each ModelConfig / TrainConfig field a person sets declares its label,
help and range once, and the command line, the settings form and the plain-data round trip follow from it (the
form's own widgets are tested in test_settings_form.py)."""

import dataclasses
import json
import typing
from pathlib import Path

import pytest

from model.core.config import ACTIVATIONS, NORM_KINDS, POSITIONAL_KINDS, ModelConfig
from model.core.settings import form_settings, from_plain, settings_of
from model.data import DataError, DataSpec
from model.data.tokenization import TokenizerSpec
from model.training.config import OPTIMIZERS, SCHEDULES, TRAIN_PRESETS, TrainConfig, train_config_for
from tests.setting_values import other_value

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


def test_flags_given_become_fields_and_override_the_preset(parser):
    from model.cli.common import given_flags, given_settings

    for cls, s in all_settings():
        value = other_value(s)
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


# -- the settings' labels ------------------------------------------------------------------------------------------
def test_every_form_label_has_a_chinese_translation():
    from explorer.i18n_zh import ZH

    labels = {s.setting.label for cls in SETTINGS_CLASSES for s in form_settings(cls)}
    assert {"Heads", "Noam factor", "Learning rate", "Tied embeddings"} <= labels
    assert not sorted(label for label in labels if label not in ZH)


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
