"""Cells drawn crossed out and greyed over a heatmap: the heads a person has switched off (head ablation)."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsPathItem

CROSS = "#d62728"  # the cross: red reads on viridis' purple and yellow alike
VEIL = QColor(128, 128, 128, 150)  # the grey laid over a switched-off map: its weights still show, faintly


def crossed_path(rects: Iterable[QRectF]) -> QPainterPath:
    """Each rectangle's outline and both its diagonals, as one path."""
    path = QPainterPath()
    for r in rects:
        path.addRect(r)
        path.moveTo(r.topLeft())
        path.lineTo(r.bottomRight())
        path.moveTo(r.topRight())
        path.lineTo(r.bottomLeft())
    return path


class CrossedOut(QGraphicsPathItem):
    """A grey veil and a red cross over each of some rectangles (in the plot's data coordinates)."""

    def __init__(self) -> None:
        super().__init__()
        pen = QPen(QColor(CROSS), 2.5)
        pen.setCosmetic(True)  # the same width whatever the map's scale
        pen.setCapStyle(Qt.PenCapStyle.FlatCap)
        self.setPen(pen)
        self.setBrush(QBrush(VEIL))
        self.setZValue(12)
        self.rects: list[QRectF] = []
        self.hide()

    def show_rects(self, rects: Iterable[QRectF]) -> None:
        self.rects = list(rects)
        self.setPath(crossed_path(self.rects))
        self.setVisible(bool(self.rects))
