"""A plot's legend in a row of its own above the plotting area, where no curve can run under it.

pyqtgraph puts a legend inside the view box, over the data: in a small plot it hides the end of a curve (a rising
accuracy, the last evaluation point). Here the legend hangs from the top right of the plot item, and the plot
item's first row (pyqtgraph's title row, unused by our plots, which are titled by a label above them) is kept
exactly as tall as the legend; its entries stand side by side, in as many columns as the width allows.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

from explorer.appearance import legend_brush

MARGIN = 2  # px between the legend and the plotting area below it
TITLE_ROW = 0  # pyqtgraph's PlotItem lays its title out in row 0 of its grid


class Legend(pg.LegendItem):
    """pyqtgraph's legend, compact (no margins round the entries, none round their text) and sized by what its
    entries ask for."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.layout.setContentsMargins(2, 0, 2, 0)

    def addItem(self, item, name: str) -> None:  # noqa: N802 — pyqtgraph's name
        super().addItem(item, name)
        _, label = self.items[-1]
        label.item.document().setDocumentMargin(1)  # (4 px by default: a row of legend 8 px taller than its text)
        label.setText(label.text)  # measured again
        self.updateSize()

    def updateSize(self) -> None:  # noqa: N802 — pyqtgraph's name
        """(pyqtgraph adds up the entries' last geometries, which lag a layout behind: a legend laid out again in
        more columns kept the width of its one column, and grew wider than its plot.)"""
        hint = self.layout.effectiveSizeHint(Qt.SizeHint.PreferredSize) if self.items else None
        self.setGeometry(0, 0, hint.width() if hint else 0, hint.height() if hint else 0)


class LegendAbove:
    """The legend of ``plot``, above its plotting area. Entries are added with ``legend.addItem`` as usual; the
    row's height and the number of columns follow the legend's size and the plot's width."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        self.item = plot.getPlotItem()
        self.legend = Legend(brush=legend_brush(), horSpacing=8)
        self.legend.setParentItem(self.item)
        self.legend.anchor(itemPos=(1, 0), parentPos=(1, 0), offset=(-4, 0))
        self.item.legend = self.legend  # where pyqtgraph (and the theme) look for a plot's legend
        self.legend.geometryChanged.connect(self.fit)  # new entries, another font
        self.item.geometryChanged.connect(self.fit)  # another width

    def fit(self) -> None:
        """As many columns as fit the plot's width (one row if they all do), and room above the plot for them."""
        entries = self.legend.items
        if entries:
            widths = [sample.boundingRect().width() + label.item.boundingRect().width() for sample, label in entries]
            columns = self._columns_that_fit(widths)
            if columns != self.legend.columnCount:
                self.legend.setColumnCount(columns)  # lays the legend out again (and may call fit again)
        height = self.legend.height() + MARGIN if entries else 0
        if abs(self.item.layout.rowMinimumHeight(TITLE_ROW) - height) > 0.5:
            self.item.layout.setRowFixedHeight(TITLE_ROW, height)

    def _columns_that_fit(self, widths: list[float]) -> int:
        room = self.item.width() - 8
        spacing = self.legend.layout.horizontalSpacing()
        for columns in range(len(widths), 1, -1):
            column_widths = [max(widths[c::columns]) for c in range(columns)]
            if sum(column_widths) + spacing * (2 * columns - 1) <= room:
                return columns
        return 1
