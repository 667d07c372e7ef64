"""The Why panel's two views: the attribution matrix (output tokens × the source, then the output read before) and
the logit-lens table (layers × the top guesses of each, for the current step). Both draw the engine's frozen values
(:class:`model.interpret.results.Attribution`, :class:`~model.interpret.results.LensTable`) and export them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.i18n import N_, tr
from explorer.widgets import named
from explorer.widgets.export import render_widget, titled_view, write_numbers, write_rows
from explorer.widgets.heatmap import DIVERGING_MAP, Heatmap
from explorer.widgets.token_strip import shown_piece
from model.interpret.results import Attribution, LensTable

SEPARATOR = ""  # the column between the source and the output read before (drawn empty, unlabelled)
ANSWER = QColor("#ffd8a8")  # a lens cell holding the final answer: light orange, dark text in either theme
FINAL = (67, 147, 195)  # the lens's P(final answer) column, tinted by the probability


def attribution_matrix(a: Attribution) -> tuple[np.ndarray, list[str], list[str]]:
    """What the map draws: ``[T, S]`` scores, then (when the model read an output prefix) an empty separator
    column and the ``[T, T]`` prefix scores; the row labels (the last one names the contrast) and column labels."""
    rows = [shown_piece(t) for t in a.target_tokens]
    if a.contrast is not None and rows:
        rows[-1] = f"{rows[-1]} ≠ {shown_piece(a.contrast)}"
    cols = [shown_piece(t) for t in a.source_tokens]
    if not any(a.prefix_tokens):  # a BERT: no prefix
        return np.asarray(a.scores, dtype=np.float64), rows, cols
    gap = np.full((a.scores.shape[0], 1), np.nan)
    values = np.hstack([a.scores, gap, a.prefix_scores]).astype(np.float64)
    return values, rows, [*cols, SEPARATOR, *(shown_piece(t) if t else "·" for t in a.prefix_tokens)]


def numbers_of(a: Attribution) -> tuple[np.ndarray, list[str]]:
    """The matrix as exported: the scores and (if any) the prefix scores side by side, no separator; column labels
    ``src:`` and ``out:`` in front of the tokens."""
    cols = [f"src:{t}" for t in a.source_tokens]
    if not any(a.prefix_tokens):
        return np.asarray(a.scores), cols
    return np.hstack([a.scores, a.prefix_scores]), [*cols, *(f"out:{t}" for t in a.prefix_tokens)]


class AttributionMap(Heatmap):
    """The attribution heatmap: diverging colours centred at 0 (red: pushed towards the row's token, blue:
    against it); hovering names the cell and its value. CSV and NPY export the numbers without the separator."""

    def __init__(self) -> None:
        super().__init__(
            "why_attribution_map",
            N_("Attribution"),
            levels=(-1.0, 1.0),
            colour_map=DIVERGING_MAP,
            row_name=N_("output"),
            col_name=N_("input"),
            zoomable=True,  # a 512-token prompt's columns are read zoomed
        )
        self.attribution: Attribution | None = None

    def draw(self, a: Attribution | None, current: int | None = None) -> None:
        """Draw ``a`` (None: nothing), the row of the current step outlined."""
        self.attribution = a
        if a is None or not a.scores.size:
            self.set_data(np.zeros((0, 0)), [], [])
            return
        values, rows, cols = attribution_matrix(a)
        top = float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 0.0
        top = top if top > 0 else 1.0
        self.set_data(values, rows, cols, highlight_row=current, levels=(-top, top))

    def _on_move(self, pos) -> None:
        super()._on_move(pos)
        r, c = self._hover
        if r >= 0 and np.isnan(self.values[r, c]):  # the separator column holds no value
            self.hover_label.setText("")

    def export(self, path: str | Path) -> None:
        path = Path(path)
        a = self.attribution
        if path.suffix.lower() in (".csv", ".npy") and a is not None:
            values, cols = numbers_of(a)
            write_numbers(path, values, list(a.target_tokens), cols)
        else:
            super().export(path)


class LensView(QWidget):
    """The logit lens at the current step: a row per layer (1 is the first), its top guesses with their
    probabilities, and its probability of the model's final answer; the final answer's cells tinted, and the
    layer from which it stays on top marked ★ (and said under the table)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("why_lens")
        self.table_data: LensTable | None = None
        self.position = -1  # the position (column of the LensTable) shown
        self.table = named(QTableWidget(0, 0), "why_lens_table")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.caption = named(QLabel(), "why_lens_caption")
        self.caption.setTextFormat(Qt.TextFormat.PlainText)  # it quotes tokens
        self.caption.setWordWrap(True)
        self.plot = pg.PlotWidget()  # each layer's probability of the final answer, as bars
        self.plot.setBackground(None)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.getViewBox().setMouseEnabled(False, False)
        self.plot.setYRange(0, 1, padding=0.02)
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.6, brush=pg.mkBrush(*FINAL))
        self.plot.addItem(self.bars)
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.table)
        column.addWidget(self.plot, 1)
        formats = ("PNG", "SVG", "CSV")
        self.title, self.export_button = titled_view(self, body, "logit_lens", self.export, formats, self.caption)
        self.retranslate()

    def retranslate(self) -> None:
        self.title.setText(tr("Logit lens: what each layer would say"))
        self.show_table(self.table_data, self.position)

    def show_table(self, t: LensTable | None, position: int = -1) -> None:
        """Layers × top guesses of ``t`` at ``position`` (−1: the last, the current step)."""
        self.table_data, self.position = t, position
        if t is None or not t.targets:
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.bars.setOpts(x=[], height=[])
            self.plot.setLabel("left", "")
            self.caption.setText(tr("Step the decoding: what each layer would predict at that step appears here."))
            return
        p = position % len(t.targets)
        layers, k = t.top_probs.shape[0], t.top_probs.shape[2]
        answer = shown_piece(t.targets[p])
        self.table.setRowCount(layers)
        self.table.setColumnCount(k + 1)
        heads = [tr("guess {n}").format(n=i + 1) for i in range(k)] + [f"P(“{answer}”)"]
        self.table.setHorizontalHeaderLabels(heads)
        first = int(t.first_layer[p])
        self.table.setVerticalHeaderLabels(
            [tr("Layer {n}").format(n=i + 1) + (" ★" if i == first else "") for i in range(layers)]
        )
        for layer in range(layers):
            self._fill_row(t, layer, p, layer == first)
        self._fit_table()
        self.bars.setOpts(x=np.arange(1, layers + 1), height=t.target_probs[:, p], width=0.6)
        self.plot.getAxis("bottom").setTicks([[(i + 1, str(i + 1)) for i in range(layers)]])
        self.plot.setXRange(0.4, layers + 0.6, padding=0)
        self.plot.setLabel("left", f"P(“{answer}”)")
        self.plot.setLabel("bottom", tr("layer"))
        said = tr("After “{read}” the model says “{answer}”: it is on top from layer {n} on (★).")
        self.caption.setText(said.format(read=shown_piece(t.positions[p]), answer=answer, n=first + 1))

    def _fill_row(self, t: LensTable, layer: int, p: int, first: bool) -> None:
        bold = QFont(self.table.font())
        bold.setBold(True)
        for rank, (token, prob) in enumerate(zip(t.top_tokens[layer][p], t.top_probs[layer, p])):
            item = QTableWidgetItem(f"{shown_piece(token)}  {prob:.2f}")
            if token == t.targets[p]:
                item.setBackground(QBrush(ANSWER))
                item.setForeground(QBrush(QColor("#202020")))
                if first:
                    item.setFont(bold)
            self.table.setItem(layer, rank, item)
        final = float(t.target_probs[layer, p])
        item = QTableWidgetItem(f"{final:.3f}")
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        item.setBackground(QBrush(QColor(*(round(255 + 0.7 * final * (c - 255)) for c in FINAL))))
        item.setForeground(QBrush(QColor("#202020")))
        self.table.setItem(layer, t.top_probs.shape[2], item)

    def _fit_table(self) -> None:
        """The table as tall as its rows (at most 400 px: a deep model scrolls); the plot takes the rest."""
        rows = sum(self.table.rowHeight(r) for r in range(self.table.rowCount()))
        head = self.table.horizontalHeader().sizeHint().height()
        self.table.setFixedHeight(min(400, rows + head + 2 * self.table.frameWidth() + 2))

    def cells(self) -> list[list[str]]:
        """The table's text, row by row (what a person reads)."""
        return [
            [(self.table.item(r, c) or QTableWidgetItem()).text() for c in range(self.table.columnCount())]
            for r in range(self.table.rowCount())
        ]

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and self.table_data is not None:  # presenter mode: bold grows too
            self.show_table(self.table_data, self.position)

    def export(self, path: str | Path) -> None:
        t = self.table_data
        if str(path).lower().endswith(".csv"):
            rows = []
            if t is not None and t.targets:
                p = self.position % len(t.targets)
                for layer in range(t.top_probs.shape[0]):
                    guesses = [x for tok, pr in zip(t.top_tokens[layer][p], t.top_probs[layer, p]) for x in (tok, pr)]
                    rows.append([layer + 1, *guesses, float(t.target_probs[layer, p])])
            k = 0 if t is None else t.top_probs.shape[2]
            header = ["layer", *(f"{x}{i + 1}" for i in range(k) for x in ("token", "p")), "p_final"]
            write_rows(path, header, rows)
        else:
            render_widget(self, path)
