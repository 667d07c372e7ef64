"""A new model reaches the window's panels: those on screen at once, those behind another tab a turn of the event
loop each, so that no single turn keeps the window from painting and answering (a new model's arrival costs the
panels 30–40 ms together, and more while the engine thread shares the interpreter's lock with the window).

The steps keep their order among themselves; what comes after every panel (``then``) comes last. A newer model
drops what still waited for the older one: each panel hears of the newer one instead. :meth:`finish` runs what
waits at once, for whatever needs the panels up to date (an answer about the new model's data, a panel brought to
the front).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtCore import QObject, QTimer

Step = Callable[[], None]

# the engine's signals that a panel may hear only after the new model: answers to what panels ask, and the data, the
# probes and the metrics of the run (not its status, its scalars or how fresh a followed run is, which concern no
# panel's model: a followed run's whole log comes right after its model, and would otherwise end the waiting at once)
ANSWERS = (
    "metrics_logged",
    "data_described",
    "inspection_ready",
    "decode_stepped",
    "lanes_stepped",
    "probe_recorded",
    "explained",
    "positional_ready",
    "sentence_sampled",
    "mask_filled",
    "saved",
    "engine_failed",
    "attributed",
    "lens_ready",
    "ablation_changed",
    "int8_changed",
    "sweep_progressed",
    "importance_ready",
    "experiment_compared",
)


class RunArrival(QObject):
    """Hands a new model to the panels: ``on_screen(key)`` says whether a panel is looked at now."""

    def __init__(self, parent: QObject, on_screen: Callable[[str], bool]) -> None:
        super().__init__(parent)
        self.on_screen = on_screen
        self.waiting: list[Step] = []
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(0)
        self.timer.timeout.connect(self._next)

    def hand(self, steps: list[tuple[str, Step]], then: Step) -> None:
        """Each ``(panel key, step)``: run now if the panel is on screen, else in a later turn; ``then`` after all."""
        self.timer.stop()
        self.waiting = []
        for key, step in steps:
            if self.on_screen(key):
                step()
            else:
                self.waiting.append(step)
        if self.waiting:
            self.waiting.append(then)
            self.timer.start()
        else:  # every panel is on screen (or the window not shown yet)
            then()

    def answers_after(self, engine: QObject) -> None:
        """Every answer of ``engine`` (:data:`ANSWERS`) comes after the panels have heard of the model it is about:
        connected before any panel's slot, this runs what waits first."""
        for name in ANSWERS:
            getattr(engine, name).connect(self._before_answer)

    def _before_answer(self, *_answer: object) -> None:
        self.finish()

    def shown(self, shown: bool) -> None:
        """A panel's dock came to the front (or went behind another tab): it shows the newest model at once."""
        if shown:
            self.finish()

    def finish(self) -> None:
        """Everything that waits, now."""
        self.timer.stop()
        while self.waiting:
            self.waiting.pop(0)()

    def _next(self) -> None:
        if self.waiting:
            self.waiting.pop(0)()
        if self.waiting:
            self.timer.start()


def panel_steps(key: str, panel: Any, info: object) -> list[tuple[str, Step]]:
    """How ``panel`` takes in a model: its ``arrival_steps(info)`` (its ``on_run`` in steps, run a turn apart behind
    another tab) if it has them, else its ``on_run(info)``."""
    in_steps = getattr(panel, "arrival_steps", None)
    return [(key, step) for step in (in_steps(info) if in_steps else [partial(panel.on_run, info)])]
