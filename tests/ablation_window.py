"""Fixtures shared by the tests of switching heads off and of the head-importance map: a window on a small copy model
trained a little (so that its heads matter), and clicks on the maps' cells as a person makes them."""

from __future__ import annotations

from pathlib import Path

import torch
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest

SENTENCE = "3 1 4 1 5"


def train_copy(copy_session_factory, folder: Path) -> Path:
    """A checkpoint of the tiny copy model after 80 updates of 16 sentences (a test module's fixture makes it once)."""
    torch.manual_seed(0)
    session = copy_session_factory(batch_size=16)
    session.train_steps(80)
    path = folder / "copy.ckpt"
    session.save(path)
    return path


def open_window(make_window, qtbot, checkpoint: Path):
    """A window on ``checkpoint``, shown (clicks on its maps need it laid out)."""
    window = make_window(open_path=str(checkpoint))
    window.show()
    qtbot.waitUntil(lambda: window.training.current is not None, timeout=20000)
    return window


def decode_to_end(qtbot, window, text: str = SENTENCE) -> None:
    d = window.decoding
    d.input.setText(text)
    d.start()
    qtbot.waitUntil(lambda: d.view is not None and d.view.settings.text == text and not d.waiting, timeout=20000)
    d.decoding_page.act("run", restart=False)
    qtbot.waitUntil(lambda: d.view.at_end and not d.waiting, timeout=20000)


def click_at(qtbot, view, image, x: float, y: float) -> None:
    """A left click on the point ``(x, y)`` of ``image`` (its data coordinates) in the pyqtgraph ``view``."""
    qtbot.wait(50)
    point = view.mapFromScene(image.mapToScene(QPointF(x, y)))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)


def session_of(window):
    """The engine's session (the engine is paused and idle: nothing else touches it while a test reads it)."""
    return window.engine.session
