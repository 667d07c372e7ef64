"""The metric plots (explorer/widgets/metric_plot.py): step labels that never overprint, a new run's curves one per
tick, and the same runs again redrawing nothing."""

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


def test_the_plots_timer_makes_a_new_runs_curves_one_at_a_time_and_ends_where_a_whole_redraw_does(qtbot):
    """A new run's curves (each with its faint raw curve and legend entry) come one per tick of the plots' timer,
    and their points at the tick after; the plot stays stale until then, and then shows what one whole redraw
    shows."""
    runs = []
    for _ in range(2):
        plot = MetricPlot("Loss", "loss_plot", "cross-entropy")
        qtbot.addWidget(plot)
        plot.define("train", "train")
        plot.define("valid", "valid", colour_shift=1, symbol="o")
        plot.set_runs(1, {1})
        x = np.arange(1.0, 41.0)
        plot.append(1, "train", x, 5 / x)
        plot.append(1, "valid", x[::10], 6 / x[::10])
        runs.append(plot)
    gradual, whole = runs
    whole.redraw()
    made, entries = [], []
    while gradual.stale:
        gradual.redraw(gradually=True)
        made.append(sum(s.curve is not None for s in gradual.series.values()))
        entries.append([label for _, label in gradual.legend.items])
        if gradual.stale:  # points are drawn once every curve is made, in a call of their own
            assert all(len(s.curve.getData()[0] or ()) == 0 for s in gradual.series.values() if s.curve is not None)
    assert made == [1, 2, 2]
    assert entries[1][0] is entries[0][0]  # the first entry kept, the second added after it
    for key, s in whole.series.items():
        shown, expected = gradual.series[key].curve.getData(), s.curve.getData()
        assert np.array_equal(shown[0], expected[0]) and np.array_equal(shown[1], expected[1])
    assert [label.text for _, label in gradual.legend.items] == [label.text for _, label in whole.legend.items]


def test_the_same_runs_again_leave_the_plot_as_it_is_and_other_runs_or_names_redraw_it(qtbot):
    """A followed run's newer checkpoint tells the plots the runs they show already: nothing is redrawn (six plots
    redrawn at once made the window wait). Other runs, another current run or another name redraw every curve."""
    plot = MetricPlot("Loss", "loss_plot", "cross-entropy")
    qtbot.addWidget(plot)
    plot.define("train", "train")
    for run in (1, 2):
        plot.append(run, "train", np.arange(1.0, 11.0), np.linspace(5, 1, 10))
    plot.set_runs(2, {1, 2})
    plot.redraw()
    assert not plot.stale
    plot.set_runs(2, {1, 2})
    assert not plot.stale
    for current, visible, names in ((2, {2}, None), (1, {1, 2}, None), (1, {1, 2}, {2: "baseline"})):
        plot.set_runs(current, visible, names)
        assert plot.stale, (current, visible, names)
        plot.redraw()
        assert not plot.stale
    assert "baseline" in [label.text for _, label in plot.legend.items][1]
