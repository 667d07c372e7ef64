"""Whether the window has drawn what the engine sent it: the engine's long Python work that can wait (a followed
run's checkpoint being read, the probe's attention computed on it) waits for it, a short while at most.

The window's thread and the engine thread share the GIL. The window gives it up at every call into Qt and, beside
an engine running Python, waits for it again each time: a plot's first paint, 3–6 ms of work, took 30–50 ms while
a new model's vocabulary was being worked out, and a new run's curves are drawn over several frames (a plot a
frame, a curve a tick). The engine asks (:func:`wait_for`, or :func:`settled` for work its loop defers, which
does not hold the loop up); the window then checks every few frames until it has nothing in hand, and stops
checking.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

CHECK_MS = 20  # how often the window, asked, says whether it is still drawing
LONGEST_WAIT_S = 0.6  # the engine's work never waits longer for the window


class WindowQuiet(QObject):
    """``drawing()`` says whether the window has drawing of its own in hand (plots held back, stale, a new model's
    panels waiting their turn); :attr:`quiet` is set while it has none, and while the window is not shown.

    Signals:
        asked(): sent by the engine's thread (see :func:`wait_for`); the window checks until it is quiet.
    """

    asked = Signal()

    def __init__(self, parent: QObject, drawing: Callable[[], bool]) -> None:
        super().__init__(parent)
        self.drawing = drawing
        self.calm = 0  # checks in a row with no drawing in hand
        self.quiet = threading.Event()
        self.quiet.set()
        self.asked_at: float | None = None  # when the engine's thread asked without waiting (see settled), its own
        self.timer = QTimer(self)
        self.timer.setInterval(CHECK_MS)
        self.timer.timeout.connect(self.check)
        self.asked.connect(self._on_asked)  # (queued: sent from the engine's thread)
        self.destroyed.connect(self.quiet.set)

    def _on_asked(self) -> None:
        self.calm = 0
        self.check()
        self.timer.start()

    def check(self) -> None:
        """Quiet once no drawing was in hand at two checks in a row (what the last one began, a layout and a paint
        posted to the event loop, is done by then); the checks stop then."""
        if self.drawing():
            self.calm = 0
            self.quiet.clear()
            return
        self.calm += 1
        if self.calm >= 2:
            self.quiet.set()
            self.timer.stop()


def wait_for(window: WindowQuiet | None) -> None:
    """On the engine's thread, after it sent the window something to draw: until the window has drawn it (at most
    LONGEST_WAIT_S). The question comes to the window after what was sent before it, so the window has taken that
    in when it answers."""
    if window is not None and _ask(window):
        window.quiet.wait(LONGEST_WAIT_S)


def _ask(window: WindowQuiet) -> bool:
    """Ask the window whether it has drawn (it checks on its own thread); → False when the window is gone."""
    window.quiet.clear()
    try:
        window.asked.emit()
    except RuntimeError:  # the window is gone
        return False
    return True


def settled(window: WindowQuiet | None) -> bool:
    """On the engine's thread, for work that can wait without holding the engine up (its loop goes on taking the
    person's commands meanwhile): whether the window has drawn what it was sent. The first call asks it; once
    LONGEST_WAIT_S have passed since, the answer is yes whatever it still draws."""
    if window is None:
        return True
    if window.asked_at is None:
        if not _ask(window):
            return True
        window.asked_at = time.monotonic()
        return False
    if window.quiet.is_set() or time.monotonic() - window.asked_at > LONGEST_WAIT_S:
        window.asked_at = None
        return True
    return False
