"""What a decoder-only model's decoding shows its own way (explorer/panels/decoding_generation.py): the prompt
followed by its continuation, candidates given the text so far, how a sampled token was drawn, and Sample mode's
settings as the engine and the view state take them."""

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.panels.decoding_generation import GENERATION_AXIS, GenerationMode, SamplingBox  # noqa: E402
from explorer.panels.decoding_state import DecodingViewState  # noqa: E402
from model.io.snapshots import DecodeSettings  # noqa: E402


def line(prompt: str, text: str, at_end: bool) -> tuple[str, str]:
    view = SimpleNamespace(settings=DecodeSettings(prompt), at_end=at_end)
    return GenerationMode().output_line(view, text)


def test_the_output_line_is_the_prompt_then_its_continuation_in_bold():
    assert line("The  cat", "sat down", at_end=False) == ("Text so far", "The cat <b>sat down</b>…")
    assert line("The cat", "sat down", at_end=True) == ("Text", "The cat <b>sat down</b>")
    assert line("我昨天", "去了", at_end=True) == ("Text", "我昨天<b>去了</b>")  # no space beside Chinese
    assert line("a < b", "c & d", at_end=True) == (
        "Text",
        "a &lt; b <b>c &amp; d</b>",
    )  # the model's text is not markup
    assert line("Hello", "", at_end=False) == ("Text so far", "Hello<b></b>…")  # nothing written yet


def test_a_generators_candidates_are_given_the_text_so_far():
    mode = GenerationMode()
    assert mode.prompted and not mode.cross_attention
    assert mode.reference(SimpleNamespace(reference="a sentence")) is None  # the prompt's sentence is no reference
    prompt = SimpleNamespace(source_tokens=("<bos>", "The", "cat"))
    assert mode.prefix(prompt, ["sat"]) == ["<bos>", "The", "cat", "sat"]  # it reads the prompt before its text
    settings = DecodeSettings("The cat", temperature=0.7)
    assert mode.axis(None, settings) == GENERATION_AXIS == "P(token | text so far)"
    assert mode.axis(SimpleNamespace(sampled=False), settings) == GENERATION_AXIS
    assert mode.axis(SimpleNamespace(sampled=True), settings) == "P(token | text so far) at temperature 0.7"


def sampled_step(token: int, shown: int) -> SimpleNamespace:
    return SimpleNamespace(sampled=True, kept=[SimpleNamespace(token=token)], top_tokens=np.zeros((1, shown)))


DRAWN = (
    "Sampled: the next token is drawn at random, each with a chance in proportion to its bar; "
    "the outlined bar is the one drawn."
)


def test_the_note_says_how_a_sampled_token_was_drawn_and_what_the_cuts_removed():
    mode = GenerationMode()
    piece = "t{}".format
    assert mode.draw_note(SimpleNamespace(sampled=False), DecodeSettings("x"), None, piece) == ""  # greedy
    no_cut = DecodeSettings("x", temperature=1.0, sample_top_k=0, top_p=1.0)
    assert mode.draw_note(sampled_step(7, 10), no_cut, 3, piece) == DRAWN
    cut = DecodeSettings("x", temperature=1.0, sample_top_k=5, top_p=0.9)
    assert mode.draw_note(sampled_step(7, 10), cut, None, piece) == (
        DRAWN + " Grey bars were cut by top-k 5 · top-p 0.9: they could not be drawn."
        " The token drawn, “t7”, is not among the 10 shown."
    )


def test_the_sampling_box_gives_its_settings_to_the_engine_and_to_the_view_state(qtbot):
    box = SamplingBox()
    qtbot.addWidget(box)
    box.show_values(DecodingViewState(temperature=0.7, top_k=5, top_p=0.8, seed=11))
    assert box.sampling() == dict(temperature=0.7, sample_top_k=5, top_p=0.8, seed=11)
    assert box.values() == dict(temperature=0.7, top_k=5, top_p=0.8, seed=11)
    box.seed_spin.setValue(-1)  # random: a new seed for each sentence
    assert box.sampling()["seed"] is None and box.values()["seed"] == -1
    box.set_enabled(False)
    assert not any(spin.isEnabled() for spin in box.spins)
    box.set_enabled(True)
    assert all(spin.isEnabled() for spin in box.spins)
    box.retranslate()
    assert box.top_k_spin.specialValueText() == "off" and box.seed_spin.specialValueText() == "random"
    assert box.isHidden()  # shown only for a decoder-only model
