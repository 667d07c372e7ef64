"""Attention heatmaps: one labelled map, and a layers × heads grid of small maps.

Rows are queries, columns keys, as in the weight matrix softmax(QKᵀ/√d_k).
Hovering updates a label with the exact weight and never re-renders the image;
masked cells are hatched; the row of the current query can be outlined.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPen, QResizeEvent
from PySide6.QtWidgets import QGraphicsRectItem, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from explorer.i18n import N_, tr
from explorer.widgets import named
from explorer.widgets.export import export_button, render_scene, titled_view, write_numbers

ATTENTION_MAP = pg.colormap.get("viridis")
DIVERGING_MAP = pg.colormap.get("CET-D1")
HATCH = 4  # overlay pixels per cell side


def hatch_overlay(mask: np.ndarray) -> np.ndarray:
    """RGBA overlay: masked cells light grey with a diagonal line, the rest transparent."""
    rows, cols = mask.shape
    tile = np.zeros((HATCH, HATCH, 4), dtype=np.ubyte)
    tile[...] = (235, 235, 235, 255)
    for i in range(HATCH):
        tile[i, HATCH - 1 - i] = (150, 150, 150, 255)
    big = np.zeros((rows * HATCH, cols * HATCH, 4), dtype=np.ubyte)
    cells = np.kron(mask.astype(np.ubyte), np.ones((HATCH, HATCH), dtype=np.ubyte)).astype(bool)
    big[cells] = np.tile(tile, (rows, cols, 1))[cells]
    return big


def image_plot() -> tuple[pg.GraphicsLayoutWidget, pg.PlotItem, pg.ImageItem]:
    """A fixed (no pan, no zoom) plot with one image in it, row 0 at the top."""
    view = pg.GraphicsLayoutWidget()
    view.setBackground(None)
    plot = view.addPlot()
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.getViewBox().setMouseEnabled(False, False)
    plot.invertY(True)
    image = pg.ImageItem(axisOrder="row-major")
    plot.addItem(image)
    return view, plot, image


def _ticks(labels: list[str], limit: int, stagger: bool = False) -> list[tuple[float, str]]:
    """Tick positions at cell centres; with many labels, every n-th (the hover shows all).
    ``stagger`` puts every other label on a second line, doubling the room each one has."""
    step = max(1, int(np.ceil(len(labels) / max(1, limit))))
    return [(i + 0.5, ("\n" if stagger and (i // step) % 2 else "") + labels[i]) for i in range(0, len(labels), step)]


class Heatmap(QWidget):
    """A labelled heatmap of a [rows, cols] matrix with a colour bar."""

    def __init__(self, object_name: str, title: str = "", levels: tuple[float, float] = (0.0, 1.0),
                 colour_map: pg.ColorMap = ATTENTION_MAP, row_name: str = N_("query"), col_name: str = N_("key"),
                 parent: QWidget | None = None) -> None:  # fmt: skip
        super().__init__(parent)
        self.setObjectName(object_name)
        self._title_source = title
        self.row_name, self.col_name = row_name, col_name
        self.values = np.zeros((0, 0))
        self.rows: list[str] = []
        self.cols: list[str] = []
        self.masked: np.ndarray | None = None  # True: the cell may not be attended to (hatched)
        self.levels = levels
        self._hover = (-1, -1)

        self.view, self.plot, self.image = image_plot()
        self.overlay = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.overlay)
        self.row_box = QGraphicsRectItem()
        pen = QPen(QColor("#ff7f0e"), 2)
        pen.setCosmetic(True)
        self.row_box.setPen(pen)
        self.row_box.setZValue(10)
        self.row_box.hide()
        self.plot.addItem(self.row_box)
        self.colorbar = pg.ColorBarItem(values=levels, colorMap=colour_map, width=12, interactive=False)
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        for name in ("left", "bottom"):
            self.plot.getAxis(name).setStyle(tickLength=0)
        self.view.scene().sigMouseMoved.connect(self._on_move)

        self.hover_label = named(QLabel(), f"{object_name}_hover")
        self.hover_label.setMinimumHeight(18)
        self.hover_label.setTextFormat(Qt.TextFormat.PlainText)  # it quotes tokens, such as <unk>
        self.title, self.export_button = titled_view(
            self, self.view, object_name, self.export, ("PNG", "SVG", "CSV", "NPY"), self.hover_label
        )
        self.retranslate()

    def retranslate(self) -> None:
        self.set_title(self._title_source)

    def set_title(self, title: str) -> None:
        self._title_source = title
        self.title.setText(tr(title))

    def set_data(
        self,
        values: np.ndarray,
        rows: list[str],
        cols: list[str],
        mask: np.ndarray | None = None,
        highlight_row: int | None = None,
        levels: tuple[float, float] | None = None,
    ) -> None:
        """Show ``values [rows, cols]``; ``mask`` True marks cells that may not be attended to."""
        values = np.asarray(values, dtype=np.float64)
        self.values, self.rows, self.cols, self.masked = values, list(rows), list(cols), mask
        if levels is not None:
            self.levels = levels
            self.colorbar.setLevels(levels)
        n_rows, n_cols = values.shape
        self._hover = (-1, -1)
        self.hover_label.setText("")
        if not values.size:  # nothing to show (yet)
            self.image.clear()
            self.overlay.hide()
            self.row_box.hide()
            self.plot.getAxis("left").setTicks([[]])
            self.plot.getAxis("bottom").setTicks([[]])
            return
        self.image.setImage(values, levels=self.levels, autoLevels=False)
        self.image.setRect(QRectF(0, 0, n_cols, n_rows))
        if mask is not None and mask.any():
            self.overlay.setImage(hatch_overlay(mask), autoLevels=False, levels=(0, 255))
            self.overlay.setRect(QRectF(0, 0, n_cols, n_rows))
            self.overlay.show()
        else:
            self.overlay.hide()
        self._column_ticks()
        self.plot.setXRange(0, max(1, n_cols), padding=0)
        self.plot.setYRange(0, max(1, n_rows), padding=0)
        self.highlight_row(highlight_row)

    def _column_ticks(self) -> None:
        """Column labels, on two staggered lines when they would not fit side by side; as many row
        labels as fit the height (hovering names every cell)."""
        if not self.cols:
            return
        fm = QFontMetrics(self.view.font())
        height = max(1.0, self.view.height() - 2.5 * fm.height())
        fit = max(1, int(height // (fm.height() + 1)))
        self.plot.getAxis("left").setTicks([_ticks(self.rows, min(40, fit))])
        width = max(1.0, self.view.width() - 90.0)  # room for the left axis and the colour bar
        widest = max(fm.horizontalAdvance(c) for c in self.cols)
        crowded = widest + 6 > width / min(len(self.cols), 40)
        bottom = self.plot.getAxis("bottom")
        bottom.setTicks([_ticks(self.cols, 40, stagger=crowded)])
        bottom.setHeight(2 * fm.height() + 8 if crowded else fm.height() + 10)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._column_ticks()

    def highlight_row(self, row: int | None) -> None:
        if row is None or not 0 <= row < self.values.shape[0]:
            self.row_box.hide()
            return
        self.row_box.setRect(QRectF(0, row, self.values.shape[1], 1))
        self.row_box.show()

    def _on_move(self, pos: QPointF) -> None:
        if not self.values.size:
            return
        p = self.image.mapFromScene(pos)
        r, c = int(np.floor(p.y())), int(np.floor(p.x()))
        inside = 0 <= r < self.values.shape[0] and 0 <= c < self.values.shape[1]
        cell = (r, c) if inside else (-1, -1)
        if cell == self._hover:
            return
        self._hover = cell
        if not inside:
            self.hover_label.setText("")
            return
        hidden = self.masked is not None and self.masked[r, c]
        note = f"  ({tr('masked: may not attend')})" if hidden else ""
        self.hover_label.setText(
            f"{tr(self.row_name)} {r + 1} “{self.rows[r]}” → {tr(self.col_name)} {c + 1} “{self.cols[c]}”: "
            f"{self.values[r, c]:.4f}{note}"
        )

    def export(self, path: str | Path) -> None:
        path = Path(path)
        if path.suffix.lower() in (".csv", ".npy"):
            write_numbers(path, self.values, self.rows, self.cols)
        else:
            render_scene(self.view.scene(), self.plot.sceneBoundingRect().united(self.colorbar.sceneBoundingRect()),
                         path, self.title.text())  # fmt: skip


class HeatmapGrid(QWidget):
    """Layers × heads small maps as one mosaic image (one draw call); click a map to pick it."""

    cell_clicked = Signal(int, int)  # layer, head (0-based)

    def __init__(self, object_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(object_name)
        self.maps = np.zeros((0, 0, 0, 0))
        self.view, self.plot, self.image = image_plot()
        self.plot.getAxis("left").setStyle(tickLength=0)
        self.plot.getAxis("bottom").setStyle(tickLength=0)
        self.view.scene().sigMouseClicked.connect(self._on_click)
        self.hint = QLabel()
        self.export_button = export_button(self, object_name, self.export, ("PNG", "SVG", "NPY"))
        head = QHBoxLayout()
        head.addWidget(self.hint, 1)
        head.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(head)
        layout.addWidget(self.view, 1)
        self._shape = (0, 0, 0, 0)
        self.retranslate()

    def retranslate(self) -> None:
        self.hint.setText(tr("Rows: layers; columns: heads. Click a map to look at it closely."))

    def set_data(self, maps: np.ndarray, masked: np.ndarray | None = None) -> None:
        """``maps [layers, heads, Lq, Lk]``; ``masked [Lq, Lk]`` cells are drawn blank."""
        maps = np.asarray(maps, dtype=np.float32)
        self.maps = maps
        L, H, q, k = maps.shape
        if not maps.size:  # nothing to show: no image, and no layer or head names of the last one
            self.image.clear()
            self._shape = (0, 0, 0, 0)
            self.plot.getAxis("left").setTicks([[]])
            self.plot.getAxis("bottom").setTicks([[]])
            return
        gap = max(1, min(q, k) // 12)
        mosaic = np.full((L * (q + gap) - gap, H * (k + gap) - gap), np.nan, dtype=np.float32)
        for layer in range(L):
            for head in range(H):
                block = maps[layer, head] if masked is None else np.where(masked, np.nan, maps[layer, head])
                mosaic[layer * (q + gap) : layer * (q + gap) + q, head * (k + gap) : head * (k + gap) + k] = block
        self.image.setImage(mosaic, levels=(0.0, 1.0), autoLevels=False, lut=ATTENTION_MAP.getLookupTable(nPts=256))
        self.image.setRect(QRectF(0, 0, mosaic.shape[1], mosaic.shape[0]))
        if (L, H, q, k) != self._shape:
            self._shape = (L, H, q, k)
            self.plot.getAxis("left").setTicks([[(i * (q + gap) + q / 2, f"L{i + 1}") for i in range(L)]])
            self.plot.getAxis("bottom").setTicks([[(j * (k + gap) + k / 2, f"H{j + 1}") for j in range(H)]])
            self.plot.setXRange(0, mosaic.shape[1], padding=0.01)
            self.plot.setYRange(0, mosaic.shape[0], padding=0.01)
        self._gap = gap

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int] | None:
        L, H, q, k = self._shape
        if not L:
            return None
        p = self.image.mapFromScene(scene_pos)
        layer, head = int(p.y() // (q + self._gap)), int(p.x() // (k + self._gap))
        return (layer, head) if 0 <= layer < L and 0 <= head < H else None

    def _on_click(self, event) -> None:
        cell = self.cell_at(event.scenePos())
        if cell is not None:
            self.cell_clicked.emit(*cell)

    def export(self, path: str | Path) -> None:
        path = Path(path)
        if path.suffix.lower() == ".npy":
            np.save(path, self.maps)
        else:
            render_scene(self.view.scene(), self.plot.sceneBoundingRect(), path)


__all__ = ["ATTENTION_MAP", "DIVERGING_MAP", "Heatmap", "HeatmapGrid"]
