"""The Attention panel's two larger parts, each a tab of it: the probe sentence's attention over
training (:class:`ProbeTimeline`) and the Q·K explainer (:class:`QkExplainer`); with the names of
the attention kinds they share with the panel, as each model family names them (:func:`kinds_of`,
:func:`head_title`, from the family's spec: :mod:`model.families.registry`).

Neither part talks to the engine: each says what the person asked for with a signal
(``probe_chosen``, ``head_asked``, ``example_asked``) and the panel (explorer/panels/attention.py)
sends the request and hands the answer back (:meth:`ProbeTimeline.on_probe`,
:meth:`QkExplainer.show_explanation`).
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSlider,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.answers import ProbeSnapshot
from explorer.commands import SetProbe
from explorer.i18n import N_, tr
from explorer.panels.attention_functions import HeadFunctionPlot
from explorer.widgets import named
from explorer.widgets.export import export_button, render_widget, write_rows
from explorer.widgets.metric_plot import MetricPlot
from model.families.registry import ENCODER_DECODER, FamilySpec
from model.io.snapshots import AttentionExplanation

# the paper's names of the kinds; a family whose people name a kind otherwise says so in its spec's labels
# ("attention:<kind>": one stack has no cross-attention, and its one self-attention is causal, GPT's, or looks both
# ways, BERT's)
KINDS = (
    ("encoder", N_("Encoder self-attention")),
    ("decoder_self", N_("Decoder self-attention (masked)")),
    ("cross", N_("Cross-attention (decoder → encoder)")),
)
PROBE_TARGET = N_("target (empty: the model's own translation)")  # the probe's second field (a family may rename it)
WORKED_EXAMPLE = N_("Worked example: Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2")
ABSORB_MS = 250  # probe snapshots are taken into the timeline, entropy plot and map at most this often
SCORE_COLUMNS = 5  # q·k, scaled, mask, exp, softmax; then the value vector
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter  # numbers in the explainer's tables
# the explainer's title: the paper's scores, or T5's (the head's relative position bias b added)
EXPLAIN_TITLES = {
    False: N_(
        "<b>{title}</b> — query {i} “{token}”: weights = softmax(q·kᵀ / √d_k) = exp / Σ exp, with d_k = {d_k}, "
        "√d_k = {root}, Σ exp = {total}; output = Σ weight · v"
    ),
    True: N_(
        "<b>{title}</b> — query {i} “{token}”: weights = softmax(q·kᵀ / √d_k + b) = exp / Σ exp, with d_k = {d_k}, "
        "√d_k = {root}, Σ exp = {total}; output = Σ weight · v"
    ),
}
# a model with scaled_attention off (the experiment "no_scaling"): its scores go into the softmax as they are
UNSCALED_TITLE = N_(
    "<b>{title}</b> — query {i} “{token}”: weights = softmax(q·kᵀ) = exp / Σ exp — this model does not divide by "
    "√d_k (d_k = {d_k}); Σ exp = {total}; output = Σ weight · v"
)
# what the model's positions did inside the explained attention (AttentionExplanation.positional)
POSITIONS_NOTES = {
    "t5_relative": N_(
        "T5's positions: b is this head's learned relative position bias for the bucket of the offset key − query, "
        "added to the scaled scores (the column “q·k / √d_k + b”). T5 itself computes q·k without dividing by √d_k "
        "(the factor is folded into the initialisation of W^Q), normalises with an RMS norm and does not scale its "
        "embeddings; this app scales as the paper does (q·k / √d_k, LayerNorm, embeddings × √d_model)."
    ),
    "rope": N_(
        "RoPE: q and k are shown after the rotation. Each pair of their dimensions has been turned by an angle "
        "proportional to its position, so positions enter q·k only through the offset between query and key; what "
        "q and k contain still matters."
    ),
}


def kind_name(kind: str, family: FamilySpec = ENCODER_DECODER) -> str:
    """The English name of the attention ``kind``, as ``family`` names it (translated where it is shown)."""
    return family.labels.get(f"attention:{kind}", dict(KINDS)[kind])


def kinds_of(family: FamilySpec) -> tuple[tuple[str, str], ...]:
    """The attention kinds ``family`` has (key, English name), in the order offered."""
    return tuple((kind, kind_name(kind, family)) for kind in family.attention)


def head_title(kind: str, layer: int, head: int | None, family: FamilySpec = ENCODER_DECODER) -> str:
    """“Cross-attention (decoder → encoder) — layer 2, head 4” (0-based in; ``head`` None: the average),
    with the kind named as ``family`` names it."""
    name = tr(kind_name(kind, family))
    if head is None:
        return tr("{kind} — layer {layer}, average of all heads").format(kind=name, layer=layer + 1)
    return tr("{kind} — layer {layer}, head {head}").format(kind=name, layer=layer + 1, head=head + 1)


def explanation_title(e: AttentionExplanation, family: FamilySpec = ENCODER_DECODER) -> str:
    """What the explanation is, in the interface language (a head named as ``family`` names it)."""
    if e.kind == "example":
        return tr(WORKED_EXAMPLE)
    return head_title(e.kind, e.layer, e.head, family)


def number(x: float) -> str:
    """A value of the exp column: four decimals when that reads well, else scientific notation."""
    x = float(x)
    if x == 0 or 1e-3 <= abs(x) < 1e6:
        return f"{x:.4f}"
    return f"{x:.4e}"


class ProbeTimeline(QWidget):
    """The "Attention over training" tab: the probe sentence (set here, re-run by the engine while the
    model trains), the entropy of each head's attention over training and, beside it, each head's score of a
    known function (:class:`HeadFunctionPlot`).

    It keeps the probe's snapshots and owns the timeline slider that picks one of them; the panel
    places that slider (:meth:`timeline_bar`) above its tabs, because it scrubs every view.
    """

    MAX_SNAPSHOTS = 400  # attention-over-training snapshots kept (thinned evenly beyond that)

    probe_chosen = Signal(SetProbe)  # the person set the probe sentence or how often it is re-run
    absorbed = Signal(bool)  # snapshots were taken in; True: the view should follow the newest
    scrubbed = Signal()  # the person moved the timeline to another snapshot

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.snapshots: list[ProbeSnapshot] = []
        self.run_id: int | None = None  # snapshots of another run are dropped
        self.family = ENCODER_DECODER  # the model's family (set_family)
        self._incoming: list[ProbeSnapshot] = []  # arrived since the last absorb
        self._create()
        self._connect()
        self._lay_out()
        self.retranslate()

    def _create(self) -> None:
        self._absorb_timer = QTimer(self)
        self._absorb_timer.setSingleShot(True)
        self._absorb_timer.setInterval(ABSORB_MS)
        self.timeline = named(QSlider(Qt.Orientation.Horizontal), "attention_timeline_slider")
        self.timeline.setRange(0, 0)
        self.timeline_label = named(QLabel(), "attention_timeline_label")
        self.timeline_title = QLabel()
        self.probe_src = named(QLineEdit(), "attention_probe_input")
        self.probe_tgt = named(QLineEdit(), "attention_probe_target")
        self.probe_every = named(QSpinBox(), "attention_probe_every")
        self.probe_every.setRange(0, 100000)
        self.probe_every.setValue(50)
        self.probe_button = named(QPushButton(), "attention_probe_button")
        self.entropy = MetricPlot(
            N_("Attention entropy of the probe over training"), "entropy_plot", N_("nats"), smoothable=False
        )
        self.entropy_marker = pg.InfiniteLine(angle=90, pen=pg.mkPen("#ff7f0e", width=1.5))
        self.entropy.plot.addItem(self.entropy_marker)
        self.functions = HeadFunctionPlot()
        self._drawn_at: tuple[str, int] | None = None  # the kind and layer the plots show (0-based layer)

    def _connect(self) -> None:
        self._absorb_timer.timeout.connect(self._absorb)
        self.timeline.valueChanged.connect(self._on_timeline)
        self.probe_button.clicked.connect(self._on_set_probe)
        self.probe_every.valueChanged.connect(self._on_set_probe)
        self.functions.function_chosen.connect(self._draw_functions)

    def _lay_out(self) -> None:
        self.labels = {key: QLabel() for key in ("probe", "every")}
        probe = QHBoxLayout()
        self.arrow = QLabel("→")
        for label, w, stretch in (
            (self.labels["probe"], self.probe_src, 1),
            (self.arrow, self.probe_tgt, 1),
            (self.labels["every"], self.probe_every, 0),
        ):
            probe.addWidget(label)
            probe.addWidget(w, stretch)
        probe.addWidget(self.probe_button)
        layout = QVBoxLayout(self)
        layout.addLayout(probe)
        plots = QSplitter(Qt.Orientation.Horizontal)  # the entropy and the head functions side by side
        plots.addWidget(self.entropy)
        plots.addWidget(self.functions)
        layout.addWidget(plots, 1)

    def timeline_bar(self) -> QHBoxLayout:
        """The timeline's row, for the panel to place: its title, the slider, and the step shown."""
        row = QHBoxLayout()
        row.addWidget(self.timeline_title)
        row.addWidget(self.timeline, 1)
        row.addWidget(self.timeline_label)
        return row

    def set_family(self, family: FamilySpec) -> None:
        """A family with a decoder probes a sentence and what the decoder reads after it (a translation, or a
        decoder-only model's continuation); an encoder-only model probes one text."""
        self.family = family
        self.probe_tgt.setVisible("decoder" in family.stacks)
        self.arrow.setVisible("decoder" in family.stacks)
        self.retranslate()

    def retranslate(self) -> None:
        self.labels["probe"].setText(tr("Probe sentence"))
        self.labels["every"].setText(tr("every N steps"))
        self.probe_tgt.setPlaceholderText(tr(self.family.labels.get("probe:target", PROBE_TARGET)))
        self.probe_button.setText(tr("Set probe"))
        self.timeline_title.setText(tr("Training snapshots"))
        self.entropy.retranslate()
        self.functions.retranslate()

    # -- snapshots ---------------------------------------------------------------------------------
    def reset(self, run_id: int) -> None:
        """A new run: its snapshots start a new timeline (the last run's, and their step, are gone)."""
        self.run_id = run_id
        self.snapshots = []
        self._incoming = [s for s in self._incoming if s.run_id == run_id]
        self.entropy.remove(1)
        self.functions.clear()
        self.timeline.blockSignals(True)
        self.timeline.setRange(0, 0)
        self.timeline.blockSignals(False)
        self.timeline_label.clear()
        self.mark_step(-1)

    def on_probe(self, snapshot: ProbeSnapshot) -> None:
        """Snapshots are taken in a few times a second, however fast they come: a small model
        training hundreds of steps a second sends several each second."""
        self._incoming.append(snapshot)
        if not self._absorb_timer.isActive():
            self._absorb_timer.start()

    def absorbing(self) -> bool:
        """Whether snapshots wait to be taken in (and drawn)."""
        return bool(self._incoming)

    def _absorb(self) -> None:
        incoming, self._incoming = self._incoming, []
        if self.run_id is not None:
            incoming = [s for s in incoming if s.run_id == self.run_id]
        if not incoming:
            return
        at_end = self.timeline.value() == self.timeline.maximum()
        for snapshot in incoming:
            last = self.snapshots[-1] if self.snapshots else None
            if last is not None and (last.source, last.target) != (snapshot.source, snapshot.target):
                self.snapshots = []  # another probe sentence: a new timeline, not a mixture
                self.entropy.remove(1)
                self.functions.clear()
            self.snapshots.append(snapshot)
            if len(self.snapshots) > self.MAX_SNAPSHOTS:  # a long run: keep every other one, evenly spread
                self.snapshots = self.snapshots[:-1:2] + self.snapshots[-1:]
                at_end = True
        follow = at_end or len(self.snapshots) == 1
        self.timeline.blockSignals(True)
        self.timeline.setRange(0, len(self.snapshots) - 1)
        if follow:
            self.timeline.setValue(len(self.snapshots) - 1)
        self.timeline.blockSignals(False)
        if not self.probe_src.text():
            self.probe_src.setPlaceholderText(self.snapshots[-1].source)
        self._update_label()
        self.absorbed.emit(follow)

    def current(self) -> ProbeSnapshot | None:
        """The snapshot the timeline points at."""
        return self.snapshots[self.timeline.value()] if self.snapshots else None

    def _on_timeline(self, _index: int) -> None:
        if self.snapshots:
            self._update_label()
            self.scrubbed.emit()

    def _update_label(self) -> None:
        if self.snapshots:
            i = self.timeline.value()
            step = tr("step {n}").format(n=self.snapshots[i].step)
            self.timeline_label.setText(f"{step} ({i + 1}/{len(self.snapshots)})")

    def _on_set_probe(self) -> None:
        self.probe_chosen.emit(SetProbe(self.probe_src.text(), self.probe_tgt.text(), self.probe_every.value()))

    # -- the entropy plot --------------------------------------------------------------------------
    def draw_entropy(self, kind: str, layer: int) -> None:
        """Each head's entropy over training, for one kind and layer (0-based; clipped to the model's); and each
        head's score of the function chosen beside it."""
        if not self.snapshots or not self.snapshots[-1].entropy[kind].size:  # a kind this family lacks
            return
        layer = min(layer, self.snapshots[-1].entropy[kind].shape[0] - 1)
        steps = np.array([s.step for s in self.snapshots], dtype=float)
        for h in range(self.snapshots[-1].entropy[kind].shape[1]):
            self.entropy.define(f"head{h}", f"{tr('head')} {h + 1}", colour_shift=h, symbol="o")
            self.entropy.replace(1, f"head{h}", steps, np.array([s.entropy[kind][layer, h] for s in self.snapshots]))
        self.entropy.set_runs(1, {1})
        self.entropy.redraw()
        self._drawn_at = (kind, layer)
        self._draw_functions()

    def _draw_functions(self) -> None:
        if self.snapshots and self._drawn_at is not None:
            self.functions.draw(self.snapshots, *self._drawn_at)

    def mark_step(self, step: int) -> None:
        """Mark the training step shown on the entropy plot (−1: none)."""
        self.entropy_marker.setVisible(step >= 0)
        if step >= 0:
            self.entropy_marker.setValue(step)
        self.functions.mark_step(step)


