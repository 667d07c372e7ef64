"""Model map: the paper's Figure 1 drawn for the current model, one part per box, each clickable.

The encoder stack on the left, the decoder stack on the right, data flowing upwards: embeddings and
positional encoding at the bottom, the layers (one box each; the open one shows its sublayers), the
linear output layer and the softmax on top, and the encoder's output feeding every decoder layer's
cross-attention. Post-LN layers put "Add & Norm" after each sublayer, as in the paper; Pre-LN layers
put a LayerNorm before it, a residual "+" after it, and a final LayerNorm on top of each stack.

The other families draw one stack: a decoder-only model (GPT) the decoder's column without cross-attention,
an encoder-only model (BERT) the encoder's column with its masked-LM head under the output layer. A
Mixture-of-Experts layer's feed-forward box is its experts (N, top-k, the router).

Beside the drawing, the equation of the part pointed at (or chosen) with this model's numbers.

Route: it asks for nothing; the main window hands it each run the engine describes (``on_run`` with
``Engine.run_described``'s :class:`~explorer.answers.RunInfo`) and routes :attr:`ModelMapPanel.part_chosen`
to the panel that shows that part (attention map, positional-encoding lab, next-token candidates).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPalette, QPen, QPolygonF
from PySide6.QtWidgets import (
    QApplication,
    QBoxLayout,
    QGraphicsItem,
    QGraphicsScene,
    QGraphicsSceneHoverEvent,
    QGraphicsView,
    QLabel,
    QPushButton,
    QStyleOptionGraphicsItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from explorer.answers import RunInfo
from explorer.i18n import N_, tr
from explorer.panels.model_map_text import (
    ModelPart,
    box_detail,
    box_label,
    equation_html,
    formula,
    has_mlm_head,
    layer_count,
    model_stacks,
    overview_html,
    stack_sublayers,
    tooltip,
)
from explorer.widgets import named
from explorer.widgets.export import render_scene, titled_view
from model.core.config import ModelConfig

__all__ = ["ModelMapPanel", "ModelPart"]

# Geometry, in scene units (the view scales the whole drawing to fit).
COL_W = 176.0  # width of one stack
GAP = 56.0  # between the stacks: the lane of the encoder's output
SIDE = 28.0  # outside the stacks: the "N×" marks
INSET_IN, INSET_OUT = 6.0, 22.0  # boxes inside a stack: inner margin, outer margin (the residual lane)
SUB_H, NORM_H, ADD_D, CLOSED_H, IO_H, LABEL_H = 36.0, 22.0, 18.0, 23.0, 34.0, 16.0
GAP_Y, PAD, FRAME_TOP = 8.0, 5.0, 16.0
CLOSED_BUDGET = 4  # closed layers never take more height than this many of them at full size
TITLE_PX, DETAIL_PX, SMALL_PX = 13.5, 11.0, 11.0

# Fills as in the paper's Figure 1 (light theme); the dark theme mixes them into the background.
FILLS = {
    "encoder_self_attention": "#fcd9a8",
    "decoder_self_attention": "#fcd9a8",
    "cross_attention": "#fcd9a8",
    "feed_forward": "#c2e7f7",
    "add_norm": "#f2f3c1",
    "layer_norm": "#f2f3c1",
    "final_norm": "#f2f3c1",
    "residual_add": "#ffffff",
    "embedding": "#fbd4d4",
    "positional": "#ffffff",
    "output_linear": "#dbdcf5",
    "softmax": "#cbe9ca",
    "layer": "#ececec",
    "mlm_head": "#dbdcf5",
}
TITLE = N_("Figure 1 of the paper, for this model")
HINT = N_(
    "Point at a part to read what it does; click it to keep its equation beside the drawing; double-click it to "
    "open it in the view that shows it."
)
# the view that shows a part, as the button under its equation names it (the main window opens it: part_chosen)
OPENS = {
    "encoder_self_attention": N_("Open this layer's attention map"),
    "decoder_self_attention": N_("Open this layer's attention map"),
    "cross_attention": N_("Open this layer's attention map"),
    "positional": N_("Open the positional-encoding lab"),
    "embedding": N_("Open the positional-encoding lab"),
    "output_linear": N_("Open the token candidates"),
    "softmax": N_("Open the token candidates"),
}


@dataclass(frozen=True)
class Placed:
    """A part and where it is drawn."""

    part: ModelPart
    rect: QRectF
    shape: str = "box"  # box | circle | frame (an open layer) | closed (a closed layer)
    dashed: bool = False


@dataclass
class Drawing:
    """Everything on the map, in scene coordinates (y grows downwards; data flows upwards)."""

    placed: list[Placed] = field(default_factory=list)
    arrows: list[list[QPointF]] = field(default_factory=list)  # polylines with a head at the end
    lines: list[list[QPointF]] = field(default_factory=list)  # polylines without a head
    texts: list[tuple[str, QRectF, Qt.AlignmentFlag]] = field(default_factory=list)


class Column:
    """Builds one stack bottom-up: each element goes above the last, joined to it by an arrow."""

    def __init__(self, drawing: Drawing, stack: str, x: float) -> None:
        self.d, self.stack, self.x = drawing, stack, x
        self.outer_left = stack == "encoder"  # residual lanes and "N×" marks on the outer side
        self.y = 0.0  # bottom of the next element
        self.prev: QPointF | None = None  # top-centre of the last element on the main path
        self.cross_entries: list[QPointF] = []  # where the encoder's output enters each decoder layer

    @property
    def box_left(self) -> float:
        return self.x + (INSET_OUT if self.outer_left else INSET_IN)

    @property
    def box_right(self) -> float:
        return self.x + COL_W - (INSET_IN if self.outer_left else INSET_OUT)

    @property
    def lane(self) -> float:
        """x of the residual lane."""
        return self.box_left - 12 if self.outer_left else self.box_right + 12

    def add(self, part: ModelPart, h: float, shape: str = "box", gap: float = GAP_Y, dashed: bool = False) -> QRectF:
        if shape == "circle":
            cx = (self.box_left + self.box_right) / 2
            rect = QRectF(cx - h / 2, self.y - h, h, h)
        elif shape == "closed":
            rect = QRectF(self.x, self.y - h, COL_W, h)
        else:
            rect = QRectF(self.box_left, self.y - h, self.box_right - self.box_left, h)
        self.d.placed.append(Placed(part, rect, shape, dashed))
        self.join(rect)
        self.y = rect.top() - gap
        return rect

    def join(self, rect: QRectF) -> None:
        """An arrow from the last element into ``rect``, which becomes the last."""
        cx = (self.box_left + self.box_right) / 2
        if self.prev is not None:  # (between the thin layers of a deep stack, a line without a head)
            joins = self.d.arrows if self.prev.y() - rect.bottom() > 6 else self.d.lines
            joins.append([self.prev, QPointF(cx, rect.bottom())])
        self.prev = QPointF(cx, rect.top())

    def label(self, text: str) -> None:
        rect = QRectF(self.x - SIDE, self.y - LABEL_H, COL_W + 2 * SIDE, LABEL_H)  # centred, room beyond the column
        self.d.texts.append((text, rect, Qt.AlignmentFlag.AlignCenter))
        self.join(rect)
        self.y = rect.top() - GAP_Y

    def residual(self, below: QRectF, into: QRectF) -> None:
        """The residual path: from the main line just below ``below`` round the side into ``into``."""
        cx, y0 = (self.box_left + self.box_right) / 2, below.bottom() + GAP_Y / 2
        edge = into.left() if self.outer_left else into.right()
        y1 = into.center().y()
        self.d.arrows.append([QPointF(cx, y0), QPointF(self.lane, y0), QPointF(self.lane, y1), QPointF(edge, y1)])


def stack_input(col: Column, cfg: ModelConfig) -> None:
    """The tokens, their embedding and the positional encoding at the bottom of a stack."""
    col.label(tr(cfg.family.labels[f"input:{col.stack}"]))  # under each stack: what comes in
    col.add(ModelPart("embedding", col.stack), IO_H)
    col.add(ModelPart("positional", col.stack), IO_H, dashed=cfg.positional == "rope")


def open_layer(col: Column, layer: int, cfg: ModelConfig) -> None:
    """A layer with its sublayers, in the order of the configuration's norm placement."""
    bottom = col.y
    col.y -= PAD
    first = len(col.d.placed)
    for kind in stack_sublayers(cfg, col.stack):
        if cfg.norm == "post":
            sub = col.add(ModelPart(kind, col.stack, layer), SUB_H)
            add = col.add(ModelPart("add_norm", col.stack, layer, kind), NORM_H)
            if cfg.residual:  # (the experiment "no_residual" has no skip path to draw)
                col.residual(sub, add)
        else:
            norm = col.add(ModelPart("layer_norm", col.stack, layer, kind), NORM_H)
            sub = col.add(ModelPart(kind, col.stack, layer), SUB_H)
            add = col.add(ModelPart("residual_add", col.stack, layer, kind), ADD_D, "circle")
            if cfg.residual:
                col.residual(norm, add)
        if kind == "cross_attention":
            col.cross_entries.append(QPointF(sub.left(), sub.center().y()))
    top = col.y + GAP_Y - PAD - FRAME_TOP
    frame = QRectF(col.x, top, COL_W, bottom - top)
    col.d.placed.insert(first, Placed(ModelPart("layer", col.stack, layer), frame, "frame"))
    col.y = top - GAP_Y


