"""Whether the window has drawn what the engine sent it: the engine's long Python work that can wait (a followed
run's new model being built) waits for it, a short while at most.

The window's thread and the engine thread share the GIL. The window gives it up at every call into Qt and, beside
an engine running Python, waits for it again each time: a plot's first paint, 3–6 ms of work, took 30–50 ms while
a new model's vocabulary was being worked out, and a new run's curves are drawn over several frames (a plot a
frame, a curve a tick). Checked every few frames on the window's thread, set for the engine's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

CHECK_MS = 20  # how often the window says whether it is still drawing
NOTICE_S = 3 * CHECK_MS / 1000  # for the window to take in what was sent and say that it draws
LONGEST_WAIT_S = 0.6  # the engine's work never waits longer for the window


class WindowQuiet(QObject):
    """``drawing()`` says whether the window has drawing of its own in hand (plots held back, stale, a new model's
    panels waiting their turn); :attr:`quiet` is set while it has none, and while the window is not shown."""

    def __init__(self, parent: QObject, drawing: Callable[[], bool]) -> None:
        super().__init__(parent)
        self.drawing = drawing
        self.calm = 2  # checks in a row with no drawing in hand
        self.quiet = threading.Event()
        self.quiet.set()
        self.timer = QTimer(self)
        self.timer.setInterval(CHECK_MS)
        self.timer.timeout.connect(self.check)
        self.timer.start()
        self.destroyed.connect(self.quiet.set)

    def check(self) -> None:
        """Quiet once no drawing was in hand at two checks in a row (what the last one began, a layout and a paint
        posted to the event loop, is done by then)."""
        if self.drawing():
            self.calm = 0
            self.quiet.clear()
        else:
            self.calm += 1
            if self.calm >= 2:
                self.quiet.set()


def wait_for(quiet: threading.Event | None) -> None:
    """On the engine's thread, after it sent the window something to draw: until the window has drawn it (it is
    given NOTICE_S to take it in and say that it draws; then at most LONGEST_WAIT_S)."""
    if quiet is not None:
        time.sleep(NOTICE_S)
        quiet.wait(LONGEST_WAIT_S)
