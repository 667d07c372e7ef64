"""The application window, driven offscreen with pytest-qt."""

import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QImage  # noqa: E402
from PySide6.QtWidgets import QComboBox, QPushButton, QWidget  # noqa: E402

from explorer import dialogs  # noqa: E402
from explorer.commands import Decode, FailOnPurpose, Inspect  # noqa: E402

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


def test_train_pause_resume_stop(make_window, qtbot):
    window = make_window()
    small_copy_task(window)
    click(qtbot, window, "train_start_button")
    qtbot.waitUntil(lambda: steps_in_plot(window) >= 5, timeout=20000)
    assert window.status.state == "training" and window.state_label.text() == "training"
    seen = steps_in_plot(window)
    qtbot.waitUntil(lambda: steps_in_plot(window) > seen + 5, timeout=10000)  # the curve keeps growing
    window.training.redraw()
    x, y = window.training.plots["loss_plot"].shown(window.status.run_id, "train")
    assert len(x) > seen and (y > 0).all()

    click(qtbot, window, "train_pause_button")
    qtbot.waitUntil(lambda: window.status.state == "paused", timeout=5000)
    paused_at = window.status.step
    qtbot.wait(500)
    assert window.status.step == paused_at and steps_in_plot(window) == paused_at  # nothing arrives while paused
    assert window.training.pause_button.text() == "Resume"

    click(qtbot, window, "train_pause_button")  # Resume
    qtbot.waitUntil(lambda: window.status.step > paused_at + 3, timeout=10000)
    click(qtbot, window, "train_stop_button")
    qtbot.waitUntil(lambda: window.status.state == "idle", timeout=5000)
    stopped_at = window.status.step
    qtbot.wait(300)
    assert window.status.step == stopped_at
    assert window.loss_label.text().startswith("loss ")


def test_step_n_and_evaluation_points(make_window, qtbot):
    window = make_window()
    small_copy_task(window)
    train_steps(window, qtbot, 50)
    qtbot.wait(200)
    run = window.status.run_id
    assert steps_in_plot(window) == 50
    evals_x, _ = window.training.plots["loss_plot"].data(run, "valid")
    assert list(evals_x) == [25, 50]
    em_x, em_y = window.training.plots["quality_plot"].data(run, "exact_match")
    assert list(em_x) == [25, 50] and all(0 <= v <= 100 for v in em_y)
    sched_x, sched_y = window.training.plots["lr_plot"].data(run, "schedule")
    assert len(sched_x) >= 2000  # drawn ahead of time
    used_x, used_y = window.training.plots["lr_plot"].data(run, "lr")
    assert used_y == pytest.approx(sched_y[:50])
    assert window.training.step_marker.value() == 50


def test_save_then_open_in_a_fresh_window(make_window, qtbot, tmp_path, monkeypatch):
    window = make_window()
    small_copy_task(window)
    train_steps(window, qtbot, 30)
    path = tmp_path / "saved.ckpt"
    monkeypatch.setattr("explorer.model_files.QFileDialog.getSaveFileName", lambda *a, **k: (str(path), ""))
    with qtbot.waitSignal(window.engine.saved, timeout=10000):
        window.save()
    assert path.exists() and not window.status.dirty
    assert window.recent_files()[0] == str(path.resolve())
    losses = window.training.plots["loss_plot"].data(window.status.run_id, "train")[1]

    fresh = make_window(open_path=str(path), settings_name="other.ini")
    qtbot.waitUntil(lambda: fresh.training.current is not None and fresh.status.step == 30, timeout=15000)
    again = fresh.training.plots["loss_plot"].data(fresh.status.run_id, "train")[1]
    assert list(again) == pytest.approx(list(losses))
    assert fresh.windowTitle().startswith("saved.ckpt")
    assert fresh.training.form.task_combo.currentData() == "copy"


def test_engine_error_becomes_a_message_and_the_window_survives(make_window, qtbot):
    window = make_window()
    small_copy_task(window)
    click(qtbot, window, "train_start_button")
    qtbot.waitUntil(lambda: window.status.step > 3, timeout=20000)
    window.engine.submit(FailOnPurpose(message="simulated failure", in_training=True))
    qtbot.waitUntil(lambda: window.message_bar.showing, timeout=5000)
    assert "simulated failure" in window.message_bar.label.text()
    assert "nothing was lost" in window.message_bar.label.text()
    qtbot.waitUntil(lambda: window.status.state == "error", timeout=5000)
    step = window.status.step
    click(qtbot, window, "train_pause_button")  # "Resume" after an error
    qtbot.waitUntil(lambda: window.status.step > step + 3, timeout=10000)
    click(qtbot, window, "train_stop_button")


