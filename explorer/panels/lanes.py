"""The Decoding lanes panel: the Decoding panel's sentence decoded several ways side by side — greedy, beam search,
sampling with several seeds — on one step cursor. Step moves every lane one token (a lane that has finished stays
at its end); each lane shows its output so far, its log-probability (the model's own, at temperature 1) and where
it parts from the greedy lane, its tokens from there on in orange. Under the lanes, the beam lane's search tree at
the cursor (the Decoding panel's :class:`~explorer.widgets.beam_tree.BeamTreeView`, fed the beam lane's own view).

Route: ``client.ask(DecodeLanes("start", settings))`` (one :class:`~model.io.snapshots.DecodeSettings` per lane,
:func:`model.decoding.lanes.standard_lanes`), then ``DecodeLanes("step" | "back" | "run" | "reset")`` →
``Engine._decode_lanes`` (explorer/engine_views.py) → :class:`model.decoding.lanes.LanesDriver` → the
``lanes_stepped`` signal (:class:`explorer.answers.LanesStepped`) → :meth:`LanesPanel._on_lanes`.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocumentFragment
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractScrollArea,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.answers import LanesStepped, RunInfo
from explorer.commands import DecodeLanes
from explorer.i18n import N_, tr
from explorer.pieces import shown_pieces
from explorer.widgets import named
from explorer.widgets.beam_tree import BeamTreeView
from explorer.widgets.export import titled_view
from model.decoding.lanes import standard_lanes
from model.io.snapshots import DecodeSettings, Lane, LanesView

if TYPE_CHECKING:
    from explorer.engine_client import EngineClient
    from explorer.panels.decoding import DecodingPanel

PARTED = "#d35400"  # the tokens of a lane from where it parts from the first
COLUMNS = (N_("Lane"), N_("Output so far"), N_("log P"), N_("Parts at"))
FORMATS = ("PNG", "SVG", "CSV")  # the tree's export
ACTIONS = (("back", N_("◀ Back")), ("step", N_("Step ▶")), ("run", N_("Run to the end")), ("reset", N_("Reset")))


def lane_name(s: DecodeSettings) -> str:
    """A lane's name in the interface language."""
    if s.sampling:
        name = tr("sampling T {t:g}, seed {seed}").format(t=s.temperature, seed=s.seed)
        return name
    return tr("greedy") if s.beam_size == 1 else tr("beam {k}").format(k=s.beam_size)


def beam_lane(view: LanesView | None) -> Lane | None:
    """The first lane that searches with a beam (its tree is drawn under the lanes); None: no such lane."""
    lanes = view.lanes if view is not None else ()
    return next((lane for lane in lanes if lane.view.settings.beam_size > 1), None)


