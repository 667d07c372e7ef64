"""The fill-mask view (explorer/panels/fill_mask.py) on an engine that only records what it is asked: a sentence
without a mask asks for its tokens, one with a mask (or tokens clicked) for its guesses; a chart per masked
position says where the original token ranks; only the answer to the newest request is shown."""

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QObject, Qt, Signal  # noqa: E402

from explorer.answers import InspectionReady, MaskFilled  # noqa: E402
from explorer.commands import FillMask, Inspect  # noqa: E402
from explorer.engine_client import EngineClient  # noqa: E402
from explorer.panels.fill_mask import CHART_COLUMNS, FillMaskPanel  # noqa: E402
from model.io.snapshots import FillMaskView, MaskPrediction  # noqa: E402

INSPECTION = SimpleNamespace(src_tokens=["<bos>", "the", "cat", "sat", "<eos>"])  # what the panel reads of one


class RecordingEngine(QObject):
    """Keeps each command sent; the test answers them."""

    mask_filled = Signal(MaskFilled)
    inspection_ready = Signal(InspectionReady)
    engine_failed = Signal(int, str)

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[object] = []

    def submit(self, command) -> int:
        self.sent.append(command)
        return command.request_id


@pytest.fixture
def fill(qtbot):
    panel = FillMaskPanel()
    qtbot.addWidget(panel)
    engine = RecordingEngine()
    panel.attach(EngineClient(engine))
    panel.engine = engine
    return panel


def asked(panel: FillMaskPanel) -> list[tuple]:
    """What the panel asked for, as (kind, text, positions)."""
    kinds = {FillMask: lambda c: ("fill", c.text, c.mask_positions), Inspect: lambda c: ("tokens", c.source, ())}
    return [kinds[type(c)](c) for c in panel.engine.sent]


def fill_view(predictions: list[MaskPrediction], text: str = "the <mask> sat") -> FillMaskView:
    tokens = ["<bos>", "the", "<mask>", "sat", "<eos>"]
    return FillMaskView(text, tokens, predictions, SimpleNamespace(), step=0)


def test_a_sentence_asks_for_its_tokens_and_a_masked_one_for_the_guesses(fill):
    fill.input.setText("  ")
    fill.ask()
    assert fill.message.text() == "Type a sentence first." and asked(fill) == []
    fill.input.setText("the cat sat")
    fill.ask()
    fill.input.setText("the <mask> sat")
    fill.top_k.setValue(3)
    fill.ask()
    assert asked(fill) == [("tokens", "the cat sat", ()), ("fill", "the <mask> sat", ())]
    assert fill.engine.sent[-1].top_k == 3


def test_the_tokens_come_back_to_be_clicked_and_a_click_masks_or_unmasks_one(qtbot, fill):
    fill.input.setText("the cat sat")
    fill.ask()
    shown = []
    fill.inspection_shown.connect(shown.append)
    fill.engine.inspection_ready.emit(InspectionReady(fill.engine.sent[-1].request_id, INSPECTION))
    assert fill.chips.tokens == INSPECTION.src_tokens and shown == [INSPECTION]
    assert fill.message.text().startswith("No <mask> in the sentence")
    fill._on_chip(0)  # <bos> and <eos> frame the sentence: never masked
    fill._on_chip(4)
    assert len(fill.engine.sent) == 1
    fill._on_chip(2)
    assert asked(fill)[-1] == ("fill", "the cat sat", (2,))
    fill._on_chip(2)  # again: unmasked, nothing masked left, so its tokens are asked for
    assert asked(fill)[-1] == ("tokens", "the cat sat", ())