class QkExplainer(QWidget):
    """The Q·K explainer tab: one head and one query, every number of softmax(q·kᵀ / √d_k) and of the
    output Σ weight · v, for the head the panel shows or for the worked example."""

    head_asked = Signal()  # "Explain this head": the panel knows which head is shown
    example_asked = Signal()  # the worked example (Q = K = …)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.explanation: AttentionExplanation | None = None
        self.family = ENCODER_DECODER  # the model's family, for the names of the kinds (set by the panel)
        self._from_first = False  # the next explanation opens at its first query (explain_current_head)
        self._create()
        self._connect()
        self._lay_out()
        self.retranslate()

    def _create(self) -> None:
        self.query = named(QComboBox(), "explain_query_combo")
        self.explain_button = named(QPushButton(), "explain_button")
        self.notes_button = named(QPushButton(), "explain_notes_button")
        self.explain_title = named(QLabel(), "explain_title")
        self.explain_title.setWordWrap(True)
        self.explain_note = named(QLabel(), "explain_note")  # the worked example: how to check printed copies
        self.explain_note.setWordWrap(True)
        self.explain_note.hide()
        self.vectors = named(QTableWidget(), "explain_vectors")
        self.per_key = named(QTableWidget(), "explain_per_key")
        for table in (self.vectors, self.per_key):
            table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)

    def _connect(self) -> None:
        self.query.currentIndexChanged.connect(self._show)
        self.explain_button.clicked.connect(self.head_asked)
        self.notes_button.clicked.connect(self.example_asked)

    def _lay_out(self) -> None:
        self.query_label = QLabel()
        top = QHBoxLayout()
        top.addWidget(self.query_label)
        top.addWidget(self.query, 1)
        top.addWidget(self.explain_button)
        top.addWidget(self.notes_button)
        top.addWidget(export_button(self, "qk_explainer", self.export, ("PNG", "SVG", "CSV")))
        tables = QSplitter(Qt.Orientation.Vertical)  # the weights, values and output get the width
        tables.addWidget(self.per_key)
        tables.addWidget(self.vectors)
        tables.setSizes([700, 300])
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.explain_title)
        layout.addWidget(self.explain_note)
        layout.addWidget(tables, 1)

    def retranslate(self) -> None:
        self.query_label.setText(tr("Query token"))
        self.explain_button.setText(tr("Explain this head"))
        self.notes_button.setText(tr("Worked example"))
        self.notes_button.setToolTip(tr(WORKED_EXAMPLE))
        self._show()

    def move_query(self, by: int) -> None:
        """The next (``by`` = 1) or the previous query token: presenter mode's clicker walks through them."""
        if self.query.count():
            self.query.setCurrentIndex(min(max(self.query.currentIndex() + by, 0), self.query.count() - 1))

    def explain_current_head(self) -> None:
        """Explain the head the panel shows, as *Explain this head* does, from the first query: presenter mode's
        view 6 opens with a head explained, and the clicker walks its queries."""
        self._from_first = True
        self.head_asked.emit()

    def show_explanation(self, explanation: AttentionExplanation) -> None:
        """Spell ``explanation`` out, from its last query (the first for the worked example, or when asked by
        :meth:`explain_current_head`)."""
        self.explanation = explanation
        first, self._from_first = explanation.kind == "example" or self._from_first, False
        self.query.blockSignals(True)
        self.query.clear()
        self.query.addItems([f"{i + 1}: {t}" for i, t in enumerate(explanation.query_tokens)])
        self.query.setCurrentIndex(0 if first else len(explanation.query_tokens) - 1)
        self.query.blockSignals(False)
        self._show()

    def clear(self) -> None:
        """Nothing explained (a new model: the last one's numbers do not describe it)."""
        self.explanation = None
        self.query.blockSignals(True)
        self.query.clear()
        self.query.blockSignals(False)
        for table in (self.per_key, self.vectors):
            table.setRowCount(0)
            table.setColumnCount(0)
        self._show()

    def show_hint(self, text: str) -> None:
        """Say what to do first (nothing to explain yet)."""
        self.explain_title.setText(text)

    def export(self, path: str) -> None:
        """The explainer as a picture, or every number of it (all queries) as CSV."""
        e = self.explanation
        if not path.lower().endswith(".csv"):
            render_widget(self, path)
            return
        if e is None:
            raise ValueError(tr("Nothing to export yet: explain a head first."))
        rows = []
        for i, qt in enumerate(e.query_tokens):
            for j, kt in enumerate(e.key_tokens):
                rows.append(
                    [
                        i + 1,
                        qt,
                        j + 1,
                        kt,
                        e.scores[i, j],
                        e.scaled[i, j],
                        int(e.mask[i, j]),
                        e.exp[i, j],
                        e.weights[i, j],
                    ]
                )
        header = ["query", "query_token", "key", "key_token", "qk", "scaled", "allowed", "exp", "weight"]
        write_rows(path, header, rows)

    def _show(self) -> None:
        e = self.explanation
        if e is None:
            self.explain_title.setText(
                tr("Pick a head above and press “Explain this head”, or try the worked example.")
            )
            self.explain_note.hide()
            return
        i = max(0, self.query.currentIndex())
        d_k = e.q.shape[1]
        self.explain_title.setText(
            tr(EXPLAIN_TITLES[e.positional == "t5_relative"] if e.root_scaled else UNSCALED_TITLE).format(
                title=explanation_title(e, self.family),
                i=i + 1,
                token=html.escape(e.query_tokens[i]),
                d_k=d_k,
                root=f"{np.sqrt(d_k):.3f}",
                total=number(float(e.exp[i].sum())),
            )
        )
        note = self._example_note(e, i) if e.kind == "example" else tr(POSITIONS_NOTES.get(e.positional, ""))
        self.explain_note.setVisible(bool(note))
        self.explain_note.setText(note)
        self._fill_per_key(e, i)
        self._fill_vectors(e, i)

    def _fill_per_key(self, e: AttentionExplanation, i: int) -> None:
        """One row per key: q·k, scaled, mask, exp and softmax weight of query ``i``, then the key's value
        vector v; the last row sums them: Σ exp, Σ weights = 1 and the output Σ weight · v."""
        keys = e.key_tokens
        exp_header = "exp(·)" if e.shift[i] == 0 else f"exp(· − {e.shift[i]:.1f})"
        d_v = e.v.shape[1]
        self.per_key.setColumnCount(SCORE_COLUMNS + d_v)
        self.per_key.setRowCount(len(keys) + 1)
        scaled = "q·k / √d_k + b" if e.positional == "t5_relative" else "÷ √d_k"  # T5: the head's bias b added
        if not e.root_scaled:
            scaled = tr("not ÷ √d_k") if e.positional != "t5_relative" else "q·k + b"
        self.per_key.setHorizontalHeaderLabels(
            ["q·k", scaled, tr("mask"), exp_header, "softmax", *(f"v[{c + 1}]" for c in range(d_v))]
        )
        self.per_key.setVerticalHeaderLabels([f"k{j + 1} {t}" for j, t in enumerate(keys)] + [tr("Σ, output")])
        for j in range(len(keys)):
            allowed = bool(e.mask[i, j])
            values = [
                f"{e.scores[i, j]:.4f}",
                f"{e.scaled[i, j]:.4f}",
                "✓" if allowed else "✗ (−∞)",
                number(e.exp[i, j]),
                f"{e.weights[i, j]:.4f}",
                *(f"{x:.3f}" for x in e.v[j]),
            ]
            self._fill_row(j, values)
        total = ["", "", "", number(float(e.exp[i].sum())), f"{e.weights[i].sum():.4f}"]
        self._fill_row(len(keys), total + [f"{x:.3f}" for x in e.output[i]], bold=True)

    def _fill_row(self, row: int, values: list[str], bold: bool = False) -> None:
        for c, v in enumerate(values):
            item = QTableWidgetItem(v)
            item.setTextAlignment(RIGHT)
            if bold:
                font = item.font()
                font.setBold(True)
                item.setFont(font)
            self.per_key.setItem(row, c, item)

    def _fill_vectors(self, e: AttentionExplanation, i: int) -> None:
        """The vectors whose dot products are the scores: query ``i`` and every key (the values and the
        output are in the per-key table, beside the weights)."""
        n_keys = len(e.key_tokens)
        rows = [("q", e.q[i])] + [(f"k{j + 1}", e.k[j]) for j in range(n_keys)]
        self.vectors.setRowCount(len(rows))
        self.vectors.setColumnCount(e.q.shape[1])
        self.vectors.setHorizontalHeaderLabels([str(c + 1) for c in range(e.q.shape[1])])
        self.vectors.setVerticalHeaderLabels([name for name, _ in rows])
        for r, (_, vec) in enumerate(rows):
            for c, v in enumerate(vec):
                item = QTableWidgetItem(f"{v:.3f}")
                item.setTextAlignment(RIGHT)
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
            i=i + 1,
            exp=vec(e.exp[i]),
            total=f"{e.exp[i].sum():.3f}",
            weights=vec(e.weights[i]),
            output=vec(e.output[i]),
            sums=sums,
        )