def layers(col: Column, n: int, opened: int, cfg: ModelConfig) -> None:
    """All ``n`` layers of a stack, bottom to top; only ``opened`` shows its sublayers."""
    pitch = CLOSED_H + GAP_Y
    if n - 1 > CLOSED_BUDGET:
        pitch = CLOSED_BUDGET * pitch / (n - 1)
    bottom = col.y
    for layer in range(n):
        if layer == opened:
            open_layer(col, layer, cfg)
            continue
        rect = col.add(ModelPart("layer", col.stack, layer), pitch * 0.8, "closed", gap=pitch * 0.2)
        if "cross_attention" in stack_sublayers(cfg, col.stack):
            col.cross_entries.append(QPointF(rect.left(), rect.center().y()))
    top = min(p.rect.top() for p in col.d.placed if p.part.kind == "layer" and p.part.stack == col.stack)
    n_mark(col, n, bottom, top)


def n_mark(col: Column, n: int, bottom: float, top: float) -> None:
    """A bracket beside the layers with "N×", as in the paper."""
    x = col.x - 6 if col.outer_left else col.x + COL_W + 6
    tick = 5 if col.outer_left else -5
    col.d.lines.append([QPointF(x + tick, bottom), QPointF(x, bottom), QPointF(x, top), QPointF(x + tick, top)])
    mid = (bottom + top) / 2
    if col.outer_left:
        rect, align = QRectF(x - SIDE, mid - 10, SIDE - 3, 20), Qt.AlignmentFlag.AlignRight
    else:
        rect, align = QRectF(x + 3, mid - 10, SIDE - 3, 20), Qt.AlignmentFlag.AlignLeft
    col.d.texts.append((f"{n}×", rect, align | Qt.AlignmentFlag.AlignVCenter))


