"""Attention panel: where each head looks — per head, all heads at once, over training, and spelled out."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSlider,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.commands import Command, Explain, ExplainWorkedExample, Inspect, SetProbe
from explorer.i18n import N_, tr
from explorer.widgets.export import export_button, render_widget, write_rows
from explorer.widgets.heatmap import Heatmap, HeatmapGrid
from explorer.widgets.metric_plot import MetricPlot
from explorer.worker import Explained, InspectionReady, ProbeSnapshot, RunInfo
from model.snapshots import AttentionExplanation, DecodeView, Inspection

if TYPE_CHECKING:
    from explorer.engine_client import EngineClient
    from explorer.panels.decoding import DecodingPanel

KINDS = (
    ("encoder", N_("Encoder self-attention")),
    ("decoder_self", N_("Decoder self-attention (masked)")),
    ("cross", N_("Cross-attention (decoder → encoder)")),
)
WORKED_EXAMPLE = N_("Worked example: Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2")
SOURCES = (
    ("decoding", N_("Following the decoding panel")),
    ("pair", N_("A source/target pair (teacher forcing)")),
    ("probe", N_("The probe sentence over training")),
)


def head_title(kind: str, layer: int, head: int | None) -> str:
    """“Cross-attention (decoder → encoder) — layer 2, head 4” (0-based in; ``head`` None: the average)."""
    name = tr(dict(KINDS)[kind])
    if head is None:
        return tr("{kind} — layer {layer}, average of all heads").format(kind=name, layer=layer + 1)
    return tr("{kind} — layer {layer}, head {head}").format(kind=name, layer=layer + 1, head=head + 1)


def maps_of(
    inspection: Inspection, kind: str, open_end: bool = False
) -> tuple[np.ndarray, list[str], list[str], np.ndarray | None]:
    """The [layers, heads, rows, cols] maps of one kind, with row and column labels and the cells the
    model masked (True = may not attend, as the heatmaps hatch them; None when nothing is masked).

    A decoder row is the position that has read one token and predicts the next,
    labelled "read → predicts"; with ``open_end`` (decoding still going) the last
    row's prediction is not chosen yet and shows as "?".
    """
    allowed = inspection.masks.get(kind)  # the engine's mask: True = may attend
    hidden = None if allowed is None or allowed.all() else ~allowed
    if kind == "encoder":
        return inspection.encoder, inspection.src_tokens, inspection.src_tokens, hidden
    outs = list(inspection.out_tokens)
    if open_end and outs:
        outs[-1] = "?"
    rows = [f"{read} → {predicts}" for read, predicts in zip(inspection.tgt_tokens, outs)]
    if kind == "decoder_self":
        return inspection.decoder_self, rows, inspection.tgt_tokens, hidden
    return inspection.cross, rows, inspection.src_tokens, hidden


ABSORB_MS = 250  # probe snapshots are taken into the timeline, entropy plot and map at most this often


class AttentionPanel(QWidget):
    MAX_SNAPSHOTS = 400  # attention-over-training snapshots kept (thinned evenly beyond that)

    snapshot_selected = Signal(int)  # training step of the probe snapshot shown (−1: none)
    map_drawn = Signal(str)  # a non-empty map was drawn; the source it came from

    def __init__(self, parent=None):
        super().__init__(parent)
        self.client: EngineClient | None = None  # set by attach; without it the panel asks nothing
        self.setObjectName("attention_panel")
        self.info: RunInfo | None = None
        self.inspections: dict[str, Inspection | None] = {"decoding": None, "pair": None}
        self.decode_id = -1
        self.decoding_open = False  # decoding still going: the last decoder row has no prediction yet
        self.snapshots: list[ProbeSnapshot] = []
        self._incoming: list[ProbeSnapshot] = []  # arrived since the last absorb
        self._absorb_timer = QTimer(self, singleShot=True, interval=ABSORB_MS)
        self._absorb_timer.timeout.connect(self._absorb_snapshots)
        self.explanation: AttentionExplanation | None = None

        self.source = QComboBox(objectName="attention_source_combo")
        for key, _ in SOURCES:
            self.source.addItem("", key)
        self.kind = QComboBox(objectName="attention_kind_combo")
        for key, _ in KINDS:
            self.kind.addItem("", key)
        self.layer = QSpinBox(objectName="attention_layer_spin")
        self.head = QSpinBox(objectName="attention_head_spin")
        self.layer.setRange(1, 1)
        self.head.setRange(1, 1)
        self.average = QCheckBox(objectName="attention_average_check")
        self.all_heads = QCheckBox(objectName="attention_all_heads_check")
        self.stretch = QCheckBox(objectName="attention_stretch_check")
        for w in (self.source, self.kind):
            w.currentIndexChanged.connect(self.refresh)
        for w in (self.layer, self.head):
            w.valueChanged.connect(self.refresh)
        for w in (self.average, self.all_heads, self.stretch):
            w.toggled.connect(self.refresh)

        self.pair_src = QLineEdit(objectName="attention_src_input")
        self.pair_tgt = QLineEdit(objectName="attention_tgt_input")
        self.pair_button = QPushButton(objectName="attention_show_button")
        self.pair_button.clicked.connect(self._on_pair)
        self.pair_src.returnPressed.connect(self._on_pair)
        self.pair_tgt.returnPressed.connect(self._on_pair)

        self.heatmap = Heatmap("attention_heatmap")
        self.grid = HeatmapGrid("attention_grid")
        self.grid.cell_clicked.connect(self._on_grid_click)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.heatmap)
        self.stack.addWidget(self.grid)
        self.caption = QLabel(objectName="attention_caption")
        self.caption.setWordWrap(True)

        self.timeline = QSlider(Qt.Horizontal, objectName="attention_timeline_slider")
        self.timeline.setRange(0, 0)
        self.timeline.valueChanged.connect(self._on_timeline)
        self.timeline_label = QLabel(objectName="attention_timeline_label")
        self.probe_src = QLineEdit(objectName="attention_probe_input")
        self.probe_tgt = QLineEdit(objectName="attention_probe_target")
        self.probe_every = QSpinBox(objectName="attention_probe_every")
        self.probe_every.setRange(0, 100000)
        self.probe_every.setValue(50)
        self.probe_button = QPushButton(objectName="attention_probe_button")
        self.probe_button.clicked.connect(self._on_probe)
        self.probe_every.valueChanged.connect(self._on_probe)
        self.entropy = MetricPlot(
            N_("Attention entropy of the probe over training"), "entropy_plot", N_("nats"), smoothable=False
        )
        self.entropy_marker = pg.InfiniteLine(angle=90, pen=pg.mkPen("#ff7f0e", width=1.5))
        self.entropy.plot.addItem(self.entropy_marker)

        self.query = QComboBox(objectName="explain_query_combo")
        self.query.currentIndexChanged.connect(self._show_explanation)
        self.explain_button = QPushButton(objectName="explain_button")
        self.explain_button.clicked.connect(self._on_explain)
        self.notes_button = QPushButton(objectName="explain_notes_button")
        self.notes_button.clicked.connect(self.explain_worked_example)
        self.explain_title = QLabel(objectName="explain_title")
        self.explain_title.setWordWrap(True)
        self.explain_note = QLabel(objectName="explain_note")  # the worked example: how to check printed copies
        self.explain_note.setWordWrap(True)
        self.explain_note.hide()
        self.vectors = QTableWidget(objectName="explain_vectors")
        self.per_key = QTableWidget(objectName="explain_per_key")
        for table in (self.vectors, self.per_key):
            table.setEditTriggers(QTableWidget.NoEditTriggers)
            table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)

        # layout
        self.row_labels: dict[str, QLabel] = {k: QLabel() for k in ("show", "kind", "layer", "head", "src", "tgt",
                                                                     "probe", "every", "query")}  # fmt: skip
        for combo in (self.source, self.kind):
            combo.setSizeAdjustPolicy(QComboBox.AdjustToContents)
            combo.setMinimumWidth(200)
        show_row = QHBoxLayout()
        show_row.addWidget(self.row_labels["show"])
        show_row.addWidget(self.source)
        show_row.addWidget(self.row_labels["kind"])
        show_row.addWidget(self.kind)
        show_row.addStretch(1)
        pick = QHBoxLayout()
        for key, w in (("layer", self.layer), ("head", self.head)):
            pick.addWidget(self.row_labels[key])
            pick.addWidget(w)
        for w in (self.average, self.all_heads, self.stretch):
            pick.addWidget(w)
        pick.addStretch(1)
        pair = QHBoxLayout()
        for key, w in (("src", self.pair_src), ("tgt", self.pair_tgt)):
            pair.addWidget(self.row_labels[key])
            pair.addWidget(w, 1)
        pair.addWidget(self.pair_button)
        self.pair_row = QWidget()
        self.pair_row.setLayout(pair)
        probe = QHBoxLayout()
        for key, w in (("probe", self.probe_src), ("tgt", self.probe_tgt), ("every", self.probe_every)):
            label = self.row_labels[key] if key != "tgt" else QLabel("→")
            probe.addWidget(label)
            probe.addWidget(w, 1 if key != "every" else 0)
        probe.addWidget(self.probe_button)
        time_row = QHBoxLayout()
        time_row.addWidget(self.timeline, 1)
        time_row.addWidget(self.timeline_label)
        self.over_training = QWidget()
        ot = QVBoxLayout(self.over_training)
        ot.addLayout(probe)
        ot.addWidget(self.entropy, 1)
        self.explainer = QWidget()
        ex = QVBoxLayout(self.explainer)
        ex_top = QHBoxLayout()
        ex_top.addWidget(self.row_labels["query"])
        ex_top.addWidget(self.query, 1)
        ex_top.addWidget(self.explain_button)
        ex_top.addWidget(self.notes_button)
        ex_top.addWidget(export_button(self, "qk_explainer", self.export_explanation, ("PNG", "SVG", "CSV")))
        ex.addLayout(ex_top)
        ex.addWidget(self.explain_title)
        ex.addWidget(self.explain_note)
        tables = QSplitter(Qt.Horizontal)
        tables.addWidget(self.per_key)
        tables.addWidget(self.vectors)
        ex.addWidget(tables, 1)

        # The map, the probe's history and the explainer as tabs, each with the panel's full height;
        # the timeline stays above them because it scrubs every view.
        main = QWidget()
        main_layout = QVBoxLayout(main)
        main_layout.setContentsMargins(0, 0, 0, 0)
        main_layout.addWidget(self.stack, 1)
        main_layout.addWidget(self.caption)
        self.lower = QTabWidget(objectName="attention_tabs")
        self.lower.addTab(main, "")
        self.lower.addTab(self.over_training, "")
        self.lower.addTab(self.explainer, "")
        self._entropy_stale = False
        self.lower.currentChanged.connect(lambda _: self._entropy_stale and self._update_entropy())
        self.timeline_title = QLabel()
        time_row.insertWidget(0, self.timeline_title)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(show_row)
        layout.addLayout(pick)
        layout.addWidget(self.pair_row)
        layout.addLayout(time_row)
        layout.addWidget(self.lower, 1)
        self.retranslate()

    def retranslate(self) -> None:
        for i, (_, text) in enumerate(SOURCES):
            self.source.setItemText(i, tr(text))
        for i, (_, text) in enumerate(KINDS):
            self.kind.setItemText(i, tr(text))
        names = {
            "show": N_("Show"), "kind": N_("Kind"), "layer": N_("Layer"), "head": N_("Head"), "src": N_("Source"),
            "tgt": N_("Target"), "probe": N_("Probe sentence"), "every": N_("every N steps"),
            "query": N_("Query token"),
        }  # fmt: skip
        for key, label in self.row_labels.items():
            label.setText(tr(names[key]))
        self.average.setText(tr("Average over heads"))
        self.all_heads.setText(tr("All heads"))
        self.stretch.setText(tr("Stretch colours"))
        self.stretch.setToolTip(tr("Colour scale from 0 to the largest weight shown, instead of 0 to 1"))
        self.pair_tgt.setPlaceholderText(tr("empty: the model's own translation"))
        self.probe_tgt.setPlaceholderText(tr("target (empty: the model's own translation)"))
        self.pair_button.setText(tr("Show"))
        self.probe_button.setText(tr("Set probe"))
        self.lower.setTabText(0, tr("Map"))
        self.lower.setTabText(1, tr("Attention over training"))
        self.lower.setTabText(2, tr("Q·K explainer: one head, one query, step by step"))
        self.timeline_title.setText(tr("Training snapshots"))
        self.explain_button.setText(tr("Explain this head"))
        self.notes_button.setText(tr("Worked example (Q = K = …)"))
        self.notes_button.setToolTip(tr(WORKED_EXAMPLE))
        self.heatmap.retranslate()
        self.grid.retranslate()
        self.entropy.retranslate()
        self.refresh()
        self._show_explanation()

    # -- inputs from the engine -------------------------------------------------------------------
    # -- the route to the engine (see explorer.engine_client) ----------------------------------------
    def attach(self, client: EngineClient, decoding: DecodingPanel) -> None:
        """Send this panel's requests through ``client`` and hear their answers; follow what the
        decoding panel shows."""
        self.client = client
        client.engine.inspection_ready.connect(self._on_inspection_ready)
        client.engine.explained.connect(self._on_explained)
        client.engine.probe_recorded.connect(self.on_probe)
        decoding.view_shown.connect(self.on_decode)

    def follow_cross_attention(self, layer: int) -> None:
        """Show the decoder's cross-attention of ``layer`` (1-based), averaged over heads, as decoding goes."""
        self.kind.setCurrentIndex(self.kind.findData("cross"))
        self.layer.setValue(layer)
        self.average.setChecked(True)

    def _ask(self, command: Command) -> None:
        if self.client is not None:
            self.client.ask(command)

    def _on_inspection_ready(self, reply: InspectionReady) -> None:
        if self.client is not None and self.client.fresh(Inspect, reply.request_id):
            self.on_inspection(reply.inspection)

    def _on_explained(self, reply: Explained) -> None:
        fresh = self.client is not None and (
            self.client.fresh(Explain, reply.request_id) and self.client.fresh(ExplainWorkedExample, reply.request_id)
        )
        if fresh:
            self.on_explanation(reply.explanation)

    def on_run(self, info: RunInfo) -> None:
        new_run = self.info is None or info.run_id != self.info.run_id
        self.info = info
        m = info.model_config
        self.layer.setMaximum(max(m.n_encoder_layers, m.n_decoder_layers))
        self.head.setMaximum(m.n_heads)
        if new_run:
            self.snapshots = []
            self.inspections = {"decoding": None, "pair": None}
            self.entropy.remove(1)
            self.timeline.setRange(0, 0)
        self.refresh()

    def on_decode(self, view: DecodeView) -> None:
        self.inspections["decoding"] = view.inspection
        self.decoding_open = not view.at_end
        if view.decode_id != self.decode_id:  # a new sentence: follow it
            self.decode_id = view.decode_id
            self.source.setCurrentIndex(self.source.findData("decoding"))
        self.refresh()

    def on_inspection(self, inspection: Inspection) -> None:
        self.inspections["pair"] = inspection
        self.source.setCurrentIndex(self.source.findData("pair"))
        self.refresh()

    def on_probe(self, snapshot: ProbeSnapshot) -> None:
        """Snapshots are taken in a few times a second, however fast they come: a small model
        training hundreds of steps a second sends several each second."""
        self._incoming.append(snapshot)
        if not self._absorb_timer.isActive():
            self._absorb_timer.start()

    def _absorb_snapshots(self) -> None:
        incoming, self._incoming = self._incoming, []
        if self.info is not None:
            incoming = [s for s in incoming if s.run_id == self.info.run_id]
        if not incoming:
            return
        at_end = self.timeline.value() == self.timeline.maximum()
        for snapshot in incoming:
            last = self.snapshots[-1] if self.snapshots else None
            if last is not None and (last.source, last.target) != (snapshot.source, snapshot.target):
                self.snapshots = []  # another probe sentence: a new timeline, not a mixture
                self.entropy.remove(1)
            self.snapshots.append(snapshot)
            if len(self.snapshots) > self.MAX_SNAPSHOTS:  # a long run: keep every other one, evenly spread
                self.snapshots = self.snapshots[:-1:2] + self.snapshots[-1:]
                at_end = True
        snapshot = self.snapshots[-1]
        self.timeline.blockSignals(True)
        self.timeline.setRange(0, len(self.snapshots) - 1)
        if at_end or len(self.snapshots) == 1:
            self.timeline.setValue(len(self.snapshots) - 1)
        self.timeline.blockSignals(False)
        if not self.probe_src.text():
            self.probe_src.setPlaceholderText(snapshot.source)
        self._update_timeline_label()
        showing_probe = self.source.currentData() == "probe"
        if not (showing_probe or (self.inspections["decoding"] is None and self.inspections["pair"] is None)):
            self._update_entropy()
            return
        if not showing_probe:
            self.source.blockSignals(True)
            self.source.setCurrentIndex(self.source.findData("probe"))
            self.source.blockSignals(False)
        if at_end or len(self.snapshots) == 1:
            self.refresh()  # follows the newest snapshot (a person scrubbing back keeps their view)
        else:
            self._update_entropy()

    def on_explanation(self, explanation: AttentionExplanation) -> None:
        self.explanation = explanation
        self.lower.setCurrentWidget(self.explainer)
        self.query.blockSignals(True)
        self.query.clear()
        self.query.addItems([f"{i + 1}: {t}" for i, t in enumerate(explanation.query_tokens)])
        self.query.setCurrentIndex(0 if explanation.kind == "example" else len(explanation.query_tokens) - 1)
        self.query.blockSignals(False)
        self._show_explanation()

    # -- what is shown -----------------------------------------------------------------------------
    def current(self) -> tuple[Inspection | None, str]:
        mode = self.source.currentData()
        if mode == "probe":
            if not self.snapshots:
                return None, mode
            return self.snapshots[self.timeline.value()].inspection, mode
        return self.inspections.get(mode), mode

    def shown_matrix(self) -> np.ndarray:
        """The weights the single heatmap shows now."""
        return self.heatmap.values

    def refresh(self) -> None:
        mode = self.source.currentData()
        self.pair_row.setVisible(mode == "pair")
        inspection, mode = self.current()
        kind = self.kind.currentData()
        if self.info is not None:
            m = self.info.model_config
            self.layer.setMaximum(m.n_encoder_layers if kind == "encoder" else m.n_decoder_layers)
        self.head.setEnabled(not self.average.isChecked() and not self.all_heads.isChecked())
        if inspection is None:
            self.heatmap.set_data(np.zeros((0, 0)), [], [])
            self.grid.set_data(np.zeros((0, 0, 0, 0)))
            self.caption.setText(self._empty_hint(mode))
            if mode != "probe":
                self.snapshot_selected.emit(-1)
            return
        maps, rows, cols, mask = maps_of(inspection, kind, open_end=mode == "decoding" and self.decoding_open)
        layer, head = self.layer.value() - 1, self.head.value() - 1
        highlight = len(rows) - 1 if mode == "decoding" and kind != "encoder" else None
        if self.all_heads.isChecked():
            shown = maps.mean(axis=1, keepdims=True) if self.average.isChecked() else maps
            self.grid.set_data(shown, mask)
            self.stack.setCurrentWidget(self.grid)
        else:
            matrix = maps[layer].mean(axis=0) if self.average.isChecked() else maps[layer, head]
            top = float(matrix.max()) if self.stretch.isChecked() and matrix.size else 1.0
            self.heatmap.set_data(matrix, rows, cols, mask, highlight, levels=(0.0, max(top, 1e-6)))
            self.heatmap.set_title(head_title(kind, layer, None if self.average.isChecked() else head))
            self.stack.setCurrentWidget(self.heatmap)
        self.caption.setText(self._caption(inspection, kind, mode))
        self._update_entropy()
        self.map_drawn.emit(mode)
        step = self.snapshots[self.timeline.value()].step if mode == "probe" and self.snapshots else -1
        self.snapshot_selected.emit(step)
        self.entropy_marker.setVisible(step >= 0)
        if step >= 0:
            self.entropy_marker.setValue(step)

    def _empty_hint(self, mode: str) -> str:
        return {
            "decoding": tr("Decode a sentence in the Decoding panel; its attention appears here, step by step."),
            "pair": tr("Type a source sentence (and, if you like, a target) and press Show."),
            "probe": tr("The probe sentence's attention is recorded while the model trains."),
        }[mode]

    def _caption(self, inspection: Inspection, kind: str, mode: str) -> str:
        rows = tr("Each row is one query position; it shows how that position spreads its attention over the keys "
                  "(the columns), and sums to 1.")  # fmt: skip
        if kind != "encoder":
            rows = tr("Rows: query positions, labelled “read → predicts”; columns: keys; each row sums to 1.")
        if kind == "decoder_self":
            rows += " " + tr("Hatched cells are masked: a position may not look at later ones.")
        src = tr("training step {n}").format(n=inspection.step)
        if mode == "decoding":
            src += " · " + tr("the outlined row is the position predicting the next token")
        elif not inspection.teacher_forced:
            src += " · " + tr("target: the model's own greedy translation")
        return f"{rows}  ({src})"

    def _on_grid_click(self, layer: int, head: int) -> None:
        self.layer.setValue(layer + 1)
        if not self.average.isChecked():
            self.head.setValue(head + 1)
        self.all_heads.setChecked(False)

    def _on_pair(self) -> None:
        if self.pair_src.text().strip():
            self._ask(Inspect(source=self.pair_src.text(), target=self.pair_tgt.text() or None))

    def _on_probe(self) -> None:
        if self.client is not None:
            self.client.send(SetProbe(self.probe_src.text(), self.probe_tgt.text(), self.probe_every.value()))

    def _on_timeline(self, index: int) -> None:
        if not self.snapshots:
            return
        self.source.blockSignals(True)
        self.source.setCurrentIndex(self.source.findData("probe"))
        self.source.blockSignals(False)
        self._update_timeline_label()
        self.refresh()

    def _update_timeline_label(self) -> None:
        if self.snapshots:
            i = self.timeline.value()
            step = tr("step {n}").format(n=self.snapshots[i].step)
            self.timeline_label.setText(f"{step} ({i + 1}/{len(self.snapshots)})")

    def _update_entropy(self) -> None:
        if not self.snapshots or self.info is None:
            return
        if self.lower.currentWidget() is not self.over_training:
            self._entropy_stale = True  # drawn when its tab is opened
            return
        self._entropy_stale = False
        kind = self.kind.currentData()
        layer = min(self.layer.value() - 1, self.snapshots[-1].entropy[kind].shape[0] - 1)
        steps = np.array([s.step for s in self.snapshots], dtype=float)
        for h in range(self.snapshots[-1].entropy[kind].shape[1]):
            self.entropy.define(f"head{h}", f"{tr('head')} {h + 1}", colour_shift=h, symbol="o")
            self.entropy.replace(1, f"head{h}", steps, np.array([s.entropy[kind][layer, h] for s in self.snapshots]))
        self.entropy.set_runs(1, {1})
        self.entropy.redraw()

    # -- explainer ----------------------------------------------------------------------------------
    def _on_explain(self) -> None:
        inspection, mode = self.current()
        if inspection is None:
            self.explain_title.setText(self._empty_hint(mode))
            return
        layer, head = self.layer.value() - 1, self.head.value() - 1
        self._ask(Explain(inspection.source, tuple(inspection.target_ids), self.kind.currentData(), layer, head))

    def explain_worked_example(self) -> None:
        self._ask(ExplainWorkedExample())

    def export_explanation(self, path: str) -> None:
        """The explainer as a picture, or every number of it (all queries) as CSV."""
        e = self.explanation
        if not path.lower().endswith(".csv"):
            render_widget(self.explainer, path)
            return
        if e is None:
            raise ValueError(tr("Nothing to export yet: explain a head first."))
        rows = []
        for i, qt in enumerate(e.query_tokens):
            for j, kt in enumerate(e.key_tokens):
                rows.append([i + 1, qt, j + 1, kt, e.scores[i, j], e.scaled[i, j], int(e.mask[i, j]), e.exp[i, j],
                             e.weights[i, j]])  # fmt: skip
        header = ["query", "query_token", "key", "key_token", "qk", "scaled", "allowed", "exp", "weight"]
        write_rows(path, header, rows)

    def explanation_title(self, e: AttentionExplanation) -> str:
        """What the explanation is, in the interface language."""
        if e.kind == "example":
            return tr(WORKED_EXAMPLE)
        return head_title(e.kind, e.layer, e.head)

    def _show_explanation(self) -> None:
        e = self.explanation
        if e is None:
            self.explain_title.setText(
                tr("Pick a head above and press “Explain this head”, or try the worked example.")
            )
            self.explain_note.hide()
            return
        i = max(0, self.query.currentIndex())
        d_k = e.q.shape[1]
        total = float(e.exp[i].sum())
        self.explain_title.setText(
            tr(
                "<b>{title}</b> — query {i} “{token}”: weights = softmax(q·kᵀ / √d_k) = exp / Σ exp, with d_k = {d_k}, "
                "√d_k = {root}, Σ exp = {total}; output = Σ weight · v"
            ).format(
                title=self.explanation_title(e), i=i + 1, token=html.escape(e.query_tokens[i]), d_k=d_k,
                root=f"{np.sqrt(d_k):.3f}", total=number(total),
            )
        )  # fmt: skip
        self.explain_note.setVisible(e.kind == "example")
        if e.kind == "example":
            self.explain_note.setText(self._example_note(e, i))
        keys = e.key_tokens
        exp_header = "exp(·)" if e.shift[i] == 0 else f"exp(· − {e.shift[i]:.1f})"
        self.per_key.setColumnCount(5)
        self.per_key.setRowCount(len(keys))
        self.per_key.setHorizontalHeaderLabels(["q·k", "÷ √d_k", tr("mask"), exp_header, "softmax"])
        self.per_key.setVerticalHeaderLabels([f"k{j + 1} {t}" for j, t in enumerate(keys)])
        for j in range(len(keys)):
            allowed = bool(e.mask[i, j])
            values = (f"{e.scores[i, j]:.4f}", f"{e.scaled[i, j]:.4f}", "✓" if allowed else "✗ (−∞)",
                      number(e.exp[i, j]), f"{e.weights[i, j]:.4f}")  # fmt: skip
            for c, v in enumerate(values):
                item = QTableWidgetItem(v)
                item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.per_key.setItem(j, c, item)
        rows = [("q", e.q[i])] + [(f"k{j + 1}", e.k[j]) for j in range(len(keys))]
        rows += [(f"v{j + 1}", e.v[j]) for j in range(len(keys))] + [(tr("output"), e.output[i])]
        self.vectors.setRowCount(len(rows))
        self.vectors.setColumnCount(e.q.shape[1])
        self.vectors.setHorizontalHeaderLabels([str(c + 1) for c in range(e.q.shape[1])])
        self.vectors.setVerticalHeaderLabels([name for name, _ in rows])
        for r, (_, vec) in enumerate(rows):
            for c, v in enumerate(vec):
                item = QTableWidgetItem(f"{v:.3f}")
                item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.vectors.setItem(r, c, item)

    @staticmethod
    def _example_note(e: AttentionExplanation, i: int) -> str:
        """For people holding a printed copy of the worked example: the check that tells a misprint apart."""
        vec = lambda xs: "[" + ", ".join(f"{x:.3f}" for x in xs) + "]"  # noqa: E731
        sums = ", ".join(f"{s:.3f}" for s in e.weights.sum(axis=1))
        return tr(
            "Checking a printed copy of this example? Softmax weights always add up to 1, so a printed row that "
            "adds up to 0.85 cannot be a softmax: it is a misprint. Correct for query {i}: exp = {exp}, Σ exp = "
            "{total}, weights = exp / Σ exp = {weights}, output = {output}. Row sums here: {sums}."
        ).format(
            i=i + 1, exp=vec(e.exp[i]), total=f"{e.exp[i].sum():.3f}", weights=vec(e.weights[i]),
            output=vec(e.output[i]), sums=sums,
        )  # fmt: skip


def number(x: float) -> str:
    """A value of the exp column: four decimals when that reads well, else scientific notation."""
    x = float(x)
    if x == 0 or 1e-3 <= abs(x) < 1e6:
        return f"{x:.4f}"
    return f"{x:.4e}"