def test_a_diverging_run_is_stopped_with_advice(make_window, qtbot):
    window = make_window()
    small_copy_task(window)
    form = window.training.form
    form.schedule.setCurrentText("constant")
    form.warmup.setValue(0)
    form.rate.setValue(100.0)
    form.clip.setValue(0.0)
    click(qtbot, window, "train_start_button")
    qtbot.waitUntil(lambda: window.message_bar.showing, timeout=30000)
    text = window.message_bar.label.text()
    assert "Training stopped at step" in text and "learning rate" in text
    assert window.status.state == "error"
    qtbot.wait(200)
    shown, _ = window.training.plots["loss_plot"].data(window.training.current.run_id, "train")
    assert len(shown) == 0 or shown[-1] <= window.status.step  # the curve ends where the kept weights are


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


def test_unsaved_work_prompts_before_it_is_discarded(make_window, qtbot, monkeypatch):
    window = make_window()
    small_copy_task(window)
    train_steps(window, qtbot, 5)
    asked = []
    monkeypatch.setattr(dialogs, "ask", lambda *a: asked.append(a[3]) or dialogs.CANCEL)
    window.new_model()
    qtbot.wait(200)
    assert asked and dialogs.SAVE in asked[0] and window.status.step == 5


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


def test_view_requests_during_training_use_current_weights(make_window, qtbot):
    from model.io.snapshots import DecodeSettings

    window = make_window()
    small_copy_task(window)
    click(qtbot, window, "train_start_button")
    qtbot.waitUntil(lambda: window.status.step > 5, timeout=20000)
    engine = window.engine
    with qtbot.waitSignal(engine.inspection_ready, timeout=5000) as got:
        before = engine.session.step
        rid = engine.submit(Inspect(source="1 2 3"))
    answered, inspection = got.args[0].request_id, got.args[0].inspection
    assert answered == rid and 0 <= inspection.step - before <= 1  # answered within one step
    assert inspection.cross.shape[-1] == 4 and inspection.teacher_forced is False
    with qtbot.waitSignal(engine.decode_stepped, timeout=5000) as got:
        before = engine.session.step
        engine.submit(Decode(action="start", settings=DecodeSettings("1 2 3")))
    view = got.args[0].view
    assert 0 <= view.weights_step - before <= 1 and view.position == 0
    with qtbot.waitSignal(engine.decode_stepped, timeout=5000) as got:
        engine.submit(Decode(action="step"))
    assert got.args[0].view.position == 1 and window.status.state == "training"
    click(qtbot, window, "train_stop_button")


def test_switching_language_keeps_the_settings(make_window):
    window = make_window()
    form = window.training.form
    form.rate.setValue(2.5)
    form.warmup.setValue(123)
    window.set_language("zh")
    window.set_language("en")
    assert form.rate.value() == 2.5 and form.warmup.value() == 123
    assert form.spec().train.noam_factor == 2.5


def test_step_n_paused_and_resumed_still_stops_after_n(make_window, qtbot):
    window = make_window()
    small_copy_task(window)
    window.training.step_n.setValue(40)
    click(qtbot, window, "train_step_n_button")
    qtbot.waitUntil(lambda: window.status.step >= 5, timeout=20000)
    click(qtbot, window, "train_pause_button")
    qtbot.waitUntil(lambda: window.status.state == "paused", timeout=5000)
    assert window.status.step < 40
    click(qtbot, window, "train_pause_button")  # Resume: the unfinished Step 40 goes on…
    qtbot.waitUntil(lambda: window.status.state == "paused" and window.status.step == 40, timeout=30000)
    qtbot.wait(300)
    assert window.status.step == 40  # …and stops at 40


def test_the_bundled_model_is_never_the_file_save_writes(make_window, qtbot):
    from resources import default_model

    window = make_window(start_default=True)
    qtbot.waitUntil(lambda: window.training.current is not None and window.status.run_id == 1, timeout=20000)
    assert window.status.path is None and str(default_model()) not in window.recent_files()
    # named as what it is, not as a file (Save asks where to write it)
    assert "the bundled model" in window.windowTitle() and ".ckpt" not in window.windowTitle()
