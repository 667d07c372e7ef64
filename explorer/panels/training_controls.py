"""The training panel's controls: Start · Pause · Stop · Reset, Step 1 and Step N, Train from scratch, the
auto-pause (at a step, or once the loss is low enough) and how the plots are drawn (smoothing, log scale).

The widgets only: the panel connects them to its commands (see ``TrainingPanel._connect_controls``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QPushButton, QSlider, QWidget

from explorer.answers import ERROR, PAUSED, TRAINING
from explorer.i18n import tr
from explorer.panels.settings_form import float_spin, int_spin
from explorer.widgets import named


def row_of(*widgets: QWidget) -> QHBoxLayout:
    """The widgets side by side, from the left."""
    row = QHBoxLayout()
    for w in widgets:
        row.addWidget(w)
    row.addStretch(1)
    return row


def scratch_tip(training: bool, valid: bool) -> str:
    """What *Train from scratch* does, or why it is greyed."""
    if training:
        return tr("Pause or stop the training first: Train from scratch replaces the model being trained")
    if not valid:
        return tr("The settings on the left cannot work yet: see the message under them")
    return tr("A fresh model with the settings on the left, training at once")


class TrainingControls:
    """The buttons, Step N, the auto-pause and the plots' smoothing, in rows (:attr:`rows`): the first
    Start · Pause · Stop · Reset, then Step 1 · Step N, the plots' view, and the auto-pause."""

    def __init__(self) -> None:
        self.start_button = named(QPushButton(), "train_start_button")
        self.pause_button = named(QPushButton(), "train_pause_button")
        self.stop_button = named(QPushButton(), "train_stop_button")
        self.reset_button = named(QPushButton(), "train_reset_button")
        self.step_button = named(QPushButton(), "train_step_button")
        self.step_n_button = named(QPushButton(), "train_step_n_button")
        self.scratch_button = named(QPushButton(), "train_from_scratch_button")
        self.step_n = int_spin(1, 1000000, 10)
        self.step_n.setValue(100)
        # presenting: stop by itself at a chosen step, or once the loss is low enough
        self.pause_at_label = QLabel()
        self.pause_at_step = int_spin(0, 10_000_000, 100)
        self.pause_at_step.setObjectName("train_pause_at_step")
        self.pause_at_loss = float_spin(0.0, 100.0, 0.1, 3)
        self.pause_at_loss.setObjectName("train_pause_at_loss")
        self.pause_at_or = QLabel()
        self.smooth_label = QLabel()
        self.smooth_slider = named(QSlider(Qt.Orientation.Horizontal), "smoothing_slider")
        self.smooth_slider.setRange(0, 99)
        self.smooth_slider.setValue(60)
        self.smooth_slider.setMaximumWidth(160)
        self.smooth_value = QLabel("0.60")
        self.log_check = named(QCheckBox(), "log_scale_check")
        self.rows = [
            row_of(self.start_button, self.pause_button, self.stop_button, self.reset_button),
            row_of(self.step_button, self.step_n_button, self.step_n),
            row_of(self.smooth_label, self.smooth_slider, self.smooth_value, self.log_check),
            row_of(self.pause_at_label, self.pause_at_step, self.pause_at_or, self.pause_at_loss),
        ]

    def show_smoothing(self, value: int) -> None:
        """The slider's value (0–99) as the smoothing weight beside it."""
        self.smooth_value.setText(f"{value / 100:.2f}")

    def update_buttons(self, state: str, valid: bool, has_run: bool) -> None:
        """Enabled as the engine's ``state`` allows, the settings being ``valid`` and a run being there
        (``has_run``) do; greyed Train from scratch says why."""
        training = state == TRAINING
        self.start_button.setEnabled(valid and not training)
        self.step_button.setEnabled(valid and not training)
        self.step_n_button.setEnabled(valid and not training)
        self.pause_button.setEnabled(state in (TRAINING, PAUSED, ERROR))
        self.pause_button.setText(tr("Resume") if state in (PAUSED, ERROR) else tr("Pause"))
        self.stop_button.setEnabled(state in (TRAINING, PAUSED, ERROR))
        self.reset_button.setEnabled(valid and has_run)
        self.scratch_button.setEnabled(valid and not training)
        self.scratch_button.setToolTip(scratch_tip(training, valid))  # greyed: says why

    def retranslate(self) -> None:
        self.start_button.setText(tr("Start"))
        self.stop_button.setText(tr("Stop"))
        self.reset_button.setText(tr("Reset"))
        self.step_button.setText(tr("Step 1"))
        self.scratch_button.setText(tr("Train from scratch"))
        self.step_n_button.setText(tr("Step N"))
        self.step_n.setToolTip(tr("N: how many updates Step N does"))
        self.smooth_label.setText(tr("Smoothing"))
        self.pause_at_label.setText(tr("Pause at step"))
        self.pause_at_or.setText(tr("or at loss ≤"))
        self.pause_at_step.setSpecialValueText(tr("off"))
        self.pause_at_loss.setSpecialValueText(tr("off"))
        self.log_check.setText(tr("Log scale"))
        self.start_button.setToolTip(tr("Train until paused or stopped (a new model if the settings need one)"))
        self.reset_button.setToolTip(
            tr("Start over with fresh weights and the settings on the left; this run stays in the list")
        )
