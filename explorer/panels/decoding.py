"""Decoding panel: type a sentence and watch the model translate it one token at a time (or, for a decoder-only
model, type a prompt and watch it continue the text; for an encoder-only model, fill masks).

The panel is a thin container: it shows the page of the model's family and keeps what the pages share.
- :class:`explorer.panels.decoding_page.SteppingPage` steps through decoding (its route to the engine, the busy
  state and the previous-sentence mark are in its docstring) over the shared views of
  :mod:`explorer.panels.decoding_views`, in the family's way: translation stepping
  (:mod:`explorer.panels.decoding_translation`) or GPT generation (:mod:`explorer.panels.decoding_generation`:
  a prompt, Sample mode, the token drawn and the candidates cut).
- :class:`explorer.panels.fill_mask.FillMaskPanel` fills masks for an encoder-only model (its own route, in its
  docstring).
What the panel shows is a value, :class:`explorer.panels.decoding_state.DecodingViewState` (:meth:`view_state`,
:meth:`show_view_state`): presenter mode and its scenes set it, never the widgets. The Attention panel follows the
step shown (``view_shown``) or the fill-mask sentence (``inspection_shown``).

A random test sentence (the button of either page, and a new model's first sentence) takes one route:
:class:`explorer.commands.SampleSentence` → ``Engine._sample_sentence`` (explorer/engine_views.py) →
``Session.sample_source`` → the ``sentence_sampled`` signal (:meth:`DecodingPanel._on_sentence_sampled`). The words
offered as the person types are the run's ``RunInfo.src_words``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QStackedWidget, QVBoxLayout, QWidget

from explorer.commands import SampleSentence
from explorer.i18n import tr
from explorer.panels.decoding_generation import GenerationMode, joined, prompt_of
from explorer.panels.decoding_page import SteppingPage
from explorer.panels.decoding_state import SPEEDS, DecodingViewState
from explorer.panels.decoding_translation import TranslationMode
from explorer.panels.decoding_views import CHART_HEIGHT, FamilyMode
from explorer.panels.fill_mask import FillMaskPanel
from model.io.snapshots import DecodeSettings, DecodeView, Inspection

if TYPE_CHECKING:
    from explorer.answers import AblationChanged, RunInfo, SentenceSampled
    from explorer.engine_client import EngineClient
    from model.families.registry import FamilySpec

__all__ = ["CHART_HEIGHT", "SPEEDS", "DecodingPanel", "DecodingViewState", "joined", "prompt_of"]


def family_mode(family: FamilySpec) -> FamilyMode:
    """How the stepping page decodes a family's model (an encoder-only model's page is the fill-mask view)."""
    return GenerationMode() if "generate" in family.decoding else TranslationMode()


class DecodingPanel(QWidget):
    """Step ▶, Back ◀, Run to end, Reset and auto-play over greedy or beam-search decoding (and sampling, for a
    decoder-only model); an encoder-only model's fill-mask view in their place."""

    view_shown = Signal(DecodeView)  # after the panel has drawn it (the Attention panel follows it)
    # attention of an input shown without a decode view (an encoder-only model's masked sentence)
    inspection_shown = Signal(Inspection)
    sentence_asked = Signal()  # the person asked for a sentence of their own to be decoded
    sentence_edited = Signal(bool)  # the sentence was edited; True: what is shown is the previous sentence's
    play_changed = Signal()  # auto-play was switched on or off, or its speed changed
    candidate_clicked = Signal(int, str)  # a bar of the next-token candidates: its index and token (the Why panel)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("decoding_panel")
        self.client: EngineClient | None = None  # set by attach; without it the panel sends nothing
        self.sample: tuple[int, bool] | None = None  # a random sentence asked for: request id, decode it on arrival
        self.decoding_page = SteppingPage(root=self)
        self.fill_view = FillMaskPanel()  # in place of the stepping page for an encoder-only model
        self.pages = QStackedWidget()
        self.pages.addWidget(self.decoding_page)
        self.pages.addWidget(self.fill_view)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.pages)
        self._name_parts()
        self._connect()

    def _name_parts(self) -> None:
        """The pages' parts under the names the window, the presenter's tests and the benchmarks use."""
        page = self.decoding_page
        box, c, sampling, views = page.sentence, page.controls, page.sampling, page.views
        self.prompt_label, self.input, self.completer, self.chips = (
            box.prompt_label,
            box.input,
            box.completer,
            box.chips,
        )
        self.translate_button, self.sample_button = box.translate_button, box.sample_button
        self.mode, self.beam_size, self.alpha, self.max_len = c.mode, c.beam_size, c.alpha, c.max_len
        self.sampling_box, self.sampling_spins = sampling, sampling.spins
        self.temperature_spin, self.top_k_spin = sampling.temperature_spin, sampling.top_k_spin
        self.top_p_spin, self.seed_spin = sampling.top_p_spin, sampling.seed_spin
        self.back_button, self.step_button, self.run_button = c.back_button, c.step_button, c.run_button
        self.reset_button, self.play_button, self.speed = c.reset_button, c.play_button, c.speed
        self.play_timer, self.step_label = c.play_timer, c.step_label
        self.output, self.reference, self.notice = views.output, views.reference, views.notice
        self.sentence_label, self.candidates, self.cross = views.sentence_label, views.candidates, views.cross
        self.cross_layer, self.tree, self.nbest = views.cross_layer, views.tree, views.nbest
        self.beside, self.beam_box, self.body = views.beside, views.beam_box, views.body
        self.export_nbest, self.piece = views.export_nbest, views.piece

    def _connect(self) -> None:
        page = self.decoding_page
        page.view_shown.connect(self.view_shown)
        page.sentence_asked.connect(self.sentence_asked)
        page.sentence_edited.connect(self.sentence_edited)
        page.sentence_taken.connect(self._drop_sample)
        page.sentence.sample_button.clicked.connect(self.sample_test_sentence)
        page.controls.play_button.toggled.connect(self.play_changed)
        page.controls.speed.valueChanged.connect(self.play_changed)
        page.views.candidates.candidate_clicked.connect(self.candidate_clicked)
        self.fill_view.inspection_shown.connect(self.inspection_shown)
        self.fill_view.sentence_edited.connect(self.sentence_edited)
        self.fill_view.sentence_asked.connect(self.sentence_asked)
        self.fill_view.sentence_asked.connect(self._drop_sample)  # a random sentence on its way is not wanted now
        self.fill_view.input.textEdited.connect(self._drop_sample)
        self.fill_view.sample_asked.connect(self.sample_test_sentence)

    def retranslate(self) -> None:
        self.decoding_page.retranslate()
        self.fill_view.retranslate()

    # -- what the pages show -------------------------------------------------------------------------------------
    @property
    def info(self) -> RunInfo | None:
        return self.decoding_page.info

    @property
    def family(self) -> str:
        """The model's family: "encoder_decoder", "decoder_only" or "encoder_only"."""
        return self.info.model_config.arch if self.info is not None else "encoder_decoder"

    @property
    def view(self) -> DecodeView | None:
        """The decoding step shown."""
        return self.decoding_page.view

    @property
    def waiting(self) -> bool:
        """A decoding request is out."""
        return self.decoding_page.waiting

    @property
    def autoplay_on_start(self) -> bool:
        """Presenter mode: a new sentence plays by itself."""
        return self.decoding_page.autoplay_on_start

    def settings(self) -> DecodeSettings:
        return self.decoding_page.settings()

    def view_state(self) -> DecodingViewState:
        """What the panel shows: the sentence, its settings, the step, the focus and auto-play."""
        return self.decoding_page.view_state()

    def show_view_state(self, state: DecodingViewState) -> None:
        """Show ``state``: its sentence and settings in the controls, its focus and auto-play; its step, if the
        sentence decoded is the state's (a new sentence waits for :meth:`start`)."""
        self.decoding_page.show_view_state(state)

    def show_view(self, view: DecodeView) -> None:
        """Show a decoding step (the engine client has dropped answers to requests made stale since)."""
        self.decoding_page.show_view(view)

    def show_source_weights(self, values: list[float] | None, legend: str = "") -> None:
        """Tint the input's chips by a value each (the Why panel: each source token's attribution to the token of the
        step shown), ``legend`` saying what the tint means; None: plain chips again."""
        chips = self.fill_view.chips if self.pages.currentWidget() is self.fill_view else self.chips
        if values is not None:  # one per token the model read, aligned at the end (a GPT's <bos> has no chip)
            n = len(chips.tokens)
            values = list(values[len(values) - n :]) if len(values) >= n else list(values)
            values += [float("nan")] * (n - len(values))
        for strip in (self.chips, self.fill_view.chips):
            strip.set_weights(values if strip is chips else None, legend)

    # -- the person's and the presenter's requests --------------------------------------------------------------
    def start(self) -> None:
        """Decode the sentence in the box from the beginning."""
        self.decoding_page.start()

    def press(self, action: Literal["step", "back", "reset"]) -> None:
        """A stepping button, pressed from outside the panel (presenter mode's clicker: the buttons are hidden
        there): only while it is enabled, and not while the fill-mask page is shown."""
        page = self.decoding_page
        c = page.controls
        button = {"step": c.step_button, "back": c.back_button, "reset": c.reset_button}[action]
        if button.isEnabled() and self.pages.currentWidget() is page:
            button.click()

    def play_sample(self, sentence: str) -> None:
        """``sentence`` decoded greedily to its first step, ready for Step ▶ (the first-launch demonstration)."""
        self.decoding_page.play_sample(sentence)

    def redo(self) -> None:
        """What is shown, made again with the model's current weights (the attention panel's Update)."""
        if self.pages.currentWidget() is self.fill_view:
            self.fill_view.redo()
        else:
            self.decoding_page.redo()

    def set_focus(self, focus: str | None) -> None:
        """Presenter mode shows one part enlarged: ``"candidates"`` (the next-token chart and this step's
        cross-attention) or ``"tree"`` (the beam tree and the n-best list); None shows what the mode needs."""
        self.decoding_page.set_focus(focus)

    def set_presenting(self, on: bool) -> None:
        """Presenter mode: the rows that edit leave their height to the views (see SteppingPage.set_presenting)."""
        self.decoding_page.set_presenting(on)

    # -- the route to the engine ---------------------------------------------------------------------------------
    def attach(self, client: EngineClient) -> None:
        self.client = client
        self.decoding_page.attach(client)  # Decode → decode_stepped
        self.fill_view.attach(client)  # FillMask → mask_filled, Inspect → inspection_ready, engine_failed
        client.engine.sentence_sampled.connect(self._on_sentence_sampled)
        client.engine.ablation_changed.connect(self.on_ablation)

    def sentence_shown(self) -> str:
        """The sentence (a prompt, a masked text) whose results are shown, else the one in the box."""
        if self.pages.currentWidget() is self.fill_view:
            return self.fill_view.input.text()
        return self.view.settings.text if self.view is not None else self.input.text()

    def on_ablation(self, reply: AblationChanged) -> None:
        """Heads were switched off or on (the engine dropped its decoding): the step shown is decoded again with
        the same settings, and the step label says how many heads are off."""
        self.decoding_page.heads_off = len(reply.heads)
        if self.pages.currentWidget() is self.fill_view:
            self.fill_view.redo()
        else:
            self.decoding_page.decode_again()

    def on_failed(self) -> None:
        """The engine refused a request: nothing is waited for, and auto-play must not keep hitting it."""
        self.decoding_page.on_failed()

    def on_run(self, info: RunInfo) -> None:
        """A new model, or new training settings of the same one (keeps the sentence). Nothing of an old model
        stays on screen: its sentence goes (Ctrl+Z in the box brings it back) for one of the new model's own test
        split, decoded at once if the old one's decoding was showing."""
        for step in self.arrival_steps(info):
            step()

    def arrival_steps(self, info: RunInfo) -> list[Callable[[], None]]:
        """:meth:`on_run` in two steps, for the window to run a turn apart behind another tab: the int8 switch's
        first appearance alone took 3-4 ms of the panel's 8-10 ms."""
        page = self.decoding_page
        new_model = page.info is None or info.run_id != page.info.run_id
        return [lambda: self._take_model(info, new_model), lambda: page.int8.on_run(info, new_model)]

    def _take_model(self, info: RunInfo, new_model: bool) -> None:
        page = self.decoding_page
        replaced = page.info is not None  # the first model replaces nothing: no sentence of its own is needed
        decoding = page.view is not None or page.waiting
        self.fill_view.on_run(info, new_model)
        if new_model:
            self.pages.setCurrentIndex(1 if "fill_mask" in info.model_config.family.decoding else 0)
        page.on_run(info, new_model, family_mode(info.model_config.family))
        if new_model:
            page.sample_split = "test"
            page.describe_sample_button()
            # a model opened from a folder has no sample sentence of its own (the bundled model's is played by the
            # first launch: asking for one would make the engine read the corpus on the launch path)
            if replaced or info.model_origin is not None:
                page.sentence.replace_input("")
                self._ask_sample(decode=decoding)

    def sample_test_sentence(self) -> None:
        """A random sentence of the corpus's test split (never trained on) into the input box, decoded at once."""
        self._ask_sample(decode=True)

    def _ask_sample(self, decode: bool) -> None:
        if self.client is not None:
            self.sample = (self.client.ask(SampleSentence(split="test")), decode)

    def _drop_sample(self) -> None:
        self.sample = None

    def _on_sentence_sampled(self, reply: SentenceSampled) -> None:
        """The random sentence: dropped if the person typed or decoded since it was asked for."""
        if self.sample is None or self.sample[0] != reply.request_id:
            return
        decode, self.sample = self.sample[1], None
        if self.info is None or reply.run_id != self.info.run_id:
            return  # asked of a model that has been replaced since
        page = self.decoding_page
        if reply.error is not None or reply.split is None:
            if decode:  # the person asked: say why there is no sentence (a new model's own fill stays quiet)
                said = tr("No sentence to take: this model's corpus cannot be read ({error}).")
                said = said.format(error=reply.error)
                page.views.say(said)
                self.fill_view.say(said)
            return
        page.sample_split = reply.split
        page.describe_sample_button()
        if self.pages.currentWidget() is self.fill_view:
            self.fill_view.take_sentence(reply.source, fill=decode)
            return
        page.take_sentence(reply.source, start=decode)
