"""The next-token candidates of one decoding step: horizontal bars of their probabilities."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTransform
from PySide6.QtWidgets import QGraphicsItem, QGraphicsSimpleTextItem, QWidget

from explorer.appearance import foreground
from explorer.i18n import N_, tr
from explorer.widgets.export import render_scene, titled_view, write_numbers

CHOSEN = "#ff7f0e"
OTHER = "#7aa6d6"


class CandidateBars(QWidget):
    """Top-k next tokens, most probable on top; the ones the search kept are highlighted."""

    def __init__(self, object_name: str = "candidates_plot", parent=None):
        super().__init__(parent)
        self.setObjectName(object_name)
        self.tokens: list[str] = []
        self.probs = np.zeros(0)
        self.chosen: set[int] = set()
        self.plot = pg.PlotWidget()
        self.plot.setBackground(None)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.getViewBox().setMouseEnabled(False, False)
        self.plot.invertY(True)
        self.plot.setXRange(0, 1, padding=0)
        self.plot.setLabel("bottom", "P(token | prefix, source)")
        self.plot.getAxis("left").setStyle(tickLength=0)
        self.bars = pg.BarGraphItem(x0=[], y=[], height=0.7, width=[])
        self.plot.addItem(self.bars)
        # plain text items that keep their size when the plot scales: made once and reused (pyqtgraph's
        # TextItem re-lays itself out while painting, which costs a second paint of the plot every step)
        self.value_labels: list[QGraphicsSimpleTextItem] = []
        self.title, _ = titled_view(self, self.plot, "candidates", self.export, ("PNG", "SVG", "CSV"))
        self.title.setTextFormat(Qt.TextFormat.PlainText)  # the title quotes the model's prefix: never markup
        self._title_source = N_("Next-token candidates")
        self.retranslate()

    def retranslate(self) -> None:
        self.title.setText(tr(self._title_source))

    def set_title(self, title: str) -> None:
        self._title_source = title
        self.retranslate()

    def set_data(self, tokens: list[str], probs: np.ndarray, chosen: set[int]) -> None:
        """``tokens`` and ``probs`` best first; ``chosen`` indexes are the continuations kept."""
        self.tokens, self.probs, self.chosen = list(tokens), np.asarray(probs, dtype=float), set(chosen)
        n = len(self.tokens)
        brushes = [pg.mkBrush(CHOSEN if i in self.chosen else OTHER) for i in range(n)]
        self.bars.setOpts(x0=np.zeros(n), y=np.arange(n), height=0.7, width=self.probs, brushes=brushes)
        self.plot.getAxis("left").setTicks([[(i, t.replace(" ", "␣")) for i, t in enumerate(self.tokens)]])
        while len(self.value_labels) < n:
            label = QGraphicsSimpleTextItem()
            label.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
            self.plot.getViewBox().addItem(label, ignoreBounds=True)
            self.value_labels.append(label)
        color = QColor(foreground())
        for i, label in enumerate(self.value_labels):
            label.setVisible(i < n)
            if i < n:
                label.setBrush(color)
                label.setText(f"{self.probs[i]:.3f}")
                label.setTransform(QTransform.fromTranslate(4, -label.boundingRect().height() / 2))  # centred
                label.setPos(min(self.probs[i], 0.82), i)
        self.plot.setYRange(-0.6, max(n, 5) - 0.4, padding=0)

    def export(self, path: str | Path) -> None:
        path = Path(path)
        if path.suffix.lower() == ".csv":
            rows = [(t, p, int(i in self.chosen)) for i, (t, p) in enumerate(zip(self.tokens, self.probs))]
            with path.open("w", encoding="utf-8") as f:
                f.write("token,probability,kept\n")
                for t, p, k in rows:
                    f.write(f'"{t.replace(chr(34), chr(34) * 2)}",{p!r},{k}\n')
            return
        if path.suffix.lower() == ".npy":
            write_numbers(path, self.probs)
            return
        item = self.plot.getPlotItem()
        render_scene(item.scene(), item.sceneBoundingRect(), path, self.title.text())
