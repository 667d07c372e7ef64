"""Views resized and painted a frame apart after a change of layout (explorer/widgets/staggered.py): held views take
their new size only when shown again, one per interval, nothing else moves meanwhile; and the training panel's
plots, when a followed run's scalars plot appears, are resized that way instead of all in one turn."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QVBoxLayout, QWidget  # noqa: E402

from explorer.answers import ScalarsLogged  # noqa: E402
from explorer.widgets.staggered import Staggered  # noqa: E402


class View(QWidget):
    """Counts its resize events."""

    def __init__(self) -> None:
        super().__init__()
        self.resized = 0

    def resizeEvent(self, event) -> None:  # noqa: N802 — Qt's name
        self.resized += 1
        super().resizeEvent(event)


def test_held_views_are_resized_one_per_interval_and_keep_their_room(qtbot):
    parent = QWidget()
    qtbot.addWidget(parent)
    column = QVBoxLayout(parent)
    views = [View() for _ in range(3)]
    for view in views:
        column.addWidget(view)
    parent.resize(300, 300)
    parent.show()
    qtbot.waitExposed(parent)
    first = views[0].geometry()
    staggered = Staggered(parent, 30)
    staggered.hold(views[1:])
    qtbot.wait(10)
    assert views[0].geometry() == first  # the held views' room is kept: the first did not grow into it
    for view in views:
        view.resized = 0
    parent.resize(400, 300)  # a change of layout: every view is given a new width
    assert [v.resized for v in views] == [1, 0, 0]  # the held ones wait
    staggered.release()
    assert views[1].isHidden() and views[2].isHidden()  # not in the turn that changed the layout
    qtbot.waitUntil(lambda: views[1].isVisible(), timeout=1000)
    assert views[1].resized == 1 and views[2].resized == 0 and views[2].isHidden()  # one at a time
    qtbot.waitUntil(lambda: views[2].isVisible(), timeout=1000)
    assert [v.resized for v in views] == [1, 1, 1] and staggered.held == []
    assert {v.width() for v in views} == {views[0].width()} and views[0].width() > 300


def test_the_scalars_plot_appearing_resizes_the_plots_a_frame_apart(qtbot, english):
    from explorer.panels.training import TrainingPanel
    from explorer.panels.training_plots import REVEAL_MS

    panel = TrainingPanel()
    qtbot.addWidget(panel)
    panel.resize(1200, 800)
    panel.show()
    qtbot.waitExposed(panel)
    plots = panel.live_plots
    views = [p.plot for p in plots.plots.values() if p.isVisible()] + [plots.scalars.plot]
    batch = ScalarsLogged("/runs/r", False, ("train/loss",), (np.arange(1, 5),), (np.linspace(4, 1, 4),))
    panel.on_scalars(batch)  # the scalars plot appears: the grid gains a row
    assert plots.scalars.isVisible() and all(v.isHidden() for v in views)  # none resized in this turn
    qtbot.waitUntil(lambda: not plots.staggered.held, timeout=(len(views) + 5) * REVEAL_MS * 4)
    assert all(v.isVisible() for v in views)
    tops = sorted({plots.grid_widget.mapFromGlobal(v.mapToGlobal(v.rect().topLeft())).y() for v in views})
    assert len(tops) == 3  # loss, accuracy, quality; then the scalars' row; then lr, gradients, speed
