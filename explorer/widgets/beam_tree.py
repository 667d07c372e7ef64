"""The beam-search tree: one column per step, one node per continuation considered.

Kept continuations are solid blue, finished ones (EOS, or the length limit) green with their
length-normalised score ★. The best path — the finished hypothesis with the highest ★, or while none
has finished the best live prefix — is drawn over them in a thick accent colour with bold labels, and
is kept in view as the search grows unless the person has scrolled or zoomed by hand. A node shows its
token and the cumulative log-probability of its prefix. Clicking a kept node shows that prefix's
candidates for the next token.

Pruned continuations outnumber the kept ones (beam² against beam a step), so each step shows them as
one "+N pruned" badge under its kept nodes; clicking the badge (or "Show pruned") draws them, grey and
dashed, below it. Kept nodes never move when pruned ones are shown, so the tree stays compact.

Beam 16 considers up to 256 continuations a step, so the tree can hold tens of thousands of nodes.
Rather than one graphics item per node (and per edge and label), each column is one item that paints
only the nodes and edges in view, columns already drawn are kept when the next step arrives, and many
new columns at once (Run to end) are added a few at a time between events, after the rest of the
panel has been painted, so the GUI never waits long for the tree.
"""

from __future__ import annotations

import html
import math
import time
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np
from PySide6.QtCore import QEvent, QLineF, QPoint, QPointF, QRect, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen, QStaticText, QTransform
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QStyleOptionGraphicsItem,
    QToolButton,
    QToolTip,
    QWidget,
)

from explorer.i18n import language, tr
from explorer.widgets.export import render_scene, write_rows
from explorer.widgets.token_strip import plain_tooltip

if TYPE_CHECKING:  # types only: PyTorch is loaded by the engine, after the window shows
    from model.decoding.search import DecodeStep

NODE_W, NODE_H, COL_GAP, ROW_GAP = 104, 40, 40, 6
PITCH_X, PITCH_Y = NODE_W + COL_GAP, NODE_H + ROW_GAP
BADGE_H = 24  # the "+N pruned" badge, in the row under a step's kept nodes
STYLES = {  # fill, border, border style, text
    "root": ("#eeeeee", "#888888", Qt.PenStyle.SolidLine, "#202020"),
    "live": ("#dbe8f7", "#1f77b4", Qt.PenStyle.SolidLine, "#202020"),
    "pruned": ("#f4f4f4", "#a8a8a8", Qt.PenStyle.DashLine, "#707070"),
    "finished": ("#dff2df", "#2ca02c", Qt.PenStyle.SolidLine, "#202020"),
}
ACCENT = "#e6550d"  # the best path
SELECTED = "#7b3294"  # the outline of the node whose candidates are shown
SLICE_S = 0.015  # GUI time spent adding columns before letting other events in
MAX_EXPORT_PIXELS = 60e6  # a PNG of a very tall tree is drawn at a smaller scale
BASE_PT = 9.0  # the text size the boxes are laid out for: a larger interface font (presenter mode) zooms the tree
MIN_SCALE, MAX_SCALE = 0.15, 4.0  # zoom limits, times the text scale
MIN_FIT_SCALE, MAX_FIT_SCALE = 0.6, 1.25  # Fit keeps labels legible, then scrolls to the best path (× text scale)
ZOOM_STEP = 1.25  # one press of − or +
MIN_LABEL_SCALE = 0.4  # zoomed out further, nodes are drawn without their text

STATUSES = ("root", "live", "pruned", "finished")  # status codes: index in this tuple
ROOT, LIVE, PRUNED, FINISHED = range(4)
Mode = Literal["follow", "fit", "manual"]  # keep the best path in view / fit the tree / leave it to the person


class Node(NamedTuple):
    """One node of the tree, read back from its column (columns keep arrays, not one object per node)."""

    level: int  # 0: the start (BOS); n: the token chosen at step n - 1
    row: int  # layout row in its column: kept ones first, then the badge, then the pruned ones
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
    edge_width = {"root": 1.5, "live": 1.5, "pruned": 1.0, "finished": 1.5}
    return tuple(
        (
            QPen(QColor(border), edge_width[status], style),
            QPen(QColor(border), 2 if status == "finished" else 1, style),
            QBrush(QColor(fill)),
            QPen(QColor(ink)),
        )
        for status in STATUSES
        for fill, border, style, ink in [STYLES[status]]
    )


