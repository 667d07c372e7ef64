"""A screenshot of File → Get a model half-way through a download, as a person sees it.

    xvfb-run -a -s "-screen 0 1366x768x24" .venv/bin/python docs/make_get_model_screenshot.py

No Hub can be reached where the screenshots are made: the dialog fetches a tiny GPT-2 from the local stand-in
for the Hub that the tests use (tests/hub_server.py), held half-way so that the progress shows, with an empty
cache of its own. Saves docs/images/get-model-1366x768.png (the window with the dialog over it).
"""

from __future__ import annotations

import functools
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "images"


def main() -> None:
    from huggingface_hub import constants
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv)
    from docs.make_lesson_screenshots import pump
    from explorer.fonts import register_chinese_font
    from explorer.main_window import MainWindow
    from explorer.worker import Engine
    from model.hf import download as dl
    from tests.hub_server import Hub, HubServer, gpt2_repo

    register_chinese_font(app)
    tmp = Path(tempfile.mkdtemp())
    constants.HF_HUB_CACHE = str(tmp / "hub-cache")
    dl.CHUNK = 4096
    repo = "Helsinki-NLP/opus-mt-en-zh"  # the name shown; the files are a tiny GPT-2's
    hub = Hub(repos={repo: gpt2_repo(tmp)}, chunk=4096)
    weights = "model.safetensors"
    hub.halfway[weights], hub.hold[weights] = threading.Event(), threading.Event()
    window = MainWindow(
        engine=Engine("cpu", None, wait_for_window=True),
        settings=QSettings(str(tmp / "s.ini"), QSettings.IniFormat),
        data_dir=tmp / "data",
    )
    window.show()
    window.engine.release()
    pump(app, 10, lambda: window.training.current is not None)
    with HubServer(hub):
        dialog = window.files.get_model()
        dialog.offered.setCurrentRow(0)
        dialog.fetch(get=functools.partial(dl.download, endpoint=hub.url))
        pump(app, 20, lambda: hub.halfway[weights].is_set() and dialog.bar.value() > 0)
        pump(app, 1)
        dialog.move(window.geometry().center() - dialog.rect().center())
        pump(app, 1)
        screen = app.primaryScreen().grabWindow(0)
        screen.save(str(OUT / "get-model-1366x768.png"))
        dialog.cancel()
        hub.hold[weights].set()
        pump(app, 10, lambda: dialog.job is None)
    window.close()


if __name__ == "__main__":
    main()
