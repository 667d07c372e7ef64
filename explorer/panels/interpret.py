"""The Why panel: why did the model say that? Attribution of each output token to the input, and the logit lens.

It follows the Decoding panel: the sentence decoded and its output up to the step shown (a GPT's prompt and
continuation; a BERT's fill-mask text, its masked positions explained). The Attribution tab draws a target × source
matrix (:class:`explorer.panels.interpret_views.AttributionMap`) by integrated gradients, gradient × input or
attention rollout, optionally contrastive — "why X rather than Y", Y a candidate of the current step, clicked in
the Decoding panel's chart or chosen here —, and tints the Decoding panel's source chips by the current step's row
(:meth:`explorer.panels.decoding.DecodingPanel.show_source_weights`). The Logit lens tab shows what each layer
would predict at the current step (:class:`explorer.panels.interpret_views.LensView`).

Route: ``client.ask(Attribute(...))`` and ``client.ask(LogitLensOf(...))`` (both LATEST_ONLY: the engine serves only
the newest while stepping) → ``Engine._dispatch`` → ``InterpretHandlers._attribute`` / ``_logit_lens``
(explorer/engine_interpret.py) → ``Session.attribute`` / ``Session.logit_lens`` (model/session/interpret.py) → the
``attributed`` / ``lens_ready`` signals (:meth:`WhyPanel._on_attributed`, :meth:`WhyPanel._on_lens`), drawn only
when ``client.fresh``. Nothing is computed while the panel is off screen (a tab behind another); it asks when it
comes on screen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.answers import Attributed, LensReady, SweepProgress
from explorer.commands import Attribute, LogitLensOf, WatchLens
from explorer.i18n import N_, tr
from explorer.panels.interpret_state import TABS, WhyView
from explorer.panels.interpret_views import AttributionMap, LensView
from explorer.pieces import shown_piece, shown_pieces
from explorer.widgets import named
from model.interpret.results import LensTable
from model.io.snapshots import DecodeView, Inspection

if TYPE_CHECKING:
    from explorer.answers import RunInfo
    from explorer.engine_client import EngineClient
    from explorer.panels.decoding import DecodingPanel
    from model.interpret.results import Attribution

METHODS = (
    ("integrated_gradients", N_("Integrated gradients")),
    ("gradient_x_input", N_("Gradient × input")),
    ("attention_rollout", N_("Attention rollout")),
)
METHOD_NOTES = {
    "integrated_gradients": N_(
        "Integrated gradients: each cell is how much that input token moved log P of the row's token, summed along "
        "a path from a blank input (all-zero embeddings) to the real one. A row adds up to log P − log P(blank)."
    ),
    "gradient_x_input": N_(
        "Gradient × input: each input token's embedding times the gradient of log P of the row's token — a quick, "
        "local estimate of what a small change of that token would do."
    ),
    "attention_rollout": N_(
        "Attention rollout: every layer's attention (with its residual path) multiplied through, how much of each "
        "input token reaches the row's token. Attention, not cause: never negative."
    ),
}
COLOURS = N_("Red: pushed towards the row's token; blue: pushed against it. The outlined row is the current step.")
TAB_TITLES = (N_("Attribution"), N_("Logit lens"))


@dataclass(frozen=True)
class Question:
    """What is explained: the text read and the output so far (None: the model's own, e.g. a BERT's guesses)."""

    source: str
    target_ids: tuple[int, ...] | None
    chosen: int | None  # the token of the current step (the X of "why X rather than Y")
    candidates: tuple[int, ...]  # the current step's other candidates (the Ys offered)


class WhyPanel(QWidget):
    """Attribution and the logit lens of what the Decoding panel shows, at its current step."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("why_panel")
        self.client: EngineClient | None = None
        self.decoding: DecodingPanel | None = None
        self.info: RunInfo | None = None
        self.question: Question | None = None
        self.asked: tuple | None = None  # the question and choices last asked (the same again is not asked)
        self.attribution: Attribution | None = None
        self.waiting: int | None = None  # the id of the attribution asked for and not answered yet
        self.on_screen = False  # True while the panel is looked at (set_on_screen): nothing is computed before
        self.lens_watched = False  # the engine was told the lens is looked at (decoding steps then bring it)
        self.step_lens: tuple[Question | None, LensTable] | None = None  # the last decoding step's, with its question
        self.lens_asked: int | None = None  # the LogitLensOf awaited (None: the lens shown needs no answer)
        self.pieces: tuple[str, ...] = ()
        self.eos_id = 2
        self._create()
        self._connect()
        self._lay_out()
        self.retranslate()

    def _create(self) -> None:
        self.method = named(QComboBox(), "why_method_combo")
        for key, _ in METHODS:
            self.method.addItem("", key)
        self.steps = named(QSpinBox(), "why_steps_spin")
        self.steps.setRange(1, 256)
        self.steps.setValue(WhyView().steps)
        self.contrast = named(QComboBox(), "why_contrast_combo")
        self.contrast.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        for combo, width in ((self.method, 110), (self.contrast, 60)):  # as wide as their texts where there is room,
            combo.setMinimumWidth(width)  # narrower where the panel stands beside the Decoding panel on 1024 px
        self.clear_button = named(QPushButton(), "why_clear_button")
        self.on_source = named(QCheckBox(), "why_on_source_check")
        self.on_source.setChecked(True)
        self.method_label, self.steps_label, self.contrast_label = QLabel(), QLabel(), QLabel()
        self.map = AttributionMap()
        self.note = named(QLabel(), "why_note")
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.state = named(QLabel(), "why_state")  # computing…, or what to do first
        self.state.setTextFormat(Qt.TextFormat.PlainText)
        self.state.setWordWrap(True)
        self.lens = LensView()
        self.tabs = named(QTabWidget(), "why_tabs")

    def _connect(self) -> None:
        self.method.currentIndexChanged.connect(self._on_method)
        self.steps.editingFinished.connect(self.refresh)
        self.contrast.activated.connect(lambda _: self.refresh())
        self.clear_button.clicked.connect(self.clear_contrast)
        self.on_source.toggled.connect(lambda _: self._tint_source())
        self.tabs.currentChanged.connect(lambda _: self._watch_lens())

    def _lay_out(self) -> None:
        self.controls = QWidget()  # presenter mode hides these rows
        row = QHBoxLayout(self.controls)
        row.setContentsMargins(0, 0, 0, 0)
        for w in (self.method_label, self.method, self.steps_label, self.steps, self.contrast_label, self.contrast):
            row.addWidget(w)
        row.addWidget(self.clear_button)
        row.addStretch(1)
        attribution = QWidget()
        a = QVBoxLayout(attribution)
        a.setContentsMargins(0, 0, 0, 0)
        a.addWidget(self.map, 1)
        a.addWidget(self.note)
        a.addWidget(self.on_source)
        self.tabs.addTab(attribution, "")
        self.tabs.addTab(self.lens, "")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.controls)
        layout.addWidget(self.state)
        layout.addWidget(self.tabs, 1)

    def retranslate(self) -> None:
        for i, (_, name) in enumerate(METHODS):
            self.method.setItemText(i, tr(name))
        self.method_label.setText(tr("Method"))
        self.steps_label.setText(tr("Steps"))
        self.steps.setToolTip(tr("Integrated gradients: points on the path from the blank input (more: exacter)"))
        self.contrast_label.setText(tr("Rather than"))
        self.contrast.setToolTip(tr("Why the current token rather than this one? (Or click a candidate's bar.)"))
        self.clear_button.setText(tr("Clear"))
        self.on_source.setText(tr("Show on the source words"))
        for i, title in enumerate(TAB_TITLES):
            self.tabs.setTabText(i, tr(title))
        self.map.retranslate()
        self.lens.retranslate()
        self._fill_contrast()
        self._describe()

    def set_presenting(self, on: bool) -> None:
        """Presenter mode: the rows that choose leave their height to the views."""
        self.controls.setVisible(not on)

    # -- the view state ------------------------------------------------------------------------------------------
    def view(self) -> WhyView:
        contrast = self.contrast.currentData()
        return WhyView(
            TABS[self.tabs.currentIndex()],
            str(self.method.currentData()),
            self.steps.value(),
            None if contrast is None else int(contrast),
            self.on_source.isChecked(),
        )

    def show_view(self, v: WhyView) -> None:
        self.tabs.setCurrentIndex(TABS.index(v.tab))
        self.method.setCurrentIndex(max(0, self.method.findData(v.method)))
        self.steps.setValue(v.steps)
        self.on_source.setChecked(v.on_source)
        self._choose_contrast(v.contrast)
        self.refresh()

    # -- what the decoding panel shows ---------------------------------------------------------------------------
    def attach(self, client: EngineClient, decoding: DecodingPanel) -> None:
        self.client, self.decoding = client, decoding
        client.engine.attributed.connect(self._on_attributed)
        client.engine.lens_ready.connect(self._on_lens)
        client.engine.sweep_progressed.connect(self._on_progress)  # a long attribution's, by its request id
        client.engine.engine_failed.connect(self._on_failed)
        decoding.view_shown.connect(self.on_decode)
        decoding.inspection_shown.connect(self.on_inspection)
        decoding.candidate_clicked.connect(self.on_candidate)
        self._watch_lens()

    def on_run(self, info: RunInfo) -> None:
        self.info = info
        self.eos_id = info.model_config.eos_id
        self.pieces = shown_pieces(info.tgt_pieces)
        self.question, self.asked, self.attribution = None, None, None
        self.step_lens, self.lens_asked = None, None
        self.map.draw(None)
        self.lens.show_table(None)
        self._fill_contrast()
        self._tint_source()
        self._describe()

    def piece(self, token: int) -> str:
        """A target token as the Decoding panel's chart writes it."""
        if token == self.eos_id:
            return "<eos>"
        return self.pieces[token] if 0 <= token < len(self.pieces) else f"#{token}"

    def on_decode(self, view: DecodeView) -> None:
        """A decoding step was shown: explain its output so far (nothing before the first step). While the lens
        is watched, the step's logit lens came with it."""
        question = question_of(view, self.eos_id, self._generating)
        self.step_lens = None if view.lens is None else (question, view.lens)
        self._follow(question)

    def on_inspection(self, inspection: Inspection) -> None:
        """An encoder-only model's fill-mask text: its masked positions are explained."""
        fills = self.info is not None and "fill_mask" in self.info.model_config.family.decoding
        if fills and any(is_mask(t) for t in inspection.src_tokens):  # a sentence with nothing masked: no question
            self._follow(Question(inspection.source, None, None, ()))

    @property
    def _generating(self) -> bool:
        return self.info is not None and "generate" in self.info.model_config.family.decoding

    def _follow(self, question: Question | None) -> None:
        step_changed = question != self.question
        self.question = question
        if step_changed:
            self.attribution = None
            self._tint_source()
            self._fill_contrast()
        self.refresh()

    def on_candidate(self, _index: int, token: str) -> None:
        """A bar of the Decoding panel's candidates was clicked: that token becomes the contrast, if it is one of
        the current step's candidates (another node of a beam tree may be shown)."""
        for i in range(self.contrast.count()):
            if self.contrast.itemData(i) is not None and self.contrast.itemText(i) == token:
                self.contrast.setCurrentIndex(i)
                self.refresh()
                return

    def clear_contrast(self) -> None:
        self.contrast.setCurrentIndex(0)
        self.refresh()

    def set_on_screen(self, on: bool) -> None:
        """Told by the dock: a tab behind another is not computed for (and tints no chip)."""
        self.on_screen = on
        self._watch_lens()
        if on:
            self.refresh()
        self._tint_source()

    def _watch_lens(self) -> None:
        """Tell the engine whether the lens is looked at: while it is, each decoding step reads it out of its own
        decoder call (a few operations) instead of the lens asking for a pass of its own."""
        on = self.on_screen and self.tabs.currentWidget() is self.lens
        if self.client is not None and on != self.lens_watched:
            self.lens_watched = on
            self.client.ask(WatchLens(on))

    # -- asking ---------------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Ask for the attribution and the lens of the question with the choices of now (not again for the same)."""
        self.steps.setEnabled(self.method.currentData() == "integrated_gradients")
        q = self.question
        if q is None or self.client is None or not self.on_screen:
            self._describe()
            return
        method, steps, contrast = str(self.method.currentData()), self.steps.value(), self.contrast.currentData()
        key = (q, method, steps, contrast)
        if key == self.asked:
            return
        if self.asked is None or self.asked[0] != q:
            if self.step_lens is not None and self.step_lens[0] == q:
                self.lens_asked = None
                self.lens.show_table(self.step_lens[1])  # the decoding step read it out already
            else:
                self.lens_asked = self.client.ask(LogitLensOf(source=q.source, target_ids=q.target_ids, top_k=5))
        self.asked = key
        self.waiting = self.client.ask(Attribute(q.source, method, q.target_ids, contrast, steps))  # type: ignore[arg-type]
        self.say(tr("Computing…"))

    def _on_method(self) -> None:
        self._describe()
        self.refresh()

    def _on_attributed(self, reply: Attributed) -> None:
        if self.client is None or not self.client.fresh(Attribute, reply.request_id):
            return
        self.attribution, self.waiting = reply.attribution, None
        self.map.draw(reply.attribution, reply.attribution.scores.shape[0] - 1)
        self.say("")
        self._describe()
        self._tint_source()

    def _on_progress(self, progress: SweepProgress) -> None:
        """How far integrated gradients are (told after each batch of the path's points: a long text's take
        minutes on a CPU)."""
        if progress.request_id == self.waiting and progress.done < progress.total:
            said = tr("Computing… {done} of {total} points of the path")
            self.say(said.format(done=progress.done, total=progress.total))

    def _on_failed(self, request_id: int, _message: str) -> None:
        """The engine could not explain it (the window says why): nothing is computing any more."""
        if request_id == self.waiting:
            self.waiting = None
            self.say("")

    def _on_lens(self, reply: LensReady) -> None:
        if self.client is not None and reply.request_id == self.lens_asked:
            self.lens.show_table(reply.table)

    # -- what is said and tinted ---------------------------------------------------------------------------------
    def _describe(self) -> None:
        method = str(self.method.currentData())
        self.map.set_title(dict(METHODS)[method])
        note = tr(METHOD_NOTES[method]) + " " + tr(COLOURS)
        a = self.attribution
        if a is not None and a.contrast is not None and a.target_tokens:
            said = tr("Last row: why “{x}” rather than “{y}” — log P(“{x}”) − log P(“{y}”) explained.")
            note += "\n" + said.format(x=shown_piece(a.target_tokens[-1]), y=shown_piece(a.contrast))
        self.note.setText(note)
        if self.question is None:
            self.say(tr("Step the decoding (or fill a mask): why the model said each token appears here."))

    def say(self, text: str) -> None:
        """A line above the tabs: computing, or what to do first ("": none, and no empty line either)."""
        self.state.setText(text)
        self.state.setVisible(bool(text))

    def _fill_contrast(self) -> None:
        """The current step's candidates other than its token, to contrast with (kept if still offered)."""
        kept = self.contrast.currentData()
        self.contrast.clear()
        self.contrast.addItem(tr("(nothing)"), None)
        for t in self.question.candidates if self.question is not None else ():
            self.contrast.addItem(self.piece(t), t)
        self._choose_contrast(kept)
        self.contrast.setEnabled(self.contrast.count() > 1)

    def _choose_contrast(self, token: int | None) -> None:
        self.contrast.setCurrentIndex(max(0, self.contrast.findData(token)) if token is not None else 0)

    def current_row(self) -> np.ndarray | None:
        """The current step's row of the attribution over the source (the last target token's), if shown."""
        a = self.attribution
        return None if a is None or not a.scores.size else np.asarray(a.scores[-1])

    def _tint_source(self) -> None:
        """The Decoding panel's source chips tinted by the current step's row (off screen or unchecked: plain)."""
        if self.decoding is None:
            return
        row, a = self.current_row(), self.attribution
        if row is None or a is None or not self.on_screen or not self.on_source.isChecked():
            self.decoding.show_source_weights(None)
            return
        legend = tr("Tint: each source token's attribution to “{token}” (red: for it, blue: against it)")
        self.decoding.show_source_weights(list(row), legend.format(token=shown_piece(a.target_tokens[-1])))


def is_mask(token: str) -> bool:
    """A masked position's token as the tokenizers write it (``<mask>``, a BERT folder's ``[MASK]``)."""
    return token.lower() in ("<mask>", "[mask]")


def question_of(view: DecodeView, eos_id: int, generating: bool) -> Question | None:
    """What a decoding step asks to explain: the sentence and the output up to this step (its token last), and the
    step's other candidates; None before the first step."""
    done = view.at_end and bool(view.hypotheses)
    ids = tuple(view.hypotheses[0][3]) if done else tuple(view.focus_tokens)
    if not generating:  # a translation's rows never include <eos> (the session leaves it out of a given target)
        ids = tuple(t for t in ids if t != eos_id)
    if not ids:
        return None
    candidates: tuple[int, ...] = ()
    if view.steps and len(ids) == len(view.steps):  # the last step chose the last token: its candidates
        step = view.steps[len(ids) - 1]
        rows = [r for r, p in enumerate(step.prefixes) if tuple(p) == ids[:-1]]
        tops = step.top_tokens[rows[0]] if rows else step.top_tokens[0]
        candidates = tuple(int(t) for t in tops if int(t) != ids[-1])
    return Question(view.settings.text, ids, ids[-1], candidates)
