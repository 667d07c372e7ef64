"""The beam-search tree: one column per step, one node per continuation considered.

Kept continuations are solid blue, pruned ones grey and dashed, finished ones
(EOS, or the length limit) green with their length-normalised score. A node
shows its token and the cumulative log-probability of its prefix. Clicking a
kept node shows that prefix's candidates for the next token.

Beam 16 considers up to 256 continuations a step, so the tree can hold tens of
thousands of nodes. Rather than one graphics item per node (and per edge and
label), each column is one item that paints only the nodes and edges in view,
columns already drawn are kept when the next step arrives, and many new columns
at once (Run to end) are added a few at a time between events, after the rest of
the panel has been painted, so the GUI never waits long for the tree.
"""

from __future__ import annotations

import math
import time
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from PySide6.QtCore import QEvent, QLineF, QPointF, QRect, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen, QStaticText, QTransform
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsView,
    QStyleOptionGraphicsItem,
    QToolTip,
)

from explorer.widgets.export import render_scene, write_rows
from explorer.widgets.token_strip import plain_tooltip

if TYPE_CHECKING:  # types only: PyTorch is loaded by the engine, after the window shows
    from model.decoding import DecodeStep

NODE_W, NODE_H, COL_GAP, ROW_GAP = 112, 40, 44, 8
PITCH_X, PITCH_Y = NODE_W + COL_GAP, NODE_H + ROW_GAP
STYLES = {
    "root": ("#eeeeee", "#888888", Qt.PenStyle.SolidLine, "#202020"),
    "live": ("#dbe8f7", "#1f77b4", Qt.PenStyle.SolidLine, "#202020"),
    "pruned": ("#f4f4f4", "#b0b0b0", Qt.PenStyle.DashLine, "#9a9a9a"),
    "finished": ("#dff2df", "#2ca02c", Qt.PenStyle.SolidLine, "#202020"),
}
SLICE_S = 0.015  # GUI time spent adding columns before letting other events in
MAX_EXPORT_PIXELS = 60e6  # a PNG of a very tall tree is drawn at a smaller scale


STATUSES = ("root", "live", "pruned", "finished")  # status codes: index in this tuple
ROOT, LIVE, PRUNED, FINISHED = range(4)


class Node(NamedTuple):
    """One node of the tree, read back from its column (columns keep arrays, not one object per node)."""

    level: int  # 0: the start (BOS); n: the token chosen at step n - 1
    row: int  # position in its column, top to bottom
    status: str  # root | live | pruned | finished
    token: int
    piece: str  # the token as text
    log_prob: float  # cumulative log-probability of the prefix ending here
    score: float | None  # finished hypotheses: the length-normalised score
    live_index: int | None  # kept nodes: position among the prefixes entering the next step

    @property
    def text(self) -> str:
        score = f"  ★ {self.score:.2f}" if self.score is not None else ""
        return f"{self.piece}\n{self.log_prob:.2f}{score}"


@cache
def _pens() -> tuple[tuple[QPen, QPen, QBrush, QPen], ...]:
    """Per status code: edge pen, box pen, box fill, text pen (made once, after the application exists)."""
    return tuple(
        (QPen(QColor(border), 1, style), QPen(QColor(border), 2 if status == "finished" else 1, style),
         QBrush(QColor(fill)), QPen(QColor(ink)))
        for status in STATUSES
        for fill, border, style, ink in [STYLES[status]]
    )  # fmt: skip


def node_tooltip(node: Node) -> str:
    return plain_tooltip(node.text.replace("\n", "  "))


def node_rect(level: int, row: int) -> QRectF:
    return QRectF(level * PITCH_X, row * PITCH_Y, NODE_W, NODE_H)