@cache
def _accent_pens() -> tuple[QPen, QPen]:
    """The best path's edge pen and box pen."""
    edge = QPen(QColor(ACCENT), 4.5)
    edge.setCapStyle(Qt.PenCapStyle.RoundCap)
    box = QPen(QColor(ACCENT), 3)
    box.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
    return edge, box


def node_tooltip(node: Node) -> str:
    return plain_tooltip(node.text.replace("\n", "  "))


def node_rect(level: int, row: int) -> QRectF:
    return QRectF(level * PITCH_X, row * PITCH_Y, NODE_W, NODE_H)


def badge_rect(level: int, row: int) -> QRectF:
    return QRectF(level * PITCH_X + 6, row * PITCH_Y, NODE_W - 12, BADGE_H)


def static_text(text: str, font: QFont) -> QStaticText:
    line = QStaticText(text)
    line.setTextFormat(Qt.TextFormat.PlainText)  # a token such as <b> is text
    line.prepare(QTransform(), font)
    return line


def legible(option: QStyleOptionGraphicsItem, painter: QPainter) -> bool:
    """Whether labels are drawn at this zoom: below it they are unreadable and cost most of the painting time."""
    return option.levelOfDetailFromTransform(painter.worldTransform()) >= MIN_LABEL_SCALE


