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


SWITCHES = {"residual": False, "scaled_attention": False, "causal": False}


def test_the_switches_default_to_the_papers_model_and_round_trip():
    cfg = ModelConfig.preset("tiny", src_vocab_size=10, tgt_vocab_size=10)
    assert (cfg.residual, cfg.scaled_attention, cfg.causal) == (True, True, True)
    broken = dataclasses.replace(cfg, positional="none", **SWITCHES)
    assert ModelConfig.from_dict(broken.to_dict()) == broken
    with pytest.raises(ValueError, match="residual must be True or False"):
        dataclasses.replace(cfg, residual="no")


def test_a_configuration_saved_before_the_switches_reads_as_the_papers_model():
    """A checkpoint written before residual, scaled_attention and causal existed carries none of them."""
    cfg = ModelConfig.preset("small", src_vocab_size=50, tgt_vocab_size=60)
    old = {k: v for k, v in cfg.to_dict().items() if k not in SWITCHES}
    assert len(old) == len(cfg.to_dict()) - 3
    loaded = ModelConfig.from_dict(old)
    assert loaded == cfg and (loaded.residual, loaded.scaled_attention, loaded.causal) == (True, True, True)
