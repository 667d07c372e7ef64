"""The next-token candidates of one decoding step (or the guesses for one masked position): horizontal bars of
their probabilities. A sampled step also shows what top-k / top-p cut before the draw (grey bars) and which token
was drawn (an outlined bar)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QTransform
from PySide6.QtWidgets import QGraphicsItem, QGraphicsSimpleTextItem, QLabel, QWidget

from explorer.appearance import foreground
from explorer.i18n import N_, tr
from explorer.widgets.export import render_scene, titled_view, write_numbers

CHOSEN = "#ff7f0e"
OTHER = "#7aa6d6"
DRAWN = "#7a1f00"  # the outline of the token drawn at random
AXIS = N_("P(token | prefix, source)")
INSIDE_TEXT = "#202020"  # a probability written inside its bar: dark on orange and light blue, in either theme
GAP = 4  # px between a bar's end and its probability


def cut_colour(alpha: int = 60) -> QColor:
    """A bar removed by top-k / top-p before the draw (it could not be drawn): the theme's text colour, faint —
    light grey on a light background, dark grey on a dark one."""
    colour = QColor(foreground())
    colour.setAlpha(alpha)
    return colour


class CandidateBars(QWidget):
    """Top-k next tokens, most probable on top; the ones the search kept are highlighted, the ones a sampling cut
    removed are grey, and the one drawn at random is outlined and labelled."""

    candidate_clicked = Signal(int, str)  # a bar was clicked: its index and its token (e.g. "why not this one?")

    def __init__(self, object_name: str = "candidates_plot", parent=None):
        super().__init__(parent)
        self.setObjectName(object_name)
        self.tokens: list[str] = []
        self.probs = np.zeros(0)
        self.chosen: set[int] = set()
        self.cut: set[int] = set()  # indexes greyed: removed by top-k / top-p before the draw
        self.drawn: int | None = None  # index of the token drawn at random
        self.plot = pg.PlotWidget()
        self.plot.setBackground(None)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.getViewBox().setMouseEnabled(False, False)
        self.plot.invertY(True)
        self.plot.setXRange(0, 1, padding=0)
        self.plot.getAxis("left").setStyle(tickLength=0)
        self.bars = pg.BarGraphItem(x0=[], y=[], height=0.7, width=[])
        self.plot.addItem(self.bars)
        self.plot.getViewBox().sigResized.connect(self._label_values)  # where a label fits depends on the width
        self.plot.scene().sigMouseClicked.connect(self._on_click)
        # plain text items that keep their size when the plot scales: made once and reused (pyqtgraph's
        # TextItem re-lays itself out while painting, which costs a second paint of the plot every step)
        self.value_labels: list[QGraphicsSimpleTextItem] = []
        self.note = QLabel()  # below the chart: what the grey and the outlined bars mean (sampling), or empty
        self.note.setObjectName(object_name + "_note")
        self.note.setTextFormat(Qt.TextFormat.PlainText)  # it may quote a token: never markup
        self.note.setWordWrap(True)
        self.note.hide()
        self.title, _ = titled_view(self, self.plot, "candidates", self.export, ("PNG", "SVG", "CSV"), self.note)
        self.title.setTextFormat(Qt.TextFormat.PlainText)  # the title quotes the model's prefix: never markup
        self._title_source = N_("Next-token candidates")
        self._axis_source = AXIS
        self.retranslate()

    def retranslate(self) -> None:
        self.title.setText(tr(self._title_source))
        self.plot.setLabel("bottom", tr(self._axis_source))
        if self.drawn is not None:
            self._label_values()

    def set_title(self, title: str) -> None:
        self._title_source = title
        self.retranslate()

    def set_axis_label(self, label: str) -> None:
        """What the bars measure (an untranslated string: it is translated here, also on a language change)."""
        self._axis_source = label
        self.plot.setLabel("bottom", tr(label))

    def set_note(self, text: str) -> None:
        """A line under the chart (empty: none)."""
        self.note.setText(text)
        self.note.setVisible(bool(text))

    def set_data(
        self,
        tokens: list[str],
        probs: np.ndarray,
        chosen: set[int],
        cut: Iterable[int] = (),
        drawn: int | None = None,
    ) -> None:
        """``tokens`` and ``probs`` best first; ``chosen`` indexes are the continuations kept; ``cut`` indexes were
        removed by top-k / top-p before a draw (grey); ``drawn`` is the index of the token drawn at random."""
        self.tokens, self.probs, self.chosen = list(tokens), np.asarray(probs, dtype=float), set(chosen)
        self.cut, self.drawn = set(cut), drawn
        n = len(self.tokens)
        grey = cut_colour()
        brushes = [pg.mkBrush(grey if i in self.cut else CHOSEN if i in self.chosen else OTHER) for i in range(n)]
        edge = pg.mkPen(foreground())
        pens = [pg.mkPen(DRAWN, width=3) if i == drawn else edge for i in range(n)] or None  # (pyqtgraph: not [])
        self.bars.setOpts(x0=np.zeros(n), y=np.arange(n), height=0.7, width=self.probs, brushes=brushes, pens=pens)
        self.plot.getAxis("left").setTicks([[(i, t.replace(" ", "␣")) for i, t in enumerate(self.tokens)]])
        while len(self.value_labels) < n:
            label = QGraphicsSimpleTextItem()
            label.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
            self.plot.getViewBox().addItem(label, ignoreBounds=True)
            self.value_labels.append(label)
        self._label_values()
        self.plot.setYRange(-0.6, max(n, 5) - 0.4, padding=0)

    def bar_at(self, scene_pos: QPointF) -> int | None:
        """The index of the bar at ``scene_pos`` (its row, anywhere across the plot), if any."""
        box = self.plot.getViewBox()
        if not self.tokens or not box.sceneBoundingRect().contains(scene_pos):
            return None
        i = int(round(box.mapSceneToView(scene_pos).y()))
        return i if 0 <= i < len(self.tokens) else None

    def _on_click(self, event) -> None:
        i = self.bar_at(event.scenePos())
        if i is not None:
            self.candidate_clicked.emit(i, self.tokens[i])

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # e.g. presenter mode: the probabilities grow with the text
            self._label_values()

    def _label_values(self, *_) -> None:
        """Each bar's probability at its end, in the interface's font (grey where it was cut; the drawn one says
        so): right of the bar where it fits in the plot, else inside the bar's end — never across it."""
        n = len(self.tokens)
        color, grey = QColor(foreground()), cut_colour(150)
        font = QFont(self.font())  # the widget's: its children's may not have followed a change yet
        width = self.plot.getViewBox().width()  # px for probabilities 0…1
        for i, label in enumerate(self.value_labels):
            label.setVisible(i < n)
            if i >= n:
                continue
            label.setFont(font)
            mark = "  ◀ " + tr("drawn at random") if i == self.drawn else ""
            label.setText(f"{self.probs[i]:.3f}{mark}")
            size = label.boundingRect()
            end = float(np.clip(self.probs[i], 0.0, 1.0)) * width
            if end + GAP + size.width() <= width or width <= 0:  # beyond the bar's end (or not laid out yet)
                dx, brush = float(GAP), grey if i in self.cut else color
            elif end - GAP - size.width() >= 0:  # inside the bar, flush with its end
                dx, brush = -GAP - size.width(), QColor(INSIDE_TEXT)
            else:  # fits on neither side: as far right as the plot allows
                dx, brush = max(-end, width - end - size.width()), QColor(INSIDE_TEXT)
            label.setBrush(brush)
            label.setTransform(QTransform.fromTranslate(dx, -size.height() / 2))  # centred on the bar
            label.setPos(float(np.clip(self.probs[i], 0.0, 1.0)), i)

    def export(self, path: str | Path) -> None:
        path = Path(path)
        if path.suffix.lower() == ".csv":
            with path.open("w", encoding="utf-8") as f:
                f.write("token,probability,kept,cut,drawn\n")
                for i, (t, p) in enumerate(zip(self.tokens, self.probs)):
                    flags = f"{int(i in self.chosen)},{int(i in self.cut)},{int(i == self.drawn)}"
                    f.write(f'"{t.replace(chr(34), chr(34) * 2)}",{float(p)!r},{flags}\n')
            return
        if path.suffix.lower() == ".npy":
            write_numbers(path, self.probs)
            return
        item = self.plot.getPlotItem()
        render_scene(item.scene(), item.sceneBoundingRect(), path, self.title.text())
