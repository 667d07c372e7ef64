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

The pieces: what is drawn (explorer/widgets/beam_tree_items.py: a column's nodes and edges, the best path),
where it goes (beam_tree_layout.py: the columns grown from the steps, the best path through them, what is at a
point), the overlay's key and buttons (beam_tree_bar.py), and here the view: zoom, fit, following the best
path, clicks and hover.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from PySide6.QtCore import QEvent, QPoint, QRect, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QPainter, QPen, QTransform
from PySide6.QtWidgets import QGraphicsRectItem, QGraphicsScene, QGraphicsView, QToolTip

from explorer.i18n import language, tr
from explorer.widgets.beam_tree_bar import ZoomBar
from explorer.widgets.beam_tree_items import BestPath, Column, Node, node_rect, node_tooltip
from explorer.widgets.beam_tree_layout import BeamTreeLayout
from explorer.widgets.export import render_scene, write_rows

if TYPE_CHECKING:  # types only: PyTorch is loaded by the engine, after the window shows
    from model.decoding.search import DecodeStep

__all__ = ["BeamTreeView", "Node", "node_rect", "node_tooltip"]

SELECTED = "#7b3294"  # the outline of the node whose candidates are shown
SLICE_S = 0.015  # GUI time spent adding columns before letting other events in
MAX_EXPORT_PIXELS = 60e6  # a PNG of a very tall tree is drawn at a smaller scale
BASE_PT = 9.0  # the text size the boxes are laid out for: a larger interface font (presenter mode) zooms the tree
MIN_SCALE, MAX_SCALE = 0.15, 4.0  # zoom limits, times the text scale
MIN_FIT_SCALE, MAX_FIT_SCALE = 0.6, 1.25  # Fit keeps labels legible, then scrolls to the best path (× text scale)
ZOOM_STEP = 1.25  # one press of − or +
Mode = Literal["follow", "fit", "manual"]  # keep the best path in view / fit the tree / leave it to the person


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
        self.pruned_shown = False  # new columns draw their pruned nodes
        self.tree_layout = BeamTreeLayout(self.scene(), self)
        self._wanted: tuple[int, int] | None = None  # node to outline (it may not be drawn yet)
        self._mode: Mode = "follow"
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
        """The best path's key, then Fit, −, + and Show pruned, over the bottom-right corner of the tree."""
        self.bar = ZoomBar(self)
        self.zoom_bar, self.legend, self.buttons = self.bar.widget, self.bar.legend, self.bar.buttons

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
        self.bar.retranslate()
        self._place_buttons()
        self.viewport().update()

    def _place_buttons(self) -> None:
        self.bar.place(self.viewport().geometry())

    # -- data ------------------------------------------------------------------------------
    @property
    def columns(self) -> list[Column]:
        """One per level drawn; level 0 is the start."""
        return self.tree_layout.columns

    @property
    def nodes(self) -> list[Node]:
        """Every node, drawn or not (pruned ones too), level by level."""
        return self.tree_layout.nodes

    def piece(self, token: int) -> str:
        return self.tree_layout.piece(token)

    @property
    def pending(self) -> bool:
        """Steps given to :meth:`set_steps` that are not drawn yet (they follow within a few events)."""
        return bool(self.tree_layout.pending)

    @property
    def mode(self) -> Mode:
        """What the view does as the tree grows: follow the best path, fit the tree, or stay put."""
        return self._mode

    def set_steps(self, steps: tuple[DecodeStep, ...], pieces: tuple[str, ...], eos_id: int) -> None:
        """Show ``steps``. Columns of steps already drawn stay; only new steps are added."""
        if not self.tree_layout.is_for(pieces, eos_id):
            self._slice.stop()
            self.tree_layout.restart(pieces, eos_id)
            self.best_path.set_path([])
        same = self.tree_layout.keep_drawn(steps)
        if same == 0 and self._mode == "manual":
            self._mode = "follow"  # another sentence (or its start): the person's scrolling was for the last one
        self._wanted = None
        self.outline.hide()
        if len(self.tree_layout.pending) > 1:
            self._slice.start()  # many steps at once (Run to end): drawn after the rest of the panel is painted
        else:
            self._draw_pending()

    def _draw_pending(self) -> None:
        """Add pending columns for a slice of time; the rest follow after other events have run."""
        if self.tree_layout.add_pending(SLICE_S):
            self._slice.start()
            return
        self.best_path.set_path(self.tree_layout.best_path())
        self._reveal()
        if self._wanted is not None:
            self.select(*self._wanted)
        self.drawn.emit()

    def finish(self) -> None:
        """Draw every pending step now (exports need the whole tree)."""
        while self.tree_layout.pending:
            self._draw_pending()

    # -- the best path ---------------------------------------------------------------------
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
        self.tree_layout.set_expanded(shown, level)

    def badge_at(self, scene_x: float, scene_y: float) -> int | None:
        """The level whose "+N pruned" badge is at this point."""
        return self.tree_layout.badge_at(scene_x, scene_y)

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
        return self.tree_layout.node_at(scene_x, scene_y)

    def select(self, level: int, live_index: int) -> None:
        """Outline the node whose candidates are shown (once it is drawn)."""
        self._wanted = (level, live_index)
        self.outline.hide()
        row = self.tree_layout.prefix_row(level, live_index)
        if row is not None:
            self.outline.setRect(node_rect(level, row).adjusted(-5, -5, 5, 5))
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
        return self.tree_layout.kept_per_level()

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
