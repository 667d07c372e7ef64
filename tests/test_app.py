"""The application (explorer/app.py): its command line, the window it opens (driven offscreen with pytest-qt) and the
checkpoints macOS hands it."""

import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QImage  # noqa: E402
from PySide6.QtWidgets import QApplication, QComboBox, QWidget  # noqa: E402

from explorer import dialogs  # noqa: E402
from tests.copy_task_window import click, small_copy_task, train_steps  # noqa: E402

OBJECT_NAMES = [
    "main_window",
    "task_combo",
    "preset_combo",
    "train_start_button",
    "train_pause_button",
    "train_stop_button",
    "train_reset_button",
    "loss_plot",
    "lr_plot",
]


def test_window_has_its_panels_and_names(make_window, qtbot):
    window = make_window(start_default=True)
    for name in OBJECT_NAMES:
        assert window.objectName() == name or window.findChild(QWidget, name) is not None, name
    assert {d.objectName() for d in window.docks.values()} == {
        "training_dock",
        "decoding_dock",
        "attention_dock",
        "positional_dock",
        "model_dock",
        "data_dock",
        "map_dock",
        "why_dock",
        "lanes_dock",
        "experiment_dock",
    }
    qtbot.waitUntil(lambda: window.training.current is not None, timeout=10000)
    assert window.device_label.text() == "CPU"
    assert "Parameters" in window.model_panel.summary.text()
    assert window.model_panel.table.rowCount() >= 5
    qtbot.waitUntil(lambda: bool(window.data_panel.strips), timeout=10000)  # described after the first screen
    assert window.data_panel.strips[0][0].tokens  # tokenised samples
    for name in (
        "decode_input",
        "decode_mode_combo",
        "beam_size_spin",
        "decode_step_button",
        "decode_back_button",
        "decode_run_button",
        "decode_reset_button",
        "decode_output",
        "candidates_plot",
        "beam_tree_view",
        "attention_kind_combo",
        "attention_layer_spin",
        "attention_head_spin",
        "attention_heatmap",
        "attention_timeline_slider",
        "pe_plot",
    ):
        assert window.findChild(QWidget, name) is not None, name


def test_invalid_settings_are_refused_in_the_form(make_window, qtbot):
    window = make_window()
    form = window.training.form
    form.d_model.setValue(64)
    form.heads.setValue(7)
    assert form.error_label.isVisible() or form.error_label.text()
    assert "divisible by n_heads" in form.error_label.text()
    assert not window.training.start_button.isEnabled()
    form.heads.setValue(8)
    assert form.error_label.text() == "" and window.training.start_button.isEnabled()
    form.positional.setCurrentText("rope")
    form.d_model.setValue(72)
    form.heads.setValue(8)  # head size 9: odd
    assert "must be even" in form.error_label.text()


def test_changing_the_architecture_of_a_trained_model_asks(make_window, qtbot, monkeypatch):
    window = make_window()
    small_copy_task(window)
    train_steps(window, qtbot, 10)
    first_run = window.status.run_id
    window.training.form.norm.setCurrentText("pre")
    asked = []
    monkeypatch.setattr(dialogs, "ask", lambda *a: asked.append(a[2]) or dialogs.CANCEL)
    click(qtbot, window, "train_step_button")
    qtbot.wait(300)
    assert asked and window.status.run_id == first_run and window.status.step == 10
    monkeypatch.setattr(dialogs, "ask", lambda *a: dialogs.DISCARD)
    click(qtbot, window, "train_step_button")
    qtbot.waitUntil(lambda: window.status.run_id == first_run + 1 and window.status.step == 1, timeout=20000)
    assert window.training.run_list.count() == 2
    assert "pre-LN" in window.training.current.label
    # the earlier run can be overlaid on the plots
    earlier = window.training.run_list.item(1)
    earlier.setCheckState(Qt.Checked)
    window.training.redraw()
    assert len(window.training.plots["loss_plot"].shown(first_run, "train")[0]) == 10