def test_each_masked_position_gets_a_chart_saying_where_the_original_ranks(fill):
    view = fill_view(
        [
            MaskPrediction(1, ["the", "a"], [0.7, 0.2], original="the"),
            MaskPrediction(2, ["dog", "cat"], [0.5, 0.3]),
            MaskPrediction(3, ["ran", "sat"], [0.6, 0.3], original="sat"),
            MaskPrediction(4, ["x", "y"], [0.4, 0.1], original="z"),
        ]
    )
    fill.show_view(view)
    charts = fill.charts[:4]
    assert [c.title.text() for c in charts] == [
        "Position 1: was “the”",
        "Position 2: <mask> as written",
        "Position 3: was “sat”",
        "Position 4: was “z”",
    ]
    assert [c.note.text() for c in charts] == [
        "The original “the” is the model's first guess.",
        "Written as <mask>: there is no original to compare with.",
        "The original “sat” is the model's guess number 2.",
        "The original “z” is not among the model's 2 guesses.",
    ]
    assert [c.chosen for c in charts] == [{0}, set(), {1}, set()]  # the original's bar highlighted
    np.testing.assert_allclose(charts[2].probs, [0.6, 0.3])
    positions = [fill.grid.getItemPosition(fill.grid.indexOf(c))[:2] for c in charts]
    assert positions == [(i // CHART_COLUMNS, i % CHART_COLUMNS) for i in range(4)]
    assert fill.masked == {1, 3, 4} and fill.chips.marked == {1, 2, 3, 4}  # clicked ones; every mask marked
    fill.show_view(fill_view([MaskPrediction(2, ["dog"], [0.9])]))  # one mask now: one chart shown
    assert [c.isHidden() for c in fill.charts] == [False, True, True, True]


def test_a_typed_mask_is_unmasked_only_in_the_sentence(fill):
    fill.show_view(fill_view([MaskPrediction(2, ["dog"], [0.9])]))
    fill._on_chip(2)
    assert fill.message.text() == "This <mask> is written in the sentence: delete it there to unmask it."
    assert fill.engine.sent == []


def test_only_the_newest_requests_answer_or_refusal_is_shown(fill):
    fill.input.setText("the <mask> sat")
    fill.ask()
    first = fill.engine.sent[-1].request_id
    fill.ask()
    newest = fill.engine.sent[-1].request_id
    fill.engine.mask_filled.emit(MaskFilled(first, fill_view([MaskPrediction(2, ["old"], [0.9])])))
    assert fill.view is None  # an older request's answer
    fill.engine.engine_failed.emit(first, "refused")
    assert fill.message.isHidden()
    fill.engine.mask_filled.emit(MaskFilled(newest, fill_view([MaskPrediction(2, ["new"], [0.9])])))
    assert fill.view.predictions[0].tokens == ["new"] and fill.charts[0].tokens == ["new"]
    fill.ask()
    fill.engine.engine_failed.emit(fill.engine.sent[-1].request_id, "the model cannot read this")
    assert fill.message.text() == "the model cannot read this" and fill.pending is None


def test_a_random_sentence_to_fill_gets_one_of_its_pieces_masked(fill):
    fill.rng.seed(3)
    fill.take_sentence("the cat sat", fill=True)
    assert asked(fill) == [("tokens", "the cat sat", ())]
    fill.engine.inspection_ready.emit(InspectionReady(fill.engine.sent[-1].request_id, INSPECTION))
    kind, text, positions = asked(fill)[-1]
    assert (kind, text) == ("fill", "the cat sat") and len(positions) == 1 and 1 <= positions[0] <= 3


def test_a_models_own_mask_piece_masks_too_and_is_named(fill):
    family = SimpleNamespace(decoding=("fill_mask",))
    fill.on_run(SimpleNamespace(mask_token="[MASK]", model_config=SimpleNamespace(family=family)), new_model=True)
    assert fill.has_mask("the [MASK] sat") and fill.has_mask("the <mask> sat") and not fill.has_mask("the sat")
    assert "[MASK]" in fill.input.placeholderText()
    fill.input.setText("the [MASK] sat")
    fill.ask()
    assert asked(fill) == [("fill", "the [MASK] sat", ())]


def test_an_edited_sentence_marks_what_is_shown_as_the_previous_ones(qtbot, fill):
    fill.input.setText("the <mask> sat")
    fill.show_view(fill_view([MaskPrediction(2, ["dog"], [0.9])]))
    edited = []
    fill.sentence_edited.connect(edited.append)
    qtbot.keyClicks(fill.input, "!")
    assert edited == [True] and fill.chips.faded and fill.masked == set()
    qtbot.keyClick(fill.input, Qt.Key.Key_Backspace)  # typed back to the sentence shown
    assert edited == [True, False] and not fill.chips.faded
