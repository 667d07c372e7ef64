"""The decoding requests still being computed, and what the Decoding panel shows of them.

Every click of Step ▶ is carried out, in order: the engine thread queues decoding commands, and the panel shows
the answer to the newest (``EngineClient.fresh``). On a slow machine a step can take seconds; a panel that showed
nothing meanwhile would look dead, and a person clicks again. :class:`DecodingProgress` keeps the requests out and
says, once one has taken longer than :data:`BUSY_AFTER_MS`, which step is being computed and how many clicks
wait behind it (a fast step shows nothing: no flicker during auto-play).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from explorer.commands import DecodeAction
from explorer.i18n import tr

BUSY_AFTER_MS = 200  # a request out longer than this shows the busy state


class DecodingProgress(QObject):
    """The decoding requests sent and not answered yet, oldest first, and the busy state they make."""

    changed = Signal()  # the busy state, or the number of requests waiting, changed

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.out: list[tuple[int, DecodeAction]] = []  # (request id, action), in the order sent
        self.position = 0  # the position of the newest answer seen (stale ones too): the next step is one more
        self.busy = False  # shown as busy (a request has been out longer than BUSY_AFTER_MS)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(BUSY_AFTER_MS)
        self._timer.timeout.connect(self._on_slow)

    @property
    def queued(self) -> int:
        """Requests waiting behind the one being computed."""
        return max(0, len(self.out) - 1)

    def sent(self, request_id: int, action: DecodeAction) -> None:
        self.out.append((request_id, action))
        if self.busy:
            self.changed.emit()  # one more waiting
        elif not self._timer.isActive():
            self._timer.start()

    def answered(self, request_id: int, position: int) -> None:
        """An answer came (shown or dropped as stale): it, and anything sent before it, is done."""
        ids = [i for i, _ in self.out]
        if request_id not in ids:
            return
        self.out = self.out[ids.index(request_id) + 1 :]
        self.position = position
        self._settle()

    def failed(self) -> None:
        """The engine refused a request: nothing is waited for any more."""
        self.out = []
        self._settle()

    def _settle(self) -> None:
        if self.out:
            if self.busy:
                self.changed.emit()
            return
        self._timer.stop()
        if self.busy:
            self.busy = False
            self.changed.emit()

    def _on_slow(self) -> None:
        if self.out:
            self.busy = True
            self.changed.emit()

    def describe(self) -> str:
        """What is being computed: “Computing step 3… (2 more queued)”."""
        action = self.out[0][1] if self.out else "step"
        if action == "step":
            said = tr("Computing step {n}…").format(n=self.position + 1)
        elif action == "start":
            said = tr("Reading the sentence…")
        else:
            said = tr("Computing…")
        if self.queued:
            said += " " + tr("({n} more queued)").format(n=self.queued)
        return said
