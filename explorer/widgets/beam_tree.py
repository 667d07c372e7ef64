"""The beam-search tree: one column per step, one node per continuation considered.

Kept continuations are solid blue, pruned ones grey and dashed, finished ones
(EOS, or the length limit) green with their length-normalised score. A node
shows its token and the cumulative log-probability of its prefix. Clicking a
kept node shows that prefix's candidates for the next token.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsRectItem, QGraphicsScene, QGraphicsSimpleTextItem, QGraphicsView

from explorer.widgets.export import render_scene, write_rows
from model.decoding import DecodeStep

NODE_W, NODE_H, COL_GAP, ROW_GAP = 112, 40, 44, 8
STYLES = {
    "root": ("#eeeeee", "#888888", Qt.SolidLine, "#202020"),
    "live": ("#dbe8f7", "#1f77b4", Qt.SolidLine, "#202020"),
    "pruned": ("#f4f4f4", "#b0b0b0", Qt.DashLine, "#9a9a9a"),
    "finished": ("#dff2df", "#2ca02c", Qt.SolidLine, "#202020"),
}


@dataclass(frozen=True)
class NodeInfo:
    level: int  # 0: the start (BOS); n: the token chosen at step n - 1
    status: str  # root | live | pruned | finished
    token: int
    log_prob: float
    score: float | None  # finished hypotheses: the length-normalised score
    live_index: int | None  # position among the live prefixes after its step (kept nodes)


class NodeItem(QGraphicsRectItem):
    def __init__(self, info: NodeInfo, text: str, tree: BeamTreeView):
        super().__init__(0, 0, NODE_W, NODE_H)
        self.info, self.tree = info, tree
        fill, border, style, ink = STYLES[info.status]
        pen = QPen(QColor(border), 2 if info.status == "finished" else 1.2, style)
        self.setPen(pen)
        self.setBrush(QBrush(QColor(fill)))
        self.setAcceptHoverEvents(True)
        self.setCursor(Qt.PointingHandCursor if info.status in ("root", "live") else Qt.ArrowCursor)
        label = QGraphicsSimpleTextItem(text, self)
        label.setBrush(QColor(ink))
        font = QFont(label.font())
        font.setPointSizeF(font.pointSizeF() * 0.9)
        label.setFont(font)
        r = label.boundingRect()
        label.setPos((NODE_W - r.width()) / 2, (NODE_H - r.height()) / 2)
        self.setToolTip(text.replace("\n", "  "))

    def mousePressEvent(self, event) -> None:  # noqa: N802
        if self.info.status in ("root", "live"):
            self.tree.node_clicked.emit(self.info.level, self.info.live_index or 0)
        super().mousePressEvent(event)


class BeamTreeView(QGraphicsView):
    """Draws the steps of a beam search (or greedy decoding) as a tree."""

    node_clicked = Signal(int, int)  # step whose candidates to show, row of the prefix in it

    def __init__(self, object_name: str = "beam_tree_view", parent=None):
        super().__init__(parent)
        self.setObjectName(object_name)
        self.setScene(QGraphicsScene(self))
        self.setRenderHint(QPainter.Antialiasing)
        self.setDragMode(QGraphicsView.ScrollHandDrag)
        self.nodes: list[NodeItem] = []
        self.selected: QGraphicsRectItem | None = None

    def set_steps(self, steps: tuple[DecodeStep, ...], pieces: tuple[str, ...], eos_id: int) -> None:
        scene = self.scene()
        scene.clear()
        self.nodes, self.selected = [], None
        root = self._add(NodeInfo(0, "root", -1, 0.0, None, 0), "<bos>\n0.00", 0, 0)
        previous_live = [root]  # nodes of the prefixes entering the next step, in beam order
        for level, step in enumerate(steps, start=1):
            groups: dict[int, list] = {}
            for c in step.kept + step.pruned:
                groups.setdefault(c.parent, []).append(c)
            finished = [c for c in step.kept if c.status == "finished"]
            scores = {(c.parent, c.token): h.score for c, h in zip(finished, step.finished)}
            live_nodes: list[NodeItem] = []
            row = 0
            for parent_row in range(len(step.prefixes)):
                for c in sorted(groups.get(parent_row, []), key=lambda c: -c.log_prob):
                    score = scores.get((c.parent, c.token)) if c.status == "finished" else None
                    info = NodeInfo(level, c.status, c.token, c.log_prob, score, None)  # beam order: set below
                    piece = "<eos>" if c.token == eos_id else pieces[c.token] if c.token < len(pieces) else "?"
                    text = f"{piece}\n{c.log_prob:.2f}" + (f"  ★ {score:.2f}" if score is not None else "")
                    node = self._add(info, text, level, row)
                    self._edge(previous_live[parent_row], node, c.status)
                    row += 1
                    if c.status == "live":
                        live_nodes.append((c, node))
            # the next step's prefixes follow the order in which the search kept them
            order = [c for c in step.kept if c.status == "live"]
            by_key = {(c.parent, c.token): n for c, n in live_nodes}
            previous_live = [by_key[(c.parent, c.token)] for c in order]
            for i, c in enumerate(order):
                n = by_key[(c.parent, c.token)]
                n.info = NodeInfo(n.info.level, n.info.status, n.info.token, n.info.log_prob, None, i)
        scene.setSceneRect(scene.itemsBoundingRect().adjusted(-10, -10, 10, 10))
        if self.nodes:
            self.ensureVisible(self.nodes[-1], 40, 40)

    def _add(self, info: NodeInfo, text: str, level: int, row: int) -> NodeItem:
        node = NodeItem(info, text, self)
        node.setPos(level * (NODE_W + COL_GAP), row * (NODE_H + ROW_GAP))
        self.scene().addItem(node)
        self.nodes.append(node)
        return node

    def _edge(self, a: NodeItem, b: NodeItem, status: str) -> None:
        start = a.pos() + a.rect().center() + (a.rect().topRight() - a.rect().topLeft()) / 2
        end = b.pos() + b.rect().center() - (b.rect().topRight() - b.rect().topLeft()) / 2
        _, border, style, _ = STYLES[status]
        line = self.scene().addLine(start.x(), start.y(), end.x(), end.y(), QPen(QColor(border), 1, style))
        line.setZValue(-1)
        line.setFlag(QGraphicsItem.ItemIsSelectable, False)

    def select(self, level: int, live_index: int) -> None:
        """Outline the node whose candidates are shown."""
        if self.selected is not None:
            self.scene().removeItem(self.selected)
            self.selected = None
        for node in self.nodes:
            if node.info.level == level and node.info.live_index == live_index and node.info.status in ("root", "live"):
                box = QGraphicsRectItem(node.sceneBoundingRect().adjusted(-3, -3, 3, 3))
                box.setPen(QPen(QColor("#ff7f0e"), 2))
                self.scene().addItem(box)
                self.selected = box
                return

    def kept_per_level(self) -> list[int]:
        """How many kept (live) nodes each level has — at most the beam size."""
        levels: dict[int, int] = {}
        for node in self.nodes:
            if node.info.status == "live":
                levels[node.info.level] = levels.get(node.info.level, 0) + 1
        return [levels.get(i, 0) for i in range(1, max(levels, default=0) + 1)]

    def export(self, path: str | Path) -> None:
        """The tree as PNG/SVG, or its nodes as CSV (level, status, token, log-probability, score)."""
        if Path(path).suffix.lower() == ".csv":
            rows = [[n.info.level, n.info.status, n.toolTip().split("  ")[0], f"{n.info.log_prob:.6f}",
                     "" if n.info.score is None else f"{n.info.score:.6f}"] for n in self.nodes]  # fmt: skip
            write_rows(path, ["level", "status", "token", "log_prob", "score"], rows)
            return
        render_scene(self.scene(), self.scene().itemsBoundingRect().adjusted(-10, -10, 10, 10), path, "beam tree")

    def drawBackground(self, painter, rect: QRectF) -> None:  # noqa: N802
        painter.fillRect(rect, QColor("#ffffff"))
