"""Attention panel: where each head looks — per head, all heads at once, over training, and spelled out.

The panel draws the map (one head, or every head as a grid) of the sentence the decoding panel shows,
of a source/target pair typed here, or of the probe sentence at a training step. Its other tabs
are parts of their own (explorer/panels/attention_parts.py): :class:`ProbeTimeline`, the probe
sentence's attention over training with its timeline and entropy plot, and :class:`QkExplainer`,
one head's softmax(q·kᵀ / √d_k) spelled out; for a Mixture-of-Experts model also the Router tab
(:class:`explorer.panels.router.RouterPage`), where each token of the same input was sent.

The kinds of attention follow the model's family (the spec of ``Inspection.arch``, its ``attention``): the
paper's three for an encoder–decoder, one causal self-attention for a decoder-only model (GPT, its maps in
``decoder_self``), one self-attention that looks both ways for an encoder-only model (BERT, in
``encoder``). A button named after the family opens what it changes from the paper's model.

Route: the panel sends through ``self.client`` (:class:`explorer.engine_client.EngineClient`):
``ask(Inspect)`` for a typed pair, ``ask(Explain)`` or ``ask(ExplainWorkedExample)`` for the
explainer, ``send(SetProbe)`` for the probe sentence. ``Engine._dispatch`` (explorer/worker.py) hands
each to its handler: ``_inspect`` calls ``Session.inspect`` (:class:`model.session.Session`),
``_explain`` calls ``Session.explain_attention``, ``_explain_worked_example`` returns
``model.session.notes_example()``, and ``_set_probe`` chooses the sentence the engine re-runs with
``Session.inspect`` while the model trains. The answers come back on the engine's typed signals that
:meth:`AttentionPanel.attach` connected: ``inspection_ready`` (:meth:`AttentionPanel._on_inspection_ready`),
``explained`` (:meth:`AttentionPanel._on_explained`) and ``probe_recorded``
(:meth:`AttentionPanel.on_probe`); of inspections and explanations only the answer to the newest
request is shown (``EngineClient.fresh``). The decoding panel's ``view_shown`` signal brings what it
shows (:meth:`AttentionPanel.on_decode`), its ``inspection_shown`` an encoder-only model's fill-mask
input (:meth:`AttentionPanel.on_inspection`). A map keeps the weights it was drawn with; the engine's
``status_changed`` tells the caption (:class:`explorer.panels.attention_caption.MapCaption`) when the model has
trained on, and its Update button asks the decoding panel (``DecodingPanel.redo``) or the engine (the pair's
``Inspect`` again) for the map with the weights of now.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QStackedWidget, QTabWidget, QVBoxLayout, QWidget

from explorer.answers import EngineStatus, Explained, InspectionReady, ProbeSnapshot, RunInfo
from explorer.commands import Command, Explain, ExplainWorkedExample, Inspect, SetProbe
from explorer.i18n import N_, tr
from explorer.panels.attention_ablation import HeadsOff
from explorer.panels.attention_caption import MapCaption, MapPlace, empty_hint, map_notes, rows_caption
from explorer.panels.attention_choices import AttentionChoices
from explorer.panels.attention_parts import ProbeTimeline, QkExplainer, head_title
from explorer.panels.attention_view import AttentionView
from explorer.panels.router import RouterPage
from explorer.widgets import named
from explorer.widgets.heatmap import Heatmap, HeatmapGrid
from explorer.widgets.token_strip import shown_piece
from model.families.registry import FAMILIES, FamilySpec
from model.io.snapshots import AttentionExplanation, DecodeView, Inspection

if TYPE_CHECKING:
    from explorer.engine_client import EngineClient
    from explorer.panels.decoding import DecodingPanel

# the tabs' names, short enough for the panel's width beside the decoding panel (what the explainer does: its tip)
TABS = (N_("Map"), N_("Attention over training"), N_("Q·K explainer"), N_("Router (experts)"), N_("Head importance"))
TAB_KEYS = ("map", "over_training", "explainer", "router", "importance")  # show_tab's keys, in the tabs' order
EXPLAINER_TIP = N_("Q·K explainer: one head, one query, step by step")


def maps_of(
    inspection: Inspection, kind: str, open_end: bool = False
) -> tuple[np.ndarray, list[str], list[str], np.ndarray | None]:
    """The [layers, heads, rows, cols] maps of one kind, with row and column labels and the cells the
    model masked (True = may not attend, as the heatmaps hatch them; None when nothing is masked).

    A decoder row is the position that has read one token and predicts the next,
    labelled "read → predicts"; with ``open_end`` (decoding still going) the last
    row's prediction is not chosen yet and shows as "?".
    """
    for kept, key, found in _LABELLED:  # a person scrolling through the heads of a 512-token text redraws it
        if kept is inspection and key == (kind, open_end):  # many times a second: its labels are the same each time
            return found
    found = _labelled_maps(inspection, kind, open_end)
    _LABELLED[:] = [(inspection, (kind, open_end), found)]
    return found


_LABELLED: list[tuple[Inspection, tuple[str, bool], tuple]] = []  # the last answer of maps_of (holding its inspection)


def _labelled_maps(
    inspection: Inspection, kind: str, open_end: bool
) -> tuple[np.ndarray, list[str], list[str], np.ndarray | None]:
    allowed = inspection.masks.get(kind)  # the engine's mask: True = may attend
    hidden = None if allowed is None or allowed.all() else ~allowed
    sources = [shown_piece(t) for t in inspection.src_tokens]  # a piece's space written as the chips write it
    if kind == "encoder":
        return inspection.encoder, sources, sources, hidden
    reads = [shown_piece(t) for t in inspection.tgt_tokens]
    outs = [shown_piece(t) for t in inspection.out_tokens]
    if open_end and outs:
        outs[-1] = "?"
    rows = [f"{read} → {predicts}" for read, predicts in zip(reads, outs)]
    if kind == "decoder_self":
        return inspection.decoder_self, rows, reads, hidden
    return inspection.cross, rows, sources, hidden


class AttentionPanel(QWidget):
    """One head's map, or all heads as a grid, of the chosen sentence; the probe sentence over
    training and the Q·K explainer as the other tabs."""

    snapshot_selected = Signal(int)  # training step of the probe snapshot shown (−1: none)
    map_drawn = Signal(str)  # a non-empty map was drawn; the source it came from

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("attention_panel")
        self.client: EngineClient | None = None  # set by attach; without it the panel asks nothing
        self.decoding: DecodingPanel | None = None  # the panel whose sentence "decoding" follows (attach)
        self.info: RunInfo | None = None
        self.weights_step: int | None = None  # the training step of the model's weights now (engine status)
        self.pair_asked: Inspect | None = None  # the newest pair this panel asked for (Update asks it again)
        self.inspections: dict[str, Inspection | None] = {"decoding": None, "pair": None}
        self.decode_id = -1
        self.decoding_open = False  # decoding still going: the last decoder row has no prediction yet
        self.decoded = 0  # tokens the decoding panel's focus has chosen (its last one at the current step)
        self.previous_sentence = False  # another sentence is typed in the decoding panel, not decoded yet
        self._entropy_stale = False  # the entropy plot is drawn when its tab is opened
        self._create_choices()
        self._create_views()
        self._connect()
        self._lay_out()
        self.retranslate()

    def _create_choices(self) -> None:
        """The rows that choose the map (their state: :meth:`view`); their widgets are the panel's too."""
        c = self.choices = AttentionChoices(self)
        self.source, self.kind, self.layer, self.head = c.source, c.kind, c.layer, c.head
        self.average, self.all_heads, self.stretch = c.average, c.all_heads, c.stretch
        self.pair_src, self.pair_tgt, self.pair_button = c.pair_src, c.pair_tgt, c.pair_button
        self.family_help, self.row_labels = c.family_help, c.row_labels

    @property
    def family(self) -> FamilySpec:
        """The family whose kinds of attention are offered (:meth:`_set_family`)."""
        return self.choices.family

    def _create_views(self) -> None:
        self.heatmap = Heatmap("attention_heatmap", zoomable=True)  # a long text's map is read zoomed
        self.grid = HeatmapGrid("attention_grid")
        self.heads_off = HeadsOff(self.grid, self.all_heads)  # heads switched off, and the Head importance tab
        self.stack = QStackedWidget()
        self.stack.addWidget(self.heatmap)
        self.stack.addWidget(self.grid)
        self.map_caption = MapCaption()
        self.caption, self.update_button = self.map_caption.label, self.map_caption.update_button
        self.over_training = ProbeTimeline()
        self.explainer = QkExplainer()
        self.router = RouterPage()  # a Mixture-of-Experts model's routing (its tab is hidden for dense models)
        self.tabs = named(QTabWidget(), "attention_tabs")

    def _connect(self) -> None:
        self.choices.changed.connect(self.refresh)
        self.choices.pair_asked.connect(self._on_pair)
        self.grid.cell_clicked.connect(self._on_grid_click)
        self.map_caption.update_asked.connect(self._on_update)
        self.over_training.absorbed.connect(self._on_absorbed)
        self.over_training.scrubbed.connect(self._on_scrubbed)
        self.over_training.probe_chosen.connect(self._on_probe_chosen)
        self.explainer.head_asked.connect(self._on_explain)
        self.explainer.example_asked.connect(self.explain_worked_example)
        self.tabs.currentChanged.connect(self._on_tab)

    def _lay_out(self) -> None:
        # The map, the probe's history and the explainer as tabs, each with the panel's full height;
        # the timeline stays above them because it scrubs every view.
        map_page = QWidget()
        map_layout = QVBoxLayout(map_page)
        map_layout.setContentsMargins(0, 0, 0, 0)
        map_layout.addWidget(self.heads_off)
        map_layout.addWidget(self.stack, 1)
        map_layout.addWidget(self.map_caption)
        for page in (map_page, self.over_training, self.explainer, self.router, self.heads_off.importance):
            self.tabs.addTab(page, "")
        self.tabs.setTabVisible(self.tabs.indexOf(self.router), False)
        self.controls = QWidget()  # what chooses the map: presenter mode gives its height to the views
        controls = QVBoxLayout(self.controls)
        controls.setContentsMargins(0, 0, 0, 0)
        self.choices.lay_out(controls)
        self.pair_row = self.choices.pair_row
        controls.addLayout(self.over_training.timeline_bar())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.controls)
        layout.addWidget(self.tabs, 1)

    def set_presenting(self, on: bool) -> None:
        """Presenter mode: the rows that choose what is shown leave their height to the map and the explainer (the
        map's title names its kind, layer and head; a scene sets them)."""
        self.controls.setVisible(not on)
        self.heads_off.set_presenting(on)

    def retranslate(self) -> None:
        self.choices.retranslate()
        for page, text in enumerate(TABS):
            self.tabs.setTabText(page, tr(text))
        self.tabs.setTabToolTip(self.tabs.indexOf(self.explainer), tr(EXPLAINER_TIP))
        for part in (self.heatmap, self.grid, self.map_caption, self.over_training, self.explainer, self.router):
            part.retranslate()
        self.heads_off.retranslate()
        self.refresh()

    def _set_family(self, family: FamilySpec) -> None:
        """Offer the kinds of attention of ``family`` (and name the pair, probe and explainer for it); the kind
        shown stays when the family has it."""
        if family is self.family:
            return
        self.choices.set_family(family)
        self.explainer.family = family
        self.over_training.set_family(family)
        self.retranslate()

    # -- what the map shows, as a value (set by presenter mode, scenes, the model map, first launch) ----------
    def view(self) -> AttentionView:
        """The source, kind, layer, head and drawing of the map."""
        return self.choices.view()

    def show_view(self, view: AttentionView) -> None:
        """Show the map ``view`` describes (drawn once)."""
        self.choices.show_view(view)

    # -- the route to the engine (see explorer.engine_client) ----------------------------------------
    def attach(self, client: EngineClient, decoding: DecodingPanel) -> None:
        """Send this panel's requests through ``client`` and hear their answers; follow what the
        decoding panel shows."""
        self.client, self.decoding = client, decoding
        client.engine.inspection_ready.connect(self._on_inspection_ready)
        client.engine.explained.connect(self._on_explained)
        client.engine.probe_recorded.connect(self.on_probe)
        client.engine.status_changed.connect(self._on_status)
        decoding.view_shown.connect(self.on_decode)
        decoding.inspection_shown.connect(self.on_inspection)
        decoding.sentence_edited.connect(self.on_sentence_edited)
        self.heads_off.attach(client, decoding)

    def follow_cross_attention(self, layer: int) -> None:
        """Show the decoder's cross-attention of ``layer`` (1-based), averaged over heads, as decoding goes (a
        model without cross-attention: its own kind of attention)."""
        self.show_view(replace(self.view(), kind="cross", layer=layer, average=True))

    def _ask(self, command: Command) -> None:
        if self.client is not None:
            self.client.ask(command)

    def _ask_pair(self, command: Inspect) -> None:
        """Ask for a pair's maps; only the answer to this request is shown as the pair (the fill-mask panel asks
        for inspections too: its answers come as its sentence's, through ``on_inspection``)."""
        self.pair_asked = command
        self._ask(command)

    def _on_probe_chosen(self, command: SetProbe) -> None:
        if self.client is not None:
            self.client.send(command)

    def _on_inspection_ready(self, reply: InspectionReady) -> None:
        asked = self.pair_asked is not None and reply.request_id == self.pair_asked.request_id
        if asked and self.client is not None and self.client.fresh(Inspect, reply.request_id):
            self.inspections["pair"] = reply.inspection
            self.source.setCurrentIndex(self.source.findData("pair"))
            self.refresh()

    def _on_status(self, status: EngineStatus) -> None:
        """The weights' training step: a map drawn with older ones says so (the caption only; nothing is redrawn)."""
        if self.info is not None and status.run_id != self.info.run_id:
            return
        if status.step != self.weights_step:
            self.weights_step = status.step
            inspection, mode = self.current()
            if inspection is not None and mode != "probe":
                self._write_caption(inspection, self.kind.currentData(), mode)

    def _on_update(self) -> None:
        """Update: the sentence shown, made again with the current weights (by the panel that asked for it)."""
        mode = self.source.currentData()
        if mode == "decoding" and self.decoding is not None:
            self.decoding.redo()
        elif mode == "pair" and self.pair_asked is not None:
            self._ask_pair(Inspect(source=self.pair_asked.source, target=self.pair_asked.target))

    def _on_explained(self, reply: Explained) -> None:
        fresh = self.client is not None and (
            self.client.fresh(Explain, reply.request_id) and self.client.fresh(ExplainWorkedExample, reply.request_id)
        )
        if fresh:
            self.on_explanation(reply.explanation)

    # -- inputs ------------------------------------------------------------------------------------
    def on_run(self, info: RunInfo) -> None:
        new_run = self.info is None or info.run_id != self.info.run_id
        self.info = info
        self.weights_step = info.weights_step
        m = info.model_config
        if new_run:  # nothing of the last model stays: its maps, snapshots and explanation go
            self.inspections = {"decoding": None, "pair": None}
            self.pair_asked = None
            self.decoding_open, self.decoded, self.previous_sentence = False, 0, False
            self.over_training.reset(info.run_id)
            self.explainer.clear()
        self._set_family(m.family)  # after the last model's maps have gone: they would bring back its family
        self.tabs.setTabVisible(self.tabs.indexOf(self.router), m.moe)
        self.choices.set_model(m.n_encoder_layers, m.n_decoder_layers, m.n_heads)
        self.heads_off.on_run(info)
        self.refresh()

    def on_decode(self, view: DecodeView) -> None:
        self.inspections["decoding"] = view.inspection
        self.decoding_open = not view.at_end
        self.decoded = len(view.focus_tokens)
        if view.decode_id != self.decode_id:  # a new sentence: follow it
            self.decode_id = view.decode_id
            self.source.setCurrentIndex(self.source.findData("decoding"))
        self.refresh()

    def on_inspection(self, inspection: Inspection) -> None:
        """The decoding panel's input shown without a decode view (an encoder-only model's fill-mask sentence)."""
        self.inspections["decoding"] = inspection
        self.decoding_open, self.decoded = False, 0
        self.source.setCurrentIndex(self.source.findData("decoding"))
        self.refresh()

    def on_sentence_edited(self, previous: bool) -> None:
        """The decoding panel's sentence was edited: what it shows (and so this map) is the previous sentence's
        until the new one is decoded (``previous``)."""
        if previous != self.previous_sentence:
            self.previous_sentence = previous
            inspection, mode = self.current()
            if inspection is not None and mode == "decoding":
                self._write_caption(inspection, self.kind.currentData(), mode)

    def on_probe(self, snapshot: ProbeSnapshot) -> None:
        """A probe snapshot; the timeline takes them in a few times a second (:meth:`_on_absorbed`)."""
        self.over_training.on_probe(snapshot)

    def _on_absorbed(self, follow: bool) -> None:
        """Probe snapshots were taken in: the probe becomes what is shown unless another sentence is;
        with ``follow`` the newest is drawn (a person scrubbing back keeps their view)."""
        showing_probe = self.source.currentData() == "probe"
        if not (showing_probe or (self.inspections["decoding"] is None and self.inspections["pair"] is None)):
            self._update_entropy()
            return
        if not showing_probe:
            self._show_probe_quietly()
        if follow:
            self.refresh()
        else:
            self._update_entropy()

    def _on_scrubbed(self) -> None:
        self._show_probe_quietly()
        self.refresh()

    def _show_probe_quietly(self) -> None:
        """Switch the source to the probe sentence without drawing (the caller draws)."""
        self.source.blockSignals(True)
        self.source.setCurrentIndex(self.source.findData("probe"))
        self.source.blockSignals(False)

    def on_explanation(self, explanation: AttentionExplanation) -> None:
        self.tabs.setCurrentWidget(self.explainer)
        self.explainer.show_explanation(explanation)

    # -- what is shown -----------------------------------------------------------------------------
    def current(self) -> tuple[Inspection | None, str]:
        mode: str = self.source.currentData()
        if mode == "probe":
            snapshot = self.over_training.current()
            return (None if snapshot is None else snapshot.inspection), mode
        return self.inspections.get(mode), mode

    def shown_matrix(self) -> np.ndarray:
        """The weights the single heatmap shows now."""
        return self.heatmap.values

    def refresh(self) -> None:
        self.pair_row.setVisible(self.source.currentData() == "pair")
        inspection, mode = self.current()
        if inspection is not None and FAMILIES[inspection.arch] is not self.family:  # another family's maps
            self._set_family(FAMILIES[inspection.arch])  # draws them, with its kinds
            return
        self._show_routing(inspection)
        kind: str = self.kind.currentData()
        self.choices.fit_layers()
        self.choices.enable(self.tabs.currentWidget() is not self.router)
        if inspection is None:
            self.heatmap.set_data(np.zeros((0, 0)), [], [])
            self.grid.set_data(np.zeros((0, 0, 0, 0)))
            self.map_caption.show_hint(empty_hint(mode, self.family))
            self.snapshot_selected.emit(-1)
            self.over_training.mark_step(-1)
            return
        self._write_caption(inspection, kind, mode)  # first: the map is laid out with its height, then painted
        self._draw(inspection, kind, mode)
        self._update_entropy()
        self.map_drawn.emit(mode)
        snapshot = self.over_training.current() if mode == "probe" else None
        step = -1 if snapshot is None else snapshot.step
        self.snapshot_selected.emit(step)
        self.over_training.mark_step(step)

    def _draw(self, inspection: Inspection, kind: str, mode: str) -> None:
        """The chosen head (or the average of the heads) of one layer, or every map as a grid."""
        maps, rows, cols, mask = maps_of(inspection, kind, open_end=mode == "decoding" and self.decoding_open)
        layer, head = self.layer.value() - 1, self.head.value() - 1
        if self.all_heads.isChecked():  # every head, whatever "Average over heads" says: the columns are heads
            self.grid.set_data(maps, mask)
            self.heads_off.mark(kind)
            self.stack.setCurrentWidget(self.grid)
            return
        # the row that predicted the token chosen at the decoding panel's current step: "… → <that token>"
        # (while decoding goes on, the row below it, "… → ?", reads that token and predicts one not chosen yet);
        # a decoder-only model's rows begin with the prompt's, before the first token written
        prompt = max(0, len(inspection.tgt_tokens) - 1 - len(inspection.target_ids))
        highlight = prompt + self.decoded - 1 if mode == "decoding" and kind != "encoder" and self.decoded else None
        matrix = maps[layer].mean(axis=0) if self.average.isChecked() else maps[layer, head]
        top = float(matrix.max()) if self.stretch.isChecked() and matrix.size else 1.0
        self.heatmap.set_title(head_title(kind, layer, None if self.average.isChecked() else head, self.family))
        self.heatmap.set_data(matrix, rows, cols, mask, highlight, levels=(0.0, max(top, 1e-6)))
        self.stack.setCurrentWidget(self.heatmap)

    def _show_routing(self, inspection: Inspection | None) -> None:
        """The Router tab, for a model with experts: the routing of the input shown."""
        moe = (inspection is not None and bool(inspection.routing)) or (
            self.info is not None and self.info.model_config.moe
        )
        router = self.tabs.indexOf(self.router)
        if self.tabs.isTabVisible(router) != moe:  # shown or hidden again, the tabs re-lay out the window
            self.tabs.setTabVisible(router, moe)
        if moe:
            self.router.show_inspection(inspection)

    def _write_caption(self, inspection: Inspection, kind: str, mode: str) -> None:
        """What the rows are, and which sentence and weights drew the map: a map of the decoding panel's or of a
        pair, drawn with weights older than the model's now, says so and offers Update."""
        place = MapPlace(self.decoding_open, self.decoded, self.previous_sentence)
        notes = map_notes(kind, mode, self.family, place, inspection.teacher_forced)
        now = None if mode == "probe" else self.weights_step  # a snapshot is of its own step, by design
        self.map_caption.show_caption(rows_caption(kind, self.family), notes, inspection.step, now)

    def _on_grid_click(self, layer: int, head: int) -> None:
        """A map of the grid shown alone: that layer, and that head unless the heads are averaged (or heads off)."""
        if self.heads_off.take_click(self.kind.currentData(), layer, head):
            return
        view = self.view()
        head_shown = view.head if view.average else head + 1
        self.show_view(replace(view, layer=layer + 1, head=head_shown, all_heads=False))

    def _on_pair(self) -> None:
        self._ask_pair(Inspect(source=self.pair_src.text(), target=self.pair_tgt.text() or None))

    def show_tab(self, key: str) -> None:
        """Raise the map (``"map"``), the attention over training, the Q·K explainer (``"explainer"``), the
        router (``"router"``, a model with experts) or the head importance (``"importance"``)."""
        self.tabs.setCurrentIndex(TAB_KEYS.index(key))

    def _on_tab(self, _index: int) -> None:
        self.choices.enable(self.tabs.currentWidget() is not self.router)  # the Router tab has its own layer choice
        if self._entropy_stale:
            self._update_entropy()

    def _update_entropy(self) -> None:
        if not self.over_training.snapshots or self.info is None:
            return
        if self.tabs.currentWidget() is not self.over_training:
            self._entropy_stale = True  # drawn when its tab is opened
            return
        self._entropy_stale = False
        self.over_training.draw_entropy(self.kind.currentData(), self.layer.value() - 1)

    # -- the explainer -----------------------------------------------------------------------------
    def _on_explain(self) -> None:
        """Explain the head shown (the layer's first head when the heads are averaged)."""
        inspection, mode = self.current()
        if inspection is None:
            self.explainer.show_hint(empty_hint(mode, self.family))
            return
        layer, head = self.layer.value() - 1, self.head.value() - 1
        self._ask(Explain(inspection.source, tuple(inspection.target_ids), self.kind.currentData(), layer, head))

    def explain_head_shown(self) -> None:
        """The head shown, explained from its first query (presenter mode's Q·K explainer view)."""
        self.explainer.explain_current_head()

    def step_explainer(self, by: int) -> None:
        """The explainer's next (``by`` = 1) or previous (−1) query; stepping on with nothing explained yet explains
        the head shown."""
        if by > 0 and self.explainer.explanation is None:
            self.explainer.explain_current_head()
        else:
            self.explainer.move_query(by)

    def explain_worked_example(self) -> None:
        self._ask(ExplainWorkedExample())

    def export_explanation(self, path: str) -> None:
        """The explainer as a picture, or every number of it (all queries) as CSV."""
        self.explainer.export(path)
