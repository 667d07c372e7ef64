"""The decoding panel's stepping page: the sentence, how it is decoded, and Step ▶, Back ◀, Run to end, Reset and
auto-play over the model's decoding of it, one token a step (an encoder–decoder model's translation, a decoder-only
model's continuation: the page's :class:`explorer.panels.decoding_views.FamilyMode`).

Route: a button makes a :class:`explorer.commands.Decode` command and sends it through the engine client
(:mod:`explorer.engine_client`); ``Engine._decode`` (explorer/engine_views.py) answers from
:class:`model.decoding.stepping.DecodeDriver`, and the answer arrives on the engine's ``decode_stepped`` signal
(:meth:`SteppingPage._on_decode_stepped`). Only the answer to the newest decoding request is shown (the engine
client's one freshness rule: a step of a sentence that has since been replaced, or asked for before a newer click,
is dropped). Every click is carried out in order; while a step takes long,
:class:`explorer.panels.decoding_progress.DecodingProgress` says which step is computing and how many clicks wait.
A sentence typed but not decoded yet marks what is shown as the previous sentence's (``sentence_edited``).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from explorer.commands import Decode, DecodeAction
from explorer.i18n import N_, tr
from explorer.panels.decoding_generation import SamplingBox
from explorer.panels.decoding_progress import DecodingProgress
from explorer.panels.decoding_state import SPEEDS, DecodingViewState
from explorer.panels.decoding_translation import TranslationMode
from explorer.panels.decoding_views import FamilyMode, SentenceBox, StepViews, large_font
from explorer.panels.int8_switch import Int8Switch
from explorer.pieces import shown_pieces
from explorer.widgets import named
from model.io.snapshots import DecodeSettings, DecodeView

if TYPE_CHECKING:
    from explorer.answers import DecodeStepped, RunInfo
    from explorer.engine_client import EngineClient

# what the sample button says of a corpus without a test split (the split it took the sentence from instead)
FALLBACK_SPLIT = {
    "valid": N_("This corpus has no test split: the sentence came from the validation split."),
    "train": N_("This corpus has no test or validation split: the sentence came from the training split."),
}
MODE_NAMES = (("greedy", N_("Greedy")), ("sample", N_("Sample")), ("beam", N_("Beam search")))


class SteppingControls:
    """How the sentence is decoded (the mode, the beam's size and length penalty, the longest output), and the
    stepping buttons with auto-play's speed and the step shown: two rows of the page."""

    def __init__(self, parent: QObject) -> None:
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
        self.back_button = named(QPushButton(), "decode_back_button")
        self.step_button = named(QPushButton(), "decode_step_button")
        self.run_button = named(QPushButton(), "decode_run_button")
        self.reset_button = named(QPushButton(), "decode_reset_button")
        self.play_button = named(QPushButton(), "decode_autoplay_button")
        self.play_button.setCheckable(True)
        self.buttons = (self.back_button, self.step_button, self.run_button, self.reset_button, self.play_button)
        self.speed = named(QSlider(Qt.Orientation.Horizontal), "decode_speed_slider")
        self.speed.setRange(0, len(SPEEDS) - 1)  # a notch of SPEEDS
        self.speed.setPageStep(1)
        self.speed.setValue(SPEEDS.index(2.0))
        self.speed.setMaximumWidth(90)
        self.play_timer = QTimer(parent)
        self.play_timer.setInterval(500)
        self.speed.valueChanged.connect(lambda notch: self.play_timer.setInterval(round(1000 / SPEEDS[notch])))
        self.step_label = named(QLabel(), "decode_step_label")
        self.step_label.setTextFormat(Qt.TextFormat.PlainText)
        self.settings_row = self._lay_out_settings()
        self.buttons_row = self._lay_out_buttons()

    def _lay_out_settings(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.labels = {key: QLabel() for key in ("mode", "beam", "alpha", "max")}
        for key, w in (("mode", self.mode), ("beam", self.beam_size), ("alpha", self.alpha), ("max", self.max_len)):
            row.addWidget(self.labels[key])
            row.addWidget(w)
        row.addStretch(1)
        row.setSpacing(4)  # the panel fits beside the attention map on a 1024-px screen
        return row

    def _lay_out_buttons(self) -> QHBoxLayout:
        row = QHBoxLayout()
        for button in self.buttons:
            row.addWidget(button)
        self.speed_label = QLabel()
        row.addWidget(self.speed_label)
        row.addWidget(self.speed)
        row.addStretch(1)
        row.addWidget(self.step_label)
        row.setSpacing(4)
        self.speed_label.setMinimumWidth(0)
        return row

    def retranslate(self) -> None:
        self.labels["mode"].setText(tr("Mode"))
        self.labels["beam"].setText(tr("Beam size"))
        self.labels["alpha"].setText("α")
        self.labels["max"].setText(tr("Max length"))
        self.max_len.setSpecialValueText(tr("auto"))
        self.alpha.setToolTip(tr("Length penalty α"))
        self.labels["alpha"].setToolTip(tr("Length penalty α"))
        self.back_button.setText("◀ " + tr("Back"))
        self.step_button.setText(tr("Step") + " ▶")
        self.run_button.setText(tr("Run to end"))
        self.reset_button.setText(tr("Reset"))
        self.play_button.setText(tr("Auto-play"))
        for button in self.buttons:
            # narrower than the style's 80-px minimum where the text allows: the panel fits a 1024-px screen
            button.setMinimumWidth(button.fontMetrics().horizontalAdvance(button.text()) + 14)
        self.speed_label.setText(tr("Speed"))

    def name_modes(self) -> None:
        for key, name in MODE_NAMES:
            if self.mode.findData(key) >= 0:
                self.mode.setItemText(self.mode.findData(key), tr(name))

    def offer_sampling(self, on: bool) -> None:
        """Sample mode offered (a decoder-only model), or not."""
        sample = self.mode.findData("sample")
        if on and sample < 0:
            self.mode.insertItem(1, tr("Sample"), "sample")
        elif not on and sample >= 0:
            if self.mode.currentIndex() == sample:  # not the next item (beam search): nobody chose that
                self.mode.setCurrentIndex(self.mode.findData("greedy"))
            self.mode.removeItem(sample)

    def update_buttons(self, view: DecodeView | None, busy: bool, queued: int) -> None:
        """While a step computes (busy), Back, Run and Reset wait greyed; Step ▶ queues, and counts, its clicks."""
        self.back_button.setEnabled(view is not None and view.position > 0 and not busy)
        self.step_button.setEnabled(view is None or not view.at_end or busy)
        self.run_button.setEnabled((view is None or not view.at_end) and not busy)
        self.reset_button.setEnabled(view is not None and view.position > 0 and not busy)
        self.step_button.setText(tr("Step") + " ▶" + (f" (+{queued})" if queued else ""))


class SteppingPage(QWidget):
    """A sentence decoded step by step: its settings, the stepping buttons and auto-play, over the shared views."""

    view_shown = Signal(DecodeView)  # after the page has drawn it (the Attention panel follows it)
    sentence_asked = Signal()  # the person asked for a sentence of their own to be decoded
    sentence_edited = Signal(bool)  # the sentence was edited; True: what is shown is the previous sentence's
    sentence_taken = Signal()  # the box's sentence was typed in or sent: a random sentence on its way is not wanted

    def __init__(self, root: QWidget) -> None:
        super().__init__()
        self.client: EngineClient | None = None  # set by attach; without it the page sends nothing
        self.info: RunInfo | None = None
        self.family_mode: FamilyMode = TranslationMode()  # what the model's family shows its own way
        self.waiting = False  # a request is out; auto-play sends the next only after the answer
        self.progress = DecodingProgress(self)  # the requests out, and the busy state shown while they compute
        self.previous = False  # the sentence shown is not the one in the box (edited since): marked as previous
        self.autoplay_on_start = False  # presenter mode: a new sentence plays by itself
        self.requested: DecodeSettings | None = None  # the sentence and settings of the last start sent
        self.sample_split = "test"  # the split the last random sentence came from
        self.heads_off = 0  # heads switched off in the model (the attention panel's): the step label says so
        self.sentence = SentenceBox()
        self.controls = SteppingControls(self)
        self.int8 = Int8Switch(lambda: self.decode_again())  # a translator from a folder: decode with int8 weights
        self.sampling = SamplingBox()
        self.views = StepViews(root, self.family_mode)
        self._connect()
        self._lay_out()
        self._on_mode()
        self.retranslate()
        self._update_buttons()

    @property
    def view(self) -> DecodeView | None:
        """The decoding step shown."""
        return self.views.view

    def _connect(self) -> None:
        box, c = self.sentence, self.controls
        box.input.returnPressed.connect(self._on_decode_asked)
        box.translate_button.clicked.connect(self._on_decode_asked)
        box.input.textEdited.connect(self._on_typed)
        c.mode.currentIndexChanged.connect(self._on_mode)
        c.back_button.clicked.connect(lambda: self.act("back"))
        c.step_button.clicked.connect(lambda: self.act("step"))
        c.run_button.clicked.connect(lambda: self.act("run"))
        c.reset_button.clicked.connect(lambda: self.act("reset"))
        c.play_button.toggled.connect(self._on_play)
        c.play_timer.timeout.connect(self._on_play_tick)
        self.progress.changed.connect(self._on_progress)

    def _lay_out(self) -> None:
        """The rows that edit (the sentence, its tokens, the settings, the buttons), presenter mode's sentence line,
        the output with its notes, and the views."""
        self.presenter_row = QHBoxLayout()  # (set_presenting moves the step label to it)
        self.presenter_row.addWidget(self.views.sentence_label, 1)
        self.editing = QWidget()  # the rows that edit: presenter mode gives their height to the views
        editing = QVBoxLayout(self.editing)
        editing.setContentsMargins(0, 0, 0, 0)
        editing.setSpacing(3)  # on a 768-px screen every pixel of height goes to the candidates and the tree
        editing.addLayout(self.sentence.row)
        editing.addWidget(self.sentence.chips)
        row = self.controls.settings_row
        row.insertWidget(row.count() - 1, self.int8.box)  # before the row's stretch
        editing.addLayout(row)
        editing.addWidget(self.int8.note)
        editing.addWidget(self.sampling)
        editing.addLayout(self.controls.buttons_row)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(3)
        layout.addWidget(self.editing)
        layout.addLayout(self.presenter_row)
        for label in (self.views.notice, self.views.output, self.views.reference):
            layout.addWidget(label)
        layout.addWidget(self.views.body, 1)

    def retranslate(self) -> None:
        self._name_inputs()
        self.sampling.retranslate()
        self.controls.retranslate()
        self.int8.retranslate()
        self._describe_max_len()
        self.views.retranslate()
        if self.view is not None:
            self.show_view(self.view)

    def _name_inputs(self) -> None:
        """The sentence box, its buttons, the n-best list and the modes, in the family's words."""
        texts = self.family_mode.input_texts()
        self.sentence.name(texts)
        self.views.name(texts)
        self.describe_sample_button()
        self.controls.name_modes()

    def describe_sample_button(self) -> None:
        tip = self.family_mode.sample_tip()
        if self.sample_split in FALLBACK_SPLIT:
            tip += "\n" + tr(FALLBACK_SPLIT[self.sample_split])
        self.sentence.sample_button.setToolTip(tip)

    def _describe_max_len(self) -> None:
        self.controls.max_len.setToolTip(self.family_mode.max_len_tip().format(n=self.controls.max_len.maximum()))

    def _apply_family(self) -> None:
        """What the model's family needs: a prompt and Sample mode (decoder-only), or the translator's page."""
        prompted = self.family_mode.prompted
        self.sentence.prompt_label.setVisible(prompted)
        self.sampling.setVisible(prompted)
        self.controls.offer_sampling(prompted)
        self._name_inputs()
        self._on_mode()

    # -- requests ------------------------------------------------------------------------------------------------
    def settings(self) -> DecodeSettings:
        beam = self.controls.mode.currentData() == "beam"
        sampling = (
            self.sampling.sampling() if self.controls.mode.currentData() == "sample" else {}
        )  # (a decoder-only model)
        return DecodeSettings(
            text=self.sentence.input.text(),
            beam_size=self.controls.beam_size.value() if beam else 1,
            length_penalty=self.controls.alpha.value() if beam else 0.0,
            max_len=self.controls.max_len.value() or None,
            **sampling,
        )

    def _on_decode_asked(self) -> None:
        self.sentence_asked.emit()
        self.start()

    def start(self) -> None:
        """Decode the sentence in the box from the beginning; what showed the last one is cleared."""
        self.sentence_taken.emit()  # a random sentence still on its way would replace the one decoded now
        self.clear()
        if not self.sentence.input.text().strip():
            self.views.output.setText(html.escape(tr("Type a sentence first.")))
            return
        self.requested = self.settings()
        self.waiting = True
        self._send(Decode(action="start", settings=self.requested))
        if self.autoplay_on_start and not self.controls.play_button.isChecked():
            self.controls.play_button.setChecked(True)

    def clear(self) -> None:
        """Nothing of the last sentence stays on screen (a new one is coming, or it could not be decoded)."""
        self.views.clear(self.sentence.input.text())
        self.sentence.chips.set_tokens([])
        self._mark_previous()
        self._describe_step()
        self._update_buttons()

    def play_sample(self, sentence: str) -> None:
        """Greedy decoding of ``sentence`` after its first step — its candidates, the token chosen and where
        it looked are on screen — ready for Step ▶: the first-launch demonstration."""
        self.controls.mode.setCurrentIndex(self.controls.mode.findData("greedy"))
        self.sentence.input.setText(sentence)
        self.start()
        self.act("step", restart=False)

    def take_sentence(self, source: str, start: bool) -> None:
        """A corpus sentence (or, for a decoder-only model, its beginning) in the box; with ``start``, decoded."""
        self.sentence.replace_input(self.family_mode.sentence_of(source))
        if start:
            self.start()  # at step 0, ready to step

    # -- the route to the engine ---------------------------------------------------------------------------------
    def attach(self, client: EngineClient) -> None:
        self.client = client
        client.engine.decode_stepped.connect(self._on_decode_stepped)
        self.int8.attach(client)

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
        if self.view is not None and not self.waiting:
            self.act("show", restart=False)

    def decode_again(self) -> None:
        """The sentence shown started again with its settings and taken to the step it was at, or to its end if it
        had finished (the engine dropped its decoding: heads were switched off or on)."""
        v = self.view
        if v is None:
            self._describe_step()
            return
        self.requested, self.waiting = v.settings, True
        self._send(Decode(action="start", settings=v.settings))
        self._send(Decode(action="run") if v.at_end else Decode(action="goto", position=v.position))

    def on_failed(self) -> None:
        """The engine refused a request: nothing is waited for, and auto-play must not keep hitting it."""
        self.waiting = False
        self.progress.failed()
        self.controls.play_button.setChecked(False)

    def act(self, action: DecodeAction, restart: bool = True, position: int | None = None) -> None:
        """Send a stepping action (``goto`` goes to ``position``). A sentence or settings changed since the last
        start (``restart``), or a start that failed, begin again from the start."""
        out = self.view is not None or self.waiting
        if restart and (not out or self.settings() != self.requested):
            self.start()
            if action in ("reset", "back") or not self.waiting:
                return
        self.views.selected = None
        self.waiting = True
        self._send(Decode(action=action, position=position))

    # -- the person's edits and the buttons ------------------------------------------------------------------------
    def _on_typed(self, _text: str) -> None:
        """The person edits the sentence: a random sentence still on its way is not wanted; words are offered;
        what is shown is marked as the previous sentence's."""
        if self.sentence.filling:
            return
        self.sentence_taken.emit()
        self._mark_previous()
        self.sentence.completer.update_popup()

    def _mark_previous(self) -> None:
        """The chips, the step label and (through ``sentence_edited``) the attention map say that they show the
        previous sentence while the box holds another, not decoded yet."""
        previous = self.view is not None and self.sentence.input.text() != self.view.settings.text
        if previous != self.previous:
            self.previous = previous
            self.sentence.chips.set_faded(previous)
            self._describe_step()
            self.sentence_edited.emit(previous)

    def _on_mode(self) -> None:
        beam = self.controls.mode.currentData() == "beam"
        self.controls.beam_size.setEnabled(beam)
        self.controls.alpha.setEnabled(beam)
        self.sampling.set_enabled(self.controls.mode.currentData() == "sample")
        self.views.apply_focus(beam)

    def _on_play(self, on: bool) -> None:
        if on:
            if (self.view is None and not self.waiting) or (self.view is not None and self.view.at_end):
                self.start()
            self.controls.play_timer.start()
        else:
            self.controls.play_timer.stop()

    def _on_play_tick(self) -> None:
        if self.waiting:
            return
        if self.view is not None and self.view.at_end:
            self.controls.play_button.setChecked(False)
            return
        self.act("step", restart=False)  # typing a new sentence does not restart a sentence playing

    def _update_buttons(self) -> None:
        busy = self.progress.busy
        self.controls.update_buttons(self.view, busy, self.progress.queued if busy else 0)

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
        if self.heads_off:
            off = tr("1 head off") if self.heads_off == 1 else tr("{n} heads off").format(n=self.heads_off)
            text = f"{text} · {off}" if text else off
        self.controls.step_label.setText(text)
        self.controls.step_label.setToolTip(
            tr("The sentence in the box is not decoded yet: Decode or Step ▶ starts it.") if self.previous else ""
        )

    # -- answers -------------------------------------------------------------------------------------------------
    def on_run(self, info: RunInfo, new_model: bool, family_mode: FamilyMode) -> None:
        """A new model (``new_model``: nothing of the old one stays on screen), or new training settings of the
        same one (the sentence stays; newer weights redo the step shown)."""
        self.info = info
        self.family_mode = self.views.family_mode = family_mode
        self.views.eos_id = info.model_config.eos_id
        self.controls.max_len.setMaximum(info.model_config.max_len)  # a longer output has no decoder positions
        self._describe_max_len()
        if new_model:
            self.views.cross_layer.setRange(1, max(1, info.model_config.n_decoder_layers))
            self.views.cross_layer.setValue(info.model_config.n_decoder_layers)
            self.controls.play_button.setChecked(False)
            self.heads_off = 0  # a new model has every head on
            self.views.pieces = shown_pieces(info.tgt_pieces)
            self._apply_family()
            self.clear()
            self.sentence.completer.set_words(info.src_words)
        elif self.view is not None and info.weights_step != self.view.weights_step and not self.waiting:
            self.act("show", restart=False)  # newer weights of the same run (a followed run): the same step, redone
        elif self.view is not None:
            self.show_view(self.view)

    def show_view(self, view: DecodeView) -> None:
        """Show a decoding step (the engine client has dropped answers to requests made stale since)."""
        self.waiting = False
        self.sentence.chips.set_tokens(list(view.source_tokens), set(view.unknown), view.source_typed)
        self.views.show(view, knows_words=self.sentence.completer.has_words())
        self._mark_previous()
        self._describe_step()
        self._update_buttons()
        self.view_shown.emit(view)

    # -- presenter mode and the view state -------------------------------------------------------------------------
    def set_focus(self, focus: str | None) -> None:
        """Presenter mode shows one part enlarged (see :meth:`StepViews.set_focus`)."""
        beam = self.view.settings.beam_size > 1 if self.view is not None else self.controls.mode.currentData() == "beam"
        self.views.set_focus(focus, beam)

    def set_presenting(self, on: bool) -> None:
        """Presenter mode (once the interface's font has grown): the rows that edit — the sentence box, its tokens,
        the settings and the stepping buttons — leave their height to the views; the sentence, read-only, and the
        step count stay, side by side, in large type. Auto-play stops on the way out."""
        self.editing.setVisible(not on)
        self.views.sentence_label.setVisible(on)
        old, new = (
            (self.controls.buttons_row, self.presenter_row) if on else (self.presenter_row, self.controls.buttons_row)
        )
        old.removeWidget(self.controls.step_label)
        new.addWidget(self.controls.step_label)
        for label in (self.views.sentence_label, self.controls.step_label):
            label.setFont(large_font() if on else QFont())  # (an empty font: the interface's again)
        self.views.output.setFont(large_font())
        self.autoplay_on_start = on
        if not on:
            self.controls.play_button.setChecked(False)

    def view_state(self) -> DecodingViewState:
        v = self.view
        return DecodingViewState(
            sentence=self.sentence.input.text(),
            mode=str(self.controls.mode.currentData()),
            beam_size=self.controls.beam_size.value(),
            length_penalty=self.controls.alpha.value(),
            max_len=self.controls.max_len.value(),
            **self.sampling.values(),
            step=v.position if v is not None else 0,
            cross_layer=self.views.cross_layer.value(),
            focus=self.views.focus,
            playing=self.controls.play_button.isChecked(),
            speed=SPEEDS[self.controls.speed.value()],
        )

    def show_view_state(self, state: DecodingViewState) -> None:
        """The sentence and settings of ``state`` in the controls; its step shown, if the sentence decoded is the
        state's with its settings (a new sentence is not decoded here: :meth:`start` does that)."""
        if state.sentence != self.sentence.input.text():
            self.sentence.input.setText(state.sentence)
            self._mark_previous()
        self.controls.mode.setCurrentIndex(
            max(0, self.controls.mode.findData(state.mode))
        )  # (Sample: a decoder-only model's)
        self.controls.beam_size.setValue(state.beam_size)
        self.controls.alpha.setValue(state.length_penalty)
        self.controls.max_len.setValue(state.max_len)
        self.sampling.show_values(state)
        self.views.cross_layer.setValue(state.cross_layer)
        self.controls.speed.setValue(min(range(len(SPEEDS)), key=lambda notch: abs(SPEEDS[notch] - state.speed)))
        if state.focus != self.views.focus:
            self.set_focus(state.focus)
        v = self.view
        if v is not None and state.step != v.position and self.settings() == self.requested:
            self.act("goto", restart=False, position=state.step)
        if state.playing != self.controls.play_button.isChecked():
            self.controls.play_button.setChecked(state.playing)
