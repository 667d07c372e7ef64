"""What the window says about itself on a 1366×768 laptop: while the bundled model is being read, after the welcome has
done its work, and while it follows a run that another process writes (its state and step, and its end)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QLabel  # noqa: E402

from explorer.commands import Pause, Start  # noqa: E402
from explorer.main_window import MainWindow  # noqa: E402
from model.cli import train  # noqa: E402
from model.data import DataSpec  # noqa: E402
from model.session import Session  # noqa: E402
from model.training.trainer import TrainConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHROME = 70  # a window title bar and a taskbar


def laptop(make_window, qtbot, monkeypatch, start_default=True):
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (1366, 768)))
    window = make_window(start_default=start_default)
    window.show()
    window.setWindowState(Qt.WindowState.WindowNoState)
    window.resize(1366, 768 - CHROME)
    return window


def cover_of(panel) -> QLabel | None:
    return panel.findChild(QLabel, "loading_cover")


def test_while_the_bundled_model_is_read_the_views_say_so(make_window, qtbot, monkeypatch):
    window = laptop(make_window, qtbot, monkeypatch)
    assert window.training.current is None  # (not open yet)
    for panel in (window.decoding, window.attention):  # the two views on screen: no bare axes, no empty frames
        cover = cover_of(panel)
        assert cover is not None and cover.isVisible() and cover.text() == "Loading the bundled model…"
        assert cover.geometry() == panel.rect()
    assert window.note_label.text() == "Loading the bundled model…"
    assert "…" not in window.device_label.text()  # not a bare "…" for the device
    qtbot.waitUntil(lambda: window.decoding.view is not None, timeout=20000)
    assert not cover_of(window.decoding).isVisible() and not cover_of(window.attention).isVisible()
    assert window.note_label.text() != "Loading the bundled model…"


def test_the_welcome_goes_once_training_runs_however_it_was_started(make_window, qtbot, monkeypatch):
    window = laptop(make_window, qtbot, monkeypatch)
    qtbot.waitUntil(lambda: window.decoding.view is not None, timeout=20000)
    bar = window.message_bar
    assert bar.showing and bar.kind == "welcome"
    window.engine.submit(Start())  # (a key, a script: not the Training panel's button)
    qtbot.waitUntil(lambda: window.status.state == "training", timeout=20000)
    window.engine.submit(Pause())
    qtbot.waitUntil(lambda: window.status.state == "paused", timeout=20000)
    assert not bar.showing


def test_the_training_from_scratch_note_goes_at_pause(make_window, qtbot, monkeypatch):
    window = laptop(make_window, qtbot, monkeypatch)
    qtbot.waitUntil(lambda: window.decoding.view is not None, timeout=20000)
    form = window.training.form
    form.task_combo.setCurrentIndex(form.task_combo.findData("copy"))
    form.preset_combo.setCurrentText("tiny")
    bar = window.message_bar
    [scratch] = [b for b in bar.buttons if b.text() == "Train from scratch"]
    scratch.click()  # the welcome's own button
    qtbot.waitUntil(lambda: window.status.state == "training", timeout=20000)
    assert bar.showing and "training from scratch" in bar.label.text()
    window.training.pause_button.click()
    qtbot.waitUntil(lambda: window.status.state == "paused", timeout=20000)
    assert not bar.showing  # "is training" is no longer true
    assert window.menu_actions["open_bundled"].isEnabled()  # the way back stays in the File menu


def test_the_docs_say_what_the_first_launch_shows():
    """The user guide (where the README's *Ready at once* moved) says so; no page says the opposite."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    every_page = " ".join(" ".join(page.read_text(encoding="utf-8").split()) for page in pages)
    guide = " ".join((ROOT / "docs" / "user-guide.md").read_text(encoding="utf-8").split())
    assert "Step ▶ writes its first token" not in every_page  # it opens with the first token already written
    assert "at its first step" in guide and "Step ▶ writes the next" in guide


def record(step: int) -> str:
    numbers = {"time": step / 10, "loss": 5.0 - step / 100, "lr": 1e-3, "token_accuracy": 0.1, "grad_norm": 1.0}
    return json.dumps({"step": step, **numbers, "tokens_per_s": 1000.0})


def test_the_trainer_notes_in_its_last_checkpoint_that_the_run_ended(tmp_path):
    out = tmp_path / "run"
    task = ["--task", "copy", "--length", "5", "--n-train", "500", "--preset", "tiny", "--eval-sentences", "4"]
    quick = ["--device", "cpu", "--threads", "1", "--eval-every", "0"]
    assert train.main([*task, *quick, "--steps", "3", "--out", str(out)]) == 0
    assert Session.load(out / "model.ckpt", device="cpu").notes["ended"] == {"step": 3, "how": "finished"}
    assert train.main(["--resume", str(out / "model.ckpt"), "--steps", "5", "--out", str(out), *quick]) == 0
    assert Session.load(out / "model.ckpt", device="cpu").notes["ended"] == {"step": 5, "how": "finished"}


def test_a_followed_run_has_its_own_state_and_step_and_its_end_is_announced(make_window, qtbot, monkeypatch, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    session = Session.create(DataSpec(task="copy", n_train=300), "tiny", TrainConfig(batch_size=16, eval_every=0))
    session.train_steps(3)
    session.save(run / "model.ckpt")
    (run / "metrics.jsonl").write_text("".join(record(s) + "\n" for s in range(1, 6)), encoding="utf-8")
    window = laptop(make_window, qtbot, monkeypatch, start_default=False)
    window.follow_run(str(run))
    qtbot.waitUntil(lambda: window.training.current is not None, timeout=30000)
    qtbot.waitUntil(lambda: window.step_label.text() == "step 5", timeout=30000)
    # the run's state and step (its log is at step 5), not the engine's (idle, at the checkpoint's step 3)
    assert window.state_label.text() == "following" and "idle" not in window.state_label.text()
    assert "Following run" in window.note_label.text() and not window.message_bar.showing
    monkeypatch.setattr("explorer.status_row.QUIET_S", 1.0)
    qtbot.waitUntil(lambda: "has the run stopped?" in window.note_label.text(), timeout=10000)
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as log:  # the trainer's last lines and its last save
        log.write(record(6) + "\n")
    from model.io.follow import ending_note

    session.train_steps(3)
    session.notes["ended"] = ending_note(session.step, 0)
    session.save(run / "model.ckpt")
    qtbot.waitUntil(lambda: window.message_bar.showing, timeout=30000)
    said = window.message_bar.label.text()
    assert "The run in run has ended at step 6 (finished)" in said, said
    assert window.state_label.text() == "run ended" and window.step_label.text() == "step 6"
    assert "the run ended" in window.note_label.text()
    assert window.state_label.fontMetrics().horizontalAdvance("run ended") <= window.state_label.contentsRect().width()
