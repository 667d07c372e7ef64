"""The positional-encoding lab's line plot (:mod:`explorer.panels.positional`): curves with a legend above them,
exported as a picture or as numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from explorer.i18n import tr
from explorer.widgets.export import render_scene, titled_view, write_numbers
from explorer.widgets.legend import LegendAbove
from explorer.widgets.metric_plot import RUN_COLOURS


class LinePlot(QWidget):
    """A plain line plot with export (picture or numbers)."""

    def __init__(self, object_name: str, title: str, x_label: str, y_label: str, parent=None):
        super().__init__(parent)
        self.setObjectName(object_name)
        self._title_source = title
        self._axis_labels = (x_label, y_label)
        self.series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.plot = pg.PlotWidget()
        self.plot.setBackground(None)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.legend_above = LegendAbove(self.plot)  # the legend above the curves, never over them
        self.legend = self.legend_above.legend
        self.title, _ = titled_view(self, self.plot, object_name, self.export, ("PNG", "SVG", "CSV", "NPY"))
        self.retranslate()

    def retranslate(self) -> None:
        self.title.setText(tr(self._title_source))
        self.plot.setLabel("bottom", tr(self._axis_labels[0]))
        self.plot.setLabel("left", tr(self._axis_labels[1]))

    def set_series(self, series: list[tuple[str, np.ndarray, np.ndarray, dict]]) -> None:
        self.plot.clear()
        self.legend.clear()
        self.series = {}
        for i, (name, x, y, style) in enumerate(series):
            pen = pg.mkPen(
                style.get("colour", RUN_COLOURS[i % len(RUN_COLOURS)]),
                width=style.get("width", 1.6),
                style=style.get("line", Qt.PenStyle.SolidLine),
            )
            kw = dict(pen=pen, name=name)
            if style.get("symbol"):
                colour = style.get("colour")
                kw.update(
                    symbol=style["symbol"],
                    symbolSize=style.get("size", 6),
                    pen=None,
                    symbolBrush=None if style.get("hollow") else colour,
                    symbolPen=colour,
                )
            self.plot.plot(x, y, **kw)
            self.series[name] = (np.asarray(x), np.asarray(y))

    def export(self, path: str | Path) -> None:
        path = Path(path)
        if path.suffix.lower() in (".csv", ".npy"):
            names = list(self.series)
            if not names:
                raise ValueError(tr("Nothing to export yet."))
            columns = [self.series[names[0]][0]] + [self.series[n][1] for n in names]
            write_numbers(path, np.stack(columns, axis=1), None, ["x", *names])
        else:
            item = self.plot.getPlotItem()
            render_scene(item.scene(), item.sceneBoundingRect(), path, self.title.text())
