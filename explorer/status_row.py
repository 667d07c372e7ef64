"""The status at the right of the menu bar: passing notes, then the device, the state, the step, the loss and the
speed (a status bar below would take a row from the views on a 768-px screen).

While the window follows a run that another process writes (File → Follow a training run), the state and the step
are the run's — "following" at the step its log has reached, "run ended" once its final checkpoint says so — not
those of the engine, which only reads the folder and stays idle at the step of the checkpoint it shows.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from explorer.answers import EngineStatus, FollowStatus
from explorer.first_launch import LOADING
from explorer.i18n import N_, tr
from explorer.i18n_zh import ZH
from explorer.widgets import named

STATE_NAMES = (N_("idle"), N_("training"), N_("paused"), N_("error"))
FOLLOWING, RUN_ENDED = N_("following"), N_("run ended")
ENDINGS = {"finished": N_("finished"), "interrupted": N_("interrupted"), "failed": N_("stopped by an error")}
QUIET_S = 120  # a followed run that has written nothing for this long may have stopped: the note asks


def how_long(seconds: float) -> str:
    """ "45 s", "3 min" (in the interface language)."""
    s = max(0, round(seconds))
    return tr("{n} s").format(n=s) if s < 120 else tr("{n} min").format(n=s // 60)


def widest(label: QLabel, texts: list[str]) -> int:
    """The width of the widest of ``texts``, in English or Chinese, in ``label``'s font."""
    metrics = label.fontMetrics()
    return max(metrics.horizontalAdvance(t) for text in texts for t in (text, ZH.get(text, text)))


class StatusRow(QWidget):
    """Notes, device, state, step, loss and speed; a followed run's state, step and freshness."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.status = EngineStatus("idle", 0, 0, False, None, "")
        self.loss: float | None = None
        self.speed: float | None = None
        self.following: FollowStatus | None = None  # the run followed, as last heard of
        self.note_label = named(QLabel(), "status_note")
        self.device_label = named(QLabel(), "status_device")
        self.state_label = named(QLabel(), "status_state")
        self.step_label = named(QLabel(), "status_step")
        self.loss_label = named(QLabel(), "status_loss")
        self.speed_label = named(QLabel(), "status_speed")
        self._note_timer = QTimer(self, singleShot=True)
        self._note_timer.timeout.connect(lambda: self.note(""))
        self._lay_out()

    def _lay_out(self) -> None:
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 6, 0)
        row.setSpacing(14)
        # widths for the longest texts, in either language: the menu bar places its corner once, it does not
        # follow the texts
        states = [*STATE_NAMES, FOLLOWING, RUN_ENDED]
        widths = {
            self.note_label: ["x" * 48],
            self.device_label: ["NVIDIA H200"],
            self.state_label: states,
            self.step_label: ["step 10,000,000"],
            self.loss_label: ["loss 10.000"],
            self.speed_label: ["1,000,000 tok/s"],
        }
        for w, texts in widths.items():
            w.setFixedWidth(widest(w, texts))
            row.addWidget(w)

    # -- notes -------------------------------------------------------------------------------------------------
    def note(self, text: str, ms: int = 0, tip: str = "") -> None:
        """A passing note beside the status (``ms`` = 0: until the next one); ``tip``: its tooltip."""
        self.note_label.setText(text)
        self.note_label.setToolTip(tip)
        if ms:
            self._note_timer.start(ms)
        else:  # an earlier note's timer must not take this one away
            self._note_timer.stop()

    def note_about(self, name: str, text: str, ms: int = 0) -> None:
        """A note naming a file or folder (``{name}`` in ``text``), the name shortened (…) where the note would
        not show it all; the whole of it in the tooltip."""
        metrics = self.note_label.fontMetrics()
        room = self.note_label.width() - metrics.horizontalAdvance(text.replace("{name}", ""))
        short = metrics.elidedText(name, Qt.TextElideMode.ElideMiddle, max(room, metrics.horizontalAdvance("…x")))
        self.note(text.replace("{name}", short), ms, tip=text.replace("{name}", name))

    def say_loading(self, on: bool) -> None:
        """While the bundled model is being read: a note that says so (taken back once it is open)."""
        if on:
            self.note(tr(LOADING))
        elif self.note_label.text() == tr(LOADING):
            self.note("")

    # -- the status ---------------------------------------------------------------------------------------------
    def show_status(self, status: EngineStatus, loss: float | None, speed: float | None) -> None:
        self.status, self.loss, self.speed = status, loss, speed
        self.refresh()

    def refresh(self) -> None:
        s, f = self.status, self.following
        self.device_label.setText(s.device)  # (empty until the engine has chosen its device)
        if f is not None:  # the run's state and step, not the idle engine's
            self.state_label.setText(tr(RUN_ENDED if f.ended else FOLLOWING))
            step = max(f.step, s.step)  # (a run whose log is gone: its checkpoint's step)
        else:
            self.state_label.setText(tr(s.state))
            step = s.step
        self.step_label.setText(tr("step {n}").format(n=f"{step:,}"))
        self.loss_label.setText(f"{tr('loss')} {self.loss:.3f}" if self.loss is not None else f"{tr('loss')} –")
        self.speed_label.setText(f"{self.speed:,.0f} {tr('tok/s')}" if self.speed else f"– {tr('tok/s')}")

    # -- a followed run -----------------------------------------------------------------------------------------
    def on_follow(self, f: FollowStatus) -> str:
        """How the followed run is doing, in the note (its folder in the tooltip) and the state and step. → a
        sentence to announce when the run has just ended ("" otherwise)."""
        ended_now = bool(f.ended) and (self.following is None or not self.following.ended)
        self.following = f if f.folder else None
        self.refresh()
        if not f.folder:
            self.note("")
            return ""
        name = Path(f.folder).name
        if f.waiting:
            text = tr("Following {name} — waiting for its first checkpoint")
        elif f.ended:
            text = tr("{name}: the run ended ({how})").replace("{how}", tr(ENDINGS.get(f.ended, f.ended)))
        elif f.idle_s >= QUIET_S:
            text = tr("Following {name} — nothing new for {ago}: has the run stopped?")
        else:
            text = tr("Following {name} — last update {ago} ago")
        text = text.replace("{ago}", how_long(f.idle_s))
        if f.bad_lines:
            text += " · " + tr("{n} lines of its log are not records").replace("{n}", f"{f.bad_lines:,}")
        if f.skipped_probes:
            text += " · " + tr("{n} probe snapshots skipped").replace("{n}", f"{f.skipped_probes:,}")
        self.note(text.replace("{name}", name), tip=f.folder + (f"\n{f.problem}" if f.problem else ""))
        if not ended_now:
            return ""
        said = tr("The run in {name} has ended at step {step} ({how}). The model shown is its final checkpoint.")
        how, step = tr(ENDINGS.get(f.ended, f.ended)), max(f.step, self.status.step)
        return said.replace("{name}", name).replace("{step}", f"{step:,}").replace("{how}", how)