class Column(QGraphicsItem):
    """The nodes of one level and the edges into them from their parents, painted where exposed.

    Nodes are rows of arrays, grouped by the prefix they extend (in beam order) and most probable
    first within a group.
    """

    def __init__(self, level: int, arrays: dict[str, np.ndarray], parent_rows: np.ndarray, tree: BeamTreeView):
        super().__init__()
        self.level, self.tree = level, tree
        self.status: np.ndarray = arrays["status"]  # [n] status codes
        self.token: np.ndarray = arrays["token"]
        self.log_prob: np.ndarray = arrays["log_prob"]
        self.score: np.ndarray = arrays["score"]  # NaN unless finished
        self.live_index: np.ndarray = arrays["live_index"]  # -1 unless root or live
        self._labels: dict[int, tuple[tuple[QPointF, QStaticText], ...]] = {}  # by row, made when first shown
        # exposedRect: paint only what is in view
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption)
        # edges: the parent's right middle → the child's left middle
        n = len(self.status)
        self.edge_y0 = parent_rows * PITCH_Y + NODE_H / 2
        self.edge_y1 = np.arange(n) * PITCH_Y + NODE_H / 2 if len(parent_rows) else np.zeros(0)
        bottom = max(n * PITCH_Y, float(self.edge_y0.max(initial=0)) + NODE_H)
        left = level * PITCH_X - COL_GAP if len(parent_rows) else level * PITCH_X
        self._bounds = QRectF(left, 0, level * PITCH_X + NODE_W - left, bottom).adjusted(-2, -2, 2, 2)

    @classmethod
    def from_step(cls, step: DecodeStep, level: int, entering_rows: np.ndarray, tree: BeamTreeView) -> Column:
        """The continuations one step considered; ``entering_rows``: rows of its prefixes in the column before."""
        cands = step.kept + step.pruned  # kept: the live ones first, in the order the search kept them
        n, n_live = len(cands), sum(c.status == "live" for c in step.kept)
        parent = np.fromiter((c.parent for c in cands), np.int64, n)
        log_prob = np.fromiter((c.log_prob for c in cands), np.float64, n)
        code = {"live": LIVE, "pruned": PRUNED, "finished": FINISHED}
        status = np.fromiter((code[c.status] for c in cands), np.int8, n)
        live_index = np.full(n, -1, np.int64)
        live_index[:n_live] = np.arange(n_live)
        score = np.full(n, np.nan)
        score[np.flatnonzero(status == FINISHED)] = [h.score for h in step.finished]  # the same order
        token = np.fromiter((c.token for c in cands), np.int64, n)
        order = np.lexsort((-log_prob, parent))  # by prefix, then most probable first (stable)
        arrays: dict[str, np.ndarray] = {
            "status": status[order], "log_prob": log_prob[order], "score": score[order],
            "live_index": live_index[order], "token": token[order],
        }  # fmt: skip
        return cls(level, arrays, entering_rows[parent[order]], tree)

    def __len__(self) -> int:
        return len(self.status)

    def node(self, row: int) -> Node:
        status, token = int(self.status[row]), int(self.token[row])
        score, live = float(self.score[row]), int(self.live_index[row])
        return Node(self.level, row, STATUSES[status], token, self.tree.piece(token), float(self.log_prob[row]),
                    None if math.isnan(score) else score, None if live < 0 else live)  # fmt: skip

    def live_rows(self) -> np.ndarray:
        """Rows of the kept prefixes, in the order the search kept them (the next step's parent order)."""
        rows = np.flatnonzero(self.live_index >= 0)
        return rows[np.argsort(self.live_index[rows])].astype(np.float64)

    def boundingRect(self) -> QRectF:  # noqa: N802 — Qt's name
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        exposed = option.exposedRect
        top, bottom = exposed.top(), exposed.bottom()
        pens = _pens()
        x0, x1 = self.level * PITCH_X - COL_GAP, self.level * PITCH_X
        if exposed.left() < x1 and len(self.edge_y0):
            seen = (np.minimum(self.edge_y0, self.edge_y1) <= bottom) & (np.maximum(self.edge_y0, self.edge_y1) >= top)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            for code in (PRUNED, FINISHED, LIVE):  # kept edges on top
                idx = np.flatnonzero(seen & (self.status == code))
                if len(idx):
                    painter.setPen(pens[code][0])
                    painter.drawLines([QLineF(x0, self.edge_y0[i], x1, self.edge_y1[i]) for i in idx])
        first = max(0, math.floor(top / PITCH_Y))
        last = min(len(self), math.floor(bottom / PITCH_Y) + 1)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)  # boxes on whole pixels: crisp, and 4× faster
        for row in range(first, last):
            _, border, brush, ink = pens[self.status[row]]
            painter.setPen(border)
            painter.setBrush(brush)
            painter.drawRect(node_rect(self.level, row))
            painter.setPen(ink)
            for point, text in self._label(row):
                painter.drawStaticText(point, text)

    def _label(self, row: int) -> tuple[tuple[QPointF, QStaticText], ...]:
        """The node's two centred lines, laid out once (laying text out is most of the painting time)."""
        label = self._labels.get(row)
        if label is None:
            rect, font = node_rect(self.level, row), self.tree.node_font
            lines = [QStaticText(line) for line in self.node(row).text.split("\n")]
            for line in lines:
                line.setTextFormat(Qt.TextFormat.PlainText)  # a token such as <b> is text
                line.prepare(QTransform(), font)
            y = rect.top() + (NODE_H - sum(line.size().height() for line in lines)) / 2
            placed = []
            for line in lines:
                placed.append((QPointF(rect.left() + (NODE_W - line.size().width()) / 2, y), line))
                y += line.size().height()
            label = self._labels[row] = tuple(placed)
        return label


