"""The window names what the Decoding panel is for the model's family, and explains it."""

from explorer.help import HELP
from explorer.i18n import language
from model.core.config import ModelConfig


def family(arch: str) -> ModelConfig:
    """A tiny model of the family ``arch``."""
    if arch == "encoder_decoder":
        return ModelConfig.preset("tiny", src_vocab_size=40, tgt_vocab_size=40)
    return ModelConfig.preset("tiny", src_vocab_size=0, tgt_vocab_size=0, vocab_size=40, arch=arch)


def test_the_decoding_dock_follows_the_family(make_window):
    window = make_window()
    dock, box = window.docks["decoding"], window.help_boxes["decoding"]
    window._follow_family(family("encoder_only"))
    assert dock.windowTitle() == "Fill the mask" and box.key == "family_encoder_only"
    assert window.help_boxes["training"].key == "training_encoder_only"  # the Training panel's help follows too
    window._follow_family(family("decoder_only"))
    assert dock.windowTitle() == "Decoding" and box.key == "generation"
    assert "top-p" in box.text.text() and "seed" in box.text.text()
    assert window.help_boxes["map"].key.startswith("map_decoder_only")
    window._follow_family(family("encoder_only"))
    language.set("zh")
    try:
        window.retranslate()
        assert dock.windowTitle() == "填空"  # the family's title, in the interface language
    finally:
        language.set("en")
        window.retranslate()
    window._follow_family(family("encoder_decoder"))
    assert dock.windowTitle() == "Decoding" and box.key == "decoding"
    assert (window.help_boxes["training"].key, window.help_boxes["map"].key) == ("training", "map")


def test_the_generation_help_exists_in_both_languages():
    assert {"en", "zh"} <= set(HELP["generation"])
    assert "温度" in HELP["generation"]["zh"] and "temperature" in HELP["generation"]["en"]


def test_a_scene_keeps_the_sampling_settings(make_window):
    window = make_window()
    d = window.decoding
    d.temperature_spin.setValue(0.7)
    d.top_k_spin.setValue(12)
    d.top_p_spin.setValue(0.85)
    d.seed_spin.setValue(5)
    window.presenter.save_scene("sampling")
    for spin, value in ((d.temperature_spin, 1.5), (d.top_k_spin, 0), (d.top_p_spin, 1.0), (d.seed_spin, 9)):
        spin.setValue(value)
    window.presenter.apply_scene("sampling")
    assert (d.temperature_spin.value(), d.top_k_spin.value(), d.seed_spin.value()) == (0.7, 12, 5)
    assert abs(d.top_p_spin.value() - 0.85) < 1e-9
