"""The router view: where a Mixture-of-Experts layer sends each token — the attention panel's Router tab.

Rows are the tokens of the input shown, columns the N experts; a cell is the router's probability
softmax(W_r x)_i of that expert for that token (each row sums to 1), and the k experts the token went to
are outlined. The numbers are the inspection's own, unchanged: one :class:`model.io.snapshots.RouterView` per
MoE layer in :attr:`model.io.snapshots.Inspection.routing`, as ``Session.inspect`` returns them.

Route: this page asks the engine nothing. The attention panel (explorer/panels/attention.py) hands it
the inspection it shows — an Inspect answer, a decoding view's, a fill-mask result's or a probe
snapshot's — with :meth:`RouterPage.show_inspection`.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from explorer.help import HelpBox
from explorer.i18n import N_, language, tr
from explorer.widgets import named
from explorer.widgets.heatmap import Heatmap
from model.families.registry import FAMILIES
from model.io.snapshots import Inspection, RouterView

ROUTER_TITLE = N_("Router probabilities: tokens × experts")
# what the caption says the layer does with the chosen experts: Switch (k = 1), GShard / Mixtral (k ≥ 2)
ROUTER_CAPTION_TOP1 = N_(
    "The router gives each token a probability for each expert (softmax over a row, which sums to 1) and "
    "sends it to the most probable, outlined; the layer passes that expert's output on, weighted by its "
    "probability (Switch Transformer), so the task itself teaches the router. Here k = 1 of N = {n} experts."
)
ROUTER_CAPTION_TOPK = N_(
    "The router gives each token a probability for each expert (softmax over a row, which sums to 1) and "
    "sends it to the k most probable, outlined; the layer adds their outputs, weighted by those "
    "probabilities renormalised to sum to 1 (GShard, Mixtral). Here k = {k} of N = {n} experts."
)


def sentences(*parts: str) -> str:
    """Sentences one after another: a space between them in English, none in Chinese."""
    return ("" if language.code == "zh" else " ").join(p for p in parts if p)


def expert_loads(view: RouterView) -> np.ndarray:
    """How many of the input's tokens went to each expert (``[N]``; sums to tokens × k)."""
    chosen = np.asarray(view.chosen, dtype=int)  # [T, k]
    return np.bincount(chosen.ravel(), minlength=view.probs.shape[1])


def chosen_cells(view: RouterView) -> np.ndarray:
    """The (token, expert) cells of the experts each token went to: ``[T · k, 2]``, token by token."""
    chosen = np.asarray(view.chosen, dtype=int)  # [T, k]
    rows = np.repeat(np.arange(chosen.shape[0]), chosen.shape[1])
    return np.stack([rows, chosen.ravel()], axis=1)


class RouterPage(QWidget):
    """One MoE layer's routing of the input shown: the probabilities as a heatmap, the chosen experts
    outlined, and a caption with k of N and this input's load per expert."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("router_page")
        self.routing: tuple[RouterView, ...] = ()
        self.single_stream = False  # one stack (GPT, BERT): its layers need no stack's name
        self._create()
        self._lay_out()
        self.layer.currentIndexChanged.connect(self._draw)
        self.retranslate()

    def _create(self) -> None:
        self.layer_label = QLabel()
        self.layer = named(QComboBox(), "router_layer_combo")
        self.layer.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.help = HelpBox("router", label=N_("What does the router do?"))
        self.heatmap = Heatmap("router_heatmap", ROUTER_TITLE, (0.0, 1.0), row_name=N_("token"), col_name=N_("expert"))
        self.caption = named(QLabel(), "router_caption")
        self.caption.setWordWrap(True)

    def _lay_out(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.layer_label)
        top.addWidget(self.layer)
        top.addStretch(1)
        top.addWidget(self.help)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.heatmap, 1)
        layout.addWidget(self.caption)

    def retranslate(self) -> None:
        self.layer_label.setText(tr("MoE layer"))
        self.help.retranslate()
        self.heatmap.retranslate()
        self._name_layers()
        self._draw()

    # -- input -------------------------------------------------------------------------------------
    def show_inspection(self, inspection: Inspection | None) -> None:
        """Show the routing of ``inspection`` (None: nothing shown), keeping the chosen layer where it has one."""
        routing = () if inspection is None else tuple(inspection.routing)
        self.single_stream = inspection is not None and FAMILIES[inspection.arch].single_stream
        keys = [(r.stack, r.layer) for r in routing]
        if keys != [(r.stack, r.layer) for r in self.routing]:
            was = self.shown()
            self.layer.blockSignals(True)
            self.routing = routing
            self._name_layers()
            if was is not None and (was.stack, was.layer) in keys:
                self.layer.setCurrentIndex(keys.index((was.stack, was.layer)))
            self.layer.blockSignals(False)
        self.routing = routing
        self._draw()

    def shown(self) -> RouterView | None:
        """The layer's routing shown now."""
        i = self.layer.currentIndex()
        return self.routing[i] if 0 <= i < len(self.routing) else None

    def _name_layers(self) -> None:
        current = max(0, self.layer.currentIndex())
        self.layer.blockSignals(True)
        self.layer.clear()
        for r in self.routing:
            self.layer.addItem(self._layer_name(r))
        self.layer.setCurrentIndex(min(current, len(self.routing) - 1))
        self.layer.blockSignals(False)

    def _layer_name(self, r: RouterView) -> str:
        if self.single_stream or len({v.stack for v in self.routing}) == 1:
            return tr("Layer {n}").format(n=r.layer + 1)
        stack = tr("Encoder") if r.stack == "encoder" else tr("Decoder")
        return tr("{stack}, layer {n}").format(stack=stack, n=r.layer + 1)

    # -- drawing -----------------------------------------------------------------------------------
    def _draw(self) -> None:
        view = self.shown()
        if view is None:
            self.heatmap.set_data(np.zeros((0, 0)), [], [])
            self.caption.setText(tr("Show a sentence: the router's choices for its tokens appear here."))
            return
        n = view.probs.shape[1]
        experts = [f"E{i + 1}" for i in range(n)]  # the hover names the column: expert 3 “E3”
        self.heatmap.set_data(view.probs, list(view.tokens), experts, levels=(0.0, 1.0))
        cells = chosen_cells(view)
        weights = np.asarray(view.weights).ravel()
        notes = {(int(r), int(c)): tr("chosen, weight {w}").format(w=f"{w:.3f}") for (r, c), w in zip(cells, weights)}
        self.heatmap.outline_cells(cells, notes)
        self.heatmap.set_title(f"{tr(ROUTER_TITLE)} — {self._layer_name(view)}")
        self.caption.setText(self._caption(view))

    @staticmethod
    def _caption(view: RouterView) -> str:
        n, k = view.probs.shape[1], view.chosen.shape[1]
        loads = expert_loads(view)
        per_expert = " · ".join(f"E{i + 1}: {int(c)}" for i, c in enumerate(loads))
        what = tr(ROUTER_CAPTION_TOP1 if k == 1 else ROUTER_CAPTION_TOPK).format(k=k, n=n)
        load = tr("Tokens each expert got from this input ({t} tokens × k = {total}): {loads}.").format(
            t=view.probs.shape[0], total=int(loads.sum()), loads=per_expert
        )
        idle = int((loads == 0).sum())
        none = tr("{n} expert(s) got none: they learn nothing from this input.").format(n=idle) if idle else ""
        return sentences(what, load, none)
