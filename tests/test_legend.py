"""A plot's legend in a row of its own above the plotting area (explorer/widgets/legend.py): side by side where the
plot is wide enough, in fewer columns where it is not, and never over the curves."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

import pyqtgraph as pg  # noqa: E402

from explorer.widgets.legend import MARGIN, TITLE_ROW, LegendAbove  # noqa: E402


@pytest.fixture
def plotted(qtbot):
    """A plot 800 px wide with its legend above it, shown; → (plot, its LegendAbove)."""
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(800, 300)
    plot.show()
    return plot, LegendAbove(plot)


def settle(qtbot) -> None:
    qtbot.wait(50)  # the layout takes in the new entries and sizes


def add_entries(plot, above, names) -> None:
    for name in names:
        above.legend.addItem(plot.plot([1, 2], [1, 2]), name)


def legend_box(above):
    return above.legend.mapRectToParent(above.legend.boundingRect())


def plotting_area(above):
    vb = above.item.vb
    return vb.mapRectToParent(vb.boundingRect())


def test_without_entries_the_plot_keeps_its_whole_height(plotted, qtbot):
    plot, above = plotted
    settle(qtbot)
    assert above.item.layout.rowMinimumHeight(TITLE_ROW) == 0 and above.item.legend is above.legend


def test_a_wide_plot_has_its_entries_side_by_side_above_the_curves(plotted, qtbot):
    plot, above = plotted
    add_entries(plot, above, ("train", "valid", "test set"))
    settle(qtbot)
    legend = above.legend
    assert legend.columnCount == 3  # one row
    assert above.item.layout.rowMinimumHeight(TITLE_ROW) == pytest.approx(legend.height() + MARGIN)
    box, area = legend_box(above), plotting_area(above)
    assert box.bottom() <= area.top()  # never over the curves
    assert box.right() <= above.item.width() and box.right() > area.center().x()  # at the top right


def test_a_narrow_plot_stacks_them_in_fewer_columns_and_makes_room(plotted, qtbot):
    plot, above = plotted
    add_entries(plot, above, ("train", "valid", "test set"))
    settle(qtbot)
    one_row = above.legend.height()
    plot.resize(160, 300)
    settle(qtbot)
    assert above.legend.columnCount < 3 and above.legend.height() > one_row
    assert above.item.layout.rowMinimumHeight(TITLE_ROW) == pytest.approx(above.legend.height() + MARGIN)
    box, area = legend_box(above), plotting_area(above)
    assert box.bottom() <= area.top() and box.left() >= 0 and box.right() <= above.item.width()
    plot.resize(800, 300)  # wide again: one row again
    settle(qtbot)
    assert above.legend.columnCount == 3


def test_the_entries_are_compact(plotted):
    plot, above = plotted
    add_entries(plot, above, ("train",))
    _, label = above.legend.items[0]
    assert label.item.document().documentMargin() == 1
