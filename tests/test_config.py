import dataclasses

import pytest

from model.core.config import PRESETS, ModelConfig


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_build_and_round_trip(name):
    cfg = ModelConfig.preset(name, src_vocab_size=100, tgt_vocab_size=120)
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.d_model % cfg.n_heads == 0


@pytest.mark.parametrize(
    "changes, words",
    [
        (dict(d_model=100, n_heads=8), "divisible by n_heads"),
        (dict(d_model=96, n_heads=32, positional="rope"), "must be even"),
        (dict(positional="absolute"), "positional must be one of"),
        (dict(norm="middle"), "norm must be one of"),
        (dict(activation="tanh"), "activation must be one of"),
        (dict(dropout=1.0), "dropout"),
        (dict(shared_vocab=True), "shared_vocab needs equal vocabulary sizes"),
        (dict(eos_id=0), "must differ"),
        (dict(n_encoder_layers=0), "at least 1"),
    ],
)
def test_impossible_configs_say_what_to_change(changes, words):
    cfg = ModelConfig.preset("tiny", src_vocab_size=100, tgt_vocab_size=120)
    with pytest.raises(ValueError, match=words):
        dataclasses.replace(cfg, **changes)


def test_unknown_preset_and_keys_are_refused():
    with pytest.raises(ValueError, match="Unknown preset"):
        ModelConfig.preset("huge", src_vocab_size=10, tgt_vocab_size=10)
    cfg = ModelConfig.preset("tiny", src_vocab_size=10, tgt_vocab_size=10)
    with pytest.raises(ValueError, match="Unknown model configuration keys"):
        ModelConfig.from_dict({**cfg.to_dict(), "colour": "blue"})


def test_config_is_frozen():
    cfg = ModelConfig.preset("tiny", src_vocab_size=10, tgt_vocab_size=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 8