def draw_model(cfg: ModelConfig, opened: dict[str, int]) -> Drawing:
    """The whole map of a model, with layer ``opened[stack]`` of each stack open: the encoder on the left and
    the decoder on the right, or the one stack of a single-stream family."""
    d = Drawing()
    columns = []
    for i, (stack, n) in enumerate(model_stacks(cfg).items()):
        col = Column(d, stack, i * (COL_W + GAP))
        stack_input(col, cfg)
        layers(col, n, opened[col.stack], cfg)
        if cfg.norm == "pre":
            col.add(ModelPart("final_norm", col.stack), NORM_H)
        columns.append(col)
    top = columns[-1]
    if has_mlm_head(cfg):  # BERT: each state transformed, then scored against the vocabulary
        top.add(ModelPart("mlm_head"), IO_H)
    top.add(ModelPart("output_linear"), IO_H)
    top.add(ModelPart("softmax"), IO_H)
    top.label(tr(cfg.family.labels["output"]))  # on top: what comes out
    if len(columns) == 2:
        memory_lane(d, *columns)
    return d


def memory_lane(d: Drawing, enc: Column, dec: Column) -> None:
    """The encoder's output, up from the encoder's top and into every decoder layer's cross-attention."""
    assert enc.prev is not None
    start = enc.prev
    turn = start.y() - GAP_Y
    lane = COL_W + GAP / 2
    ys = [turn, *(p.y() for p in dec.cross_entries)]
    d.lines.append([start, QPointF(start.x(), turn), QPointF(lane, turn)])
    d.lines.append([QPointF(lane, min(ys)), QPointF(lane, max(ys))])
    for entry in dec.cross_entries:
        d.arrows.append([QPointF(lane, entry.y()), entry])


# -- drawing ---------------------------------------------------------------------------------------------


def is_dark() -> bool:
    return QApplication.palette().color(QPalette.ColorRole.Base).lightness() < 128


def fill_colour(kind: str) -> QColor:
    """The part's fill: the paper's colour, or (dark theme) that colour mixed into the background."""
    colour = QColor(FILLS.get(kind, "#ffffff"))
    if not is_dark():
        return colour
    base = QApplication.palette().color(QPalette.ColorRole.Base)
    t = 0.32  # share of the paper's colour
    mix = [
        t * a + (1 - t) * b
        for a, b in ((colour.redF(), base.redF()), (colour.greenF(), base.greenF()), (colour.blueF(), base.blueF()))
    ]
    return QColor.fromRgbF(mix[0], mix[1], mix[2])


def pixel_font(px: float, bold: bool = False) -> QFont:
    font = QFont(QApplication.font())
    font.setPixelSize(max(1, round(px)))
    font.setBold(bold)
    return font


def fitted_font(text: str, width: float, px: float, bold: bool = False) -> QFont:
    """The font of ``px`` pixels, made smaller where ``text`` would not fit in ``width``."""
    font = pixel_font(px, bold)
    needed = QFontMetricsF(font).horizontalAdvance(text)
    return font if needed <= width else pixel_font(max(6.0, px * width / needed), bold)


