"""The engine's state as the main window shows it, in the status row at the right of the menu bar
(:class:`explorer.status_row.StatusRow`): the state, step, loss and speed; how far the model being opened has been
read; a run that paused itself; a followed run's state and freshness.

Route: :meth:`WindowStatus.attach` connects the engine's typed signals (``status_changed``, ``metrics_logged``,
``load_progressed``, ``run_described``, ``engine_failed``, ``follow_changed``, ``paused_at``); a load asked for from
the File menu is announced with :meth:`WindowStatus.opening`, and the note follows that request until its model is
open or has failed.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal

from explorer.answers import DATA_STAGES, EngineStatus, FollowStatus, LoadProgress, MetricsBatch, RunInfo
from explorer.i18n import tr
from explorer.status_row import StatusRow
from explorer.widgets.message_bar import MessageBar
from model.data.stream import ReadingProgress

if TYPE_CHECKING:
    from explorer.worker import Engine


class WindowStatus(QObject):
    """The engine's status with the last loss and speed, and the notes about models being opened."""

    title_changed = Signal()  # the model's file, its unsaved work or its run changed: the window's title follows
    path_shown = Signal(str)  # a file the engine has opened (the recent files remember it)

    def __init__(self, row: StatusRow, message_bar: MessageBar, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.row = row
        self.message_bar = message_bar
        self.status = EngineStatus("idle", 0, 0, False, None, "")
        self.last_loss: float | None = None
        self.last_speed: float | None = None
        self._opening: tuple[int, str] | None = None  # the load the note follows: its request, its name
        self._labels_timer = QTimer(self, singleShot=True, interval=200)
        self._labels_timer.timeout.connect(self.show)

    def attach(self, engine: Engine) -> None:
        engine.status_changed.connect(self._on_status)
        engine.metrics_logged.connect(self._on_metrics)
        engine.load_progressed.connect(self._on_load_progress)
        engine.run_described.connect(self._on_opened)
        engine.engine_failed.connect(self._on_failed)
        engine.follow_changed.connect(self._on_follow)
        engine.paused_at.connect(self._on_paused_at)

    def show(self) -> None:
        """The state, step, loss and speed in the status row now."""
        self.row.show_status(self.status, self.last_loss, self.last_speed)

    def _show_soon(self) -> None:
        """The status row follows the step and the loss at most 5 times a second."""
        if not self._labels_timer.isActive():
            self._labels_timer.start()

    def _on_status(self, status: EngineStatus) -> None:
        new_path = status.path if status.path and status.path != self.status.path else None
        changed = dataclasses.replace(status, step=0) != dataclasses.replace(self.status, step=0)
        self.status = status
        if new_path is not None:
            self.path_shown.emit(new_path)
        if changed:
            self.title_changed.emit()
            self.show()
        else:  # only the step moved
            self._show_soon()

    def _on_metrics(self, batch: MetricsBatch) -> None:
        if len(batch.steps):
            self.last_loss = float(batch.steps.loss[-1])
            self.last_speed = float(batch.steps.tokens_per_s[-1])
        self._show_soon()

    # -- a model being opened ------------------------------------------------------------------------------------
    def opening(self, request_id: int, name: str) -> None:
        """A model named ``name`` was asked for (request ``request_id``): the note says so until it is open."""
        self._opening = (request_id, name)
        self.row.note_about(name, tr("Opening {name}…"))

    def _on_load_progress(self, p: LoadProgress) -> None:
        """What the engine is reading of the model being opened, and how far it has come."""
        self._opening = (p.request_id, p.name)
        if p.stage in DATA_STAGES:  # a big data file for a new model: its reading, then its tokenizers
            note, tip = data_note(p)
            self.row.note_about(p.name, note)
            self.row.note_label.setToolTip(tip)
        elif p.fraction < 1.0:
            text = tr("Opening {name} — {stage}… {percent}%")
            self.row.note_about(
                p.name, text.replace("{stage}", tr(p.stage)).replace("{percent}", f"{100 * p.fraction:.0f}")
            )

    def _on_opened(self, info: RunInfo) -> None:
        """The model the note was following is open."""
        if self._opening is not None and info.origin == self._opening[0]:
            self.row.note_about(self._opening[1], tr("Opened {name}"), 5000)
            self._opening = None

    def _on_failed(self, request_id: int, _message: str) -> None:
        if self._opening is not None and request_id == self._opening[0]:  # not opened: the current model stays
            self._opening = None
            self.row.note("")

    # -- runs that say something of their own ------------------------------------------------------------------
    def _on_paused_at(self, step: int, loss: float) -> None:
        text = tr("Paused by itself at step {step} (loss {loss:.3f}), as asked.").format(step=step, loss=loss)
        self.message_bar.show_message(text, "info")

    def _on_follow(self, f: FollowStatus) -> None:
        """The followed run's state, step and freshness in the status row; said once when the run has ended."""
        ended = self.row.on_follow(f)
        if ended:
            self.message_bar.show_message(ended, "info")


def data_note(p: LoadProgress) -> tuple[str, str]:
    """The note (``{name}`` where the file's name goes) and its tooltip while a big data file is prepared: the stage
    and how far it has come; while reading, the rate and the time left, and in the tooltip megabytes and lines too."""
    text = tr("Preparing {name} — {stage}…").replace("{stage}", tr(p.stage))
    note = text + (f" {100 * p.fraction:.0f}%" if p.fraction >= 0 else "")
    if isinstance(p.detail, ReadingProgress):
        note += f" ({p.detail.pace_text()})"
    detail = p.detail.text() if p.detail is not None else ""
    return note, f"{text.replace('{name}', p.name)} {detail}"