def test_plot_exports_are_readable(make_window, qtbot, tmp_path):
    window = make_window()
    small_copy_task(window)
    train_steps(window, qtbot, 10)
    window.training.redraw()
    plot = window.training.plots["loss_plot"]
    plot.export(tmp_path / "loss.png")
    plot.export(tmp_path / "loss.svg")
    plot.export(tmp_path / "loss.csv")
    image = QImage(str(tmp_path / "loss.png"))
    assert not image.isNull() and image.width() >= 400
    assert ET.parse(tmp_path / "loss.svg").getroot().tag.endswith("svg")
    rows = (tmp_path / "loss.csv").read_text().splitlines()
    assert rows[0] == "run,series,step,value" and len(rows) == 11
    assert float(rows[1].split(",")[3]) == pytest.approx(plot.data(window.status.run_id, "train")[1][0])
    with pytest.raises(ValueError, match="use .png, .svg or .csv"):
        plot.export(tmp_path / "loss.bmp")


def test_closing_mid_training_autosaves_joins_and_offers_restore(make_window, qtbot):
    window = make_window()
    small_copy_task(window)
    click(qtbot, window, "train_start_button")
    qtbot.waitUntil(lambda: window.status.step > 5, timeout=20000)
    t0 = time.perf_counter()
    window.close()
    assert window.engine.isFinished() and time.perf_counter() - t0 < 2.0
    autosave = window.autosave_path
    assert autosave.exists()

    again = make_window()  # same data folder: the banner offers the work back, without blocking
    assert again.message_bar.showing and "Restore" in [b.text() for b in again.message_bar.buttons]
    restore = next(b for b in again.message_bar.buttons if b.text() == "Restore")
    qtbot.mouseClick(restore, Qt.LeftButton)
    qtbot.waitUntil(lambda: again.status.step > 5, timeout=15000)
    assert again.status.dirty  # restored work is still unsaved
    qtbot.waitUntil(lambda: not autosave.exists(), timeout=5000)


def test_layout_is_saved_and_restored(make_window, qtbot):
    window = make_window()
    window.docks["data"].hide()
    window.close()
    again = make_window()
    assert not again.docks["data"].isVisible() and again.docks["data"].isHidden()
    again.reset_layout()
    assert not again.docks["data"].isHidden()
    assert again.findChild(QComboBox, "task_combo") is not None


def test_command_line_help():
    out = subprocess.run([sys.executable, "main.py", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for option in ("checkpoint", "--device", "--lang", "--open"):
        assert option in out.stdout


def test_switching_language_keeps_the_settings(make_window):
    window = make_window()
    form = window.training.form
    form.rate.setValue(2.5)
    form.warmup.setValue(123)
    window.set_language("zh")
    window.set_language("en")
    assert form.rate.value() == 2.5 and form.warmup.value() == 123
    assert form.spec().train.noam_factor == 2.5


def test_the_command_line_takes_a_run_to_follow(tmp_path):
    from explorer.app import parse_args

    args = parse_args(["--follow", str(tmp_path)])
    assert args.follow == str(tmp_path) and args.checkpoint is None


def test_a_file_open_event_opens_the_checkpoint(make_window, qtbot, tmp_path, copy_session_factory):
    """How macOS hands over a double-clicked checkpoint."""
    from PySide6.QtGui import QFileOpenEvent

    from explorer.app import FileOpenForwarder

    path = tmp_path / "opened.ckpt"
    session = copy_session_factory()
    session.train_steps(4)
    session.save(path)
    window = make_window()
    forwarder = FileOpenForwarder(window)
    assert forwarder.eventFilter(QApplication.instance(), QFileOpenEvent(str(path)))
    qtbot.waitUntil(lambda: window.status.path == str(path) and window.status.step == 4, timeout=15000)
    assert not forwarder.eventFilter(QApplication.instance(), QFileOpenEvent(str(tmp_path / "notes.txt")))
