"""Fill the mask: an encoder-only (BERT-style) model guesses the tokens hidden behind ``<mask>``.

Shown by the decoding panel in place of its decoding controls when the model is encoder-only. A person types a
sentence with ``<mask>`` where a word is missing, or clicks tokens of the sentence to mask them (and clicks again to
unmask); each masked position gets a chart of the model's most probable fillers, and a token masked by clicking
keeps its original beside them.

Route: :class:`explorer.commands.FillMask` through the engine client (:mod:`explorer.engine_client`);
``Engine._fill_mask`` (explorer/engine_views.py) answers from ``Session.fill_mask`` on the engine's ``mask_filled``
signal (:meth:`FillMaskPanel._on_mask_filled`). A sentence with nothing masked yet is sent as
:class:`explorer.commands.Inspect` (``Session.inspect``, ``inspection_ready``): its tokens come back to be clicked,
and the attention panel shows its self-attention. Only the answer to this view's newest request is shown
(``EngineClient.fresh``); a refused request (``engine_failed``) is said here, in the view.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from explorer.commands import FillMask, Inspect
from explorer.i18n import N_, tr
from explorer.widgets import named
from explorer.widgets.candidates import CandidateBars
from explorer.widgets.token_strip import TokenStrip
from model.io.snapshots import FillMaskView, Inspection, MaskPrediction

if TYPE_CHECKING:
    from explorer.answers import InspectionReady, MaskFilled, RunInfo
    from explorer.engine_client import EngineClient

MASK = "<mask>"  # what a person types where the model should fill a word in (a model's own, e.g. [MASK], too)
CHART_COLUMNS = 2  # charts side by side; more masks wrap to further rows (the area scrolls)
CHART_MIN_HEIGHT = 190  # five readable bars and the chart's title
AXIS = N_("P(token | the rest of the sentence)")


class FillMaskPanel(QWidget):
    """A sentence with masked positions and an encoder-only model's guesses for each."""

    inspection_shown = Signal(Inspection)  # the input's bidirectional self-attention (the attention panel shows it)
    sentence_asked = Signal()  # the person asked for a sentence of their own
    sentence_edited = Signal(bool)  # the sentence was edited; True: the chips and map shown are the previous one's
    sample_asked = Signal()  # the person asked for a random test sentence (the decoding panel fetches it)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("fill_mask_view")
        self.client: EngineClient | None = None
        self.view: FillMaskView | None = None
        self.tokens: list[str] = []  # the input shown as chips: <bos> pieces <eos> (from a view or an inspection)
        self.masked: set[int] = set()  # input positions masked by clicking (1 = the first piece after <bos>)
        self.masked_in = ""  # the sentence those positions are positions of
        self.pending: int | None = None  # id of this view's newest request (a FillMask or an Inspect)
        self.mask_one = False  # a random sentence arrived: mask one of its tokens once they are known
        self.own_mask: str | None = None  # the model's own mask piece when it is not <mask> (BERT's [MASK])
        self.previous = False  # the box holds another sentence than the one shown (edited, not asked for yet)
        self.rng = random.Random()
        self.charts: list[CandidateBars] = []
        self._create()
        self._connect()
        self._lay_out()
        self.retranslate()

    def _create(self) -> None:
        self.input = named(QLineEdit(), "fill_mask_input")
        self.insert_button = named(QPushButton(), "fill_mask_insert_button")
        self.fill_button = named(QPushButton(), "fill_mask_button")
        self.sample_button = named(QPushButton(), "fill_mask_sample_button")
        self.top_k = named(QSpinBox(), "fill_mask_top_k_spin")
        self.top_k.setRange(1, 20)
        self.top_k.setValue(5)
        self.top_k_label = QLabel()
        self.chips = named(TokenStrip(), "fill_mask_tokens")
        self.chips.set_clickable(True)
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.message = named(QLabel(), "fill_mask_message")
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # it may quote the engine or the sentence
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color: #b26a00")
        self.message.hide()
        self.chart_box = QWidget()
        self.grid = QGridLayout(self.chart_box)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.chart_scroll = QScrollArea()
        self.chart_scroll.setWidgetResizable(True)
        self.chart_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.chart_scroll.setWidget(self.chart_box)

    def _connect(self) -> None:
        self.input.returnPressed.connect(self._on_fill_asked)
        self.fill_button.clicked.connect(self._on_fill_asked)
        self.insert_button.clicked.connect(self._insert_mask)
        self.sample_button.clicked.connect(self.sample_asked)
        self.input.textEdited.connect(self._on_typed)
        self.chips.chip_clicked.connect(self._on_chip)

    def _lay_out(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.input, 1)
        for button in (self.insert_button, self.fill_button, self.sample_button):
            top.addWidget(button)
        row = QHBoxLayout()
        row.addWidget(self.top_k_label)
        row.addWidget(self.top_k)
        row.addWidget(self.hint, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(3)
        layout.addLayout(top)
        layout.addLayout(row)
        layout.addWidget(self.chips)
        layout.addWidget(self.message)
        layout.addWidget(self.chart_scroll, 1)

    def retranslate(self) -> None:
        if self.own_mask is None:
            self.input.setPlaceholderText(tr("Type a sentence with <mask> where a word is missing, and press Enter"))
        else:
            said = tr("Type a sentence with <mask> or {mask} where a word is missing, and press Enter")
            self.input.setPlaceholderText(said.format(mask=self.own_mask))
        self.input.setToolTip(
            tr(
                "An encoder-only model reads the whole sentence at once, left and right of each <mask>, and guesses "
                "what is hidden there."
            )
        )
        self.insert_button.setText(tr("Insert <mask>"))
        self.insert_button.setToolTip(tr("Write <mask> at the cursor"))
        self.fill_button.setText(tr("Fill the mask"))
        self.sample_button.setText(tr("Random test sentence"))
        self.sample_button.setToolTip(
            tr(
                "Put a random sentence of the test split (sentences the model never trained on) in the box and "
                "mask one of its tokens."
            )
        )
        self.top_k_label.setText(tr("Guesses"))
        self.top_k.setToolTip(tr("How many guesses to show for each masked position"))
        self.hint.setText(tr("Click a token to mask it; click it again to unmask it."))
        for chart in self.charts:
            chart.retranslate()
        if self.view is not None:
            self.show_view(self.view)

    # -- the route to the engine -------------------------------------------------------------------
    def attach(self, client: EngineClient) -> None:
        self.client = client
        client.engine.mask_filled.connect(self._on_mask_filled)
        client.engine.inspection_ready.connect(self._on_inspection_ready)
        client.engine.engine_failed.connect(self._on_failed)

    def _on_fill_asked(self) -> None:
        self.sentence_asked.emit()
        self.mask_one = False  # the person's own request: a random sentence's masking is not wanted now
        self.ask()

    def ask(self) -> None:
        """Send the sentence: its masks filled, or (nothing masked yet) its tokens to click."""
        text = self.input.text()
        if not text.strip():
            self.say(tr("Type a sentence first."))
            return
        if self.client is None:
            return
        if text != self.masked_in:  # another sentence (typed, pasted, undone…): the positions were the old one's
            self.masked.clear()
        self.masked_in = text
        if self.has_mask(text) or self.masked:
            self.pending = self.client.ask(FillMask(text, tuple(sorted(self.masked)), self.top_k.value()))
        else:
            self.pending = self.client.ask(Inspect(source=text))  # its tokens, to be clicked

    def has_mask(self, text: str) -> bool:
        """``text`` hides a word: <mask>, or the model's own mask piece, is written in it."""
        return MASK in text or (self.own_mask is not None and self.own_mask in text)

    def redo(self) -> None:
        """The sentence shown, asked for again (with the model's weights of now): its masks filled, or its tokens."""
        if self.client is None:
            return
        if self.view is not None:
            clicked = tuple(p.position for p in self.view.predictions if p.original is not None)
            self.pending = self.client.ask(FillMask(self.view.text, clicked, self.top_k.value()))
        elif self.tokens:
            self.pending = self.client.ask(Inspect(source=self.masked_in))

    def _on_mask_filled(self, reply: MaskFilled) -> None:
        if self.client is None or reply.request_id != self.pending or not self.client.fresh(FillMask, reply.request_id):
            return
        self.pending = None
        self.show_view(reply.view)

    def _on_inspection_ready(self, reply: InspectionReady) -> None:
        """The tokens of a sentence with nothing masked: shown to be clicked (the attention panel draws the map)."""
        if self.client is None or reply.request_id != self.pending or not self.client.fresh(Inspect, reply.request_id):
            return
        self.pending = None
        self.view = None
        self.tokens = list(reply.inspection.src_tokens)
        self.chips.set_tokens(self.tokens)
        self.chips.set_marks(set())
        self._show_charts([])
        self.inspection_shown.emit(reply.inspection)  # the attention panel shows the sentence's map
        self._mark_previous()
        if self.mask_one and len(self.tokens) > 2:
            self.mask_one = False
            self.masked = {self.rng.randrange(1, len(self.tokens) - 1)}  # one piece, never <bos> or <eos>
            self.ask()
            return
        said = tr("No <mask> in the sentence: write <mask> where a word is missing, or click a token to mask it.")
        if self.own_mask is not None:
            said = tr(
                "No <mask> or {mask} in the sentence: write one where a word is missing, or click a token to mask it."
            ).format(mask=self.own_mask)
        self.say(said)

    def _on_failed(self, request_id: int, message: str) -> None:
        if request_id == self.pending:
            self.pending = None
            self.say(message)

    # -- the person's edits ------------------------------------------------------------------------
    def _on_typed(self, _text: str) -> None:
        """A new sentence: the positions clicked were positions of the old one, and what is shown is its."""
        self.masked.clear()
        self.mask_one = False
        self._mark_previous()

    def _mark_previous(self) -> None:
        """The chips drawn faint (and, through ``sentence_edited``, the attention map marked) while the box holds
        a sentence other than the one they show."""
        shown = self.view.text if self.view is not None else (self.masked_in if self.tokens else None)
        previous = shown is not None and self.input.text() != shown
        if previous != self.previous:
            self.previous = previous
            self.chips.set_faded(previous)
            self.sentence_edited.emit(previous)

    def _insert_mask(self) -> None:
        self.input.insert(MASK)
        self.input.setFocus()

    def _on_chip(self, index: int) -> None:
        """Mask the clicked token, or unmask it; then ask again."""
        if index <= 0 or index >= len(self.tokens) - 1:
            return  # <bos> and <eos> frame the sentence; they are not masked
        typed = {p.position for p in self.view.predictions if p.original is None} if self.view else set()
        if index in typed:
            self.say(tr("This <mask> is written in the sentence: delete it there to unmask it."))
            return
        self.masked ^= {index}
        self.ask()

    def take_sentence(self, text: str, fill: bool) -> None:
        """A random test sentence in the box; with ``fill``, one of its tokens masked and guessed."""
        self.input.setText(text)
        self.masked.clear()
        self.mask_one = fill
        self._mark_previous()
        if fill:
            self.ask()

    # -- showing -----------------------------------------------------------------------------------
    def say(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    def clear(self) -> None:
        """Nothing of the last sentence on screen (a new model, or a new sentence on its way)."""
        self.view, self.tokens, self.pending, self.mask_one = None, [], None, False
        self.masked.clear()
        self.chips.set_tokens([])
        self.chips.set_marks(set())
        self._show_charts([])
        self.say("")
        self._mark_previous()

    def on_run(self, info: RunInfo, new_model: bool) -> None:
        if new_model:
            self.clear()
            self.input.clear()
            own = info.mask_token if "fill_mask" in info.model_config.family.decoding else None
            self.own_mask = None if own in (None, MASK) else own
            self.retranslate()

    def show_view(self, view: FillMaskView) -> None:
        """The model's guesses for each masked position (the engine client has dropped stale answers)."""
        self.view, self.tokens = view, list(view.tokens)
        self.masked = {p.position for p in view.predictions if p.original is not None}
        self.masked_in = view.text
        tips = {
            p.position: tr("“{token}”, masked: click to unmask it").format(token=p.original)
            if p.original is not None
            else tr("<mask> written in the sentence")
            for p in view.predictions
        }
        self.chips.set_tokens(self.tokens)
        self.chips.set_marks({p.position for p in view.predictions}, tips)
        self._show_charts(view.predictions)
        self.say("")
        self.inspection_shown.emit(view.inspection)
        self._mark_previous()

    def _show_charts(self, predictions: list[MaskPrediction]) -> None:
        """One chart per masked position, left to right; the charts made before are reused."""
        while len(self.charts) < len(predictions):
            chart = CandidateBars(f"fill_mask_chart_{len(self.charts)}")
            chart.set_axis_label(AXIS)
            chart.setMinimumHeight(CHART_MIN_HEIGHT)
            chart.note.setMinimumHeight(2 * chart.note.fontMetrics().lineSpacing())  # charts side by side stay level
            chart.note.setAlignment(Qt.AlignmentFlag.AlignTop)
            self.charts.append(chart)
        for i, chart in enumerate(self.charts):
            if i >= len(predictions):
                self.grid.removeWidget(chart)
                chart.hide()
                continue
            self.grid.addWidget(chart, i // CHART_COLUMNS, i % CHART_COLUMNS)
            chart.show()
            self._fill_chart(chart, predictions[i])

    def _fill_chart(self, chart: CandidateBars, p: MaskPrediction) -> None:
        """The guesses for one position; the original token, when a click masked it, highlighted among them."""
        found = p.tokens.index(p.original) if p.original in p.tokens else None
        if p.original is None:
            title = tr("Position {n}: <mask> as written").format(n=p.position)
            note = tr("Written as <mask>: there is no original to compare with.")  # (the charts' axes stay level)
        else:
            title = tr("Position {n}: was “{token}”").format(n=p.position, token=p.original)
            if found == 0:
                note = tr("The original “{token}” is the model's first guess.")
            elif found is not None:
                note = tr("The original “{token}” is the model's guess number {rank}.")
            else:
                note = tr("The original “{token}” is not among the model's {n} guesses.")
            note = note.format(token=p.original, rank=(found or 0) + 1, n=len(p.tokens))
        chart.set_title(title)
        chart.set_data(p.tokens, np.asarray(p.probs), set() if found is None else {found})
        chart.set_note(note)