class BeamTreeView(QGraphicsView):
    """Draws the steps of a beam search (or greedy decoding) as a tree."""

    node_clicked = Signal(int, int)  # step whose candidates to show, row of the prefix in it
    drawn = Signal()  # every step given to set_steps is in the scene

    def __init__(self, object_name: str = "beam_tree_view", parent=None):
        super().__init__(parent)
        self.setObjectName(object_name)
        self.setScene(QGraphicsScene(self))
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.node_font = QFont(self.font())
        self.node_font.setPointSizeF(self.node_font.pointSizeF() * 0.9)
        self.columns: list[Column] = []  # one per level drawn; level 0 is the start
        self._steps: list[DecodeStep] = []  # the steps drawn (columns 1…)
        self._pending: list[DecodeStep] = []  # steps still to draw
        self._live_rows: list[np.ndarray] = []  # per level: rows of the prefixes entering the next step
        self._pieces: tuple[str, ...] = ()
        self._eos_id = -1
        self._wanted: tuple[int, int] | None = None  # node to outline (it may not be drawn yet)
        self._scroll = False  # steps changed: bring the newest column into view when it is drawn
        self._slice = QTimer(self, singleShot=True, interval=0)
        self._slice.timeout.connect(self._draw_pending)
        self.outline = QGraphicsRectItem()
        self.outline.setPen(QPen(QColor("#ff7f0e"), 2))
        self.outline.setZValue(1)
        self.outline.hide()
        self.scene().addItem(self.outline)

    # -- data ------------------------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        """Every node drawn, level by level."""
        return [column.node(row) for column in self.columns for row in range(len(column))]

    def piece(self, token: int) -> str:
        if token < 0:
            return "<bos>"
        if token == self._eos_id:
            return "<eos>"
        return self._pieces[token] if token < len(self._pieces) else "?"

    @property
    def pending(self) -> bool:
        """Steps given to :meth:`set_steps` that are not drawn yet (they follow within a few events)."""
        return bool(self._pending)

    def set_steps(self, steps: tuple[DecodeStep, ...], pieces: tuple[str, ...], eos_id: int) -> None:
        """Show ``steps``. Columns of steps already drawn stay; only new steps are added."""
        if pieces is not self._pieces or eos_id != self._eos_id or not self.columns:
            self._clear()
            self._pieces, self._eos_id = pieces, eos_id
            root = {"status": np.array([ROOT], np.int8), "token": np.array([-1]), "log_prob": np.zeros(1),
                    "score": np.full(1, np.nan), "live_index": np.zeros(1, np.int64)}  # fmt: skip
            self._add_column(Column(0, root, np.zeros(0), self))
        same = 0
        while same < min(len(steps), len(self._steps)) and steps[same] is self._steps[same]:
            same += 1
        removed = len(self._steps) > same
        while len(self._steps) > same:  # Back, or steps computed again (new weights)
            self._steps.pop()
            self._live_rows.pop()
            self.scene().removeItem(self.columns.pop())
        self._pending = list(steps[same:])
        self._scroll = self._scroll or bool(self._pending) or removed  # show the newest step once drawn
        self._wanted = None
        self.outline.hide()
        if len(self._pending) > 1:
            self._slice.start()  # many steps at once (Run to end): drawn after the rest of the panel is painted
        else:
            self._draw_pending()

    def _clear(self) -> None:
        self._slice.stop()
        for column in self.columns:
            self.scene().removeItem(column)
        self.columns, self._steps, self._pending, self._live_rows = [], [], [], []

    def _add_column(self, column: Column) -> None:
        self.scene().addItem(column)
        self.columns.append(column)
        self._live_rows.append(column.live_rows())

    def _draw_pending(self) -> None:
        """Add pending columns for a slice of time; the rest follow after other events have run."""
        start = time.perf_counter()
        while self._pending and (time.perf_counter() - start < SLICE_S):
            step = self._pending.pop(0)
            level = len(self.columns)
            self._add_column(Column.from_step(step, level, self._live_rows[-1], self))
            self._steps.append(step)
        self._update_scene_rect()
        if self._pending:
            self._slice.start()
            return
        if self._wanted is not None:
            self.select(*self._wanted)
        self.drawn.emit()

    def finish(self) -> None:
        """Draw every pending step now (exports need the whole tree)."""
        while self._pending:
            self._draw_pending()

    def _update_scene_rect(self) -> None:
        rect = QRectF()
        for column in self.columns:
            rect = rect.united(column.boundingRect())
        self.scene().setSceneRect(rect.adjusted(-10, -10, 10, 10))
        if self._scroll and not self._pending and len(self.columns) > 1:
            self._scroll = False
            tops = self._live_rows[-1]
            row = int(tops.min()) if len(tops) else 0
            self.ensureVisible(node_rect(len(self.columns) - 1, row), 40, 40)

    # -- interaction -----------------------------------------------------------------------
    def node_at(self, scene_x: float, scene_y: float) -> Node | None:
        level, row = math.floor(scene_x / PITCH_X), math.floor(scene_y / PITCH_Y)
        if not (0 <= level < len(self.columns)) or not node_rect(level, row).contains(scene_x, scene_y):
            return None
        column = self.columns[level]
        return column.node(row) if 0 <= row < len(column) else None

    def select(self, level: int, live_index: int) -> None:
        """Outline the node whose candidates are shown (once it is drawn)."""
        self._wanted = (level, live_index)
        self.outline.hide()
        if level >= len(self.columns):
            return
        rows = np.flatnonzero(self.columns[level].live_index == live_index)  # root and live nodes only
        if len(rows):
            self.outline.setRect(node_rect(level, int(rows[0])).adjusted(-3, -3, 3, 3))
            self.outline.show()

    def mousePressEvent(self, event) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton:
            p = self.mapToScene(event.position().toPoint())
            node = self.node_at(p.x(), p.y())
            if node is not None and node.status in ("root", "live"):
                self.node_clicked.emit(node.level, node.live_index or 0)
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        super().mouseMoveEvent(event)
        if event.buttons() == Qt.MouseButton.NoButton:
            p = self.mapToScene(event.position().toPoint())
            node = self.node_at(p.x(), p.y())
            clickable = node is not None and node.status in ("root", "live")
            self.viewport().setCursor(Qt.CursorShape.PointingHandCursor if clickable else Qt.CursorShape.OpenHandCursor)

    def viewportEvent(self, event) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.ToolTip:
            p = self.mapToScene(event.pos())
            node = self.node_at(p.x(), p.y())
            if node is None:
                QToolTip.hideText()
            else:
                QToolTip.showText(event.globalPos(), node_tooltip(node), self.viewport())
            return True
        return super().viewportEvent(event)

    # -- summaries and export --------------------------------------------------------------
    def kept_per_level(self) -> list[int]:
        """How many kept (live) nodes each level has — at most the beam size."""
        kept = [int((column.status == LIVE).sum()) for column in self.columns[1:]]
        while kept and not kept[-1]:
            kept.pop()
        return kept

    def export(self, path: str | Path) -> None:
        """The tree as PNG/SVG, or its nodes as CSV (level, status, token, log-probability, score)."""
        self.finish()
        if Path(path).suffix.lower() == ".csv":
            rows = [[n.level, n.status, n.piece, f"{n.log_prob:.6f}", "" if n.score is None else f"{n.score:.6f}"]
                    for n in self.nodes]  # fmt: skip
            write_rows(path, ["level", "status", "token", "log_prob", "score"], rows)
            return
        source = self.scene().itemsBoundingRect().adjusted(-10, -10, 10, 10)
        scale = min(2.0, math.sqrt(MAX_EXPORT_PIXELS / max(1.0, source.width() * source.height())))
        render_scene(self.scene(), source, path, "beam tree", scale=scale)

    def drawBackground(self, painter, rect: QRectF | QRect) -> None:  # noqa: N802
        painter.fillRect(rect, QColor("#ffffff"))
