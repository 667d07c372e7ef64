"""The "Head functions" plot of the Attention panel's over-training tab, beside the entropy plot: how strongly each
head of one layer does a known job — previous token, diagonal alignment, attention to the first token or to <eos>,
induction — at each probe snapshot, so a class watches a head's function emerge as the model trains.

The scores come with each :class:`explorer.answers.ProbeSnapshot` (``functions``, computed on the engine thread by
:func:`model.interpret.head_functions.head_functions`); this part only draws them. :class:`ProbeTimeline`
(explorer/panels/attention_parts.py) owns it and draws it when it draws the entropy plot.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from explorer.answers import ProbeSnapshot
from explorer.i18n import N_, tr
from explorer.widgets import named
from explorer.widgets.metric_plot import MetricPlot
from model.interpret.head_functions import HEAD_FUNCTIONS, functions_of

# the functions' names, by id (model.interpret.head_functions declares the ids and the kinds they apply to)
FUNCTION_NAMES = {
    "previous_token": N_("previous token"),
    "alignment": N_("diagonal alignment"),
    "first_token": N_("attention to the first token"),
    "eos": N_("attention to <eos>"),
    "induction": N_("induction"),
}
# what the plot says when a function has no value at any snapshot of the probe
UNDEFINED = {
    "induction": N_("No repeated token in the probe: induction needs a token that appears twice, not side by side."),
    "eos": N_("No <eos> among the keys of the probe."),
}
assert set(FUNCTION_NAMES) == {f.id for f in HEAD_FUNCTIONS}


class HeadFunctionPlot(QWidget):
    """A choice of function (those that apply to the kind shown) and one curve per head of the layer shown; the
    owner draws it (:meth:`draw`) when it is shown and again on ``function_chosen``."""

    function_chosen = Signal()  # the person chose another function: the owner draws it

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.function = named(QComboBox(), "head_function_combo")
        self.function_label = QLabel()
        self.note = named(QLabel(), "head_function_note")
        self.note.setWordWrap(True)
        self.note.hide()
        self.plot = MetricPlot(
            N_("Head functions of the probe over training"),
            "head_functions_plot",
            N_("score"),
            smoothable=False,
            y_domain=(0.0, 1.0),
        )
        self.marker = pg.InfiniteLine(angle=90, pen=pg.mkPen("#ff7f0e", width=1.5))
        self.plot.plot.addItem(self.marker)
        self.function.currentIndexChanged.connect(self.function_chosen)
        row = QHBoxLayout()
        row.addWidget(self.function_label)
        row.addWidget(self.function, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.note)
        layout.addWidget(self.plot, 1)
        self.retranslate()

    def retranslate(self) -> None:
        self.function_label.setText(tr("Function"))
        for i in range(self.function.count()):
            self.function.setItemText(i, tr(FUNCTION_NAMES[self.function.itemData(i)]))
        self.plot.retranslate()

    def chosen(self) -> str | None:
        """The id of the function drawn."""
        return self.function.currentData()

    def choose(self, function_id: str) -> None:
        """Draw ``function_id`` (when it applies to the kind shown)."""
        index = self.function.findData(function_id)
        if index >= 0:
            self.function.setCurrentIndex(index)

    def clear(self) -> None:
        """No snapshots (a new run, or another probe sentence)."""
        self.plot.remove(1)
        self.note.hide()

    def _offer(self, kind: str) -> None:
        """The functions that apply to ``kind``; the one chosen stays when it applies."""
        ids = [f.id for f in functions_of(kind)]
        if [self.function.itemData(i) for i in range(self.function.count())] == ids:
            return
        chosen = self.chosen()
        self.function.blockSignals(True)
        self.function.clear()
        for function_id in ids:
            self.function.addItem(tr(FUNCTION_NAMES[function_id]), function_id)
        self.function.setCurrentIndex(ids.index(chosen) if chosen in ids else 0)
        self.function.blockSignals(False)

    def draw(self, snapshots: list[ProbeSnapshot], kind: str, layer: int) -> None:
        """Each head's score of the chosen function over ``snapshots``, for one kind and layer (0-based; clipped to
        the model's); a snapshot where the score is undefined (NaN) has no point."""
        self._offer(kind)
        function_id = self.chosen()
        scores = [s.functions.get(kind, {}).get(function_id) for s in snapshots] if function_id else []
        with_scores = [(s.step, a) for s, a in zip(snapshots, scores) if a is not None and a.size]
        self.plot.remove(1)
        if not with_scores:
            self.note.hide()
            return
        n_layers, n_heads = with_scores[-1][1].shape
        layer = min(layer, n_layers - 1)
        steps = np.array([step for step, _ in with_scores], dtype=float)
        values = np.array([a[layer] for _, a in with_scores], dtype=float)  # [snapshots, heads]
        for h in range(n_heads):
            finite = np.isfinite(values[:, h])
            self.plot.define(f"head{h}", f"{tr('head')} {h + 1}", colour_shift=h, symbol="o")
            if finite.any():
                self.plot.replace(1, f"head{h}", steps[finite], values[finite, h])
        self.plot.set_runs(1, {1})
        self.plot.redraw()
        undefined = not np.isfinite(values).any()
        self.note.setVisible(undefined)
        self.note.setText(tr(UNDEFINED.get(str(function_id), N_("Not defined for this probe."))) if undefined else "")

    def mark_step(self, step: int) -> None:
        """Mark the training step shown (−1: none)."""
        self.marker.setVisible(step >= 0)
        if step >= 0:
            self.marker.setValue(step)
