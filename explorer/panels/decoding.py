"""Decoding panel: type a sentence and watch the model translate it one token at a time (or, for a decoder-only
model, type a prompt and watch it continue the text; for an encoder-only model, fill masks).

Route: a button makes a :class:`explorer.commands.Decode` command and sends it through the engine
client (:mod:`explorer.engine_client`); ``Engine._decode`` (explorer/worker.py) answers from
:class:`model.decoding.stepping.DecodeDriver`, and the answer arrives on the engine's ``decode_stepped``
signal (:meth:`DecodingPanel._on_decode_stepped`). Only the answer to the newest decoding request
is shown (the engine client's one freshness rule: a step of a sentence that has since been
replaced, or asked for before a newer click, is dropped); the Attention panel follows what this
panel shows (``view_shown``). Every click is carried out in order; while a step takes long,
:class:`explorer.panels.decoding_progress.DecodingProgress` says which step is computing and how many clicks
wait. A sentence typed but not decoded yet marks what is shown as the previous sentence's (``sentence_edited``).

A random test sentence (the button, and a new model's first sentence) takes the same route:
:class:`explorer.commands.SampleSentence` → ``Engine._sample_sentence`` → ``Session.sample_source`` → the
``sentence_sampled`` signal (:meth:`DecodingPanel._on_sentence_sampled`). The words offered as the person types
are the run's ``RunInfo.src_words``.

The model's family (``RunInfo.model_config.arch``) decides what is shown. A decoder-only model continues a prompt:
the sentence box is its prompt, and a third mode, Sample, draws each token at random (temperature, top-k, top-p and
seed travel in :class:`model.io.snapshots.DecodeSettings`); the candidates show which tokens the cuts removed and which
one was drawn (``DecodeStep.cut``, ``DecodeStep.sampled``). An encoder-only model cannot decode: the panel shows its
:class:`explorer.panels.fill_mask.FillMaskPanel` instead (its own route, in its docstring).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.commands import Decode, DecodeAction, SampleSentence
from explorer.i18n import N_, tr
from explorer.panels.decoding_progress import DecodingProgress
from explorer.panels.fill_mask import FillMaskPanel
from explorer.widgets import named
from explorer.widgets.beam_tree import BeamTreeView
from explorer.widgets.candidates import AXIS, CandidateBars
from explorer.widgets.export import render_widget, titled_view, write_rows
from explorer.widgets.heatmap import Heatmap
from explorer.widgets.token_strip import TokenStrip, shown_piece
from explorer.widgets.word_completer import WordCompleter
from model.data.tokenization import join_words
from model.io.snapshots import DecodeSettings, DecodeStep, DecodeView, Inspection

if TYPE_CHECKING:
    from explorer.answers import DecodeStepped, RunInfo, SentenceSampled
    from explorer.engine_client import EngineClient

# what the sample button says of a corpus without a test split (the split it took the sentence from instead)
FALLBACK_SPLIT = {
    "valid": N_("This corpus has no test split: the sentence came from the validation split."),
    "train": N_("This corpus has no test or validation split: the sentence came from the training split."),
}


GENERATION_AXIS = N_("P(token | text so far)")  # what a decoder-only model's bars measure: it reads no source
AT_STEP_0 = N_("Step 0: nothing written yet — press Step ▶ for the first token's candidates")
CROSS_TITLE = N_("This step's cross-attention")
CROSS_AT_STEP_0 = N_("Step 0: press Step ▶ to see where the first token looks")
CHART_HEIGHT = 233  # the candidates' title and a chart 200 px high with ten readable labels
PREFIX_SHOWN = 8  # pieces of the prefix named in the candidates' title
SPEEDS = (0.5, 1.0, 2.0, 3.0, 5.0)  # auto-play's steps a second: the speed slider's notches (+ and − in presenter mode)
LARGE = 1.5  # the output line's type over the interface's (and, in presenter mode, the sentence's and the step's)


def prompt_of(sentence: str) -> str:
    """The beginning of a corpus sentence, for a decoder-only model to continue: its first half of words, or of
    characters for a text written without spaces (Chinese)."""
    words = sentence.split()
    if len(words) > 1:
        return " ".join(words[: max(1, len(words) // 2)])
    return sentence.strip()[: max(1, len(sentence.strip()) // 2)]


def large_font() -> QFont:
    """The interface's font, ``LARGE`` times its size."""
    font = QFont(QApplication.font())
    font.setPointSizeF(font.pointSizeF() * LARGE)
    return font


def joined(prompt: str, continuation: str) -> str:
    """What separates a prompt from its continuation in the model's text: a space between words, none beside
    Chinese or before punctuation (the tokenizers' own rule, :func:`model.data.tokenization.join_words`)."""
    if not prompt or not continuation:
        return ""
    return join_words([prompt[-1], continuation[0]])[1:-1]


