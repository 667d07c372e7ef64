"""The training panel's controls (explorer/panels/training_controls.py): the buttons enabled as the engine's state
allows, what a greyed Train from scratch says, the smoothing weight beside its slider, and the rows they sit in."""

import pytest

pytest.importorskip("pytestqt")

from explorer.panels.training_controls import TrainingControls, row_of, scratch_tip  # noqa: E402


@pytest.mark.parametrize(
    "state, valid, has_run, enabled, pause_text",
    [
        ("idle", True, False, {"start", "step", "step_n", "scratch"}, "Pause"),
        ("idle", True, True, {"start", "step", "step_n", "scratch", "reset"}, "Pause"),
        ("training", True, True, {"pause", "stop", "reset"}, "Pause"),
        ("paused", True, True, {"start", "step", "step_n", "scratch", "reset", "pause", "stop"}, "Resume"),
        ("error", False, True, {"pause", "stop"}, "Resume"),
    ],
)
def test_the_controls_are_enabled_as_the_engine_state_allows(
    qtbot, english, state, valid, has_run, enabled, pause_text
):
    from explorer.panels.training_controls import TrainingControls

    controls = TrainingControls()
    controls.retranslate()
    controls.update_buttons(state, valid, has_run)
    buttons = ("start", "step", "step_n", "scratch", "reset", "pause", "stop")
    assert {b for b in buttons if getattr(controls, f"{b}_button").isEnabled()} == enabled
    assert controls.pause_button.text() == pause_text
    if not valid:
        assert "settings on the left cannot work" in controls.scratch_button.toolTip()  # greyed: says why


def test_train_from_scratch_says_what_it_does_or_why_it_is_greyed(english):
    assert scratch_tip(training=True, valid=True).startswith("Pause or stop the training first")
    assert scratch_tip(training=True, valid=False).startswith("Pause or stop the training first")  # first things first
    assert "cannot work yet" in scratch_tip(training=False, valid=False)
    assert scratch_tip(training=False, valid=True) == "A fresh model with the settings on the left, training at once"


def test_the_smoothing_weight_is_the_sliders_value_in_hundredths(qtbot):
    controls = TrainingControls()
    assert controls.smooth_slider.value() == 60 and controls.smooth_value.text() == "0.60"
    for value, text in ((0, "0.00"), (7, "0.07"), (99, "0.99")):
        controls.show_smoothing(value)
        assert controls.smooth_value.text() == text


def test_the_rows_hold_the_controls_from_the_left(qtbot):
    from PySide6.QtWidgets import QLabel

    widgets = [QLabel(str(i)) for i in range(3)]
    row = row_of(*widgets)
    assert [row.itemAt(i).widget() for i in range(3)] == widgets
    assert row.count() == 4 and row.itemAt(3).spacerItem() is not None  # the stretch after them
    controls = TrainingControls()
    first = controls.rows[0]
    buttons = [controls.start_button, controls.pause_button, controls.stop_button, controls.reset_button]
    assert [first.itemAt(i).widget() for i in range(4)] == buttons