class PartItem(QGraphicsItem):
    """One part of the map: a box, a circle or a layer's frame, with its name and numbers."""

    def __init__(
        self, placed: Placed, label: str, detail: str, on_hover: Callable[[ModelPart | None], None], tip: str = ""
    ):
        super().__init__()
        self.placed, self.part, self.label, self.detail = placed, placed.part, label, detail
        self.on_hover = on_hover
        self.hovered = self.chosen = False
        self.setAcceptHoverEvents(True)
        # what it does: said in the caption under the drawing (a tooltip would cover the parts it names)
        self.tip = tip or tooltip(self.part)
        self.setZValue(-1 if placed.shape == "frame" else 0)

    def boundingRect(self) -> QRectF:  # noqa: N802 — Qt's name
        return self.placed.rect.adjusted(-3, -3, 3, 3)

    def set_state(self, hovered: bool | None = None, chosen: bool | None = None) -> None:
        self.hovered = self.hovered if hovered is None else hovered
        self.chosen = self.chosen if chosen is None else chosen
        self.update()

    def hoverEnterEvent(self, event: QGraphicsSceneHoverEvent) -> None:  # noqa: N802
        self.set_state(hovered=True)
        self.on_hover(self.part)

    def hoverLeaveEvent(self, event: QGraphicsSceneHoverEvent) -> None:  # noqa: N802
        self.set_state(hovered=False)
        self.on_hover(None)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        palette = QApplication.palette()
        fg = palette.color(QPalette.ColorRole.Text)
        rect, shape = self.placed.rect, self.placed.shape
        pen = QPen(fg, 1.0)
        if shape == "frame":
            pen = QPen(palette.color(QPalette.ColorRole.Mid), 1.0)
        if self.placed.dashed:
            pen.setStyle(Qt.PenStyle.DashLine)
        if self.hovered or self.chosen:
            pen = QPen(palette.color(QPalette.ColorRole.Highlight), 3.0 if self.chosen else 2.0)
        fill = fill_colour(self.part.kind)
        if self.hovered and shape != "frame":
            fill = fill.lighter(112) if not is_dark() else fill.lighter(135)
        painter.setPen(pen)
        painter.setBrush(fill)
        if shape == "circle":
            painter.drawEllipse(rect)
        else:
            radius = 9.0 if shape == "frame" else 5.0
            painter.drawRoundedRect(rect, radius, radius)
        painter.setPen(fg)
        self._paint_text(painter, rect, shape)

    def _paint_text(self, painter: QPainter, rect: QRectF, shape: str) -> None:
        if shape == "frame":
            painter.setFont(pixel_font(SMALL_PX, bold=True))
            title = rect.adjusted(8, 2, -8, 0)
            title.setHeight(FRAME_TOP - 2)
            # on the outer side, away from the main line in the middle
            side = Qt.AlignmentFlag.AlignLeft if self.part.stack == "encoder" else Qt.AlignmentFlag.AlignRight
            painter.drawText(title, side | Qt.AlignmentFlag.AlignVCenter, self.label)
            return
        if rect.height() < 11:  # a thin closed layer of a deep stack: the tooltip names it
            return
        if not self.detail or rect.height() < 30:
            px = min(TITLE_PX, rect.height() * 0.6)
            painter.setFont(fitted_font(self.label, rect.width() - 6, px, bold=shape != "closed"))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, self.label)
            return
        top, bottom = QRectF(rect), QRectF(rect)
        top.setBottom(rect.center().y() + 2)
        bottom.setTop(rect.center().y() + 2)
        painter.setFont(fitted_font(self.label, rect.width() - 6, TITLE_PX, True))
        painter.drawText(top, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom, self.label)
        painter.setFont(fitted_font(self.detail, rect.width() - 6, DETAIL_PX))
        painter.drawText(bottom, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop, self.detail)


def arrow_path(points: list[QPointF], head: bool) -> tuple[QPainterPath, QPolygonF | None]:
    path = QPainterPath(points[0])
    for p in points[1:]:
        path.lineTo(p)
    if not head:
        return path, None
    tip, before = points[-1], points[-2]
    dx, dy = tip.x() - before.x(), tip.y() - before.y()
    length = max(1e-6, (dx * dx + dy * dy) ** 0.5)
    ux, uy = dx / length, dy / length
    size = 6.0
    left = QPointF(tip.x() - size * ux + size * 0.5 * uy, tip.y() - size * uy - size * 0.5 * ux)
    right = QPointF(tip.x() - size * ux - size * 0.5 * uy, tip.y() - size * uy + size * 0.5 * ux)
    return path, QPolygonF([tip, left, right])