class DecodingPanel(QWidget):
    """Step ▶, Back ◀, Run to end, Reset and auto-play over greedy or beam-search decoding (and sampling, for a
    decoder-only model); an encoder-only model's fill-mask view in their place."""

    view_shown = Signal(DecodeView)  # after the panel has drawn it (the Attention panel follows it)
    # attention of an input shown without a decode view (an encoder-only model's masked sentence)
    inspection_shown = Signal(Inspection)
    sentence_asked = Signal()  # the person asked for a sentence of their own to be decoded
    sentence_edited = Signal(bool)  # the sentence was edited; True: what is shown is the previous sentence's

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.client: EngineClient | None = None  # set by attach; without it the panel sends nothing
        self.setObjectName("decoding_panel")
        self.info: RunInfo | None = None
        self.view: DecodeView | None = None
        self.waiting = False  # a request is out; auto-play sends the next only after the answer
        self.progress = DecodingProgress(self)  # the requests out, and the busy state shown while they compute
        self.previous = False  # the sentence shown is not the one in the box (edited since): marked as previous
        self.pieces: tuple[str, ...] = ()  # the model's target pieces as the views write them (shown_piece)
        self._share_pending = False  # the beam tree appeared while its page was hidden: its height is shared later
        self.selected: tuple[int, int] | None = None  # (step, row) whose candidates are shown
        self.autoplay_on_start = False  # presenter mode: a new sentence plays by itself
        self.focus: str | None = None  # presenter mode: the part shown enlarged (see set_focus)
        self.requested: DecodeSettings | None = None  # the sentence and settings of the last start sent
        self.sample: tuple[int, bool] | None = None  # a random sentence asked for: request id, decode it on arrival
        self.sample_split = "test"  # the split the last random sentence came from
        self._filling = False  # the panel, not the person, is editing the input box
        self._create_inputs()
        self._create_sampling()
        self._create_stepping()
        self._create_views()
        self._connect()
        self._lay_out()
        self._on_mode()
        self.retranslate()
        self._update_buttons()

    def _create_inputs(self) -> None:
        """The sentence and the decoding settings."""
        self.prompt_label = named(QLabel(), "decode_prompt_label")  # a decoder-only model's sentence is its prompt
        self.prompt_label.hide()
        self.input = named(QLineEdit(), "decode_input")
        self.translate_button = named(QPushButton(), "decode_start_button")
        self.sample_button = named(QPushButton(), "decode_sample_button")
        self.completer = WordCompleter(self.input)  # the model's source words, for the word being typed
        self.chips = named(TokenStrip(), "decode_source_tokens")
        self.mode = named(QComboBox(), "decode_mode_combo")
        self.mode.addItem("", "greedy")
        self.mode.addItem("", "beam")
        self.beam_size = named(QSpinBox(), "beam_size_spin")
        self.beam_size.setRange(2, 16)
        self.beam_size.setValue(4)
        self.alpha = named(QDoubleSpinBox(), "decode_alpha_spin")
        self.alpha.setRange(0.0, 3.0)
        self.alpha.setSingleStep(0.1)
        self.alpha.setValue(0.6)
        self.max_len = named(QSpinBox(), "decode_max_len_spin")
        self.max_len.setRange(0, 256)  # 0: auto; the maximum follows the model's max_len (on_run)

    def _create_sampling(self) -> None:
        """Sample mode's settings (a decoder-only model): temperature, top-k, top-p and the seed."""
        self.temperature_spin = named(QDoubleSpinBox(), "temperature_spin")
        self.temperature_spin.setRange(0.05, 5.0)
        self.temperature_spin.setSingleStep(0.1)
        self.temperature_spin.setValue(1.0)
        self.top_k_spin = named(QSpinBox(), "top_k_spin")
        self.top_k_spin.setRange(0, 1000)  # 0: no cut
        self.top_k_spin.setValue(0)
        self.top_p_spin = named(QDoubleSpinBox(), "top_p_spin")
        self.top_p_spin.setRange(0.05, 1.0)  # 1: no cut
        self.top_p_spin.setSingleStep(0.05)
        self.top_p_spin.setValue(0.9)
        self.seed_spin = named(QSpinBox(), "seed_spin")
        self.seed_spin.setRange(-1, 999_999)  # −1: a new random seed for each sentence
        self.seed_spin.setValue(0)
        self.sampling_spins = (self.temperature_spin, self.top_k_spin, self.top_p_spin, self.seed_spin)
        self.sampling_box = named(QWidget(), "decode_sampling_box")
        self.sampling_labels = {key: QLabel() for key in ("temperature", "top_k", "top_p", "seed")}
        row = QHBoxLayout(self.sampling_box)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(4)
        for key, spin in zip(self.sampling_labels, self.sampling_spins):
            row.addWidget(self.sampling_labels[key])
            row.addWidget(spin)
        row.addStretch(1)
        self.sampling_box.hide()  # shown for a decoder-only model (_apply_family)

    def _create_stepping(self) -> None:
        """Back, Step, Run to end, Reset, and auto-play with its speed."""
        self.back_button = named(QPushButton(), "decode_back_button")
        self.step_button = named(QPushButton(), "decode_step_button")
        self.run_button = named(QPushButton(), "decode_run_button")
        self.reset_button = named(QPushButton(), "decode_reset_button")
        self.play_button = named(QPushButton(), "decode_autoplay_button")
        self.play_button.setCheckable(True)
        self.speed = named(QSlider(Qt.Orientation.Horizontal), "decode_speed_slider")
        self.speed.setRange(0, len(SPEEDS) - 1)  # a notch of SPEEDS
        self.speed.setPageStep(1)
        self.speed.setValue(SPEEDS.index(2.0))
        self.speed.setMaximumWidth(90)
        self.play_timer = QTimer(self)
        self.play_timer.setInterval(500)

    def _create_views(self) -> None:
        """The output so far, the notes about it, and the step's candidates, cross-attention and beams."""
        self.output = named(QLabel(), "decode_output")
        self.output.setTextFormat(Qt.TextFormat.RichText)  # the model's text in it is escaped (show_view)
        self.output.setWordWrap(True)
        self.output.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.output.setFont(large_font())
        self.sentence_label = named(QLabel(), "decode_sentence_label")  # presenter mode: the sentence, read-only
        self.sentence_label.setTextFormat(Qt.TextFormat.PlainText)
        self.sentence_label.setWordWrap(True)
        self.sentence_label.hide()
        self.reference = named(QLabel(), "decode_reference")
        self.reference.hide()  # shown when the sentence has a reference translation
        self.notice = named(QLabel(), "decode_notice")  # e.g. the input was cut to the model's length
        self.step_label = named(QLabel(), "decode_step_label")
        for label in (self.reference, self.notice, self.step_label):
            label.setTextFormat(Qt.TextFormat.PlainText)
        self.reference.setWordWrap(True)
        self.notice.setWordWrap(True)
        self.notice.setStyleSheet("color: #b26a00")
        self.notice.hide()
        self.candidates = CandidateBars("candidates_plot")
        self.cross = Heatmap("step_cross_heatmap", CROSS_TITLE, row_name=N_("head"), col_name=N_("source"))
        self.cross_layer = named(QSpinBox(), "step_cross_layer_spin")
        self.cross_layer.setRange(1, 1)
        self.tree = BeamTreeView("beam_tree_view")
        self.nbest = named(QTableWidget(0, 4), "nbest_list")
        self.nbest.verticalHeader().hide()
        header = self.nbest.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)  # the scores always in view
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)  # the translation takes what is left
        self.nbest.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.nbest.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.nbest.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.fill_view = FillMaskPanel()  # in place of all the above for an encoder-only model

    def _connect(self) -> None:
        self.input.returnPressed.connect(self._on_decode_asked)
        self.translate_button.clicked.connect(self._on_decode_asked)
        self.sample_button.clicked.connect(self.sample_test_sentence)
        self.input.textEdited.connect(self._on_typed)
        self.mode.currentIndexChanged.connect(self._on_mode)
        self.back_button.clicked.connect(lambda: self._act("back"))
        self.step_button.clicked.connect(lambda: self._act("step"))
        self.run_button.clicked.connect(lambda: self._act("run"))
        self.reset_button.clicked.connect(lambda: self._act("reset"))
        self.play_button.toggled.connect(self._on_play)
        self.speed.valueChanged.connect(lambda notch: self.play_timer.setInterval(round(1000 / SPEEDS[notch])))
        self.play_timer.timeout.connect(self._on_play_tick)
        self.cross_layer.valueChanged.connect(lambda _: self._draw_cross())
        self.tree.node_clicked.connect(self._on_node)
        self.progress.changed.connect(self._on_progress)
        self.fill_view.inspection_shown.connect(self.inspection_shown)
        self.fill_view.sentence_edited.connect(self.sentence_edited)
        self.fill_view.sentence_asked.connect(self.sentence_asked)
        self.fill_view.sentence_asked.connect(self._drop_sample)  # a random sentence on its way is not wanted now
        self.fill_view.input.textEdited.connect(self._drop_sample)
        self.fill_view.sample_asked.connect(self.sample_test_sentence)

    def _lay_out(self) -> None:
        """The decoding page; an encoder-only model's fill-mask view stacked behind it."""
        self.decoding_page = QWidget()
        self.pages = QStackedWidget()
        self.pages.addWidget(self.decoding_page)
        self.pages.addWidget(self.fill_view)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.pages)
        top = QHBoxLayout()
        top.addWidget(self.prompt_label)
        top.addWidget(self.input, 1)
        top.addWidget(self.translate_button)
        top.addWidget(self.sample_button)
        controls = QHBoxLayout()
        self.labels = {key: QLabel() for key in ("mode", "beam", "alpha", "max")}
        for key, w in (("mode", self.mode), ("beam", self.beam_size), ("alpha", self.alpha), ("max", self.max_len)):
            controls.addWidget(self.labels[key])
            controls.addWidget(w)
        controls.addStretch(1)
        controls.setSpacing(4)  # the panel fits beside the attention map on a 1024-px screen
        buttons = QHBoxLayout()
        for button in (self.back_button, self.step_button, self.run_button, self.reset_button, self.play_button):
            buttons.addWidget(button)
        self.speed_label = QLabel()
        buttons.addWidget(self.speed_label)
        buttons.addWidget(self.speed)
        buttons.addStretch(1)
        buttons.addWidget(self.step_label)
        buttons.setSpacing(4)
        self.speed_label.setMinimumWidth(0)
        self.buttons_row, self.presenter_row = buttons, QHBoxLayout()  # (set_presenting moves the step label)
        self.presenter_row.addWidget(self.sentence_label, 1)
        self.editing = QWidget()  # the rows that edit: presenter mode gives their height to the views
        editing = QVBoxLayout(self.editing)
        editing.setContentsMargins(0, 0, 0, 0)
        editing.setSpacing(3)  # on a 768-px screen every pixel of height goes to the candidates and the tree
        editing.addLayout(top)
        editing.addWidget(self.chips)
        editing.addLayout(controls)
        editing.addWidget(self.sampling_box)
        editing.addLayout(buttons)
        layout = QVBoxLayout(self.decoding_page)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(3)
        layout.addWidget(self.editing)
        layout.addLayout(self.presenter_row)
        for label in (self.notice, self.output, self.reference):
            layout.addWidget(label)
        layout.addWidget(self._lay_out_body(), 1)

    def _lay_out_body(self) -> QSplitter:
        """Candidates beside the step's cross-attention; below them the beam tree and the n-best list."""
        cross_box = self.cross_box = QWidget()
        cross_layout = QVBoxLayout(cross_box)
        cross_layout.setContentsMargins(0, 0, 0, 0)
        layer_row = QHBoxLayout()
        self.layer_label = QLabel()
        layer_row.addWidget(self.layer_label)
        layer_row.addWidget(self.cross_layer)
        layer_row.addStretch(1)
        cross_layout.addLayout(layer_row)
        cross_layout.addWidget(self.cross, 1)
        self.beam_box, self.nbest_box = QWidget(), QWidget()
        formats = ("PNG", "SVG", "CSV")
        self.tree_title, _ = titled_view(self.beam_box, self.tree, "beam_tree", self.tree.export, formats)
        nbest = self.nbest_box, self.nbest, "n_best", self.export_nbest, formats
        self.nbest_title, self.nbest_export = titled_view(*nbest)
        self.beside = QStackedWidget()  # beside the candidates: the step's cross-attention, or the n-best list
        self.beside.addWidget(cross_box)
        self.beside.addWidget(self.nbest_box)
        middle = self.middle = QSplitter(Qt.Orientation.Horizontal)
        middle.addWidget(self.candidates)
        middle.addWidget(self.beside)
        middle.setSizes([500, 500])
        body = self.body = QSplitter(Qt.Orientation.Vertical)
        body.addWidget(middle)
        body.addWidget(self.beam_box)
        body.setHandleWidth(4)
        body.setStretchFactor(0, 0)
        body.setStretchFactor(1, 1)  # a taller window gives its height to the tree
        return body

    def retranslate(self) -> None:
        self._name_inputs()
        self._name_sampling()
        self.labels["mode"].setText(tr("Mode"))
        self.labels["beam"].setText(tr("Beam size"))
        self.labels["alpha"].setText("α")
        self.labels["max"].setText(tr("Max length"))
        self.max_len.setSpecialValueText(tr("auto"))
        self._describe_max_len()
        self.alpha.setToolTip(tr("Length penalty α"))
        self.labels["alpha"].setToolTip(tr("Length penalty α"))
        self.back_button.setText("◀ " + tr("Back"))
        self.step_button.setText(tr("Step") + " ▶")
        self.run_button.setText(tr("Run to end"))
        self.reset_button.setText(tr("Reset"))
        self.play_button.setText(tr("Auto-play"))
        for button in (self.back_button, self.step_button, self.run_button, self.reset_button, self.play_button):
            # narrower than the style's 80-px minimum where the text allows: the panel fits a 1024-px screen
            button.setMinimumWidth(button.fontMetrics().horizontalAdvance(button.text()) + 14)
        self.speed_label.setText(tr("Speed"))
        self.layer_label.setText(tr("Layer"))
        self.tree_title.setText(tr("Beam tree (★ length-normalised score)"))
        self.tree_title.setToolTip(tr("Blue: kept · grey: pruned · green: finished · orange: the best hypothesis"))
        self.candidates.retranslate()
        self.cross.retranslate()
        self.fill_view.retranslate()
        if self.view is not None:
            self.show_view(self.view)

    def _name_inputs(self) -> None:
        """The sentence box, its buttons and the modes: a prompt, continued, for a decoder-only model."""
        generating = self.family == "decoder_only"
        self.prompt_label.setText(tr("Prompt"))
        help_text = tr(
            "The beginning of a text. The model continues it one token at a time, each chosen from its "
            "probabilities for the next token: the most probable (Greedy), drawn at random (Sample), or "
            "the best continuations kept side by side (Beam search)."
        )
        self.prompt_label.setToolTip(help_text)
        self.input.setToolTip(help_text if generating else "")
        self.input.setPlaceholderText(
            tr("Type the beginning of a text and press Enter") if generating else tr("Type a sentence and press Enter")
        )
        self.translate_button.setText(tr("Generate") if generating else tr("Decode"))
        output = tr("Continuation") if generating else tr("Translation")
        self.nbest.setHorizontalHeaderLabels([output, tr("Score"), tr("log P"), tr("Tokens")])
        self.nbest_title.setText(tr("n-best continuations") if generating else tr("n-best list"))
        self.sample_button.setText(tr("Random prompt") if generating else tr("Random test sentence"))
        self._describe_sample_button()
        for key, name in (("greedy", N_("Greedy")), ("sample", N_("Sample")), ("beam", N_("Beam search"))):
            if self.mode.findData(key) >= 0:
                self.mode.setItemText(self.mode.findData(key), tr(name))

    def _name_sampling(self) -> None:
        texts = {
            "temperature": (
                tr("Temperature"),
                tr(
                    "Divides the scores before the softmax: below 1 sharpens the "
                    "probabilities towards the most probable token, above 1 flattens "
                    "them."
                ),
            ),
            "top_k": (tr("Top-k"), tr("Draw only among the k most probable tokens (0: no cut).")),
            "top_p": (
                tr("Top-p"),
                tr("Draw only among the most probable tokens whose probabilities add up to p (1: no cut)."),
            ),
            "seed": (tr("Seed"), tr("The same seed draws the same tokens again (random: a new draw each time).")),
        }
        for (key, (label, tip)), spin in zip(texts.items(), self.sampling_spins):
            self.sampling_labels[key].setText(label)
            self.sampling_labels[key].setToolTip(tip)
            spin.setToolTip(tip)
        self.top_k_spin.setSpecialValueText(tr("off"))
        self.seed_spin.setSpecialValueText(tr("random"))

    @property
    def family(self) -> str:
        """The model's family: "encoder_decoder", "decoder_only" or "encoder_only"."""
        return self.info.model_config.arch if self.info is not None else "encoder_decoder"

    def _apply_family(self) -> None:
        """What the model's family needs: the fill-mask view (encoder-only), or a prompt and Sample mode
        (decoder-only), or the translator's panel."""
        generating = self.family == "decoder_only"
        self.pages.setCurrentIndex(1 if self.family == "encoder_only" else 0)
        self.prompt_label.setVisible(generating)
        self.sampling_box.setVisible(generating)
        sample = self.mode.findData("sample")
        if generating and sample < 0:
            self.mode.insertItem(1, tr("Sample"), "sample")
        elif not generating and sample >= 0:
            if self.mode.currentIndex() == sample:  # not the next item (beam search): nobody chose that
                self.mode.setCurrentIndex(self.mode.findData("greedy"))
            self.mode.removeItem(sample)
        self._name_inputs()
        self._on_mode()

    # -- requests --------------------------------------------------------------------------------
    def settings(self) -> DecodeSettings:
        beam = self.mode.currentData() == "beam"
        sampling: dict[str, Any] = {}
        if self.mode.currentData() == "sample":  # only offered for a decoder-only model
            seed = self.seed_spin.value()
            sampling = dict(
                temperature=self.temperature_spin.value(),
                sample_top_k=self.top_k_spin.value(),
                top_p=self.top_p_spin.value(),
                seed=None if seed < 0 else seed,
            )
        return DecodeSettings(
            text=self.input.text(),
            beam_size=self.beam_size.value() if beam else 1,
            length_penalty=self.alpha.value() if beam else 0.0,
            max_len=self.max_len.value() or None,
            **sampling,
        )

    def _on_decode_asked(self) -> None:
        self.sentence_asked.emit()
        self.start()

    def start(self) -> None:
        """Decode the sentence in the input box from the beginning; what showed the last one is cleared."""
        self.sample = None  # a random sentence still on its way would replace the one decoded now
        self.clear()
        if not self.input.text().strip():
            self.output.setText(html.escape(tr("Type a sentence first.")))
            return
        self.requested = self.settings()
        self.waiting = True
        self._send(Decode(action="start", settings=self.requested))
        if self.autoplay_on_start and not self.play_button.isChecked():
            self.play_button.setChecked(True)

    def clear(self) -> None:
        """Nothing of the last sentence stays on screen (a new one is coming, or it could not be decoded)."""
        self.view, self.selected = None, None
        self.output.clear()
        self.reference.clear()
        self.reference.hide()
        self.notice.clear()
        self.notice.hide()
        self.sentence_label.setText(self.input.text())
        self.chips.set_tokens([])
        self._mark_previous()
        self._describe_step()
        self.tree.set_steps((), self.pieces, self.eos_id)
        self.nbest.setRowCount(0)
        self._show_candidates()
        self._draw_cross()
        self._update_buttons()

    # -- the route to the engine -------------------------------------------------------------------
    def attach(self, client: EngineClient) -> None:
        self.client = client
        self.fill_view.attach(client)  # FillMask → mask_filled, Inspect → inspection_ready, engine_failed
        client.engine.decode_stepped.connect(self._on_decode_stepped)
        client.engine.sentence_sampled.connect(self._on_sentence_sampled)

    def _send(self, command: Decode) -> None:
        if self.client is not None:  # the newest decoding request is the one whose answer is shown
            self.progress.sent(self.client.ask(command), command.action)

    def _on_decode_stepped(self, reply: DecodeStepped) -> None:
        self.progress.answered(reply.request_id, reply.view.position)
        if self.client is not None and self.client.fresh(Decode, reply.request_id):
            self.show_view(reply.view)

    def _on_progress(self) -> None:
        """A request has been computing for a while, or more wait behind it, or all are answered."""
        self._update_buttons()
        self._describe_step()

    def redo(self) -> None:
        """What is shown, made again with the model's current weights (the attention panel's Update)."""
        if self.family == "encoder_only":
            self.fill_view.redo()
        elif self.view is not None and not self.waiting:
            self._act("show", restart=False)

    def play_sample(self, sentence: str) -> None:
        """Greedy decoding of ``sentence`` after its first step — its candidates, the token chosen and where
        it looked are on screen — ready for Step ▶: the first-launch demonstration."""
        self.mode.setCurrentIndex(self.mode.findData("greedy"))
        self.input.setText(sentence)
        self.start()
        self._act("step", restart=False)

    def sample_test_sentence(self) -> None:
        """A random sentence of the corpus's test split (never trained on) into the input box, decoded at once."""
        self._ask_sample(decode=True)

    def _ask_sample(self, decode: bool) -> None:
        if self.client is not None:
            self.sample = (self.client.ask(SampleSentence(split="test")), decode)

    def _on_sentence_sampled(self, reply: SentenceSampled) -> None:
        """The random sentence: dropped if the person typed or decoded since it was asked for."""
        if self.sample is None or self.sample[0] != reply.request_id:
            return
        decode, self.sample = self.sample[1], None
        if self.info is None or reply.run_id != self.info.run_id:
            return  # asked of a model that has been replaced since
        if reply.error is not None or reply.split is None:
            if decode:  # the person asked: say why there is no sentence (a new model's own fill stays quiet)
                said = tr("No sentence to take: this model's corpus cannot be read ({error}).")
                said = said.format(error=reply.error)
                self.notice.setText(said)
                self.notice.show()
                self.fill_view.say(said)
            return
        self.sample_split = reply.split
        self._describe_sample_button()
        if self.family == "encoder_only":
            self.fill_view.take_sentence(reply.source, fill=decode)
            return
        self._replace_input(prompt_of(reply.source) if self.family == "decoder_only" else reply.source)
        if decode:
            self.start()  # at step 0, ready to step

    def _describe_sample_button(self) -> None:
        if self.family == "decoder_only":
            tip = tr(
                "Put the beginning of a random sentence of the test split (sentences the model never trained "
                "on) in the box, for the model to continue."
            )
        else:
            tip = tr(
                "Put a random sentence of the test split (sentences the model never trained on) in the box and "
                "decode it; its reference translation is shown."
            )
        if self.sample_split in FALLBACK_SPLIT:
            tip += "\n" + tr(FALLBACK_SPLIT[self.sample_split])
        self.sample_button.setToolTip(tip)

    def _replace_input(self, text: str) -> None:
        """``text`` in the input box as one edit, which Ctrl+Z undoes (setText would forget what was there)."""
        self._filling = True
        try:
            self.input.selectAll()
            self.input.insert(text)  # replaces the selection; "" deletes it
        finally:
            self._filling = False
        self.completer.list.hide()

    def _drop_sample(self) -> None:
        self.sample = None

    def _on_typed(self, _text: str) -> None:
        """The person edits the sentence: a random sentence still on its way is not wanted; words are offered;
        what is shown is marked as the previous sentence's."""
        if self._filling:
            return
        self.sample = None
        self._mark_previous()
        self.completer.update_popup()

    def _mark_previous(self) -> None:
        """The chips, the step label and (through ``sentence_edited``) the attention map say that they show the
        previous sentence while the box holds another, not decoded yet."""
        previous = self.view is not None and self.input.text() != self.view.settings.text
        if previous != self.previous:
            self.previous = previous
            self.chips.set_faded(previous)
            self._describe_step()
            self.sentence_edited.emit(previous)

    def on_failed(self) -> None:
        """The engine refused a request: nothing is waited for, and auto-play must not keep hitting it."""
        self.waiting = False
        self.progress.failed()
        self.play_button.setChecked(False)

    def _act(self, action: DecodeAction, restart: bool = True) -> None:
        """Send a stepping action. A sentence or settings changed since the last start (``restart``),
        or a start that failed, begin again from the start."""
        out = self.view is not None or self.waiting
        if restart and (not out or self.settings() != self.requested):
            self.start()
            if action in ("reset", "back") or not self.waiting:
                return
        self.selected = None
        self.waiting = True
        self._send(Decode(action=action))

    def _on_mode(self) -> None:
        beam = self.mode.currentData() == "beam"
        self.beam_size.setEnabled(beam)
        self.alpha.setEnabled(beam)
        for spin in self.sampling_spins:
            spin.setEnabled(self.mode.currentData() == "sample")
        self._apply_focus(beam)

    def _on_play(self, on: bool) -> None:
        if on:
            if (self.view is None and not self.waiting) or (self.view is not None and self.view.at_end):
                self.start()
            self.play_timer.start()
        else:
            self.play_timer.stop()

    def _on_play_tick(self) -> None:
        if self.waiting:
            return
        if self.view is not None and self.view.at_end:
            self.play_button.setChecked(False)
            return
        self._act("step", restart=False)  # typing a new sentence does not restart a sentence playing

    def _update_buttons(self) -> None:
        """While a step computes (busy), Back, Run and Reset wait greyed; Step ▶ queues, and counts, its clicks."""
        v, busy = self.view, self.progress.busy
        self.back_button.setEnabled(v is not None and v.position > 0 and not busy)
        self.step_button.setEnabled(v is None or not v.at_end or busy)
        self.run_button.setEnabled((v is None or not v.at_end) and not busy)
        self.reset_button.setEnabled(v is not None and v.position > 0 and not busy)
        queued = self.progress.queued if busy else 0
        self.step_button.setText(tr("Step") + " ▶" + (f" (+{queued})" if queued else ""))

    def _describe_step(self) -> None:
        """The step shown (or, busy, the one being computed), and whether it is the previous sentence's."""
        v = self.view
        if self.progress.busy:
            text = self.progress.describe()
        elif v is None:
            text = ""
        else:
            text = (tr("Step {n}, finished") if v.at_end else tr("Step {n}")).format(n=len(v.steps))
        if self.previous and v is not None:
            text += " · " + tr("previous sentence")
        self.step_label.setText(text)
        self.step_label.setToolTip(
            tr("The sentence in the box is not decoded yet: Decode or Step ▶ starts it.") if self.previous else ""
        )

    # -- answers ---------------------------------------------------------------------------------
    def on_run(self, info: RunInfo) -> None:
        """A new model, or new training settings of the same one (keeps the sentence). Nothing of an old model
        stays on screen: its sentence goes (Ctrl+Z in the box brings it back) for one of the new model's own test
        split, decoded at once if the old one's decoding was showing."""
        new_model = self.info is None or info.run_id != self.info.run_id
        replaced = self.info is not None  # the first model replaces nothing: no sentence of its own is needed
        self.info = info
        self.max_len.setMaximum(info.model_config.max_len)  # a longer output has no decoder positions
        self._describe_max_len()
        self.fill_view.on_run(info, new_model)
        if new_model:
            self.cross_layer.setRange(1, max(1, info.model_config.n_decoder_layers))
            self.cross_layer.setValue(info.model_config.n_decoder_layers)
            decoding = self.view is not None or self.waiting or self.fill_view.view is not None
            self.play_button.setChecked(False)
            self.pieces = tuple(shown_piece(p) for p in info.tgt_pieces)
            self._apply_family()
            self.clear()
            self.completer.set_words(info.src_words)
            self.sample_split = "test"
            self._describe_sample_button()
            # a model opened from a folder has no sample sentence of its own (the bundled model's is played by the
            # first launch: asking for one would make the engine read the corpus on the launch path)
            if replaced or info.model_origin is not None:
                self._replace_input("")
                self._ask_sample(decode=decoding)
        elif self.view is not None and info.weights_step != self.view.weights_step and not self.waiting:
            self._act("show", restart=False)  # newer weights of the same run (a followed run): the same step, redone
        elif self.view is not None:
            self.show_view(self.view)

    def _describe_max_len(self) -> None:
        if self.family == "decoder_only":
            tip = tr(
                "Longest continuation in tokens (auto: 50, or what the model's length leaves after the prompt). "
                "At most {n}: the model's length limit."
            )
        else:
            tip = tr("Longest output in tokens (auto: 1.5 × the input + 10). At most {n}: the model's length limit.")
        self.max_len.setToolTip(tip.format(n=self.max_len.maximum()))

    @property
    def eos_id(self) -> int:
        return self.info.model_config.eos_id if self.info else 2

    def piece(self, token: int) -> str:
        """The target piece ``token`` as the views write it (a space as ␣, as the chips do)."""
        if token == self.eos_id:
            return "<eos>"
        return self.pieces[token] if 0 <= token < len(self.pieces) else f"#{token}"

    def show_view(self, view: DecodeView) -> None:
        """Show a decoding step (the engine client has dropped answers to requests made stale since)."""
        self.view, self.waiting = view, False
        self.chips.set_tokens(list(view.source_tokens), set(view.unknown), view.source_typed)
        beam = view.settings.beam_size > 1
        n_steps = len(view.steps)
        self._show_output(view)
        # a decoder-only model's "reference" would be its prompt's own sentence: not a translation to compare with
        reference = view.reference if self.family != "decoder_only" else None
        self.reference.setText(f"{tr('Reference (from the corpus)')}: {reference}" if reference else "")
        self.reference.setVisible(bool(reference))  # no empty line taken from the views when there is none
        self._note_input(view)
        self._mark_previous()
        self._describe_step()
        self.sentence_label.setText(view.settings.text)
        self._apply_focus(beam)
        if beam:
            self.tree.set_steps(view.steps, self.pieces, self.eos_id)
            self._fill_nbest(view)
            if self.focus == "tree":
                self._fit_nbest()
        last = n_steps - 1
        if self.selected is None or self.selected[0] > last:
            self.selected = (last, 0) if n_steps else None
        self._show_candidates()
        self._draw_cross()
        self._update_buttons()
        self.view_shown.emit(view)

    def _show_output(self, view: DecodeView) -> None:
        """The output so far, exactly the model's text: escaped (a token such as <unk> is not markup), spaces
        kept. A decoder-only model's: the prompt followed by its continuation (in bold)."""
        done = view.at_end and bool(view.hypotheses)
        text = view.hypotheses[0][0] if done else view.focus_text
        if self.family == "decoder_only":
            title = tr("Text") if view.at_end else tr("Text so far")
            prompt = " ".join(view.settings.text.split())
            more = "" if view.at_end else "…"
            shown = f"{html.escape(prompt + joined(prompt, text))}<b>{html.escape(text)}</b>{more}"
        else:
            title, text = (tr("Translation"), text or "∅") if done else (tr("Output so far"), text or "…")
            shown = f"<b>{html.escape(text)}</b>"
        self.output.setText(f"<span style='white-space:pre-wrap'>{html.escape(title)}: {shown}</span>")

    def set_focus(self, focus: str | None) -> None:
        """Presenter mode shows one part enlarged: ``"candidates"`` (the next-token chart and this step's
        cross-attention) or ``"tree"`` (the beam tree and the n-best list); None shows what the mode needs."""
        self.focus = focus
        beam = self.view.settings.beam_size > 1 if self.view is not None else self.mode.currentData() == "beam"
        self._apply_focus(beam)
        if focus == "tree":
            self._fit_nbest()

    def _fit_nbest(self) -> None:
        """The tree's view (presenter mode): the n-best list above the tree only as tall as its rows — its header and
        one row while no hypothesis has finished —, at most a third; the tree gets the rest."""
        table = self.nbest
        rows = max(1, table.rowCount()) * table.verticalHeader().defaultSectionSize()
        head = max(self.nbest_title.sizeHint().height(), self.nbest_export.sizeHint().height())  # its title row
        needed = head + table.horizontalHeader().sizeHint().height() + rows + 2 * table.frameWidth()
        height = sum(self.body.sizes()) or self.body.height()
        top = min(needed, height // 3)
        self.body.setSizes([top, height - top])

    def set_presenting(self, on: bool) -> None:
        """Presenter mode (once the interface's font has grown): the rows that edit — the sentence box, its tokens,
        the settings and the stepping buttons — leave their height to the views; the sentence, read-only, and the
        step count stay, side by side, in large type. Auto-play stops on the way out."""
        self.editing.setVisible(not on)
        self.sentence_label.setVisible(on)
        old, new = (self.buttons_row, self.presenter_row) if on else (self.presenter_row, self.buttons_row)
        old.removeWidget(self.step_label)
        new.addWidget(self.step_label)
        for label in (self.sentence_label, self.step_label):
            label.setFont(large_font() if on else QFont())  # (an empty font: the interface's again)
        self.output.setFont(large_font())
        self.autoplay_on_start = on
        if not on:
            self.play_button.setChecked(False)

    def _apply_focus(self, beam: bool) -> None:
        """Greedy: the candidates beside the step's cross-attention. Beam search: the candidates beside the
        n-best list, the beam tree below them (the attention panel shows the cross-attention). A decoder-only
        model has no cross-attention: its candidates take the whole width."""
        tree = self.focus == "tree" or (beam and self.focus is None)
        appears = tree and self.beam_box.isHidden()
        self.beside.setCurrentIndex(1 if tree else 0)
        for page in (self.cross_box, self.nbest_box):  # the page not shown sets no height (a stack takes its largest)
            policy = QSizePolicy.Policy.Preferred if page is self.beside.currentWidget() else QSizePolicy.Policy.Ignored
            page.setSizePolicy(policy, policy)
        self.beside.setVisible(tree or self.family != "decoder_only")
        self.candidates.setVisible(self.focus != "tree")
        self.beam_box.setVisible(tree)
        # the tree's share of the height, when it appears (a drag then wins); appearing on a page not shown (an
        # encoder-only model's), when that page is shown again: the splitter's sizes are known only then
        self._share_pending = tree and self.focus is None and (appears or self._share_pending)
        if self._share_pending and self.candidates.isVisibleTo(self):
            self._share_height()
            self._share_pending = False

    def _share_height(self) -> None:
        """The candidates get what their chart needs (more on a tall screen), the beam tree the rest: it
        needs the room, a row per hypothesis kept."""
        height = sum(self.body.sizes())
        chart = max(CHART_HEIGHT, int(0.45 * height))
        self.body.setSizes([chart, max(height - chart, 0)])

    def _note_input(self, view: DecodeView) -> None:
        """What the model did to the input: words it does not know, and a cut to its length (a plain-text label)."""
        notes = []
        unknown = list(dict.fromkeys(view.source_typed[i] for i in sorted(view.unknown) if i < len(view.source_typed)))
        if unknown:
            words = ", ".join(unknown[:8]) + (", …" if len(unknown) > 8 else "")
            one = tr("1 word is not in this model's vocabulary ({words}): it reads it as <unk>.")
            many = tr("{n} words are not in this model's vocabulary ({words}): it reads them as <unk>.")
            hint = (
                tr("Try words it knows — start typing for suggestions.")
                if self.completer.words.rowCount()
                else (tr("Try words it knows."))
            )
            said = (one if len(unknown) == 1 else many).format(n=len(unknown), words=words)
            notes.append(said + ("" if said.endswith("。") else " ") + hint)  # no space after a Chinese full stop
        cut = view.source_length - view.source_read
        if cut > 0:
            said = (
                tr(
                    "The prompt has {total} tokens but the model reads at most {kept}: it continues the first {kept}, "
                    "the other {cut} were ignored."
                )
                if self.family == "decoder_only"
                else tr(
                    "The input has {total} tokens but the model reads at most {kept}: "
                    "only the first {kept} were translated, the other {cut} were ignored."
                )
            )
            notes.append(said.format(total=view.source_length, kept=view.source_read, cut=cut))
        self.notice.setText("\n".join(notes))
        self.notice.setVisible(bool(notes))

    def export_nbest(self, path: str) -> None:
        if path.lower().endswith(".csv"):
            hyps = self.view.hypotheses if self.view else ()
            write_rows(
                path,
                ["rank", "translation", "score", "log_prob", "tokens"],
                [[i + 1, t, s, lp, len(ids)] for i, (t, s, lp, ids) in enumerate(hyps)],
            )
        else:
            render_widget(self.nbest, path)

    def _fill_nbest(self, view: DecodeView) -> None:
        self.nbest.setRowCount(len(view.hypotheses))
        for r, (text, score, log_prob, tokens) in enumerate(view.hypotheses):
            for c, value in enumerate((text or "∅", f"{score:.3f}", f"{log_prob:.3f}", str(len(tokens)))):
                item = QTableWidgetItem(value)
                if c:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.nbest.setItem(r, c, item)

    def _on_node(self, level: int, row: int) -> None:
        """A node was clicked: show the candidates of its prefix (they are computed at step ``level``)."""
        if self.view is None:
            return
        if level >= len(self.view.steps):
            self.candidates.set_title(tr("Not expanded yet: press Step to see its candidates"))
            self.candidates.set_data([], np.zeros(0), set())
            return
        self.selected = (level, row)
        self._show_candidates()
        self._draw_cross()

    def _show_candidates(self) -> None:
        if self.view is None or self.selected is None:
            at_start = self.view is not None and not self.view.steps  # step 0: say what brings the candidates
            self.candidates.set_title(AT_STEP_0 if at_start else N_("Next-token candidates"))
            self.candidates.set_data([], np.zeros(0), set())
            self.candidates.set_axis_label(self._axis())
            self.candidates.set_note("")
            return
        step_index, row = self.selected
        step = self.view.steps[step_index]
        tokens = [int(t) for t in step.top_tokens[row]]
        kept = {(c.parent, c.token) for c in step.kept}
        chosen = {i for i, t in enumerate(tokens) if (row, t) in kept}
        pieces = [self.piece(t) for t in step.prefixes[row]]
        if self.family == "decoder_only":  # the model reads the prompt before what it wrote
            pieces = list(self.view.source_tokens) + pieces
        # the last pieces: the title stays one line (the whole prefix is in the output line above)
        prefix = " ".join((["…"] if len(pieces) > PREFIX_SHOWN else []) + pieces[-PREFIX_SHOWN:]) or "<bos>"
        self.candidates.set_title(tr("Step {n}: after “{prefix}”").format(n=step_index + 1, prefix=prefix))
        cut = [] if step.cut is None else [i for i, removed in enumerate(step.cut[row]) if removed]
        # the token drawn: the one the step kept (a sampled step has one prefix and keeps one token)
        drawn = tokens.index(step.kept[0].token) if step.sampled and step.kept[0].token in tokens else None
        self.candidates.set_data([self.piece(t) for t in tokens], step.top_probs[row], chosen, cut, drawn)
        self._describe_candidates(step, drawn)
        if self.view.settings.beam_size > 1:
            self.tree.select(step_index, row)

    def _describe_candidates(self, step: DecodeStep, drawn: int | None) -> None:
        """What the bars measure, and for a sampled step how the token was drawn (a note under the chart)."""
        settings = self.view.settings if self.view is not None else DecodeSettings("")
        if self.family == "decoder_only" and step.sampled:
            label = tr("P(token | text so far) at temperature {t}").format(t=f"{settings.temperature:g}")
            self.candidates.set_axis_label(label)
        else:
            self.candidates.set_axis_label(self._axis())
        if not step.sampled:
            self.candidates.set_note("")
            return
        notes = [
            tr(
                "Sampled: the next token is drawn at random, each with a chance in proportion to its bar; "
                "the outlined bar is the one drawn."
            )
        ]
        cuts = ([f"top-k {settings.sample_top_k}"] if settings.sample_top_k else []) + (
            [f"top-p {settings.top_p:g}"] if settings.top_p < 1 else []
        )
        if cuts:
            notes.append(tr("Grey bars were cut by {cuts}: they could not be drawn.").format(cuts=" · ".join(cuts)))
        if drawn is None:
            token = self.piece(step.kept[0].token)
            notes.append(
                tr("The token drawn, “{token}”, is not among the {n} shown.").format(
                    token=token, n=len(step.top_tokens[0])
                )
            )
        self.candidates.set_note(" ".join(notes))

    def _axis(self) -> str:
        """What the bars measure: a translator's next token given its prefix and the source; a decoder-only
        model's given the text so far (it reads no source)."""
        return GENERATION_AXIS if self.family == "decoder_only" else AXIS

    def _draw_cross(self) -> None:
        self.cross.set_title(CROSS_AT_STEP_0 if self.view is not None and not self.view.steps else CROSS_TITLE)
        if self.view is None or self.selected is None or self.info is None or self.family == "decoder_only":
            self.cross.set_data(np.zeros((0, 0)), [], [])
            return
        step_index, row = self.selected
        cross = self.view.steps[step_index].cross_attention  # [n_live, layers, heads, S]
        if cross is None:  # a step recorded without its attention: nothing to draw
            self.cross.set_data(np.zeros((0, 0)), [], [])
            return
        weights = cross[row, self.cross_layer.value() - 1]  # [heads, S]
        heads = [f"{tr('head')} {h + 1}" for h in range(weights.shape[0])]
        self.cross.set_data(weights, heads, [shown_piece(t) for t in self.view.source_tokens])
