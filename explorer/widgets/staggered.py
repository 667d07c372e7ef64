"""Views laid out and painted again one at a time, a frame apart, after a change that resizes them all at once.

When a grid of pyqtgraph plots is arranged again (a plot appears, the columns change), every plot is resized in the
same turn of the event loop, and each resize lays out its axes and view box and then paints them: with eight
plots that is one 50–120 ms wait for the window. A view that is hidden when its parent is resized only takes its
new size when it is shown again (Qt holds the resize back until then), so hiding the views before the change and
showing them again one per frame spreads that work over as many frames. Each view keeps its room in its parent's
layout while hidden (:func:`keep_room`), so nothing else moves meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QWidget


def keep_room(view: QWidget) -> None:
    """``view``'s place in its parent's layout stays taken while it is hidden."""
    policy = view.sizePolicy()
    policy.setRetainSizeWhenHidden(True)
    view.setSizePolicy(policy)


class Staggered(QObject):
    """Views held back (hidden) by :meth:`hold` and shown again, one every ``interval_ms``, after :meth:`release`."""

    def __init__(self, parent: QObject, interval_ms: int) -> None:
        super().__init__(parent)
        self.held: list[QWidget] = []
        self._timer = QTimer(self, singleShot=True, interval=interval_ms)
        self._timer.timeout.connect(self._show_next)

    def hold(self, views: Iterable[QWidget]) -> None:
        """Hide ``views`` (those not hidden already) until :meth:`release` shows them again, one at a time."""
        for view in views:
            if view not in self.held and not view.isHidden():
                keep_room(view)
                view.hide()
                self.held.append(view)

    def release(self) -> None:
        """Show the held views again, the first a frame from now (not in the turn that changed the layout)."""
        if self.held and not self._timer.isActive():
            self._timer.start()

    def _show_next(self) -> None:
        if self.held:
            self.held.pop(0).show()  # its held-back resize, then its paint, in a turn of its own
        if self.held:
            self._timer.start()
