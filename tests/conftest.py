import os

# Qt runs headless in tests; set before any Qt import.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(autouse=True)
def _deterministic():
    torch.manual_seed(0)
    yield


@pytest.fixture(scope="session")
def copy_session_factory():
    """Fresh small copy-task sessions (short sequences, tiny model) for training tests."""
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.session import Session
    from model.training.trainer import train_config_for

    def make(**train_overrides):
        data = DataSpec(task="copy", n_train=4000, n_valid=100, n_test=100, length=6, min_length=2, alphabet=8)
        train = train_config_for("tiny", **{"eval_every": 0, **train_overrides})
        return Session.create(data, "tiny", train, TokenizerSpec("word"), device="cpu")

    return make


@pytest.fixture(autouse=True)
def _no_thread_left_running():
    """Fail any test that leaves an engine thread (or any other thread) running."""
    import threading

    before = set(threading.enumerate())
    yield
    try:
        from explorer.engine_loading import LIVE_ENGINES
    except ImportError:  # Qt not importable: no engines either
        LIVE_ENGINES = ()
    running = [e for e in list(LIVE_ENGINES) if e.isRunning()]
    for e in running:  # clean up so one failure does not cascade, then fail
        e.shutdown(None, timeout_ms=5000)
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon]
    assert not running, f"engine threads left running: {running}"
    assert not leaked, f"threads left running: {leaked}"


@pytest.fixture
def make_window(qtbot, tmp_path):
    """Main windows with their own settings file and data folder; closed (engine joined) at the end."""
    from PySide6.QtCore import QSettings

    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    windows = []

    def make(open_path=None, start_default=False, settings_name="settings.ini"):
        settings = QSettings(str(tmp_path / settings_name), QSettings.IniFormat)
        window = MainWindow(
            engine=Engine("cpu", threads=1),
            settings=settings,
            data_dir=tmp_path / "data",
            open_path=open_path,
            start_default=start_default,
        )
        qtbot.addWidget(window)
        windows.append(window)
        return window

    yield make
    for w in windows:
        if w.engine.isRunning():
            w.close()
        qtbot.waitUntil(w.engine.isFinished, timeout=5000)


@pytest.fixture
def english():
    """The interface in English for the test, and afterwards."""
    from explorer.i18n import language

    language.set("en")
    yield
    language.set("en")


@pytest.fixture
def chinese_font():
    """The bundled Chinese font, as the program adds it where no installed font has Chinese (its widths are the
    ones a person sees); the application's font and the interface language are put back afterwards."""
    from PySide6.QtWidgets import QApplication

    from explorer.fonts import add_bundled_font, system_has_chinese_font
    from explorer.i18n import language

    app = QApplication.instance()
    before = app.font()
    if not system_has_chinese_font():
        add_bundled_font(app)
    yield
    language.set("en")
    app.setFont(before)
