"""The window shows before PyTorch is loaded: its modules do not import it, and at launch the engine
thread starts loading it only once the window has painted."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_window_modules_do_not_import_torch():
    code = (
        "import sys\n"
        "import explorer.app, explorer.main_window, explorer.worker\n"
        "import model, model.data, model.training.device, model.training.config\n"
        "import model.io.snapshots, model.decoding.stepping\n"
        "loaded = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "print('torch modules:', loaded[:5])\n"
        "sys.exit(1 if loaded else 0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_lazy_names_of_the_engine_packages_still_resolve():
    import model
    import model.data

    assert model.Transformer.__name__ == "Transformer"
    assert callable(model.data.collate) and model.data.BatchStream.__name__ == "BatchStream"
    with pytest.raises(AttributeError):
        model.data.no_such_name  # noqa: B018


def test_an_engine_waiting_for_its_window_begins_when_released(qtbot):
    from explorer.worker import Engine

    engine = Engine("cpu", threads=1, wait_for_window=True)
    statuses = []
    engine.status_changed.connect(statuses.append)
    engine.start()
    try:
        qtbot.wait(400)
        assert statuses == []  # started, but waiting for the window
        engine.release()
        qtbot.waitUntil(lambda: len(statuses) > 0, timeout=20000)
    finally:
        engine.shutdown(None, timeout_ms=20000)
    assert engine.isFinished()


def test_the_model_panel_says_the_bundled_model_is_loading_until_it_arrives(make_window, qtbot):
    from resources import default_model

    if default_model() is None:
        pytest.skip("the bundled model is missing")
    window = make_window(start_default=True)
    qtbot.waitUntil(lambda: window.first_launch.auto_load is not None, timeout=5000)
    if window.model_panel.info is None:  # not arrived yet (it usually has not)
        assert window.model_panel.summary.text().startswith("Loading the trained model")
        # the welcome bar is up already: showing it as the model arrives re-laid out the whole window then
        assert window.message_bar.showing and "Welcome" in window.message_bar.label.text()
    qtbot.waitUntil(lambda: window.model_panel.info is not None, timeout=30000)
    assert "Encoder" in window.model_panel.summary.text()
    assert "Loading" not in window.model_panel.summary.text()


def test_the_training_tab_paints_its_plots_one_frame_at_a_time(make_window, qtbot):
    """Opened the first time, the six plots are not all painted in one turn of the event loop (that took
    120–220 ms under X11); within a fraction of a second every one is."""
    window = make_window(start_default=True)  # the decoding panel in front, the Training tab behind it
    window.show()
    qtbot.wait(50)
    plots = list(window.training.plots.values())
    assert all(p.updatesEnabled() for p in plots) and window.docks["training"].visibleRegion().isEmpty()
    window.docks["training"].raise_()
    assert [p.updatesEnabled() for p in plots] == [True] + [False] * (len(plots) - 1)
    qtbot.waitUntil(lambda: all(p.updatesEnabled() for p in plots), timeout=2000)
    window.docks["decoding"].raise_()
    window.docks["training"].raise_()  # the second time everything is painted at once
    assert all(p.updatesEnabled() for p in plots)