class Column(QGraphicsItem):
    """The nodes of one level and the edges into them from their parents, painted where exposed.

    Nodes are rows of arrays: the kept ones (live and finished) first, then the pruned ones; each part
    grouped by the row of the prefix it extends and most probable first within a group. Layout rows
    equal array indexes for kept nodes; pruned nodes sit one row lower, under the badge.
    """

    def __init__(self, level: int, arrays: dict[str, np.ndarray], parent_row: np.ndarray, tree: BeamTreeView):
        super().__init__()
        self.level, self.tree = level, tree
        self.status: np.ndarray = arrays["status"]  # [n] status codes
        self.token: np.ndarray = arrays["token"]
        self.log_prob: np.ndarray = arrays["log_prob"]
        self.score: np.ndarray = arrays["score"]  # NaN unless finished
        self.live_index: np.ndarray = arrays["live_index"]  # -1 unless root or live
        self.parent_row: np.ndarray = parent_row  # [n] layout row of each node's parent (empty for the root)
        self.n_kept = int((self.status != PRUNED).sum())
        self.n_pruned = len(self.status) - self.n_kept
        self.best = int(arrays["best"][0]) if "best" in arrays else -1  # index of the best finished node here
        self.expanded = tree.pruned_shown
        self._labels: dict[tuple[int, bool], tuple[tuple[QPointF, QStaticText], ...]] = {}  # by (row, bold)
        self._badge: tuple[str, QStaticText] | None = None
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption)  # exposedRect: paint what is seen
        self.rows = np.arange(len(self.status)) + (np.arange(len(self.status)) >= self.n_kept)  # index → layout row
        self.edge_y0 = parent_row * PITCH_Y + NODE_H / 2  # the parent's right middle → the child's left middle
        self.edge_y1 = self.rows * PITCH_Y + NODE_H / 2 if len(parent_row) else np.zeros(0)
        self._bounds = QRectF()
        self._layout()

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
        finished = np.flatnonzero(status == FINISHED)
        score[finished] = [h.score for h in step.finished]  # the same order
        token = np.fromiter((c.token for c in cands), np.int64, n)
        parent_row = entering_rows[parent]
        order = np.lexsort((-log_prob, parent_row, status == PRUNED))  # kept first, by parent, most probable first
        arrays: dict[str, np.ndarray] = {
            "status": status[order],
            "log_prob": log_prob[order],
            "score": score[order],
            "live_index": live_index[order],
            "token": token[order],
        }
        if len(finished):  # the search's own ranking: highest ★, the first finished one on a tie
            arrays["best"] = np.flatnonzero(order == finished[int(np.argmax(score[finished]))])
        return cls(level, arrays, parent_row[order], tree)

    def __len__(self) -> int:
        return len(self.status)

    def index(self, row: int) -> int | None:
        """The array index of the node in layout ``row``; None for the badge's row and rows past the end."""
        if 0 <= row < self.n_kept:
            return row
        if self.n_kept < row <= len(self):
            return row - 1
        return None

    def node(self, row: int) -> Node:
        i = self.index(row)
        if i is None:
            raise IndexError(f"no node in row {row} of level {self.level}")
        status, token = int(self.status[i]), int(self.token[i])
        score, live = float(self.score[i]), int(self.live_index[i])
        return Node(
            self.level,
            row,
            STATUSES[status],
            token,
            self.tree.piece(token),
            float(self.log_prob[i]),
            None if math.isnan(score) else score,
            None if live < 0 else live,
        )

    def all_nodes(self) -> list[Node]:
        """Every node, pruned ones too, top to bottom."""
        return [self.node(int(row)) for row in self.rows]

    def shown_rows(self) -> np.ndarray:
        """Layout rows of the nodes drawn: the kept ones, and the pruned ones when expanded."""
        return self.rows if self.expanded else self.rows[: self.n_kept]

    def live_rows(self) -> np.ndarray:
        """Rows of the kept prefixes, in the order the search kept them (the next step's parent order)."""
        rows = np.flatnonzero(self.live_index >= 0)
        return rows[np.argsort(self.live_index[rows])]

    def forget_labels(self) -> None:
        """Lay the labels out again when next painted (the fonts changed)."""
        self._labels.clear()
        self._badge = None
        self.update()

    def set_expanded(self, expanded: bool) -> None:
        if expanded != self.expanded and self.n_pruned:
            self.prepareGeometryChange()
            self.expanded = expanded
            self._layout()
            self.update()

    def _layout(self) -> None:
        n_shown = len(self) if self.expanded else self.n_kept
        bottom: float = self.n_kept * PITCH_Y + (BADGE_H if self.n_pruned else 0)  # the last kept node, or the badge
        if self.expanded and self.n_pruned:
            bottom = int(self.rows[-1]) * PITCH_Y + NODE_H
        bottom = max(bottom, float(self.edge_y0[:n_shown].max(initial=0)) + NODE_H / 2)
        left = self.level * PITCH_X - (COL_GAP if len(self.parent_row) else 0)
        self._bounds = QRectF(left, 0, self.level * PITCH_X + NODE_W - left, bottom).adjusted(-3, -3, 3, 3)

    def boundingRect(self) -> QRectF:  # noqa: N802 — Qt's name
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        exposed = option.exposedRect
        if exposed.left() < self.level * PITCH_X and len(self.edge_y0):
            self._paint_edges(painter, exposed.top(), exposed.bottom())
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)  # boxes on whole pixels: crisp, and 4× faster
        rows = self.shown_rows()
        first = max(0, math.floor(exposed.top() / PITCH_Y))
        last = math.floor(exposed.bottom() / PITCH_Y) + 1
        rows = rows[(rows >= first) & (rows < last)]
        pens = _pens()
        for row in rows.tolist():
            _, border, brush, _ = pens[self.status[self.index(row)]]
            painter.setPen(border)
            painter.setBrush(brush)
            painter.drawRect(node_rect(self.level, row))
        if legible(option, painter):
            self.paint_labels(painter, rows.tolist(), bold=False)
        if self.n_pruned and first <= self.n_kept < last:
            self._paint_badge(painter)

    def _paint_edges(self, painter: QPainter, top: float, bottom: float) -> None:
        n = len(self) if self.expanded else self.n_kept
        y0, y1 = self.edge_y0[:n], self.edge_y1[:n]
        seen = (np.minimum(y0, y1) <= bottom) & (np.maximum(y0, y1) >= top)
        x0, x1 = self.level * PITCH_X - COL_GAP, self.level * PITCH_X
        painter.setBrush(Qt.BrushStyle.NoBrush)
        for code in (PRUNED, FINISHED, LIVE):  # kept edges on top
            idx = np.flatnonzero(seen & (self.status[:n] == code))
            if len(idx):
                painter.setPen(_pens()[code][0])
                painter.drawLines([QLineF(x0, y0[i], x1, y1[i]) for i in idx])

    def paint_labels(self, painter: QPainter, rows: list[int], bold: bool) -> None:
        """The token (large) and the numbers (small) of each row, centred in its box."""
        pens, fonts = _pens(), self.tree.fonts(bold)
        for line in (0, 1):  # one font change per line, not per node
            painter.setFont(fonts[line])
            for row in rows:
                painter.setPen(pens[self.status[self.index(row)]][3])
                painter.drawStaticText(*self._label(row, bold)[line])

    def _label(self, row: int, bold: bool) -> tuple[tuple[QPointF, QStaticText], ...]:
        """The node's two lines and where they go, laid out once (laying text out is most of the painting time)."""
        label = self._labels.get((row, bold))
        if label is None:
            fonts = self.tree.fonts(bold)
            lines = [static_text(text, font) for text, font in zip(self.node(row).text.split("\n"), fonts)]
            rect = node_rect(self.level, row)
            y = rect.top() + (NODE_H - sum(line.size().height() for line in lines)) / 2
            placed = []
            for line in lines:
                placed.append((QPointF(rect.left() + (NODE_W - line.size().width()) / 2, y), line))
                y += line.size().height()
            label = self._labels[(row, bold)] = tuple(placed)
        return label

    def _paint_badge(self, painter: QPainter) -> None:
        text = (tr("− {n} pruned") if self.expanded else tr("+{n} pruned")).format(n=self.n_pruned)
        font = self.tree.fonts(False)[1]
        if self._badge is None or self._badge[0] != text:
            self._badge = (text, static_text(text, font))
        rect = badge_rect(self.level, self.n_kept)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(QPen(QColor(STYLES["pruned"][1]), 1, Qt.PenStyle.DashLine))
        painter.setBrush(QColor(STYLES["pruned"][0]))
        painter.drawRoundedRect(rect, BADGE_H / 2, BADGE_H / 2)
        painter.setPen(QColor(STYLES["pruned"][3]))
        painter.setFont(font)
        size = self._badge[1].size()
        corner = rect.center() - QPointF(size.width() / 2, size.height() / 2)
        painter.drawStaticText(corner, self._badge[1])


