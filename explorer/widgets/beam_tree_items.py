"""What the beam-search tree draws: one item per column (a step's nodes and the edges into them) and the best
path over them, each painting only what is in view.

Kept continuations are solid blue, finished ones (EOS, or the length limit) green with their
length-normalised score ★; pruned ones grey and dashed, folded into a "+N pruned" badge until shown. The best
path is drawn over them in a thick accent colour with bold labels.
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen, QStaticText, QTransform
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from explorer.i18n import tr
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
MIN_LABEL_SCALE = 0.4  # zoomed out further, nodes are drawn without their text

STATUSES = ("root", "live", "pruned", "finished")  # status codes: index in this tuple
ROOT, LIVE, PRUNED, FINISHED = range(4)


class TreeHost(Protocol):
    """What a column asks of the tree that shows it (the view: its fonts, the vocabulary's pieces)."""

    pruned_shown: bool  # new columns draw their pruned nodes

    def piece(self, token: int) -> str: ...

    def fonts(self, bold: bool) -> tuple[QFont, QFont]: ...


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

    def __init__(self, level: int, arrays: dict[str, np.ndarray], parent_row: np.ndarray, tree: TreeHost):
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
    def from_step(cls, step: DecodeStep, level: int, entering_rows: np.ndarray, tree: TreeHost) -> Column:
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