class LabelItem(QGraphicsItem):
    """Plain text in a rectangle ("Inputs", "N×"), in the theme's text colour."""

    def __init__(self, text: str, rect: QRectF, align: Qt.AlignmentFlag, px: float = SMALL_PX + 1):
        super().__init__()
        self.text, self.rect, self.align, self.px = text, rect, align, px

    def boundingRect(self) -> QRectF:  # noqa: N802 — Qt's name
        return self.rect

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        painter.setPen(QApplication.palette().color(QPalette.ColorRole.Text))
        painter.setFont(pixel_font(self.px))
        painter.drawText(self.rect, self.align, self.text)


def fill_scene(
    scene: QGraphicsScene, d: Drawing, info: RunInfo, on_hover: Callable[[ModelPart | None], None]
) -> dict[ModelPart, PartItem]:
    """Put a drawing into ``scene``; → the items of the parts."""
    cfg = info.model_config
    fg = QApplication.palette().color(QPalette.ColorRole.Text)
    pen = QPen(fg, 1.3)
    pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    for points in d.lines:
        scene.addPath(arrow_path(points, head=False)[0], pen).setZValue(1)
    for points in d.arrows:
        path, tip = arrow_path(points, head=True)
        scene.addPath(path, pen).setZValue(1)
        if tip is not None:
            scene.addPolygon(tip, QPen(fg, 1.0), fg).setZValue(1)
    for text, rect, align in d.texts:
        scene.addItem(LabelItem(text, rect, align))
    items = {}
    for placed in d.placed:
        label = box_label(placed.part, cfg)
        if placed.shape == "frame":  # short: the main line crosses the frame's title in the middle
            total = layer_count(cfg, placed.part.stack)
            label = tr("Layer {n} of {total}").format(n=(placed.part.layer or 0) + 1, total=total)
        detail = box_detail(placed.part, cfg, info.vocab_sizes)
        item = PartItem(placed, label, detail, on_hover, tooltip(placed.part, cfg))
        scene.addItem(item)
        items[placed.part] = item
    return items


# -- displayed equations in a narrow column ------------------------------------------------------------------

FORMULA_OPEN, FORMULA_CLOSE = formula("\0").split("\0")  # the markup model_map_text gives a displayed equation
_TAG = re.compile(r"<[^>]*>")
OPENING, CLOSING = "([{⟨", ")]}⟩"
BREAK_AFTER = (" = ", " ↦ ", " ← ", ", ")  # a line of an equation may end after these …
BREAK_BEFORE = (" + ", " − ", " · ", " ⊙ ")  # … or before these


def plain(markup: str) -> str:
    """The text of an equation's markup, as measured (sub- and superscripts at full size: a little wider than
    drawn, so what is measured to fit does)."""
    return html.unescape(_TAG.sub("", markup)).strip()


def break_points(markup: str) -> list[tuple[int, int]]:
    """Where ``markup`` may go on to the next line: (index where the next line starts, brackets open there);
    never inside an element (a subscript, a bold part)."""
    points: list[tuple[int, int]] = []
    depth = tags = i = 0
    while i < len(markup):
        if markup[i] == "<":
            end = markup.find(">", i)
            end = len(markup) if end < 0 else end + 1
            tag = markup[i:end]
            tags += -1 if tag.startswith("</") else 0 if tag.endswith("/>") else 1
            i = end
            continue
        depth += (markup[i] in OPENING) - (markup[i] in CLOSING)
        if tags == 0:
            points += [(i + len(sep), depth) for sep in BREAK_AFTER if markup.startswith(sep, i)]
            points += [(i + 1, depth) for sep in BREAK_BEFORE if markup.startswith(sep, i)]
            if markup[i] in OPENING:  # the last resort of a deep nesting: after an opening bracket
                points.append((i + 1, depth + 1))
        i += 1
    return points


def fill_lines(markup: str, breaks: list[int], fits: Callable[[str], bool]) -> list[str]:
    """``markup`` cut at some of ``breaks``: each line as long as still fits (a piece too wide stays whole)."""
    lines, start, last = [], 0, -1
    for b in [*breaks, len(markup)]:
        if not fits(plain(markup[start:b])) and last > start:
            lines.append(markup[start:last].strip())
            start = last
        last = b
    lines.append(markup[start:].strip())
    return lines


def formula_lines(markup: str, fits: Callable[[str], bool]) -> list[str]:
    """An equation on one line where it fits; else broken as in a narrow column of a paper: at the outermost
    break points first (after "=", "↦", "←" or a comma, before "+", "−", "·"; deep inside brackets, after an opening
    one), each line filled as far as it fits."""
    if fits(plain(markup)):
        return [markup]
    points = break_points(markup)
    for depth in sorted({d for _, d in points}):
        lines = fill_lines(markup, [i for i, d in points if d <= depth], fits)
        if all(fits(plain(line)) for line in lines):
            return lines
    return fill_lines(markup, [i for i, _ in points], fits)


