"""Switching heads off, live: the row above the attention maps and what the engine says it changed.

With *Switch heads off* pressed, a click on a map of the all-heads grid switches that head off, or on again (the
map opens alone otherwise); a click on a cell of the Head importance map does the same. Switched-off maps are
greyed and crossed out in the grid and outlined in the importance map, and the row says how many are off for as long
as any are. Which heads are off is a Qt-free value, :class:`explorer.panels.ablation_state.AblationState`.

Route: every change sends the whole set — ``send(SetAblation(heads, mode, source))``, ``source`` the sentence the
decoding panel shows — through :class:`explorer.engine_client.EngineClient`; ``Engine._set_ablation``
(explorer/engine_interpret.py) checks the heads against the model, compares ``source``'s output with every head on
and with these off (:meth:`model.session.Session.ablated`, ``Session.inspect``) and answers on the
``ablation_changed`` signal (:class:`explorer.answers.AblationChanged`, its ``diff`` an
:class:`model.interpret.results.AblationDiff`), drawn here as the former and the new output, the tokens that changed
highlighted, and the former output's probabilities before → after. The decoding panel hears the same answer and
decodes its sentence again (``DecodingPanel.on_ablation``). The heads stay off for every view of the model, never
for training.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Literal, cast

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from explorer.answers import AblationChanged, RunInfo
from explorer.commands import HeadKind, SetAblation
from explorer.i18n import N_, tr
from explorer.panels.ablation_state import (
    ATTENTION_KIND,
    HEAD_KIND,
    MODES,
    AblationState,
    changed_positions,
    probability_rows,
)
from explorer.panels.attention_parts import kind_name
from explorer.panels.head_importance import HeadImportancePage
from explorer.widgets import named
from explorer.widgets.heatmap import HeatmapGrid
from explorer.widgets.token_strip import shown_piece
from model.families.registry import ENCODER_DECODER, FamilySpec
from model.interpret.results import AblationDiff, Head

if TYPE_CHECKING:
    from explorer.engine_client import EngineClient
    from explorer.panels.decoding import DecodingPanel

MODE_NAMES = {"zero": N_("Zero"), "mean": N_("Mean")}
MODE_TIP = N_(
    "Zero: a switched-off head's output is set to zero before W^O mixes the heads. Mean: it is replaced by its "
    "mean over held-out sentences, so the layer still gets a typical value, only no information about this input."
)
SWITCH_TIP = N_(
    "While this is pressed, a click on a map of the all-heads grid switches that head off, or on again; the decoding "
    "runs again without it. The heads stay off for every view until All heads on (training always uses them all)."
)
CHANGED = "#d62728"  # a token the switched-off heads changed
LOWER, HIGHER = "#d62728", "#2ca02c"  # a probability that fell, rose


def heads_off_text(n: int) -> str:
    """“1 head off”, “3 heads off”."""
    return tr("1 head off") if n == 1 else tr("{n} heads off").format(n=n)


def tokens_html(tokens: tuple[str, ...], marked: list[int]) -> str:
    """The tokens as the chips write them, the ``marked`` ones bold and red."""
    words = []
    for i, token in enumerate(tokens):
        word = html.escape(shown_piece(token))
        words.append(f'<b style="color:{CHANGED}">{word}</b>' if i in marked else word)
    return " ".join(words) or "∅"


def diff_html(diff: AblationDiff) -> str:
    """“output: a b c → a b d” (changed tokens marked), or “output unchanged: a b c”."""
    before = tokens_html(diff.before, [])
    if not diff.changed:
        return tr("output unchanged: {before}").format(before=before)
    after = tokens_html(diff.after, changed_positions(diff.before, diff.after))
    return tr("output: {before} → {after}").format(before=before, after=after)


def probabilities_html(diff: AblationDiff) -> str:
    """Each former output token's probability before → after, red where it fell, green where it rose."""
    chips = []
    for token, before, after in probability_rows(diff):
        if math.isnan(after):
            now, colour = "—", LOWER
        else:
            now, colour = f"{after:.2f}", LOWER if after < before - 0.005 else HIGHER if after > before + 0.005 else ""
        style = f' style="color:{colour}"' if colour else ""
        chips.append(f"{html.escape(shown_piece(token))} {before:.2f}→<span{style}>{now}</span>")
    return tr("P(former output): {chips}").format(chips=" · ".join(chips)) if chips else ""