class BestPath(QGraphicsItem):
    """The best hypothesis's nodes and the edges between them, drawn over the columns."""

    def __init__(self) -> None:
        super().__init__()
        self.path: list[tuple[Column, int]] = []  # (column, layout row), from the start
        self._bounds = QRectF()
        self.setZValue(0.5)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption)  # exposedRect: paint what is seen

    def set_path(self, path: list[tuple[Column, int]]) -> None:
        if [(c.level, r) for c, r in path] == [(c.level, r) for c, r in self.path] and all(
            a is b for (a, _), (b, _) in zip(path, self.path)
        ):
            return
        self.prepareGeometryChange()
        self.path = path
        bounds = QRectF()
        for column, row in path:
            bounds = bounds.united(node_rect(column.level, row).adjusted(-COL_GAP, 0, 0, 0))
        self._bounds = bounds.adjusted(-4, -4, 4, 4)
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 — Qt's name
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        exposed = option.exposedRect
        first = max(0, math.floor(exposed.left() / PITCH_X))
        seen = self.path[first : math.floor(exposed.right() / PITCH_X) + 2]  # level = position in the path
        edge, box = _accent_pens()
        painter.setPen(edge)
        for (_, parent), (column, row) in zip(self.path[max(0, first - 1) : first] + seen, seen):
            x1, y1 = column.level * PITCH_X, row * PITCH_Y + NODE_H / 2
            painter.drawLine(QLineF(x1 - COL_GAP, parent * PITCH_Y + NODE_H / 2, x1, y1))
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        pens, labels = _pens(), legible(option, painter)
        for column, row in seen:
            painter.setPen(box)
            painter.setBrush(pens[column.status[column.index(row)]][2])
            painter.drawRect(node_rect(column.level, row).adjusted(-1, -1, 1, 1))
            if labels:
                column.paint_labels(painter, [row], bold=True)


