"""Tokens drawn as chips in a row that wraps, with optional highlighting (e.g. unknown pieces, shown as typed);
optionally clickable (a person masks a token by clicking it), with marked chips (e.g. masked ones). A long text's
chips take at most :data:`MAX_LINES` lines, its end shown first, and the wheel scrolls through the others."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QHelpEvent, QPainter, QPen, QWheelEvent
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from explorer.i18n import tr
from explorer.pieces import shown_piece

CHIP = QColor("#e8eef7")
CHIP_BORDER = QColor("#9db3d6")
UNKNOWN = QColor("#ffd6d6")
UNKNOWN_BORDER = QColor("#d9534f")
SPECIAL = QColor("#eeeeee")
MARKED = QColor("#ffe7b8")  # e.g. a masked position
MARKED_BORDER = QColor("#e08a00")
PUSHES = (214, 96, 77)  # a chip's tint for a positive weight (it pushed towards the output): red, as the heatmaps
HOLDS = (67, 147, 195)  # … for a negative one (it pushed against it): blue
STRONGEST = 0.8  # the largest weight's share of the tint in its chip's fill: the dark text stays readable
MAX_LINES = 6  # the most lines of chips shown at once: a 512-token prompt's 20-odd lines made the window taller
# than a 768-pixel screen; the others are a wheel's turn away (a bar at the right edge says where)
SCROLL_BAR = QColor(0, 0, 0, 70)


def plain_tooltip(text: str) -> str:
    """A tooltip that shows ``text`` literally (Qt reads a tooltip such as ``[<b>]`` as markup)."""
    return "<p style='white-space:pre'>" + html.escape(text) + "</p>"


class TokenStrip(QWidget):
    """A wrapping row of token chips. ``highlight`` indexes are drawn as unknown pieces: with the text typed
    for them when it is given (``typed``), and a tooltip saying that the model reads ``<unk>`` there."""

    PAD_X, PAD_Y, GAP = 5, 2, 4
    chip_clicked = Signal(int)  # the index of the chip a person clicked (only when clickable)

    def __init__(self, tokens: list[str] | None = None, highlight: set[int] | None = None, parent=None):
        super().__init__(parent)
        self.tokens: list[str] = []  # the text on each chip
        self.pieces: list[str] = []  # the pieces as the model reads them (<unk> where a chip shows what was typed)
        self.highlight: set[int] = set()
        self.marked: set[int] = set()  # chips drawn as marked (e.g. masked positions)
        self.tips: dict[int, str] = {}  # a chip's own tooltip (plain text)
        self.clickable = False
        self.faded = False  # the chips of a sentence no longer in the box (edited, not decoded yet): drawn faint
        self.weights: list[float] | None = None  # a value per chip, drawn as a tint (set_weights)
        self._strongest = 0.0  # the largest |weight|, the full tint
        self.legend = ""  # a line under the chips saying what the tint means
        self._widths: list[int] | None = None  # chip widths, measured once per sentence (and font)
        self._laid_out: dict[int, list[QRectF]] = {}  # the layouts of the last few widths asked for
        self._top_line: int | None = None  # the first line shown when there are more than MAX_LINES (None: the end)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.set_tokens(tokens or [], highlight)

    def set_tokens(
        self, tokens: list[str], highlight: set[int] | None = None, typed: Sequence[str] | None = None
    ) -> None:
        """Show ``tokens``; a ``highlight`` index is an unknown piece, its chip showing ``typed[i]`` if given."""
        pieces, highlight = list(tokens), set(highlight or ())
        typed = typed or ()
        shown = [typed[i] if i in highlight and i < len(typed) and typed[i] else t for i, t in enumerate(pieces)]
        if (shown, pieces, highlight) == (self.tokens, self.pieces, self.highlight) and self._widths is not None:
            return  # the same sentence (every decoding step shows it again): nothing to lay out or paint
        self.tokens, self.pieces, self.highlight = shown, pieces, highlight
        self._top_line = None  # a new text: its end, where the model reads on
        self.setToolTip(plain_tooltip(" ".join(f"[{t}]" for t in self.pieces)) if self.pieces else "")
        self._measure()
        self.updateGeometry()
        self.update()

    def set_marks(self, marked: set[int], tips: dict[int, str] | None = None) -> None:
        """Draw the ``marked`` chips as marked; ``tips``: a tooltip of a chip's own (plain text)."""
        self.marked, self.tips = set(marked), dict(tips or {})
        self.update()

    def set_weights(self, values: Sequence[float] | None, legend: str = "") -> None:
        """Tint each chip by its value (red: positive, blue: negative, the strongest at full tint; a chip without a
        value untinted), with ``legend`` on a line under the chips; None: no tint and no legend."""
        weights = None if values is None else [float(v) for v in values]
        legend = legend if weights is not None else ""
        if (weights, legend) == (self.weights, self.legend):
            return
        grows = bool(legend) != bool(self.legend)
        self.weights, self.legend = weights, legend
        self._strongest = max((abs(w) for w in weights or () if np.isfinite(w)), default=0.0)
        if grows:
            self.updateGeometry()
        self.update()

    def tint(self, i: int) -> QColor | None:
        """The fill of chip ``i`` for its weight (None: it has none)."""
        if self.weights is None or i >= len(self.weights) or not np.isfinite(self.weights[i]):
            return None
        top = self._strongest
        share = STRONGEST * abs(self.weights[i]) / top if top > 0 else 0.0
        colour = PUSHES if self.weights[i] >= 0 else HOLDS
        return QColor(*(round(255 + share * (c - 255)) for c in colour))

    def set_faded(self, on: bool) -> None:
        """Draw the chips faint, with dashed borders: they are the previous sentence's."""
        if on != self.faded:
            self.faded = on
            self.update()

    def set_clickable(self, on: bool) -> None:
        """Chips a person may click (``chip_clicked``), with a pointing hand over them."""
        self.clickable = on
        self.setCursor(Qt.CursorShape.PointingHandCursor if on else Qt.CursorShape.ArrowCursor)

    def mousePressEvent(self, event) -> None:  # noqa: N802
        i = self.chip_at(event.position().toPoint()) if self.clickable else None
        if i is not None and event.button() == Qt.MouseButton.LeftButton:
            event.accept()
            self.chip_clicked.emit(i)
            return
        super().mousePressEvent(event)

    def _measure(self) -> None:
        fm = QFontMetrics(self.font())
        self._widths = [fm.horizontalAdvance(self._shown(t)) + 2 * self.PAD_X for t in self.tokens]
        self._laid_out = {}

    def changeEvent(self, event) -> None:  # noqa: N802
        if event.type() == QEvent.Type.FontChange:
            self._measure()
            self.updateGeometry()
        super().changeEvent(event)

    def _layout(self, width: int) -> list[QRectF]:
        """Every chip's place at ``width``, the first line at 0 (the lines scrolled off included)."""
        if width in self._laid_out:  # the layout asks for a few widths in turn: each is kept
            return self._laid_out[width]
        h = self._chip_height()
        x = y = 0.0
        assert self._widths is not None  # measured by set_tokens, from __init__ on
        rects = []
        for w in self._widths:
            if x > 0 and x + w > width:
                x, y = 0.0, y + h + self.GAP
            rects.append(QRectF(x, y, w, h))
            x += w + self.GAP
        if len(self._laid_out) >= 4:
            self._laid_out.pop(next(iter(self._laid_out)))
        self._laid_out[width] = rects
        return rects

    def _chip_height(self) -> int:
        return QFontMetrics(self.font()).height() + 2 * self.PAD_Y

    def lines(self, width: int | None = None) -> int:
        """How many lines the chips take at ``width`` (the widget's own by default)."""
        rects = self._layout(max(1, self.width() if width is None else width))
        return round(rects[-1].y() / (self._chip_height() + self.GAP)) + 1 if rects else 0

    def top_line(self) -> int:
        """The first line shown (0 unless the chips take more than MAX_LINES lines)."""
        last = max(0, self.lines() - MAX_LINES)
        return last if self._top_line is None else min(self._top_line, last)

    def _offset(self) -> float:
        return self.top_line() * (self._chip_height() + self.GAP)

    def _band(self) -> float:
        """The height of the lines shown."""
        return min(self.lines(), MAX_LINES) * (self._chip_height() + self.GAP) - self.GAP

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802
        """A long text's lines scroll (a line a notch); at either end the wheel goes on to what holds the strip."""
        last = max(0, self.lines() - MAX_LINES)
        notches = event.angleDelta().y() / 120
        top = int(np.clip(self.top_line() - (np.sign(notches) * max(1, round(abs(notches)))), 0, last))
        if not last or top == self.top_line():
            event.ignore()
            return
        self._top_line = None if top == last else top
        event.accept()
        self.update()

    def chip_at(self, pos: QPoint) -> int | None:
        """Index of the chip under ``pos`` (widget coordinates), if any."""
        if not 0 <= pos.y() <= self._band():
            return None
        point = pos.toPointF() + QPointF(0, self._offset())
        for i, rect in enumerate(self._layout(self.width())):
            if rect.contains(point):
                return i
        return None

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            i = self.chip_at(event.pos())
            if i is not None and i in self.highlight:  # an unknown piece: what it was typed as, what it reads
                text = tr("“{word}” is not in the model's vocabulary: it reads <unk>").format(word=self.tokens[i])
                QToolTip.showText(event.globalPos(), plain_tooltip(text), self)
                return True
            if i is not None and self.weights is not None and i < len(self.weights):
                text = f"“{self.tokens[i]}”: {self.weights[i]:+.4f}" + (f"\n{self.legend}" if self.legend else "")
                QToolTip.showText(event.globalPos(), plain_tooltip(text), self)
                return True
            if i is not None and i in self.tips:
                QToolTip.showText(event.globalPos(), plain_tooltip(self.tips[i]), self)
                return True
        return super().event(event)

    @staticmethod
    def _shown(token: str) -> str:
        return shown_piece(token)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 — Qt's name
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        rects = self._layout(max(1, width))
        legend = self._legend_height()
        if not rects:
            return QFontMetrics(self.font()).height() + 6 + legend
        shown = min(self.lines(width), MAX_LINES)
        return int(shown * (self._chip_height() + self.GAP) - self.GAP) + 2 + legend

    def _legend_height(self) -> int:
        return QFontMetrics(self.font()).height() + self.GAP + 5 if self.legend else 0  # room for a Chinese glyph

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(300, self.heightForWidth(300))

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setOpacity(0.45 if self.faded else 1.0)
        band, offset = self._band(), self._offset()
        p.save()
        p.setClipRect(QRectF(0, 0, self.width(), band + 1))
        p.translate(0, -offset)
        shown = QRectF(0, offset, self.width(), band)  # only the lines shown are drawn
        for i, (t, r) in enumerate(zip(self.tokens, self._layout(self.width()))):
            if r.intersects(shown):
                self._paint_chip(p, i, t, r)
        p.restore()
        if self.lines() > MAX_LINES:  # where the lines shown are among all: a thin bar at the right edge
            p.setOpacity(1.0)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(SCROLL_BAR)
            lines = self.lines()
            p.drawRoundedRect(
                QRectF(self.width() - 3, band * self.top_line() / lines, 3, band * MAX_LINES / lines), 1.5, 1.5
            )
        if self.legend:
            p.setOpacity(1.0)
            p.setPen(self.palette().windowText().color())
            fm = QFontMetrics(self.font())
            top = (band + 2 if self.tokens else 0.0) + self.GAP
            text = fm.elidedText(self.legend, Qt.TextElideMode.ElideRight, self.width())
            p.drawText(QRectF(0, top, self.width(), fm.height() + 5), Qt.AlignmentFlag.AlignLeft, text)
        p.end()

    def _paint_chip(self, p: QPainter, i: int, t: str, r: QRectF) -> None:
        special = t.startswith("<") and t.endswith(">")
        fill, border = (
            (UNKNOWN, UNKNOWN_BORDER)
            if i in self.highlight
            else (
                (MARKED, MARKED_BORDER)
                if i in self.marked
                else (SPECIAL, CHIP_BORDER)
                if special
                else (CHIP, CHIP_BORDER)
            )
        )
        pen = QPen(border, 2 if i in self.marked else 1)
        if self.faded:
            pen.setStyle(Qt.PenStyle.DashLine)
        p.setPen(pen)
        p.setBrush(self.tint(i) or fill)
        p.drawRoundedRect(r.adjusted(0.5, 0.5, -0.5, -0.5), 4, 4)
        p.setPen(QColor("#202020"))
        p.drawText(r, Qt.AlignmentFlag.AlignCenter, self._shown(t))
