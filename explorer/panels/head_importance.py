"""The Head importance tab of the attention panel: how much worse the model does without each head (Michel et al.,
2019), as a layers × heads map per kind of attention.

*Measure* switches each head off in turn on N held-out sentences and records the change of the loss (Δloss) and of
the token accuracy (Δaccuracy) against the model with every head; a head whose Δloss is large is one the model
leans on. The sweep runs on the engine thread with its progress shown (“head 5 of 24”); Cancel stops it after the
head it is on, and the map shows the heads it reached. It can be measured again at any step; a map of older
weights says so. A click on a cell switches that head off (:class:`explorer.panels.attention_ablation.HeadsOff`).

Route: ``ask(HeadImportanceOf(sentences, mode))`` through :class:`explorer.engine_client.EngineClient` →
``Engine._head_importance`` (explorer/engine_interpret.py) → :meth:`model.session.Session.head_importance` →
``sweep_progressed`` (:class:`explorer.answers.SweepProgress`, after each head) and ``importance_ready``
(:class:`explorer.answers.ImportanceReady`, a :class:`model.interpret.results.HeadImportance`); Cancel calls
:meth:`explorer.worker.Engine.cancel_sweep` directly (thread-safe: it sets a flag the sweep reads after each head).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

import numpy as np
from PySide6.QtCore import QPointF, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QProgressBar, QPushButton, QSpinBox, QVBoxLayout, QWidget

from explorer.answers import EngineStatus, ImportanceReady, RunInfo, SweepProgress
from explorer.commands import HeadImportanceOf
from explorer.help import HelpBox
from explorer.i18n import N_, tr
from explorer.panels.ablation_state import ATTENTION_KIND, HEAD_KIND, MODES
from explorer.panels.attention_parts import kind_name
from explorer.widgets import named
from explorer.widgets.export import write_rows
from explorer.widgets.heatmap import DIVERGING_MAP, Heatmap
from model.families.registry import ENCODER_DECODER
from model.interpret.results import Head, HeadImportance

if TYPE_CHECKING:
    from explorer.engine_client import EngineClient

MAP_TITLE = N_("Δloss without each head — {kind}")
HOVER = N_("layer {layer}, head {head}: Δloss {loss:+.4f}, Δaccuracy {accuracy:+.1%}")
NOT_REACHED = N_("layer {layer}, head {head}: not measured (the sweep was cancelled before it)")
MODE_NAMES = {"zero": N_("Zero"), "mean": N_("Mean")}
ABLATION_NAMES = {"zero": N_("zero ablation"), "mean": N_("mean ablation")}


class ImportanceMap(Heatmap):
    """A layers × heads map of Δloss in diverging colours centred on 0; the hover gives Δloss and Δaccuracy."""

    def __init__(self) -> None:
        super().__init__("head_importance_map", colour_map=DIVERGING_MAP, row_name=N_("layer"), col_name=N_("head"))
        self.accuracy = np.zeros((0, 0))
        self.write_csv: Callable[[Path], None] | None = None  # the page writes every kind's numbers

    def export(self, path: str | Path) -> None:
        """The map as a picture (PNG, SVG); as CSV every kind's Δloss and Δaccuracy (the page writes it)."""
        path = Path(path)
        if path.suffix.lower() == ".csv" and self.write_csv is not None:
            self.write_csv(path)
        else:
            super().export(path)

    def show_deltas(self, loss: np.ndarray, accuracy: np.ndarray) -> None:
        """``loss`` and ``accuracy`` ``[layers, heads]`` (NaN: not measured); the colours ±max |Δloss|."""
        self.accuracy = np.asarray(accuracy, dtype=np.float64)
        top = float(np.nanmax(np.abs(loss))) if np.isfinite(loss).any() else 0.0
        top = max(top, 1e-6)
        rows = [f"L{i + 1}" for i in range(loss.shape[0])]
        cols = [f"H{j + 1}" for j in range(loss.shape[1])]
        self.set_data(loss, rows, cols, levels=(-top, top))

    def _on_move(self, pos: QPointF) -> None:
        if not self.values.size:
            return
        cell = self.cell_at(pos)
        if cell == self._hover:
            return
        self._hover = cell or (-1, -1)
        if cell is None:
            self.hover_label.setText("")
            return
        r, c = cell
        loss = self.values[r, c]
        if np.isnan(loss):
            self.hover_label.setText(tr(NOT_REACHED).format(layer=r + 1, head=c + 1))
            return
        text = tr(HOVER).format(layer=r + 1, head=c + 1, loss=loss, accuracy=self.accuracy[r, c])
        self.hover_label.setText(text)

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int] | None:
        """The (layer, head) under a point of the scene, 0-based (None: outside the map)."""
        if not self.values.size:
            return None
        p = self.image.mapFromScene(scene_pos)
        r, c = int(np.floor(p.y())), int(np.floor(p.x()))
        return (r, c) if 0 <= r < self.values.shape[0] and 0 <= c < self.values.shape[1] else None


