"""The Experiment panel: one click runs a bundled experiment (:data:`model.experiments.variants.VARIANTS`) — a part of
the Transformer taken out or changed — beside its baseline, from the same seed, initial weights and batches. Before
the run it says what to expect and why; as the pair trains it shows both runs side by side at the same step: the
experiment's figure for each, the probe sentence's attention in each (the same layer and head), and what each makes
of the same held-out sentences. Their curves overlay in the Training panel (two runs); "Look inside" shows either
run in every other panel while both train on.

Route: Run → ``run_asked`` → :meth:`explorer.model_files.ModelFiles.run_experiment` (asks before replacing unsaved
work) → :class:`explorer.commands.RunExperiment` → :class:`explorer.engine_experiment.ExperimentHandlers` → the
variant's ``run_described`` (:attr:`explorer.answers.RunInfo.experiment`) and, at each probe snapshot and pause,
``experiment_compared`` (:class:`explorer.answers.ExperimentCompared`) → :meth:`ExperimentPanel._on_compared`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.answers import ExperimentCompared, ExperimentInfo, RunInfo
from explorer.commands import LookInside
from explorer.i18n import N_, language, tr
from explorer.widgets import named
from explorer.widgets.heatmap import Heatmap
from model.experiments.variants import MEASURES, VARIANTS
from model.io.snapshots import Inspection

if TYPE_CHECKING:
    from explorer.engine_client import EngineClient

COLUMNS = (N_("Sentence"), N_("Reference"), N_("Baseline"), N_("Variant"))
KINDS = (
    ("encoder", N_("Encoder self-attention")),
    ("decoder_self", N_("Decoder self-attention")),
    ("cross", N_("Cross-attention")),
)
AVERAGE = 0  # the head spin box's first value: the heads averaged (runs with different numbers of heads compare)


def attention_of(
    inspection: Inspection, kind: str, layer: int, head: int
) -> tuple[np.ndarray, float, list, list] | None:
    """One map of ``inspection`` (``head`` 0: the layer's heads averaged; a head the run lacks: averaged too), the
    mean entropy in bits of its heads' rows (of each head's own rows, as the experiment's figure counts it), and its
    row and column tokens; None when the run has no such attention."""
    maps = getattr(inspection, kind)
    if maps.size == 0 or layer >= maps.shape[0]:
        return None
    heads = maps[layer] if head == AVERAGE or head > maps.shape[1] else maps[layer, head - 1 : head]
    rows = inspection.src_tokens if kind == "encoder" else inspection.tgt_tokens
    cols = inspection.tgt_tokens if kind == "decoder_self" else inspection.src_tokens
    return heads.mean(0), row_entropy(heads), list(rows), list(cols)


def row_entropy(maps: np.ndarray) -> float:
    """Mean entropy (bits) of the rows of ``maps [..., rows, cols]``: how spread the attention is (0: each row on
    one position)."""
    p = np.clip(maps.astype(np.float64), 1e-12, 1.0)
    return float((-(p * np.log2(p)).sum(-1)).mean()) if maps.size else math.nan


class ExperimentPanel(QWidget):
    """Choose an experiment and run it; its prediction; both runs side by side as they train."""

    run_asked = Signal(str)  # the variant's name: run it (the window asks before replacing unsaved work)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("experiment_panel")
        self.client: EngineClient | None = None
        self.experiment: ExperimentInfo | None = None  # of the run shown; None: no experiment is open
        self.compared: ExperimentCompared | None = None
        self._create()
        self._lay_out()
        self.retranslate()

    def _create(self) -> None:
        self.choice = named(QComboBox(), "experiment_choice")
        for v in VARIANTS:
            self.choice.addItem(v.title, v.name)
        self.choice.currentIndexChanged.connect(lambda _: self._draw())
        self.run_button = named(QPushButton(), "experiment_run_button")
        self.run_button.clicked.connect(lambda: self.run_asked.emit(self.choice.currentData()))
        self.expect = named(QLabel(), "experiment_expect")
        self.expect.setWordWrap(True)
        self.expect.setTextFormat(Qt.TextFormat.RichText)
        self.figures = named(QLabel(), "experiment_figures")
        self.figures.setWordWrap(True)
        self.figures.setTextFormat(Qt.TextFormat.RichText)
        self.look = named(QComboBox(), "experiment_look_inside")
        self.look.addItem("", "variant")
        self.look.addItem("", "baseline")
        self.look.activated.connect(lambda _: self._look_inside())
        self.look_label, self.layer_label, self.head_label = QLabel(), QLabel(), QLabel()
        self.kind = named(QComboBox(), "experiment_kind")
        for key, _ in KINDS:
            self.kind.addItem("", key)
        self.layer = named(QSpinBox(), "experiment_layer")
        self.layer.setRange(1, 1)
        self.head = named(QSpinBox(), "experiment_head")
        self.head.setRange(AVERAGE, 1)
        self.kind.currentIndexChanged.connect(lambda _: self._draw_maps())
        for spin in (self.layer, self.head):
            spin.valueChanged.connect(lambda _: self._draw_maps())
        self.maps = (Heatmap("experiment_baseline_map"), Heatmap("experiment_variant_map"))
        self.outputs = named(QTableWidget(0, len(COLUMNS)), "experiment_outputs")
        self.outputs.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.outputs.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.outputs.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.outputs.verticalHeader().setVisible(False)
        for combo in (self.choice, self.look):  # long names shrink, not the window (1024 px screens)
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(10)
        rows = self.outputs.verticalHeader().defaultSectionSize()
        self.outputs.setMinimumHeight(self.outputs.horizontalHeader().sizeHint().height() + 4 * rows + 4)

    def _lay_out(self) -> None:
        self.controls = QWidget()  # presenter mode hides the rows that choose (the class reads the rest)
        choose = QHBoxLayout(self.controls)
        choose.setContentsMargins(0, 0, 0, 0)
        choose.addWidget(self.choice, 1)
        choose.addWidget(self.run_button)
        which = QHBoxLayout()  # which run the other panels show; which attention the maps compare
        which.addWidget(self.look_label)
        which.addWidget(self.look, 1)
        what = QHBoxLayout()
        for w in (self.kind, self.layer_label, self.layer, self.head_label, self.head):
            what.addWidget(w)
        what.addStretch(1)
        maps = QHBoxLayout()
        for m in self.maps:
            maps.addWidget(m, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.controls)
        layout.addWidget(self.expect)
        layout.addWidget(self.figures)
        layout.addLayout(which)
        layout.addLayout(what)
        layout.addLayout(maps, 3)
        layout.addWidget(self.outputs, 2)

    def retranslate(self) -> None:
        zh = language.code == "zh"
        for i, v in enumerate(VARIANTS):
            self.choice.setItemText(i, v.title_zh if zh else v.title)
        self.run_button.setText(tr("Run beside its baseline"))
        self.run_button.setToolTip(
            tr("Train the changed model and an intact one together: the same seed, starting weights and batches")
        )
        self.look_label.setText(tr("Look inside:"))
        self.look.setToolTip(tr("The run every other panel shows; both keep training"))
        self.layer_label.setText(tr("Layer"))
        self.head_label.setText(tr("Head"))
        self.head.setSpecialValueText(tr("all, averaged"))
        for i, (_, text) in enumerate(KINDS):
            self.kind.setItemText(i, tr(text))
        self.outputs.setHorizontalHeaderLabels([tr(c) for c in COLUMNS])
        for m in self.maps:
            m.retranslate()
        self._draw()

    def set_presenting(self, on: bool) -> None:
        """Presenter mode: the row that chooses an experiment leaves its height to the comparison."""
        self.controls.setVisible(not on)

    # -- the engine ---------------------------------------------------------------------------------------------------
    def attach(self, client: EngineClient) -> None:
        self.client = client
        client.engine.experiment_compared.connect(self._on_compared)

    def on_run(self, info: RunInfo) -> None:
        """A model is shown: a run of an experiment (its prediction, which run; the comparison so far stays), or
        another model (the experiment is over)."""
        e = info.experiment
        same = e is not None and self.experiment is not None and e.run_ids == self.experiment.run_ids
        self.experiment = e
        if not same:
            self.compared = None
        if e is not None:
            self.choice.setCurrentIndex(max(0, self.choice.findData(e.name)))
            self.look.setCurrentIndex(self.look.findData(e.run))
            layers = max(info.model_config.n_encoder_layers, info.model_config.n_decoder_layers, 1)
            self.layer.setRange(1, layers)
            heads = max(info.model_config.n_heads, e.other.model_config.n_heads if e.other else 1)
            self.head.setRange(AVERAGE, heads)
            self._choose_kind(info)
        self._draw()

    def _choose_kind(self, info: RunInfo) -> None:
        """The kinds of attention the model has (a GPT: its decoder's own), cross-attention first shown."""
        single = info.model_config.single_stream
        model = self.kind.model()
        for i, (key, _) in enumerate(KINDS):
            if isinstance(model, QStandardItemModel) and (item := model.item(i)) is not None:
                item.setEnabled(not single or key == "decoder_self")
        if single:
            self.kind.setCurrentIndex(1)
        elif self.compared is None:
            self.kind.setCurrentIndex(2)

    def _on_compared(self, c: ExperimentCompared) -> None:
        if self.experiment is None or c.run_ids != self.experiment.run_ids:
            return  # an experiment that is no longer shown
        self.compared = c
        self._draw()

    def _look_inside(self) -> None:
        self.look_inside(self.look.currentData())

    def look_inside(self, run: str) -> None:
        """Every other panel shows ``run`` ("baseline" or "variant") of the experiment shown."""
        if self.client is not None and self.experiment is not None and run != self.experiment.run:
            self.look.setCurrentIndex(self.look.findData(run))
            self.client.send(LookInside("baseline" if run == "baseline" else "variant"))

    # -- drawing ------------------------------------------------------------------------------------------------------
    def _draw(self) -> None:
        zh = language.code == "zh"
        e, name = self.experiment, self.choice.currentData()
        v = next((v for v in VARIANTS if v.name == name), VARIANTS[0])
        self.look.setEnabled(e is not None)
        self.look.setItemText(0, tr("the variant: {title}").format(title=v.title_zh if zh else v.title))
        self.look.setItemText(1, tr("the baseline"))
        self.expect.setText(
            f"<b>{tr('What to expect, and why:')}</b> {(v.expect_zh if zh else v.expect)}"
            + (f"<br>{tr('Running: {title}.').format(title=e.titled(zh))}" if e is not None and e.name != name else "")
        )
        self.figures.setText(self._figures_text(v.measure, v.predicted))
        self._draw_maps()
        self._draw_outputs()

    def _figures_text(self, measure: str, predicted: str) -> str:
        c, zh = self.compared, language.code == "zh"
        if self.experiment is None:
            return tr("No experiment is running: choose one and press “Run beside its baseline”.")
        if c is None:
            return tr("Training both runs… the comparison comes at the first snapshot.")
        said = MEASURES[measure][1 if zh else 0]
        base, variant = c.measure
        text = tr("At step {step}, {measure}: baseline <b>{base}</b> · variant <b>{variant}</b>.").format(
            step=f"{c.step:,}", measure=said, base=_number(base), variant=_number(variant)
        )
        if math.isfinite(base) and math.isfinite(variant):
            diff = variant - base
            held = {"lower": diff < 0, "higher": diff > 0, "same": abs(diff) <= 0.05 * max(abs(base), 1e-9)}[predicted]
            text += " " + (tr("As predicted, so far.") if held else tr("Not as predicted (yet)."))
        return text

    def _draw_maps(self) -> None:
        c = self.compared
        kind, layer, head = self.kind.currentData(), self.layer.value() - 1, self.head.value()
        titles = (tr("Baseline"), tr("Variant"))
        for i, heatmap in enumerate(self.maps):
            found = None if c is None or c.inspections is None else attention_of(c.inspections[i], kind, layer, head)
            if found is None:
                heatmap.set_title(titles[i])
                heatmap.set_data(np.zeros((0, 0)), [], [])
                continue
            values, bits, rows, cols = found
            assert c is not None and c.inspections is not None  # (found in them)
            masks = c.inspections[i].masks
            mask = ~masks[kind] if kind in masks and masks[kind].shape == values.shape else None
            entropy = tr("entropy {bits} bits").format(bits=f"{bits:.2f}")
            heatmap.set_title(f"{titles[i]} · {tr('step {n}').format(n=c.step)} · {entropy}")
            heatmap.set_data(values, rows, cols, mask)

    def _draw_outputs(self) -> None:
        outputs = self.compared.outputs if self.compared is not None else ()
        self.outputs.setRowCount(len(outputs))
        for row, o in enumerate(outputs):
            for col, text in enumerate((o.source, o.reference, o.baseline, o.variant)):
                item = QTableWidgetItem(text or "—")
                if col >= 2 and text == o.reference:
                    item.setText(f"{text} ✓")
                self.outputs.setItem(row, col, item)

    def texts(self) -> list[str]:
        """Every text of the panel a person reads (presenter tests read them all)."""
        items = (self.outputs.item(r, c) for r in range(self.outputs.rowCount()) for c in range(len(COLUMNS)))
        cells = [item.text() for item in items if item is not None]
        return [self.expect.text(), self.figures.text(), *(m.title.text() for m in self.maps), *cells]


def _number(x: float) -> str:
    return "—" if not math.isfinite(x) else f"{x:.3g}" if abs(x) < 100 else f"{x:,.0f}"
