"""The training plots' step axis never writes its labels into each other, however narrow the plot."""

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.widgets.metric_plot import MetricPlot  # noqa: E402
from tests.scenarios.test_layout_sizes import drawn_tick_labels  # noqa: E402


@pytest.mark.parametrize("width", [150, 220, 400])
@pytest.mark.parametrize("last_step", [1500, 10_000, 123_456])
def test_step_labels_have_room_at_any_width(qtbot, width, last_step):
    plot = MetricPlot("Loss", "loss_plot", "cross-entropy")
    qtbot.addWidget(plot)
    plot.resize(width, 200)
    plot.show()
    plot.plot.setXRange(0, last_step, padding=0)
    qtbot.wait(50)
    axis = plot.plot.getPlotItem().getAxis("bottom")
    drawn = drawn_tick_labels(axis)
    assert len(drawn) >= (2 if width >= 220 else 1), "steps are named"
    rects = sorted((r for r, _ in drawn), key=lambda r: r.left())
    for a, b in zip(rects, rects[1:]):
        assert b.left() - a.right() >= 4, f"labels {a} and {b} touch"
    assert all(np.isfinite(float(t.replace(",", ""))) for _, t in drawn)
