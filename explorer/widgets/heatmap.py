"""Attention heatmaps: one labelled map, and a layers × heads grid of small maps.

Rows are queries, columns keys, as in the weight matrix softmax(QKᵀ/√d_k).
Hovering updates a label with the exact weight and never re-renders the image;
masked cells are hatched (in the grid too); the row of the current query can be outlined, and so can any
set of cells (the experts a router chose for each token).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFontMetrics, QFontMetricsF, QPainterPath, QPen, QResizeEvent
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsRectItem, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from explorer.i18n import N_, tr
from explorer.widgets import named
from explorer.widgets.crossed import CrossedOut
from explorer.widgets.export import export_button, render_scene, titled_view, write_numbers

ATTENTION_MAP = pg.colormap.get("viridis")
DIVERGING_MAP = pg.colormap.get("CET-D1")
HATCH = 4  # overlay pixels per cell side
GRID_HATCH_PIXELS = 4_000_000  # the grid's overlay has at most about this many pixels (fewer per cell beyond)
MAP_HATCH_PIXELS = 1_500_000  # one map's overlay: at most this many pixels (plain grey cells beyond)
EDGE = 20  # pixels a column label may reach beyond the map's ends (the corners below the axes are empty)
LABEL_GAP = 6  # pixels between two column labels on one line
TITLE_SETTLE_MS = 250  # a zoomable map's heads scrolled through: the title follows once the scrolling pauses this long
ZOOM_TIP = N_("Wheel: zoom in and out · drag: move · double click: the whole map")
OUTLINE = "#ff2d2d"  # outlined cells (a router's chosen experts): red reads on viridis' yellow and purple alike


def hatch_overlay(mask: np.ndarray, side: int = HATCH) -> np.ndarray:
    """RGBA overlay of ``side`` × ``side`` pixels per cell: masked cells light grey with diagonal lines, one per
    4 pixels, that run on across neighbouring masked cells (plain light grey when ``side`` is 1); the rest
    transparent."""
    rows, cols = mask.shape
    cells = np.asarray(mask, dtype=bool)
    if side > 1:
        cells = np.repeat(np.repeat(cells, side, 0), side, 1)
    big = np.zeros((rows * side, cols * side, 4), dtype=np.ubyte)
    big[cells] = (235, 235, 235, 255)
    if side > 1:  # the lines: (i + j) % HATCH within each cell's tile, so that they meet at its edges
        i, j = np.ogrid[: rows * side, : cols * side]
        lines = (i % side + j % side) % HATCH == HATCH - 1
        big[cells & lines] = (150, 150, 150, 255)
    return big


def hatch_side(rows: int, cols: int, pixels: int = MAP_HATCH_PIXELS) -> int:
    """Overlay pixels per cell side for one map: finer lines for a few large cells, HATCH for most, and 1 (plain
    light grey) when HATCH would pass ``pixels`` — a long text's cells get less than a screen pixel each, where
    lines could not be seen, and a 512-token map's overlay of 4 × 4 pixels a cell took half a second to make."""
    side = HATCH * int(np.clip(64 // max(rows, cols, 1), 1, 4))
    while side > HATCH and rows * cols * side * side > pixels:
        side -= HATCH
    return side if rows * cols * side * side <= pixels else 1


def hatched_cells(overlay: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Which cells of a ``shape`` map an overlay of :func:`hatch_overlay` covers (any opaque pixel)."""
    rows, cols = shape
    side = overlay.shape[0] // max(1, rows)
    alpha = overlay[: rows * side, : cols * side, 3].reshape(rows, side, cols, side)
    return alpha.max(axis=(1, 3)) > 0


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


def _ticks(labels: list[str], limit: int) -> list[tuple[float, str]]:
    """Tick positions at cell centres; with many labels, every n-th (the hover shows all)."""
    step = max(1, int(np.ceil(len(labels) / max(1, limit))))
    return [(i + 0.5, labels[i]) for i in range(0, len(labels), step)]


def place_labels(widths: list[float], span: float, lines: int = 2, edge: float = EDGE) -> list[tuple[int, int]]:
    """Which column labels to write, and on which line, so that none overprints another: ``widths`` in pixels,
    the columns sharing ``span`` pixels, each label centred on its column and allowed ``edge`` pixels beyond
    the ends. Every label if they fit, else every second, third… (the hover names every cell), each on the
    first line with room; the last (a sentence's <eos>) always. → (column, line) pairs."""
    n = len(widths)
    if not n:
        return []
    cell = span / n
    extent = [((i + 0.5) * cell - w / 2, (i + 0.5) * cell + w / 2) for i, w in enumerate(widths)]
    first = max(1, int(sum(widths) / (lines * span)))  # fewer could not fit, however they are placed
    for step in range(first, n + 1):
        placed = _placed_every(extent, step, lines, span + edge, -edge)
        if placed is not None:
            return placed
    return [(n - 1, 0)]


def _placed_every(
    extent: list[tuple[float, float]], step: int, lines: int, right_end: float, left_end: float
) -> list[tuple[int, int]] | None:
    """Columns 0, step, 2·step… and the last, each on the first of ``lines`` with room; None if one has none."""
    last = len(extent) - 1
    ends = [left_end - LABEL_GAP] * lines  # the right end of the last label placed on each line
    placed = []
    for i in [*range(0, last, step), last]:
        left, right = extent[i]
        if i == 0 and left < left_end and last > 0:  # a first label wider than the edge allows: left out
            continue
        line = next((k for k in range(lines) if left >= ends[k] + LABEL_GAP and right <= right_end), None)
        if line is None:
            return None
        placed.append((i, line))
        ends[line] = right
    return placed


class Heatmap(QWidget):
    """A labelled heatmap of a [rows, cols] matrix with a colour bar."""

    def __init__(
        self,
        object_name: str,
        title: str = "",
        levels: tuple[float, float] = (0.0, 1.0),
        colour_map: pg.ColorMap = ATTENTION_MAP,
        row_name: str = N_("query"),
        col_name: str = N_("key"),
        parent: QWidget | None = None,
        zoomable: bool = False,
    ) -> None:
        super().__init__(parent)
        self.setObjectName(object_name)
        self.zoomable = zoomable  # the wheel zooms, a drag moves, a double click shows the whole map (_allow_zoom)
        self._title_source = title
        self.row_name, self.col_name = row_name, col_name
        self.values = np.zeros((0, 0))
        self.rows: list[str] = []
        self.cols: list[str] = []
        self.masked: np.ndarray | None = None  # True: the cell may not be attended to (hatched)
        self.levels = levels
        self._hover = (-1, -1)
        self._placing = False  # set_data places the labels once, not again for each range it sets
        self._same_text = False  # the last set_data kept the labels: another head of the text shown
        self._title_asked = -1.0  # when set_title was called last (time.monotonic)
        self._title_later = QTimer(self, singleShot=True, interval=TITLE_SETTLE_MS)
        self._title_later.timeout.connect(self._show_title)
        self._label_widths: tuple[list[str] | None, list[float]] = (None, [])  # the column labels and their widths

        self.view, self.plot, self.image = image_plot()
        self._create_marks()
        self.colorbar = pg.ColorBarItem(values=levels, colorMap=colour_map, width=12, interactive=False)
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        for name in ("left", "bottom"):
            self.plot.getAxis(name).setStyle(tickLength=0)
        self.plot.getAxis("bottom").setStyle(hideOverlappingLabels=EDGE)  # the labels place_labels allows
        self.plot.getViewBox().sigResized.connect(self._column_ticks)  # laid out: the labels' room is known
        self.view.scene().sigMouseMoved.connect(self._on_move)
        if zoomable:
            self._allow_zoom()

        self.hover_label = named(QLabel(), f"{object_name}_hover")
        self.hover_label.setMinimumHeight(18)
        self.hover_label.setTextFormat(Qt.TextFormat.PlainText)  # it quotes tokens, such as <unk>
        self.title, self.export_button = titled_view(
            self, self.view, object_name, self.export, ("PNG", "SVG", "CSV", "NPY"), self.hover_label
        )
        self.retranslate()

    def _create_marks(self) -> None:
        """What is drawn over the image: the hatching of masked cells, the current row's box, outlined cells."""
        self.overlay = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.overlay)
        self.row_box = QGraphicsRectItem()
        pen = QPen(QColor("#ff7f0e"), 2)
        pen.setCosmetic(True)
        self.row_box.setPen(pen)
        self.row_box.setZValue(10)
        self.row_box.hide()
        self.plot.addItem(self.row_box)
        self.cells_box = QGraphicsPathItem()
        pen = QPen(QColor(OUTLINE), 2.5)
        pen.setCosmetic(True)
        pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
        self.cells_box.setPen(pen)
        self.cells_box.setZValue(11)
        self.cells_box.hide()
        self.plot.addItem(self.cells_box)
        self.outlined = np.zeros((0, 2), dtype=int)  # [n, 2] (row, column) of the outlined cells
        self.cell_notes: dict[tuple[int, int], str] = {}  # a word the hover adds for a cell

    def _allow_zoom(self) -> None:
        """A long text's map is read by zooming: the wheel zooms around the pointer, a drag moves, a double click
        shows the whole map again, and the labels follow the cells shown (a 512-token map's, thinned to one in a
        few dozen, fill in as it is zoomed). Another head of the same text keeps the zoom."""
        box = self.plot.getViewBox()
        box.setMouseEnabled(True, True)
        box.sigRangeChanged.connect(self._on_range)
        self.view.scene().sigMouseClicked.connect(self._on_click)

    def _on_range(self, *_) -> None:
        if not self._placing:  # zoomed or moved (set_data places the labels itself)
            self._column_ticks()

    def _on_click(self, event) -> None:
        if event.double() and self.values.size:
            self.show_whole()

    def show_whole(self) -> None:
        """The whole map in view (zoomed out)."""
        n_rows, n_cols = self.values.shape
        self.plot.setRange(xRange=(0, max(1, n_cols)), yRange=(0, max(1, n_rows)), padding=0)

    def shown_cells(self) -> tuple[int, int, int, int]:
        """The first and one-past-last row and column at least partly in view (all of them unless zoomed)."""
        n_rows, n_cols = self.values.shape
        if not self.zoomable:
            return 0, n_rows, 0, n_cols
        (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
        clip = lambda v, n: int(np.clip(v, 0, n))  # noqa: E731
        return (
            clip(np.floor(y0), n_rows),
            clip(np.ceil(y1), n_rows),
            clip(np.floor(x0), n_cols),
            clip(np.ceil(x1), n_cols),
        )

    def retranslate(self) -> None:
        self.set_title(self._title_source)
        if self.zoomable:
            self.view.setToolTip(tr(ZOOM_TIP))

    def set_title(self, title: str) -> None:
        """The title above the map. A zoomable map's heads scrolled through (new titles for the same text, each
        within TITLE_SETTLE_MS of the last) get theirs once the scrolling pauses: a title's new text re-lays out
        the whole window, ~10 ms a head, and the window's timer ran late by as much."""
        self._title_source = title
        now = time.monotonic()
        scrolling = self.zoomable and self._same_text and now - self._title_asked < TITLE_SETTLE_MS / 1000
        self._title_asked = now
        if scrolling:
            self._title_later.start()
        else:
            self._title_later.stop()
            self._show_title()

    def _show_title(self) -> None:
        self.title.setText(tr(self._title_source))

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
        # the same sentence with new weights (a probe during training): only the image changes, so the axes
        # keep their drawn labels and the layout stays as it is (re-setting them cost a whole repaint)
        same = (
            values.size > 0
            and values.shape == self.values.shape
            and list(rows) == self.rows
            and list(cols) == self.cols
            and _same_mask(mask, self.masked)
        )
        self.values, self.rows, self.cols, self.masked = values, list(rows), list(cols), mask
        self._same_text = same
        if levels is not None and levels != self.levels:
            self.levels = levels
            self.colorbar.setLevels(levels)
        n_rows, n_cols = values.shape
        self._hover = (-1, -1)
        self.hover_label.setText("")
        self.outline_cells(np.zeros((0, 2), dtype=int))
        if not values.size:  # nothing to show (yet)
            self.image.clear()
            self.overlay.hide()
            self.row_box.hide()
            self.plot.getAxis("left").setTicks([[]])
            self.plot.getAxis("bottom").setTicks([[]])
            return
        self.image.setImage(values, levels=self.levels, autoLevels=False)
        if same:
            self.highlight_row(highlight_row)
            return
        self.image.setRect(QRectF(0, 0, n_cols, n_rows))
        if mask is not None and mask.any():
            self.overlay.setImage(hatch_overlay(mask, hatch_side(n_rows, n_cols)), autoLevels=False, levels=(0, 255))
            self.overlay.setRect(QRectF(0, 0, n_cols, n_rows))
            self.overlay.show()
        else:
            self.overlay.hide()
        if self.zoomable:  # zoomed no further than a few cells, nor out beyond the map
            limits = {"xMin": 0, "xMax": max(1, n_cols), "yMin": 0, "yMax": max(1, n_rows)}
            self.plot.getViewBox().setLimits(**limits, minXRange=min(n_cols, 3), minYRange=min(n_rows, 3))
        self._placing = True
        self.show_whole()
        self._placing = False
        self._column_ticks()
        self._lay_out_now()
        self.highlight_row(highlight_row)

    def _column_ticks(self) -> None:
        """Column labels that never overprint: side by side, on a second line where they would, and left out
        where neither has room (the last, a sentence's <eos>, always written); as many row labels as fit the
        height (hovering names every cell). Zoomed, the labels of the cells in view."""
        if not self.cols or not self.values.size:
            return
        r0, r1, c0, c1 = self.shown_cells()
        if r1 <= r0 or c1 <= c0:
            return
        fm = QFontMetrics(self.view.font())
        height = max(1.0, self.view.height() - 2.5 * fm.height())
        fit = max(1, int(height // (fm.height() + 1)))
        self._row_ticks([(r0 + y, label) for y, label in _ticks(self.rows[r0:r1], min(40, fit))])
        width = self.plot.getViewBox().width()
        if width < 2:  # not laid out yet: the widget less the left axis and the colour bar
            width = max(1.0, self.view.width() - 90.0)
        x0, x1 = self.plot.getViewBox().viewRange()[0] if self.zoomable else (0, len(self.cols))
        span = width * (c1 - c0) / max(1e-9, x1 - x0)  # the pixels of the columns in view
        if self._label_widths[0] is not self.cols:  # measured once per set of labels (zooming measures none)
            self._label_widths = (self.cols, [float(fm.horizontalAdvance(c)) for c in self.cols])
        placed = place_labels(self._label_widths[1][c0:c1], span)
        bottom = self.plot.getAxis("bottom")
        bottom.setTicks([[(c0 + i + 0.5, "\n" * line + self.cols[c0 + i]) for i, line in placed]])
        lines = 1 + max(line for _, line in placed)
        bottom.setHeight(lines * fm.height() + (8 if lines > 1 else 10))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._column_ticks()

    def _lay_out_now(self) -> None:
        """The map laid out for its new labels, and the image placed in it, before it is painted: left to
        pyqtgraph, the layout came after a first paint and the image's place at the start of a second (then a
        third paint), 12–14 ms for a new sentence's map where one paint takes 4–5. The widgets around it are laid
        out first, with what changed there (a caption written before the map, a line longer)."""
        widget: QWidget | None = self
        while widget is not None:
            layout = widget.layout()
            if layout is not None:
                layout.activate()
            widget = None if widget.isWindow() else widget.parentWidget()
        self.plot.layout.activate()
        self.view.scene().prepareForPaint()  # (each view box, the colour bar's too, places its items now)

    def _row_ticks(self, ticks: list[tuple[float, str]]) -> None:
        """The row labels, and the room they take measured now: pyqtgraph measures an axis's labels as it paints
        them, and a new sentence's rows then laid the map out again after its first paint."""
        left = self.plot.getAxis("left")
        left.setTicks([ticks])
        metrics = QFontMetricsF(left.style["tickFont"] or self.view.font())
        widest = max((metrics.horizontalAdvance(label) for _, label in ticks), default=0.0)
        left.setWidth(math.ceil(widest) + left.style["tickTextOffset"][0])

    def outline_cells(self, cells: np.ndarray, notes: dict[tuple[int, int], str] | None = None) -> None:
        """Outline the cells ``cells [n, 2]`` (row, column) of the data shown; ``notes`` adds words to the hover
        text of some cells. :meth:`set_data` clears them."""
        self.outlined = np.asarray(cells, dtype=int).reshape(-1, 2)
        self.cell_notes = dict(notes or {})
        path = QPainterPath()
        for r, c in self.outlined:  # a little inside the cell, so that outlined neighbours stay apart
            path.addRect(QRectF(c + 0.06, r + 0.06, 0.88, 0.88))
        self.cells_box.setPath(path)
        self.cells_box.setVisible(len(self.outlined) > 0)

    def hatched(self) -> np.ndarray:
        """Which cells are drawn hatched now (``[rows, cols]``, all False when none is)."""
        if not self.values.size or not self.overlay.isVisible() or self.overlay.image is None:
            return np.zeros(self.values.shape, dtype=bool)
        return hatched_cells(self.overlay.image, self.values.shape)

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
        if (r, c) in self.cell_notes:
            note += f"  ({self.cell_notes[r, c]})"
        self.hover_label.setText(
            f"{tr(self.row_name)} {r + 1} “{self.rows[r]}” → {tr(self.col_name)} {c + 1} “{self.cols[c]}”: "
            f"{self.values[r, c]:.4f}{note}"
        )

    def export(self, path: str | Path) -> None:
        path = Path(path)
        if path.suffix.lower() in (".csv", ".npy"):
            write_numbers(path, self.values, self.rows, self.cols)
        else:
            render_scene(
                self.view.scene(),
                self.plot.sceneBoundingRect().united(self.colorbar.sceneBoundingRect()),
                path,
                self.title.text(),
            )


GRID_MAP_SIDE = 96  # the most cells a map of the all-heads grid keeps on a side (a map gets ~50 px on screen)


def _pooled(maps: np.ndarray, masked: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None, tuple[int, int]]:
    """``maps [L, H, q, k]`` with each map brought down to at most GRID_MAP_SIDE cells a side: a block of f × f
    cells becomes its largest weight (a sharp peak stays visible), ``masked`` a block all of whose cells are
    masked. Short texts are returned as they are. Also the new map size."""
    L, H, q, k = maps.shape
    f = -(-max(q, k) // GRID_MAP_SIDE)
    if f <= 1:
        return maps, masked, (q, k)
    pq, pk = -(-q // f) * f, -(-k // f) * f
    padded = np.zeros((L, H, pq, pk), dtype=np.float32)
    padded[:, :, :q, :k] = maps
    pooled = padded.reshape(L, H, pq // f, f, pk // f, f).max(axis=(3, 5))
    if masked is not None:
        edge = np.ones((pq, pk), dtype=bool)
        edge[:q, :k] = masked
        masked = np.asarray(edge.reshape(pq // f, f, pk // f, f).all(axis=(1, 3)))
    return pooled, masked, (pq // f, pk // f)


@dataclass(frozen=True)
class Mosaic:
    """The grid's one image, its masked cells (gaps excluded), the shape of a map in it and the gap between."""

    image: np.ndarray
    hidden: np.ndarray
    shape: tuple[int, int, int, int]  # layers, heads, rows and columns of a map
    gap: int


def mosaic_of(maps: np.ndarray, masked: np.ndarray | None) -> Mosaic:
    """The grid's one image: every map (brought down by :func:`_pooled`) side by side, layers down and heads
    across, a gap of NaN between them; the masked cells of each (gaps excluded); the shape of a map; the gap."""
    L, H = maps.shape[:2]
    maps, masked, (q, k) = _pooled(maps, masked)
    gap = max(1, min(q, k) // 12)
    tiles = np.full((L, q + gap, H, k + gap), np.nan, dtype=np.float32)
    shown = maps if masked is None else np.where(masked, np.nan, maps)
    tiles[:, :q, :, :k] = shown.transpose(0, 2, 1, 3)
    rows, cols = L * (q + gap) - gap, H * (k + gap) - gap
    mosaic = tiles.reshape(L * (q + gap), H * (k + gap))[:rows, :cols]
    hidden = np.zeros((L, q + gap, H, k + gap), dtype=bool)  # the masked cells of every map
    if masked is not None:
        hidden[:, :q, :, :k] = masked[None, :, None, :]
    return Mosaic(mosaic, hidden.reshape(L * (q + gap), H * (k + gap))[:rows, :cols], (L, H, q, k), gap)


def _same_mask(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(np.array_equal(a, b))


class HeatmapGrid(QWidget):
    """Layers × heads small maps as one mosaic image (one draw call); click a map to pick it."""

    cell_clicked = Signal(int, int)  # layer, head (0-based)
    _mosaic_ready = Signal(int, Mosaic)  # the maps asked for, their mosaic

    def __init__(self, object_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(object_name)
        self.maps = np.zeros((0, 0, 0, 0))
        self.view, self.plot, self.image = image_plot()
        self.overlay = pg.ImageItem(axisOrder="row-major")  # the masked cells of every map, hatched
        self.plot.addItem(self.overlay)
        self.crossed_out = CrossedOut()  # the maps of heads switched off (cross_out)
        self.plot.addItem(self.crossed_out)
        self.crossed: set[tuple[int, int]] = set()
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
        self._gap = 1
        self._asked = 0  # maps asked for so far: a mosaic made for older ones is not drawn
        self.pending = False  # a long text's mosaic is being made
        self._mosaic_ready.connect(self._draw_mosaic)  # queued: made on another thread
        self.retranslate()

    def retranslate(self) -> None:
        self.hint.setText(tr("Rows: layers; columns: heads. Click a map to look at it closely."))

    def set_data(self, maps: np.ndarray, masked: np.ndarray | None = None) -> None:
        """``maps [layers, heads, Lq, Lk]``; ``masked [Lq, Lk]`` cells are hatched in every map. The maps of a
        long text are brought down to the pixels they get on a thread of their own (for 12 × 12 maps of 512
        tokens that reads 150 MB): the window goes on, and the grid is drawn when they are ready."""
        maps = np.asarray(maps, dtype=np.float32)
        self.maps = maps
        self._asked += 1
        if not maps.size:  # nothing to show: no image, and no layer or head names of the last one
            self.image.clear()
            self.overlay.hide()
            self._shape = (0, 0, 0, 0)
            self.plot.getAxis("left").setTicks([[]])
            self.plot.getAxis("bottom").setTicks([[]])
            self.cross_out(self.crossed)
            return
        if max(maps.shape[2:]) <= GRID_MAP_SIDE:
            self._draw_mosaic(self._asked, mosaic_of(maps, masked))
            return
        asked = self._asked
        self.pending = True
        threading.Thread(
            target=lambda: self._mosaic_ready.emit(asked, mosaic_of(maps, masked)), name="grid", daemon=True
        ).start()

    def _draw_mosaic(self, asked: int, made: Mosaic) -> None:
        if asked != self._asked:  # newer maps were asked for since
            return
        self.pending = False
        mosaic, hidden, (L, H, q, k), gap = made.image, made.hidden, made.shape, made.gap
        self.image.setImage(mosaic, levels=(0.0, 1.0), autoLevels=False, lut=ATTENTION_MAP.getLookupTable(nPts=256))
        self.image.setRect(QRectF(0, 0, mosaic.shape[1], mosaic.shape[0]))
        self._hatch(hidden)
        if (L, H, q, k) != self._shape:
            self._shape = (L, H, q, k)
            self.plot.getAxis("left").setTicks([[(i * (q + gap) + q / 2, f"L{i + 1}") for i in range(L)]])
            self.plot.getAxis("bottom").setTicks([[(j * (k + gap) + k / 2, f"H{j + 1}") for j in range(H)]])
            self.plot.setXRange(0, mosaic.shape[1], padding=0.01)
            self.plot.setYRange(0, mosaic.shape[0], padding=0.01)
        self._gap = gap
        self.cross_out(self.crossed)

    def cross_out(self, cells: set[tuple[int, int]]) -> None:
        """Draw the maps of ``cells`` — (layer, head), 0-based: heads switched off — greyed and crossed out (those
        the grid does not show are kept for when it does)."""
        self.crossed = set(cells)
        L, H, q, k = self._shape
        g = self._gap
        shown = sorted((layer, head) for layer, head in self.crossed if layer < L and head < H)
        self.crossed_out.show_rects(QRectF(h * (k + g), layer * (q + g), k, q) for layer, h in shown)

    def crossed_cells(self) -> set[tuple[int, int]]:
        """The (layer, head) maps drawn crossed out now."""
        L, H, q, k = self._shape
        g = self._gap
        return {(round(r.y() / (q + g)), round(r.x() / (k + g))) for r in self.crossed_out.rects}

    def _hatch(self, hidden: np.ndarray) -> None:
        """Hatch the masked cells of the mosaic ``hidden [rows, cols]`` (True: masked, gaps excluded) as the single
        map does; a large mosaic gets fewer overlay pixels per cell (plain light grey at one)."""
        if not hidden.any():
            self.overlay.hide()
            return
        side = int(max(1, min(HATCH, np.sqrt(GRID_HATCH_PIXELS / hidden.size))))
        self.overlay.setImage(hatch_overlay(hidden, side), autoLevels=False, levels=(0, 255))
        self.overlay.setRect(QRectF(0, 0, hidden.shape[1], hidden.shape[0]))
        self.overlay.show()

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