class LanesPanel(QWidget):
    """Several decodings of the Decoding panel's sentence, one row each, on one step cursor."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("lanes_panel")
        self.client: EngineClient | None = None
        self.decoding: DecodingPanel | None = None
        self.info: RunInfo | None = None
        self.pieces: tuple[str, ...] = ()
        self.eos_id = 2
        self.view: LanesView | None = None
        self.waiting: int | None = None
        self._create()
        self._lay_out()
        self.retranslate()

    def _create(self) -> None:
        self.beam = named(QSpinBox(), "lanes_beam_spin")
        self.beam.setRange(2, 8)
        self.beam.setValue(4)
        self.temperature = named(QDoubleSpinBox(), "lanes_temperature_spin")
        self.temperature.setRange(0.1, 3.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setValue(0.8)
        self.seeds = named(QSpinBox(), "lanes_seeds_spin")
        self.seeds.setRange(1, 5)
        self.seeds.setValue(2)
        self.start_button = named(QPushButton(), "lanes_start_button")
        self.start_button.clicked.connect(lambda: self.start())
        self.buttons: dict[str, QPushButton] = {}
        for action, _ in ACTIONS:
            button = named(QPushButton(), f"lanes_{action}_button")
            button.clicked.connect(lambda _=False, a=action: self.press(a))
            self.buttons[action] = button
        self.beam_label, self.temperature_label, self.seeds_label = QLabel(), QLabel(), QLabel()
        self.table = named(QTableWidget(0, len(COLUMNS)), "lanes_table")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        # as tall as its rows while the tree is shown under it (the tree takes the rest of the height)
        self.table.setSizeAdjustPolicy(QAbstractScrollArea.SizeAdjustPolicy.AdjustToContents)
        self.tree = BeamTreeView("lanes_beam_tree_view")
        self.tree_box = QWidget()
        self.tree_title, _ = titled_view(self.tree_box, self.tree, "lanes_beam_tree", self.tree.export, FORMATS)
        self.tree_box.hide()  # until a beam lane has started
        self.state = named(QLabel(), "lanes_state")
        self.state.setWordWrap(True)
        self.state.setTextFormat(Qt.TextFormat.PlainText)

    def _lay_out(self) -> None:
        self.controls = QWidget()  # presenter mode hides the rows that choose and step (the clicker steps)
        choose = QHBoxLayout()
        for w in (self.beam_label, self.beam, self.temperature_label, self.temperature, self.seeds_label, self.seeds):
            choose.addWidget(w)
        choose.addStretch(1)
        steps = QHBoxLayout()  # (a row of its own: the panel stays narrow enough to share the screen)
        steps.addWidget(self.start_button)
        for action, _ in ACTIONS:
            steps.addWidget(self.buttons[action])
        steps.addStretch(1)
        rows = QVBoxLayout(self.controls)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.addLayout(choose)
        rows.addLayout(steps)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.controls)
        layout.addWidget(self.state)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.tree_box, 3)

    def retranslate(self) -> None:
        self.beam_label.setText(tr("Beam"))
        self.temperature_label.setText(tr("Temperature"))
        self.seeds_label.setText(tr("Seeds"))
        self.seeds.setToolTip(tr("Sampling lanes, one per seed (1, 2, …): each draws its own tokens"))
        self.start_button.setText(tr("Decode in lanes"))
        self.start_button.setToolTip(tr("The Decoding panel's sentence: greedy, beam search and sampling side by side"))
        for action, text in ACTIONS:
            self.buttons[action].setText(tr(text))
        self.table.setHorizontalHeaderLabels([tr(c) for c in COLUMNS])
        self.tree_title.setToolTip(tr("Blue: kept · grey: pruned · green: finished · orange: the best hypothesis"))
        self._draw()

    def set_presenting(self, on: bool) -> None:
        """Presenter mode: the rows that choose and step leave their height to the lanes."""
        self.controls.setVisible(not on)

    # -- asking ---------------------------------------------------------------------------------------------------
    def attach(self, client: EngineClient, decoding: DecodingPanel) -> None:
        self.client, self.decoding = client, decoding
        client.engine.lanes_stepped.connect(self._on_lanes)
        client.engine.engine_failed.connect(self._on_failed)

    def on_run(self, info: RunInfo) -> None:
        self.info = info
        self.eos_id = info.model_config.eos_id
        self.pieces = shown_pieces(info.tgt_pieces)
        self.view, self.waiting = None, None
        self._draw()

    @property
    def decodes(self) -> bool:
        """The model writes text (a translator, a GPT); a BERT fills masks instead."""
        return self.info is None or "fill_mask" not in self.info.model_config.family.decoding

    def start(self, beam: int | None = None, temperature: float | None = None) -> None:
        """Decode the Decoding panel's sentence in lanes: greedy, beam k and sampling with each seed (``beam`` and
        ``temperature`` given: those, shown in the controls)."""
        if beam is not None:
            self.beam.setValue(beam)
        if temperature is not None:
            self.temperature.setValue(temperature)
        text = self.decoding.sentence_shown().strip() if self.decoding is not None else ""
        if self.client is None or not self.decodes:
            return
        if not text:
            self.state.setText(tr("Type a sentence in the Decoding panel first."))
            return
        seeds = tuple(range(1, self.seeds.value() + 1))
        settings = standard_lanes(text, self.beam.value(), round(self.temperature.value(), 2), seeds)
        self.waiting = self.client.ask(DecodeLanes("start", tuple(settings)))

    def advance(self, steps: int) -> None:
        """``steps`` steps of every lane after the start just asked for (a lesson's slide)."""
        if self.client is not None and self.waiting is not None:
            for _ in range(steps):
                self.waiting = self.client.ask(DecodeLanes("step"))

    def press(self, action: str) -> None:
        if self.client is not None and self.view is not None:
            self.waiting = self.client.ask(DecodeLanes(action))  # type: ignore[arg-type]

    def _on_lanes(self, reply: LanesStepped) -> None:
        if self.client is None or not self.client.fresh(DecodeLanes, reply.request_id):
            return
        self.view, self.waiting = reply.view, None
        self._draw()

    def _on_failed(self, request_id: int, message: str) -> None:
        if request_id == self.waiting:
            self.waiting = None
            self.state.setText(message)

    # -- drawing --------------------------------------------------------------------------------------------------
    def piece(self, token: int) -> str:
        if token == self.eos_id:
            return "<eos>"
        return self.pieces[token] if 0 <= token < len(self.pieces) else f"#{token}"

    def _draw(self) -> None:
        v = self.view
        for w in (*self.buttons.values(), self.start_button, self.beam, self.temperature, self.seeds):
            w.setEnabled(self.decodes)
        if not self.decodes:
            self.state.setText(tr("Lanes decode a translator or a GPT; this model fills masks."))
        if v is None:
            self.table.setRowCount(0)
            if self.decodes:
                self.state.setText(tr("Press “Decode in lanes” to decode the Decoding panel's sentence several ways."))
        else:
            self.state.setText(self._caption(v))
            self.table.setRowCount(len(v.lanes))
            for row, lane in enumerate(v.lanes):
                self._fill_row(row, lane)
        self._draw_tree(beam_lane(v))

    def _draw_tree(self, lane: Lane | None) -> None:
        """The beam lane's search tree at the cursor, under the lanes; without a beam lane the lanes take the
        height."""
        shown = lane is not None
        self.tree_box.setVisible(shown)
        policy = QSizePolicy.Policy.Maximum if shown else QSizePolicy.Policy.Expanding  # Maximum: its rows' height
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, policy)
        if lane is None:
            self.tree.set_steps((), self.pieces, self.eos_id)
            return
        title = tr("Beam tree of the “{lane}” lane (★ length-normalised score)")
        self.tree_title.setText(title.format(lane=lane_name(lane.view.settings)))
        self.tree.set_steps(lane.view.steps, self.pieces, self.eos_id)

    def _caption(self, v: LanesView) -> str:
        parted = [lane.parted_at for lane in v.lanes if lane.parted_at is not None]
        said = tr("Step {n} of “{text}”.").format(n=v.position, text=v.text)
        if parted:
            said += " " + tr("The first lanes part at token {n}.").format(n=min(parted) + 1)
        elif v.position:
            said += " " + tr("All lanes agree so far.")
        return said + (" " + tr("Every lane has finished.") if v.at_end else "")

    def _fill_row(self, row: int, lane: Lane) -> None:
        name = QTableWidgetItem(lane_name(lane.view.settings) + (" ✓" if lane.view.at_end else ""))
        self.table.setItem(row, 0, name)
        tokens = [escape(self.piece(t)) for t in lane.view.focus_tokens]
        cut = len(tokens) if lane.parted_at is None else lane.parted_at
        parts = [" ".join(tokens[:cut])] if cut else []
        if cut < len(tokens):
            parts.append(f'<span style="color:{PARTED}; font-weight:bold">{" ".join(tokens[cut:])}</span>')
        shown = " ".join(parts)
        output = named(QLabel(shown or "—"), f"lanes_output_{row}")
        output.setTextFormat(Qt.TextFormat.RichText)
        self.table.setCellWidget(row, 1, output)
        log_prob = QTableWidgetItem(f"{lane.log_prob:.2f}")
        log_prob.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.table.setItem(row, 2, log_prob)
        where = "—" if lane.parted_at is None else tr("token {n}").format(n=lane.parted_at + 1)
        self.table.setItem(row, 3, QTableWidgetItem(where))

    def texts(self) -> list[list[str]]:
        """What a person reads in the table, row by row (the output column as plain text)."""
        rows = []
        for r in range(self.table.rowCount()):
            cells = []
            for c in range(self.table.columnCount()):
                widget = self.table.cellWidget(r, c)
                item = self.table.item(r, c)
                if isinstance(widget, QLabel):
                    text = QTextDocumentFragment.fromHtml(widget.text()).toPlainText()
                else:
                    text = item.text() if item is not None else ""
                cells.append(text)
            rows.append(cells)
        return rows