def formula_bodies(text: str) -> list[str]:
    """The markup of each displayed equation of ``text``."""
    bodies, at = [], 0
    while (start := text.find(FORMULA_OPEN, at)) >= 0 and (end := text.find(FORMULA_CLOSE, start)) >= 0:
        bodies.append(text[start + len(FORMULA_OPEN) : end])
        at = end + len(FORMULA_CLOSE)
    return bodies


def outer_pieces(markup: str) -> list[str]:
    """An equation cut at each of its outermost break points ("Attention(Q, K, V) =", "softmax(QKᵀ / √d_k) V")."""
    cuts = [0, *(i for i, depth in break_points(markup) if depth == 0), len(markup)]
    return [markup[a:b] for a, b in zip(cuts, cuts[1:]) if markup[a:b].strip()]


def fitted_equations(text: str, fits: Callable[[str], bool]) -> str:
    """Each displayed equation of ``text`` in lines that ``fits`` (one paragraph each, set close together)."""
    out, at = [], 0
    while (start := text.find(FORMULA_OPEN, at)) >= 0 and (end := text.find(FORMULA_CLOSE, start)) >= 0:
        out.append(text[at:start])
        lines = formula_lines(text[start + len(FORMULA_OPEN) : end], fits)
        for n, line in enumerate(lines):
            margins = ("margin-top: 0px; " if n else "") + ("margin-bottom: 0px;" if n < len(lines) - 1 else "")
            opening = FORMULA_OPEN if not margins else f'{FORMULA_OPEN[:-1]} style="{margins.strip()}">'
            out.append(opening + line + FORMULA_CLOSE)
        at = end + len(FORMULA_CLOSE)
    out.append(text[at:])
    return "".join(out)


class MapView(QGraphicsView):
    """The scene, scaled to fit; a click on a part says which, and a double-click asks to open it."""

    part_clicked = Signal(ModelPart)
    part_double_clicked = Signal(ModelPart)

    def __init__(self, scene: QGraphicsScene, parent=None):
        super().__init__(scene, parent)
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFrameShape(QGraphicsView.Shape.NoFrame)
        self.setMouseTracking(True)

    def fit(self) -> None:
        rect = self.sceneRect()
        if not rect.isEmpty():
            self.fitInView(rect, Qt.AspectRatioMode.KeepAspectRatio)

    def resizeEvent(self, event) -> None:  # noqa: N802 — Qt's name
        super().resizeEvent(event)
        self.fit()

    def mousePressEvent(self, event) -> None:  # noqa: N802
        item = self.itemAt(event.position().toPoint())
        if isinstance(item, PartItem) and event.button() == Qt.MouseButton.LeftButton:
            self.part_clicked.emit(item.part)
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802
        item = self.itemAt(event.position().toPoint())
        if isinstance(item, PartItem) and event.button() == Qt.MouseButton.LeftButton:
            self.part_double_clicked.emit(item.part)
            event.accept()
            return
        super().mouseDoubleClickEvent(event)


def _drawn(info: RunInfo) -> tuple[object, ...]:
    """All that the map and its equations show of a run."""
    return info.model_config, info.vocab_sizes, info.parameters