class HeadsOff(QWidget):
    """The row that switches heads off (with the grid it marks), what switching them off changed, and the Head
    importance page (:class:`HeadImportancePage`), whose clicks switch heads off too."""

    def __init__(self, grid: HeatmapGrid, all_heads: QCheckBox, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("heads_off")
        self.grid, self.all_heads = grid, all_heads
        self.client: EngineClient | None = None
        self.decoding: DecodingPanel | None = None
        self.state = AblationState()  # what was asked last (the grid shows it at once)
        self.confirmed = AblationState()  # what the engine said last
        self.diff: AblationDiff | None = None
        self.asked: list[int] = []  # SetAblation request ids sent from here
        self.kind_shown = "encoder"  # the attention kind the grid shows
        self.family = ENCODER_DECODER  # the model's, for the names of the kinds
        self.importance = HeadImportancePage()
        self._create()
        self._connect()
        self._lay_out()
        self.retranslate()

    def _create(self) -> None:
        self.switch = named(QPushButton(), "heads_off_switch")
        self.switch.setCheckable(True)
        self.mode = named(QComboBox(), "heads_off_mode")
        for mode in MODES:
            self.mode.addItem("", mode)
        self.all_on = named(QPushButton(), "heads_off_all_on")
        self.count = named(QLabel(), "heads_off_count")
        self.count.setStyleSheet(f"color: {CHANGED}; font-weight: 600")
        self.diff_label = named(QLabel(), "heads_off_diff")
        self.probs_label = named(QLabel(), "heads_off_probs")
        for label in (self.diff_label, self.probs_label):
            label.setTextFormat(Qt.TextFormat.RichText)  # tokens are escaped (tokens_html)
            label.setWordWrap(True)
            label.hide()

    def _connect(self) -> None:
        self.switch.toggled.connect(self._on_switch)
        self.mode.currentIndexChanged.connect(self._on_mode)
        self.all_on.clicked.connect(lambda: self._submit(self.state.cleared()))
        self.importance.head_clicked.connect(self.toggle)

    def _lay_out(self) -> None:
        self.controls = QWidget()  # presenter mode hides the buttons; the count and the diff stay
        row = QHBoxLayout(self.controls)
        row.setContentsMargins(0, 0, 0, 0)
        for w in (self.switch, self.mode, self.all_on):
            row.addWidget(w)
        row.addStretch(1)
        top = QHBoxLayout()
        top.addWidget(self.controls, 1)
        top.addWidget(self.count)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(self.diff_label)
        layout.addWidget(self.probs_label)

    def retranslate(self) -> None:
        self.switch.setText(tr("Switch heads off"))
        self.switch.setToolTip(tr(SWITCH_TIP))
        for i, mode in enumerate(MODES):
            self.mode.setItemText(i, tr(MODE_NAMES[mode]))
        self.mode.setToolTip(tr(MODE_TIP))
        self.all_on.setText(tr("All heads on"))
        self.importance.retranslate()
        self._hint_grid()
        self._show_state()

    def set_presenting(self, on: bool) -> None:
        self.controls.setVisible(not on)

    # -- the route to the engine ---------------------------------------------------------------------------------
    def attach(self, client: EngineClient, decoding: DecodingPanel) -> None:
        self.client, self.decoding = client, decoding
        client.engine.ablation_changed.connect(self._on_changed)
        client.engine.engine_failed.connect(self._on_failed)
        self.importance.attach(client)

    def on_run(self, info: RunInfo) -> None:
        """A new model starts with every head on (the engine forgets the last model's)."""
        if self.importance.run_id != info.run_id:
            self.state = self.confirmed = AblationState(mode=self.state.mode)
            self.diff = None
            self.asked = []
        self.family = info.model_config.family
        self.importance.on_run(info)
        self._show_state()

    def take_click(self, attention_kind: str, layer: int, head: int) -> bool:
        """A click on the grid's map (``layer``, ``head``, 0-based) of ``attention_kind``: switches that head off or
        on while *Switch heads off* is pressed (True), else it is not this row's (False)."""
        if not self.switch.isChecked() or attention_kind not in HEAD_KIND:
            return False
        self.toggle(HEAD_KIND[attention_kind], layer, head)
        return True

    def toggle(self, kind: str, layer: int, head: int) -> None:
        """Switch the head ``(kind, layer, head)`` off, or on again (kind: "encoder", "decoder" or "cross")."""
        self._submit(self.state.toggled((kind, layer, head)))

    def mark(self, attention_kind: str) -> None:
        """The grid shows the maps of ``attention_kind``: cross out those switched off."""
        self.kind_shown = attention_kind
        self.grid.cross_out(self.state.cells(attention_kind))

    def _submit(self, state: AblationState) -> None:
        self.state = state
        self._show_state()
        if self.client is None:
            return
        source = self.decoding.sentence_shown() if self.decoding is not None else ""
        heads = cast("tuple[tuple[HeadKind, int, int], ...]", state.heads)
        mode = cast("Literal['zero', 'mean']", state.mode)
        self.asked.append(self.client.send(SetAblation(heads=heads, mode=mode, source=source)))

    def _on_switch(self, on: bool) -> None:
        if on and not self.all_heads.isChecked():
            self.all_heads.setChecked(True)  # heads are switched off in the grid
        self._hint_grid()

    def _hint_grid(self) -> None:
        """What a click on the grid does now."""
        if self.switch.isChecked():
            self.grid.hint.setText(
                tr("Rows: layers; columns: heads. Click a map to switch that head off, or on again.")
            )
        else:
            self.grid.retranslate()

    def _on_mode(self) -> None:
        mode = str(self.mode.currentData())
        if mode != self.state.mode:
            state = self.state.with_mode(mode)
            if state.heads:
                self._submit(state)
            else:
                self.state = state

    # -- answers -------------------------------------------------------------------------------------------------
    def _on_changed(self, reply: AblationChanged) -> None:
        """The engine's heads now; an answer to an older request of this row's waits for the newest."""
        if reply.request_id in self.asked and reply.request_id != self.asked[-1]:
            return
        self.confirmed = self.state = AblationState(tuple(reply.heads), reply.mode)
        self.diff = reply.diff if reply.heads else None  # all on: nothing to compare
        self._show_state()

    def _on_failed(self, request_id: int, _message: str) -> None:
        """A change the engine refused changed nothing: show what it still has."""
        if request_id in self.asked:
            self.state = self.confirmed
            self._show_state()

    def _show_state(self) -> None:
        n = len(self.state.heads)
        self.count.setText(heads_off_text(n) if n else "")
        self.count.setToolTip(", ".join(head_name(h, self.family) for h in self.state.heads))
        self.all_on.setEnabled(n > 0)
        self.mode.blockSignals(True)
        self.mode.setCurrentIndex(max(0, self.mode.findData(self.state.mode)))
        self.mode.blockSignals(False)
        self.grid.cross_out(self.state.cells(self.kind_shown))
        self.importance.show_heads_off(self.state.heads)
        diff = self.diff if n else None
        self.count.setVisible(diff is None)  # the diff's line begins with the count
        self.diff_label.setVisible(diff is not None)
        self.probs_label.setVisible(diff is not None)
        if diff is not None:
            self.diff_label.setText(f"<b>{html.escape(heads_off_text(len(diff.heads)))}</b> — {diff_html(diff)}")
            self.probs_label.setText(probabilities_html(diff))


def head_name(head: Head, family: FamilySpec = ENCODER_DECODER) -> str:
    """“Cross-attention (decoder → encoder) L2 H3” (1-based, as the grid's axes write them)."""
    kind, layer, h = head
    return f"{tr(kind_name(ATTENTION_KIND[kind], family))} L{layer + 1} H{h + 1}"
