"""What the person does wins over what the program does on its own at start-up."""

import time

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from explorer.answers import TRAINING  # noqa: E402
from explorer.commands import Load, NewModel  # noqa: E402
from explorer.samples import SAMPLES  # noqa: E402
from resources import default_model  # noqa: E402

pytestmark = pytest.mark.skipif(default_model() is None, reason="the bundled model is missing")


def _choose_copy_tiny(window) -> None:
    form = window.training.form
    form.task_combo.setCurrentIndex(form.task_combo.findData("copy"))
    form.preset_combo.setCurrentText("tiny")


def _settle(qtbot, window, seconds: float = 1.5) -> None:
    """Let every queued command and answer go through (the engine has nothing left to do)."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        qtbot.wait(50)


def _assert_the_persons_run_trains(window) -> None:
    current = window.training.current
    assert current is not None and current.data.task == "copy" and current.preset == "tiny"
    assert window.status.run_id == current.run_id and window.status.state == TRAINING
    ticked = [window.training.run_list.item(i) for i in range(window.training.run_list.count())]
    checked = [i.data(Qt.UserRole) for i in ticked if i.checkState() == Qt.Checked]
    assert current.run_id in checked
    # the bundled model's first-launch show never lands on the person's model
    assert window.decoding.input.text() != SAMPLES["grammar-en-zh"]
    assert not window.message_bar.showing or "Welcome" not in window.message_bar.label.text()


def test_start_before_the_bundled_model_is_even_asked_for(make_window, qtbot):
    window = make_window(start_default=True)  # the bundled load is asked for once the event loop runs
    _choose_copy_tiny(window)
    window.training.start_button.click()
    qtbot.waitUntil(lambda: window.status.state == TRAINING and window.training.current is not None, timeout=20000)
    _settle(qtbot, window)
    _assert_the_persons_run_trains(window)
    assert all(info.data.task != "grammar-en-zh" for info in window.training.runs.values())


def test_start_while_the_bundled_model_loads(make_window, qtbot):
    window = make_window(start_default=True)
    qtbot.waitUntil(lambda: window.first_launch.auto_load is not None, timeout=5000)  # asked for, not yet answered
    _choose_copy_tiny(window)
    window.training.start_button.click()
    qtbot.waitUntil(
        lambda: window.training.current is not None and window.training.current.data.task == "copy", timeout=20000
    )
    qtbot.waitUntil(lambda: window.status.state == TRAINING, timeout=20000)
    _settle(qtbot, window)
    _assert_the_persons_run_trains(window)


def test_settings_edited_while_the_bundled_model_loads_are_kept(make_window, qtbot):
    window = make_window(start_default=True)
    form = window.training.form
    qtbot.waitUntil(lambda: window.first_launch.auto_load is not None, timeout=5000)
    form.d_model.setValue(96)  # the person starts preparing a run of their own
    form.dropout.setValue(0.25)
    qtbot.waitUntil(lambda: window.training.current is not None, timeout=20000)
    _settle(qtbot, window, 0.5)
    assert window.training.current.data.task == "grammar-en-zh"  # the bundled model is open…
    assert form.d_model.value() == 96 and form.dropout.value() == pytest.approx(0.25)  # …and the edits stay


def test_a_checkpoint_that_cannot_be_opened_falls_back_to_the_bundled_model(make_window, qtbot, tmp_path):
    bad = tmp_path / "broken.ckpt"
    bad.write_bytes(b"this is not a checkpoint")
    window = make_window(open_path=str(bad), start_default=True)
    qtbot.waitUntil(lambda: window.training.current is not None, timeout=20000)
    assert window.training.current.data.task == "grammar-en-zh"
    text = window.message_bar.label.text()
    assert "broken.ckpt" in text and "bundled model is open instead" in text


def test_the_engine_skips_a_start_up_load_once_a_model_exists(qtbot):
    from explorer.commands import NewModelSpec
    from explorer.worker import Engine
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.training.trainer import train_config_for

    spec = NewModelSpec(
        DataSpec(task="copy", n_train=200, n_valid=20, n_test=20),
        "tiny",
        {},
        train_config_for("tiny"),
        TokenizerSpec("word"),
    )
    engine = Engine("cpu", threads=1)
    runs = []
    engine.run_described.connect(runs.append)
    engine.start()
    try:
        new = engine.submit(NewModel(spec))  # the person's model comes first
        engine.submit(Load(str(default_model()), kind="bundled", if_no_model=True))
        engine.submit(NewModel(spec, if_no_model=True))
        plain = engine.submit(Load(str(default_model()), kind="bundled"))
        qtbot.waitUntil(lambda: any(r.origin == plain for r in runs), timeout=20000)
        assert [r.origin for r in runs] == [new, plain]  # the conditional ones were skipped, the others not
    finally:
        engine.shutdown(None, timeout_ms=10000)


def test_a_window_closed_during_its_first_paint_ends_the_program(tmp_path):
    """Closed before the event loop has started (a person closing it at once): the program ends instead of
    waiting for ever in an event loop with no window left."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
        "QT_QPA_PLATFORM": "offscreen",
    }
    command = [sys.executable, "-m", "bench.exit_crashes", "--child", "mid-load", "--delay", "0.05"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