class ModelMapPanel(QWidget):
    """The current model drawn as the paper's Figure 1, with the equation of the part pointed at.

    Signals:
        part_chosen(ModelPart): the person clicked a part (not sent by :meth:`select`).
    """

    part_selected = Signal(ModelPart)  # a click: the part's equation stays beside the drawing, the map on screen
    part_chosen = Signal(ModelPart)  # a double-click, or its Open button: show the part in its view

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("model_map_panel")
        self.info: RunInfo | None = None
        self.chosen: ModelPart | None = None
        self.hovered: ModelPart | None = None
        self.opened = {"encoder": 0, "decoder": 0}  # the open layer of each stack
        self._narrow: bool | None = None  # the equation's column is narrow (its style sheet is set for it)
        self._formula_pt = 0.0  # the equations' size, set with the style sheet
        self._column = 150  # the equation column's width (px)
        self._formula_need = 0.0  # px the widest outermost piece of this model's equations takes (narrow size)
        self._shown_width = -1  # the column's width its equations were broken into lines for
        self.items: dict[ModelPart, PartItem] = {}
        self._on_screen = True  # False while the dock is a tab behind another (set_on_screen): drawing waits
        self._stale = False  # a drawing waits for the panel to be looked at
        self._create_views()
        self._lay_out()
        self._connect()
        self.retranslate()

    def _create_views(self) -> None:
        self.scene = QGraphicsScene(self)
        self.view = named(MapView(self.scene), "model_map_view")
        self.equation = named(QTextBrowser(), "model_map_equation")
        self.equation.setOpenLinks(False)
        self.equation.setMinimumWidth(150)
        self.caption = named(QLabel(), "model_map_caption")  # what the part pointed at does
        self.caption.setWordWrap(True)
        self.caption.setTextFormat(Qt.TextFormat.PlainText)
        self.caption.setFixedHeight(2 * self.caption.fontMetrics().lineSpacing() + 6)  # never moves the drawing
        self.open_button = named(QPushButton(), "model_map_open")
        self.diagram = QWidget()
        self.title, _ = titled_view(self.diagram, self.view, "model_map", self.export, ("PNG", "SVG"), self.caption)

    def _lay_out(self) -> None:
        self.side = QWidget()  # the equation of the part pointed at or chosen, and the button that opens its view
        side = QVBoxLayout(self.side)
        side.setContentsMargins(0, 0, 0, 0)
        side.addWidget(self.equation, 1)
        side.addWidget(self.open_button)
        self.box = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)
        self.box.setContentsMargins(4, 4, 4, 4)
        self.box.addWidget(self.diagram, 2)
        self.box.addWidget(self.side, 1)

    def _connect(self) -> None:
        self.view.part_clicked.connect(self._on_part_clicked)
        self.view.part_double_clicked.connect(self._on_part_double_clicked)
        self.open_button.clicked.connect(self._on_open)

    # -- public ------------------------------------------------------------------------------------------

    def retranslate(self) -> None:
        self.title.setText(tr(TITLE))
        self.redraw()
        self._show_caption()

    def on_run(self, info: RunInfo) -> None:
        """Draw a (new or changed) run's model; a chosen part that no longer exists is forgotten."""
        old, self.info = self.info, info
        if old is not None and _drawn(old) == _drawn(info):
            return  # newer weights of the same model (a followed run's next checkpoint): the same drawing
        stacks = model_stacks(info.model_config)
        for stack, n in stacks.items():
            self.opened[stack] = min(self.opened[stack], n - 1)
        self.hovered = None
        self.redraw()

    def set_on_screen(self, on: bool) -> None:
        """The dock came to the front of its tabs (or went behind another): a drawing that waited is made."""
        self._on_screen = on
        if on:
            self._draw_if_stale()

    def select(self, part: ModelPart) -> bool:
        """Open the part's layer and mark the part as chosen (without sending :attr:`part_chosen`).

        → False (and nothing changes) when the model has no such part.
        """
        if self.info is None:
            return False
        self._draw_if_stale()
        n = model_stacks(self.info.model_config).get(part.stack or "", 0)
        if part.layer is not None and not 0 <= part.layer < n:
            return False
        previous = dict(self.opened)
        if part.layer is not None and part.stack is not None:
            self.opened[part.stack] = part.layer
        if self.opened != previous:
            self._draw()
        if part not in self.items:
            self.opened = previous
            self._draw()
            return False
        self.chosen = part
        for p, item in self.items.items():
            item.set_state(chosen=p == part)
        self._show_equation()
        return True

    def parts(self) -> dict[ModelPart, QRectF]:
        """The parts drawn now, each with its rectangle in scene coordinates."""
        self._draw_if_stale()
        return {p: QRectF(item.placed.rect) for p, item in self.items.items()}

    def export(self, path: str | Path) -> None:
        self._draw_if_stale()
        render_scene(self.scene, self.scene.sceneRect(), path, self.title.text())

    # -- drawing -----------------------------------------------------------------------------------------

    def redraw(self) -> None:
        """Draw the model now, or, while the panel is a tab behind another, when it is next looked at (a new
        model's drawing and its equations' measuring take 15–20 ms that the window's other views need)."""
        if self._on_screen:
            self._draw()
        else:
            self._stale = True

    def _draw_if_stale(self) -> None:
        if self._stale:
            self._draw()

    def _draw(self) -> None:
        self._stale = False
        self.scene.clear()
        self.items = {}
        base = QApplication.palette().color(QPalette.ColorRole.Base)
        self.scene.setBackgroundBrush(base)
        if self.info is None:
            rect = QRectF(0, 0, 360, 80)
            self.scene.addItem(LabelItem(tr("No model yet."), rect, Qt.AlignmentFlag.AlignCenter, TITLE_PX))
        else:
            drawing = draw_model(self.info.model_config, self.opened)
            self.items = fill_scene(self.scene, drawing, self.info, self._on_hover)
            if self.chosen in self.items:
                self.items[self.chosen].set_state(chosen=True)
        if self.chosen not in self.items:  # a part of a model no longer shown
            self.chosen = None
        self.scene.setSceneRect(self.scene.itemsBoundingRect().adjusted(-6, -6, 6, 6))
        self._measure_formulas()
        self._share_space()
        self.view.fit()
        self._show_equation()

    def _show_equation(self) -> None:
        self._show_open_button()
        if self.info is None:
            self.equation.setHtml(f"<p>{tr('No model yet.')}</p>")
            return
        part = self.hovered or self.chosen
        text = equation_html(part, self.info) if part is not None else overview_html(self.info)
        self._shown_width = self._column
        self.equation.setHtml(fitted_equations(text, self._formula_fits()))

    def _formula_metrics(self, pt: float) -> QFontMetricsF:
        font = QFont(self.equation.font())
        font.setFamily("serif")  # as the style sheet sets equations
        font.setPointSizeF(pt)
        return QFontMetricsF(font)

    def _column_chrome(self) -> float:
        """What of the column's width its text cannot use: frame, margins and the scroll bar (shown or not)."""
        margins = 2 * (self.equation.document().documentMargin() + self.equation.frameWidth())
        return self.equation.verticalScrollBar().sizeHint().width() + margins + 4

    def _formula_fits(self) -> Callable[[str], bool]:
        """Whether an equation's text fits on one line of the column."""
        metrics = self._formula_metrics(self._formula_pt or self.equation.font().pointSizeF())
        room = self._column - self._column_chrome()
        return lambda text: metrics.horizontalAdvance(text) <= room

    def _measure_formulas(self) -> None:
        """The width the column needs for every equation of this model broken only at its outermost points
        ("Attention(Q, K, V) =" above "softmax(QKᵀ / √d_k) V"), at the narrow column's size."""
        if self.info is None:
            self._formula_need = 0.0
            return
        metrics = self._formula_metrics(1.1 * self.equation.font().pointSizeF())
        texts = [overview_html(self.info), *(equation_html(part, self.info) for part in self.items)]
        pieces = (plain(piece) for text in texts for body in formula_bodies(text) for piece in outer_pieces(body))
        self._formula_need = max((metrics.horizontalAdvance(piece) for piece in pieces), default=0.0)

    def _show_open_button(self) -> None:
        """The button under the equation: opens the view that shows the chosen part (where there is one)."""
        opens = OPENS.get(self.chosen.kind) if self.chosen is not None else None
        self.open_button.setVisible(opens is not None)
        if opens is not None:
            self.open_button.setText(tr(opens))

    def _show_caption(self) -> None:
        item = self.items.get(self.hovered) if self.hovered is not None else None
        self.caption.setText(item.tip.replace("\n", " — ") if item is not None else tr(HINT))

    # -- events ------------------------------------------------------------------------------------------

    def _on_hover(self, part: ModelPart | None) -> None:
        self.hovered = part
        self._show_equation()
        self._show_caption()

    def _on_part_clicked(self, part: ModelPart) -> None:
        """The part's equation stays beside the drawing; the map stays on screen (its view opens on a
        double-click, or with the button under the equation)."""
        self.hovered = None
        self.select(part)
        self.part_selected.emit(part)

    def _on_part_double_clicked(self, part: ModelPart) -> None:
        self.select(part)
        self.part_chosen.emit(part)

    def _on_open(self) -> None:
        if self.chosen is not None:
            self.part_chosen.emit(self.chosen)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 — Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # the theme changed: colours come from the palette
            self.redraw()

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._share_space()

    def _share_space(self) -> None:
        """Side by side, the drawing gets the width its height can use and the equation the rest;
        in a tall, narrow panel the equation goes below."""
        w, h = max(1, self.width()), max(1, self.height())
        tall = h > 1.15 * w
        self.box.setDirection(QBoxLayout.Direction.TopToBottom if tall else QBoxLayout.Direction.LeftToRight)
        rect = self.scene.sceneRect()
        if tall or rect.isEmpty():
            self.side.setMinimumWidth(0)
            self.side.setMaximumWidth(16777215)  # QWIDGETSIZE_MAX
            width = w
        else:  # (the title and the caption take about 30 + 40 px)
            wanted = (h - 30 - self.caption.height()) * rect.width() / rect.height()
            drawing = min(0.72 * w, w - 180, max(0.5 * w, wanted))
            # room for the equations broken only at their outermost points, taken from the drawing down to 90% of
            # its width (it scales: the names in its boxes stay readable); longer pieces break further in
            equations = math.ceil(self._formula_need + self._column_chrome())
            width = max(w - round(drawing), min(equations, w - round(0.9 * drawing)))
            self.side.setFixedWidth(width)
        self._column = width - (8 if tall else 0)  # (the panel's margins)
        narrow = width < 260
        if narrow != self._narrow:  # a narrow column sets formulas and headings smaller
            self._narrow = narrow
            pt = self.equation.font().pointSizeF()
            self._formula_pt, heading_pt = (1.1 * pt, 1.15 * pt) if narrow else (1.35 * pt, 1.3 * pt)
            self.equation.document().setDefaultStyleSheet(
                f".formula {{ font-family: serif; font-size: {self._formula_pt:.1f}pt; white-space: nowrap; }} "
                f"h3 {{ font-size: {heading_pt:.1f}pt; }}"
            )
            self._show_equation()
        elif self._column != self._shown_width:  # its equations broken into lines for this width
            self._show_equation()