class BeamTreeView(QGraphicsView):
    """Draws the steps of a beam search (or greedy decoding) as a tree.

    Ctrl+wheel zooms around the cursor, the buttons at the bottom right fit the tree in view and zoom,
    and a double click on empty space fits. Once the person scrolls or zooms by hand the view stays
    where they put it until the next sentence.
    """

    node_clicked = Signal(int, int)  # step whose candidates to show, row of the prefix in it
    drawn = Signal()  # every step given to set_steps is in the scene

    def __init__(self, object_name: str = "beam_tree_view", parent=None):
        super().__init__(parent)
        self.setObjectName(object_name)
        self.setScene(QGraphicsScene(self))
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)  # the tree grows from the left
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.NoAnchor)  # zoom() keeps its own anchor
        self._fonts = self._make_fonts()
        self._text_scale = self._font_scale()
        self.setTransform(QTransform.fromScale(self._text_scale, self._text_scale))
        self.columns: list[Column] = []  # one per level drawn; level 0 is the start
        self._steps: list[DecodeStep] = []  # the steps drawn (columns 1…)
        self._pending: list[DecodeStep] = []  # steps still to draw
        self._live_rows: list[np.ndarray] = []  # per level: rows of the prefixes entering the next step
        self._pieces: tuple[str, ...] = ()
        self._eos_id = -1
        self._wanted: tuple[int, int] | None = None  # node to outline (it may not be drawn yet)
        self._mode: Mode = "follow"
        self.pruned_shown = False  # new columns draw their pruned nodes
        self._slice = QTimer(self, singleShot=True, interval=0)
        self._refit = QTimer(self, singleShot=True, interval=0)  # fit again once a resize has settled
        self._create_items()
        self._create_buttons()
        self._connect()
        self.retranslate()

    def _make_fonts(self) -> dict[bool, tuple[QFont, QFont]]:
        """(token font, numbers font), regular and bold (the best path), in the interface's typeface."""
        fonts = {}
        for bold in (False, True):
            token, numbers = QFont(self.font()), QFont(self.font())
            token.setPointSizeF(BASE_PT * 1.15)
            numbers.setPointSizeF(BASE_PT * 0.85)
            token.setBold(bold)
            numbers.setBold(bold)
            fonts[bold] = (token, numbers)
        return fonts

    def fonts(self, bold: bool) -> tuple[QFont, QFont]:
        return self._fonts[bold]

    def _font_scale(self) -> float:
        size = self.font().pointSizeF()
        return size / BASE_PT if size > 0 else 1.0

    @property
    def text_scale(self) -> float:
        """The interface font's size over the one the boxes are laid out for: the tree's zoom at "100%"."""
        return self._text_scale

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # e.g. presenter mode: the tree zooms with the text
            old, self._text_scale = self._text_scale, self._font_scale()
            self._fonts = self._make_fonts()
            for column in self.columns:
                column.forget_labels()
            self.best_path.update()
            if self._mode != "fit":
                self._set_scale(self.scale_factor * self._text_scale / old)
            self._reveal()
            self.retranslate()

    def _create_items(self) -> None:
        self.best_path = BestPath()
        self.scene().addItem(self.best_path)
        self.outline = QGraphicsRectItem()
        self.outline.setPen(QPen(QColor(SELECTED), 2, Qt.PenStyle.DashLine))
        self.outline.setZValue(1)
        self.outline.hide()
        self.scene().addItem(self.outline)

    def _create_buttons(self) -> None:
        """The best path's key, then Fit, −, + and Show pruned, over the bottom-right corner of the tree (they do
        not scroll with it)."""
        self.zoom_bar = QWidget(self)
        self.zoom_bar.setObjectName("beam_tree_zoom_bar")
        self.zoom_bar.setStyleSheet(  # light in either theme, like the tree it lies on
            "#beam_tree_zoom_bar { background: rgba(255, 255, 255, 220); border: 1px solid #c8c8c8;"
            " border-radius: 4px; }"
            " #beam_tree_zoom_bar QLabel, #beam_tree_zoom_bar QToolButton { color: #202020; }"
            " #beam_tree_zoom_bar QToolButton { border: 1px solid transparent; border-radius: 3px; padding: 1px 5px; }"
            " #beam_tree_zoom_bar QToolButton:hover { background: #eeeeee; border-color: #c8c8c8; }"
            " #beam_tree_zoom_bar QToolButton:checked { background: #dbe8f7; border-color: #1f77b4; }"
        )
        layout = QHBoxLayout(self.zoom_bar)
        layout.setContentsMargins(3, 2, 3, 2)
        layout.setSpacing(2)
        self.legend = QLabel(self.zoom_bar)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.legend)
        self.buttons: dict[str, QToolButton] = {}
        for key in ("fit", "zoom_out", "zoom_in", "show_pruned"):
            button = QToolButton(self.zoom_bar)
            button.setObjectName(f"beam_tree_{key}")
            button.setAutoRaise(True)
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            layout.addWidget(button)
            self.buttons[key] = button
        self.buttons["show_pruned"].setCheckable(True)

    def _connect(self) -> None:
        self._slice.timeout.connect(self._draw_pending)
        self._refit.timeout.connect(self._on_resized)
        self.buttons["fit"].clicked.connect(self.fit)
        self.buttons["zoom_out"].clicked.connect(lambda: self.zoom(1 / ZOOM_STEP))
        self.buttons["zoom_in"].clicked.connect(lambda: self.zoom(ZOOM_STEP))
        self.buttons["show_pruned"].toggled.connect(self.set_pruned_shown)
        for bar in (self.horizontalScrollBar(), self.verticalScrollBar()):
            bar.actionTriggered.connect(self._on_scrolled_by_hand)  # a person's scroll, never ours
        language.changed.connect(self.retranslate)

    def retranslate(self) -> None:
        texts = {
            "fit": (tr("Fit"), tr("Fit the whole tree in view (or double-click empty space)")),
            "zoom_out": ("−", tr("Zoom out (Ctrl+wheel zooms around the cursor)")),
            "zoom_in": ("+", tr("Zoom in (Ctrl+wheel zooms around the cursor)")),
            "show_pruned": (tr("Show pruned"), tr("Draw every pruned continuation, not only their count")),
        }
        self.legend.setText(f"<b style='color:{ACCENT}'>━━</b> {html.escape(tr('best'))}")
        self.legend.setToolTip(
            tr(
                "The best hypothesis so far: the finished one with the highest ★, "
                "or while none has finished the most probable live prefix"
            )
        )
        for key, (text, tip) in texts.items():
            self.buttons[key].setText(text)
            self.buttons[key].setToolTip(tip)
        self.zoom_bar.adjustSize()
        self._place_buttons()
        self.viewport().update()

    def _place_buttons(self) -> None:
        area = self.viewport().geometry()
        size = self.zoom_bar.sizeHint()
        self.zoom_bar.setGeometry(area.right() - size.width() - 6, area.bottom() - size.height() - 6, *size.toTuple())
        self.zoom_bar.raise_()

    # -- data ------------------------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        """Every node, drawn or not (pruned ones too), level by level."""
        return [node for column in self.columns for node in column.all_nodes()]

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

    @property
    def mode(self) -> Mode:
        """What the view does as the tree grows: follow the best path, fit the tree, or stay put."""
        return self._mode

    def set_steps(self, steps: tuple[DecodeStep, ...], pieces: tuple[str, ...], eos_id: int) -> None:
        """Show ``steps``. Columns of steps already drawn stay; only new steps are added."""
        if pieces is not self._pieces or eos_id != self._eos_id or not self.columns:
            self._clear()
            self._pieces, self._eos_id = pieces, eos_id
            root = {
                "status": np.array([ROOT], np.int8),
                "token": np.array([-1]),
                "log_prob": np.zeros(1),
                "score": np.full(1, np.nan),
                "live_index": np.zeros(1, np.int64),
            }
            self._add_column(Column(0, root, np.zeros(0, np.int64), self))
        same = 0
        while same < min(len(steps), len(self._steps)) and steps[same] is self._steps[same]:
            same += 1
        if same == 0 and self._mode == "manual":
            self._mode = "follow"  # another sentence (or its start): the person's scrolling was for the last one
        while len(self._steps) > same:  # Back, or steps computed again (new weights)
            self._steps.pop()
            self._live_rows.pop()
            self.scene().removeItem(self.columns.pop())
        self._pending = list(steps[same:])
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
        self.best_path.set_path([])

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
        self.best_path.set_path(self._best_path())
        self._reveal()
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
        self.scene().setSceneRect(rect.adjusted(-6, -6, 6, 6))

    # -- the best path ---------------------------------------------------------------------
    def _best_path(self) -> list[tuple[Column, int]]:
        """(column, row) from the start to the best finished node, else to the best live prefix."""
        best: tuple[float, int, int] | None = None  # score, level, index
        for column in self.columns[1:]:
            if column.best >= 0:
                score = float(column.score[column.best])
                if best is None or score > best[0]:  # ties: the earlier step, as the search ranks them
                    best = (score, column.level, column.best)
        if best is not None:
            level, index = best[1], best[2]
        elif len(self.columns) > 1 and len(self._live_rows[-1]):
            level, index = len(self.columns) - 1, int(self._live_rows[-1][0])  # live index 0: the most probable
        else:
            return []
        path = []
        while level > 0:
            column = self.columns[level]
            path.append((column, int(column.rows[index])))
            level, index = level - 1, int(column.parent_row[index])  # kept parents: row == index
        path.append((self.columns[0], 0))
        return path[::-1]

    @property
    def best_nodes(self) -> list[Node]:
        """The highlighted path's nodes, the start first."""
        return [column.node(row) for column, row in self.best_path.path]

    def _reveal(self) -> None:
        """Fit the tree, or bring the best path's last node into view, unless the person moved the view."""
        if self._mode == "fit":
            self._fit_now()
        elif self._mode == "follow" and self.best_path.path:
            column, row = self.best_path.path[-1]
            self.ensureVisible(node_rect(column.level, row), 60, 30)

    # -- pruned nodes ----------------------------------------------------------------------
    def set_pruned_shown(self, shown: bool, level: int | None = None) -> None:
        """Draw (or fold into their badge) the pruned nodes of one level, or of every level."""
        if level is None:
            self.pruned_shown = shown
            if self.buttons["show_pruned"].isChecked() != shown:
                self.buttons["show_pruned"].setChecked(shown)  # calls this again with the same value
                return
        for column in self.columns if level is None else self.columns[level : level + 1]:
            column.set_expanded(shown)
        self._update_scene_rect()

    def badge_at(self, scene_x: float, scene_y: float) -> int | None:
        """The level whose "+N pruned" badge is at this point."""
        level = math.floor(scene_x / PITCH_X)
        if not 0 < level < len(self.columns) or not self.columns[level].n_pruned:
            return None
        column = self.columns[level]
        return level if badge_rect(level, column.n_kept).contains(scene_x, scene_y) else None

    # -- zoom ------------------------------------------------------------------------------
    @property
    def scale_factor(self) -> float:
        return self.transform().m11()

    def zoom(self, factor: float, anchor: QPoint | None = None) -> None:
        """Scale by ``factor`` keeping the scene point under ``anchor`` (default: the centre) in place."""
        self._mode = "manual"
        self._set_scale(self.scale_factor * factor, anchor)

    def _set_scale(self, scale: float, anchor: QPoint | None = None) -> None:
        scale = min(MAX_SCALE * self._text_scale, max(MIN_SCALE * self._text_scale, scale))
        anchor = self.viewport().rect().center() if anchor is None else anchor
        fixed = self.mapToScene(anchor)
        self.setTransform(QTransform.fromScale(scale, scale))
        moved = self.mapFromScene(fixed) - anchor
        self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() + moved.x())
        self.verticalScrollBar().setValue(self.verticalScrollBar().value() + moved.y())

    def fit(self) -> None:
        """Scale the whole tree into view (no smaller than legible; then the best path is scrolled to)."""
        self._mode = "fit"
        self._fit_now()

    def _fit_now(self) -> None:
        rect, area = self.scene().sceneRect(), self.maximumViewportSize()
        if rect.isEmpty():
            return
        scale = min((area.width() - 4) / rect.width(), (area.height() - 4) / rect.height())
        least, most = MIN_FIT_SCALE * self._text_scale, MAX_FIT_SCALE * self._text_scale
        self.setTransform(QTransform.fromScale(*[min(most, max(least, scale))] * 2))
        if scale >= least:
            self.centerOn(rect.center())
        elif self.best_path.path:
            column, row = self.best_path.path[-1]
            self.ensureVisible(node_rect(column.level, row), 30, 20)

    def _on_resized(self) -> None:
        if self._mode == "fit":
            self._fit_now()

    def _on_scrolled_by_hand(self, action: int) -> None:
        self._mode = "manual"

    # -- interaction -----------------------------------------------------------------------
    def node_at(self, scene_x: float, scene_y: float) -> Node | None:
        """The node drawn at this scene point (pruned ones only while their level shows them)."""
        level, row = math.floor(scene_x / PITCH_X), math.floor(scene_y / PITCH_Y)
        if not (0 <= level < len(self.columns)) or not node_rect(level, row).contains(scene_x, scene_y):
            return None
        column = self.columns[level]
        index = column.index(row)
        if index is None or (index >= column.n_kept and not column.expanded):
            return None
        return column.node(row)

    def select(self, level: int, live_index: int) -> None:
        """Outline the node whose candidates are shown (once it is drawn)."""
        self._wanted = (level, live_index)
        self.outline.hide()
        if level >= len(self.columns):
            return
        rows = np.flatnonzero(self.columns[level].live_index == live_index)  # root and live nodes only
        if len(rows):
            self.outline.setRect(node_rect(level, int(rows[0])).adjusted(-5, -5, 5, 5))
            self.outline.show()

    def mousePressEvent(self, event) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton:
            p = self.mapToScene(event.position().toPoint())
            badge = self.badge_at(p.x(), p.y())
            if badge is not None:
                self.set_pruned_shown(not self.columns[badge].expanded, badge)
                event.accept()
                return
            node = self.node_at(p.x(), p.y())
            if node is not None and node.status in ("root", "live"):
                self.node_clicked.emit(node.level, node.live_index or 0)
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        before = (self.horizontalScrollBar().value(), self.verticalScrollBar().value())
        super().mouseMoveEvent(event)
        if before != (self.horizontalScrollBar().value(), self.verticalScrollBar().value()):
            self._mode = "manual"  # dragged with the hand
        if event.buttons() == Qt.MouseButton.NoButton:
            p = self.mapToScene(event.position().toPoint())
            node = self.node_at(p.x(), p.y())
            on_badge = self.badge_at(p.x(), p.y()) is not None
            clickable = on_badge or (node is not None and node.status in ("root", "live"))
            self.viewport().setCursor(Qt.CursorShape.PointingHandCursor if clickable else Qt.CursorShape.OpenHandCursor)

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802
        p = self.mapToScene(event.position().toPoint())
        if self.node_at(p.x(), p.y()) is None and self.badge_at(p.x(), p.y()) is None:
            self.fit()
            event.accept()
            return
        super().mouseDoubleClickEvent(event)

    def wheelEvent(self, event) -> None:  # noqa: N802
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.zoom(1.0015 ** event.angleDelta().y(), event.position().toPoint())
            event.accept()
            return
        self._mode = "manual"
        super().wheelEvent(event)

    def keyPressEvent(self, event) -> None:  # noqa: N802
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            action = {Qt.Key.Key_Plus: 1, Qt.Key.Key_Equal: 1, Qt.Key.Key_Minus: -1, Qt.Key.Key_0: 0}
            which = action.get(Qt.Key(event.key()))
            if which is not None:
                if which:
                    self.zoom(ZOOM_STEP**which)
                else:
                    self.fit()
                event.accept()
                return
        super().keyPressEvent(event)

    def viewportEvent(self, event) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.ToolTip:
            self._show_tooltip(event)
            return True
        if event.type() == QEvent.Type.Resize:
            self._place_buttons()
            if self._mode == "fit":
                self._refit.start()  # after the scroll bars have settled
        return super().viewportEvent(event)

    def _show_tooltip(self, event) -> None:
        p = self.mapToScene(event.pos())
        node, badge = self.node_at(p.x(), p.y()), self.badge_at(p.x(), p.y())
        if node is not None:
            QToolTip.showText(event.globalPos(), node_tooltip(node), self.viewport())
        elif badge is not None:
            tip = tr("{n} more continuations were considered here and pruned. Click to show or hide them.")
            QToolTip.showText(event.globalPos(), tip.format(n=self.columns[badge].n_pruned), self.viewport())
        else:
            QToolTip.hideText()

    # -- summaries and export --------------------------------------------------------------
    def kept_per_level(self) -> list[int]:
        """How many kept (live) nodes each level has — at most the beam size."""
        kept = [int((column.status == LIVE).sum()) for column in self.columns[1:]]
        while kept and not kept[-1]:
            kept.pop()
        return kept

    def export(self, path: str | Path) -> None:
        """The tree as PNG/SVG (as shown), or every node, pruned ones too, as CSV (level, status, token,
        log-probability, score)."""
        self.finish()
        if Path(path).suffix.lower() == ".csv":
            rows = [
                [n.level, n.status, n.piece, f"{n.log_prob:.6f}", "" if n.score is None else f"{n.score:.6f}"]
                for n in self.nodes
            ]
            write_rows(path, ["level", "status", "token", "log_prob", "score"], rows)
            return
        source = self.scene().itemsBoundingRect().adjusted(-10, -10, 10, 10)
        scale = min(2.0, math.sqrt(MAX_EXPORT_PIXELS / max(1.0, source.width() * source.height())))
        render_scene(self.scene(), source, path, "beam tree", scale=scale)

    def drawBackground(self, painter, rect: QRectF | QRect) -> None:  # noqa: N802
        painter.fillRect(rect, QColor("#ffffff"))