class HeadImportancePage(QWidget):
    """Measure (sentences, Zero/Mean), progress and Cancel, the map of one kind of attention, and its caption."""

    head_clicked = Signal(str, int, int)  # a cell was clicked: (kind, layer, head) of HEAD_KINDS, 0-based

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("head_importance")
        self.client: EngineClient | None = None
        self.run_id: int | None = None
        self.family = ENCODER_DECODER
        self.weights_step: int | None = None  # the training step of the model's weights now
        self.asked: int | None = None  # the sweep's request id, while it runs and after
        self.running = False
        self.reached = 0  # heads measured by the sweep shown (its last progress)
        self.importance: HeadImportance | None = None
        self.heads_off: tuple[Head, ...] = ()
        self._create()
        self._connect()
        self._lay_out()
        self.retranslate()

    def _create(self) -> None:
        self.sentences = named(QSpinBox(), "importance_sentences")
        self.sentences.setRange(1, 5000)
        self.sentences.setValue(100)
        self.mode = named(QComboBox(), "importance_mode")
        for mode in MODES:
            self.mode.addItem("", mode)
        self.measure_button = named(QPushButton(), "importance_measure")
        self.cancel_button = named(QPushButton(), "importance_cancel")
        self.cancel_button.setEnabled(False)
        self.progress = named(QProgressBar(), "importance_progress")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setTextVisible(True)
        self.kind = named(QComboBox(), "importance_kind")
        self.map = ImportanceMap()
        self.map.write_csv = self._write_csv
        self.caption = named(QLabel(), "importance_caption")
        self.caption.setWordWrap(True)
        self.help = HelpBox("head_ablation", label=N_("Switching heads off"))

    def _connect(self) -> None:
        self.measure_button.clicked.connect(self.measure)
        self.cancel_button.clicked.connect(self.cancel)
        self.kind.currentIndexChanged.connect(self._draw)
        self.map.view.scene().sigMouseClicked.connect(self._on_click)

    def _lay_out(self) -> None:
        self.labels = {key: QLabel() for key in ("sentences", "kind")}
        top = QHBoxLayout()
        for w in (self.labels["sentences"], self.sentences, self.mode, self.measure_button, self.cancel_button):
            top.addWidget(w)
        top.addWidget(self.progress, 1)
        pick = QHBoxLayout()
        pick.addWidget(self.labels["kind"])
        pick.addWidget(self.kind, 1)
        pick.addWidget(self.help)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(pick)
        layout.addWidget(self.map, 1)
        layout.addWidget(self.caption)
        layout.addStretch(0)  # before a measurement (no map): the rows stay at the top

    def retranslate(self) -> None:
        self.labels["sentences"].setText(tr("Sentences"))
        self.labels["kind"].setText(tr("Attention"))
        self.sentences.setToolTip(tr("Held-out sentences each head is measured on"))
        for i, mode in enumerate(MODES):
            self.mode.setItemText(i, tr(MODE_NAMES[mode]))
        self.measure_button.setText(tr("Measure"))
        self.measure_button.setToolTip(tr("Switch each head off in turn and measure how much worse the model does"))
        self.cancel_button.setText(tr("Cancel"))
        self.help.retranslate()
        self._name_kinds()
        self._describe_progress()
        self._draw()

    # -- the route to the engine ---------------------------------------------------------------------------------
    def attach(self, client: EngineClient) -> None:
        self.client = client
        client.engine.sweep_progressed.connect(self._on_progress)
        client.engine.importance_ready.connect(self._on_ready)
        client.engine.status_changed.connect(self._on_status)
        client.engine.engine_failed.connect(self._on_failed)

    def on_run(self, info: RunInfo) -> None:
        """A new model: the last one's map goes."""
        self.weights_step = info.weights_step
        self.family = info.model_config.family
        if info.run_id != self.run_id:
            self.run_id = info.run_id
            self.importance, self.reached = None, 0
            if self.running:
                self.cancel()
            self._name_kinds()
            self._draw()

    def measure(self) -> None:
        """Ablate each head in turn on the sentences asked for (the engine answers after the last head)."""
        if self.client is None or self.running:
            return
        mode = cast("Literal['zero', 'mean']", str(self.mode.currentData()))
        self.asked = self.client.ask(HeadImportanceOf(sentences=self.sentences.value(), mode=mode))
        self.running, self.reached = True, 0
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self._busy()

    def cancel(self) -> None:
        """Stop the sweep after the head it is on; what it measured comes back and is drawn."""
        if self.client is not None and self.running:
            self.client.engine.cancel_sweep()
            self.cancel_button.setEnabled(False)

    def _busy(self) -> None:
        self.measure_button.setEnabled(not self.running)
        self.cancel_button.setEnabled(self.running)
        self._describe_progress()

    def _on_progress(self, progress: SweepProgress) -> None:
        if progress.request_id != self.asked:
            return
        self.reached = progress.done
        self.progress.setRange(0, progress.total)
        self.progress.setValue(progress.done)
        self._describe_progress()

    def _describe_progress(self) -> None:
        total = self.progress.maximum() if self.running or self.importance is not None else 0
        if self.running and self.reached == 0:
            self.progress.setFormat(tr("measuring the model with every head…"))
        elif total:
            self.progress.setFormat(tr("head {done} of {total}").format(done=self.reached, total=total))
        else:
            self.progress.setFormat("")

    def _on_ready(self, reply: ImportanceReady) -> None:
        if reply.request_id != self.asked:
            return
        self.running = False
        self.importance = reply.importance
        self._busy()
        self._name_kinds()
        self._draw()

    def _on_failed(self, request_id: int, _message: str) -> None:
        if request_id == self.asked and self.running:
            self.running = False
            self._busy()

    def _on_status(self, status: EngineStatus) -> None:
        if status.run_id == self.run_id and status.step != self.weights_step:
            self.weights_step = status.step
            self._write_caption()

    # -- the map ---------------------------------------------------------------------------------------------------
    def _name_kinds(self) -> None:
        """The kinds of attention measured (or, before a measurement, the family's), named as the family names them."""
        kept = self.kind.currentData()
        if self.importance is not None:
            kinds = [k for k, m in self.importance.delta_loss.items() if m.size]
        else:
            kinds = [HEAD_KIND[k] for k in self.family.attention]
        self.kind.blockSignals(True)
        self.kind.clear()
        for k in kinds:
            self.kind.addItem(tr(kind_name(ATTENTION_KIND[k], self.family)), k)
        self.kind.setCurrentIndex(max(0, self.kind.findData(kept)))
        self.kind.blockSignals(False)

    def current_kind(self) -> str:
        return str(self.kind.currentData() or "")

    def _draw(self) -> None:
        kind, found = self.current_kind(), self.importance
        self.map.setVisible(found is not None)  # before a measurement: the caption says what Measure does
        if found is None or kind not in found.delta_loss:
            self.map.set_data(np.zeros((0, 0)), [], [])
            self.map.set_title("")
            self._write_caption()
            return
        self.map.show_deltas(found.delta_loss[kind], found.delta_accuracy[kind])
        self.map.set_title(tr(MAP_TITLE).format(kind=tr(kind_name(ATTENTION_KIND[kind], self.family))))
        self.show_heads_off(self.heads_off)
        self._write_caption()

    def shown(self) -> np.ndarray:
        """The Δloss values the map shows ``[layers, heads]``."""
        return self.map.values

    def show_heads_off(self, heads: tuple[Head, ...]) -> None:
        """Outline the cells of the heads switched off."""
        self.heads_off = tuple(heads)
        if self.map.values.size:
            kind = self.current_kind()
            cells = [(layer, h) for k, layer, h in heads if k == kind]
            self.map.outline_cells(np.array(cells, dtype=int).reshape(-1, 2))

    def _write_caption(self) -> None:
        found = self.importance
        if found is None:
            self.caption.setText(
                tr("Measure switches each head off in turn and shows how much the loss rises without it.")
            )
            return
        parts = [
            tr("with every head: loss {loss:.4f}, accuracy {accuracy:.1%}").format(
                loss=found.base.get("loss", float("nan")), accuracy=found.base.get("accuracy", float("nan"))
            ),
            tr("{n} held-out sentences, {ablation}").format(
                n=found.sentences, ablation=tr(ABLATION_NAMES.get(found.mode, found.mode))
            ),
        ]
        if self.weights_step is not None and self.weights_step != found.step:
            parts.append(
                tr("measured at step {then} — now at step {now}").format(then=found.step, now=self.weights_step)
            )
        else:
            parts.append(tr("measured at step {n}").format(n=found.step))
        if not found.complete:
            total = sum(m.size for m in found.delta_loss.values())
            parts.append(
                tr("cancelled after {done} of {total} heads: the others are blank").format(
                    done=self.reached, total=total
                )
            )
        self.caption.setText("; ".join(parts))

    def _on_click(self, event) -> None:
        cell = self.map.cell_at(event.scenePos())
        kind = self.current_kind()
        if cell is not None and kind:
            self.head_clicked.emit(kind, *cell)

    def export(self, path: str | Path) -> None:
        """The map shown as a picture (PNG, SVG), or every kind's numbers as CSV."""
        self.map.export(path)

    def _write_csv(self, path: Path) -> None:
        """Every kind's Δloss and Δaccuracy (kind, layer, head; 1-based; empty before a measurement)."""
        rows: list[list] = []
        for kind, loss in (self.importance.delta_loss if self.importance is not None else {}).items():
            accuracy = cast(HeadImportance, self.importance).delta_accuracy[kind]
            for (layer, head), value in np.ndenumerate(loss):
                rows.append([kind, layer + 1, head + 1, float(value), float(accuracy[layer, head])])
        write_rows(path, ["kind", "layer", "head", "delta_loss", "delta_accuracy"], rows)
