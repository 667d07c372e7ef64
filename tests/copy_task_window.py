"""What the window tests do as a person does it: point the Training panel at a quick copy task, click a button, step N
updates and wait for them, count the steps the loss plot holds."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton


def small_copy_task(window):
    """Point the form at a quick task (copy, tiny preset, short evaluation interval)."""
    form = window.training.form
    form.task_combo.setCurrentIndex(form.task_combo.findData("copy"))
    form.preset_combo.setCurrentText("tiny")
    form.eval_every.setValue(25)


def steps_in_plot(window, run=None):
    plot = window.training.plots["loss_plot"]
    run = run or window.status.run_id
    return len(plot.data(run, "train")[0])


def train_steps(window, qtbot, n):
    """Step N in the window and wait until the engine has done the N updates and paused."""
    window.training.step_n.setValue(n)
    click(qtbot, window, "train_step_n_button")
    qtbot.waitUntil(lambda: window.status.step == n and window.status.state == "paused", timeout=30000)


def click(qtbot, window, name):
    button = window.findChild(QPushButton, name)
    assert button.isEnabled(), f"{name} is disabled"
    qtbot.mouseClick(button, Qt.LeftButton)
