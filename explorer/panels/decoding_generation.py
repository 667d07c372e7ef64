"""GPT generation: a decoder-only model continues a prompt, greedily, by beam search, or drawing each token at random
(Sample mode: temperature, top-k, top-p and seed, carried in :class:`model.io.snapshots.DecodeSettings`). What it
shows its own way on the decoding panel's shared views (:mod:`explorer.panels.decoding_views`): the prompt followed
by its continuation, candidates given the text so far (it reads no source: no cross-attention, no reference), and
for a sampled step the token drawn and the candidates the cuts removed (``DecodeStep.sampled``, ``DecodeStep.cut``).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QLabel, QSpinBox, QWidget

from explorer.i18n import N_, tr
from explorer.panels.decoding_state import DecodingViewState
from explorer.panels.decoding_views import InputTexts, prompt_help
from explorer.widgets import named
from model.data.tokenization import join_words
from model.io.snapshots import DecodeSettings, DecodeStep, DecodeView

GENERATION_AXIS = N_("P(token | text so far)")  # what a decoder-only model's bars measure: it reads no source


def prompt_of(sentence: str) -> str:
    """The beginning of a corpus sentence, for a decoder-only model to continue: its first half of words, or of
    characters for a text written without spaces (Chinese)."""
    words = sentence.split()
    if len(words) > 1:
        return " ".join(words[: max(1, len(words) // 2)])
    return sentence.strip()[: max(1, len(sentence.strip()) // 2)]


def joined(prompt: str, continuation: str) -> str:
    """What separates a prompt from its continuation in the model's text: a space between words, none beside
    Chinese or before punctuation (the tokenizers' own rule, :func:`model.data.tokenization.join_words`)."""
    if not prompt or not continuation:
        return ""
    return join_words([prompt[-1], continuation[0]])[1:-1]


class SamplingBox(QWidget):
    """Sample mode's settings: temperature, top-k, top-p and the seed (shown for a decoder-only model)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("decode_sampling_box")
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
        self.spins = (self.temperature_spin, self.top_k_spin, self.top_p_spin, self.seed_spin)
        self.labels = {key: QLabel() for key in ("temperature", "top_k", "top_p", "seed")}
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(4)
        for key, spin in zip(self.labels, self.spins):
            row.addWidget(self.labels[key])
            row.addWidget(spin)
        row.addStretch(1)
        self.hide()  # shown for a decoder-only model

    def retranslate(self) -> None:
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
        for (key, (label, tip)), spin in zip(texts.items(), self.spins):
            self.labels[key].setText(label)
            self.labels[key].setToolTip(tip)
            spin.setToolTip(tip)
        self.top_k_spin.setSpecialValueText(tr("off"))
        self.seed_spin.setSpecialValueText(tr("random"))

    def set_enabled(self, on: bool) -> None:
        """The settings can be changed (Sample mode) or are greyed (Greedy, Beam search)."""
        for spin in self.spins:
            spin.setEnabled(on)

    def sampling(self) -> dict[str, Any]:
        """The settings as :class:`DecodeSettings` takes them (a seed of −1: None, a new seed each time)."""
        seed = self.seed_spin.value()
        return dict(
            temperature=self.temperature_spin.value(),
            sample_top_k=self.top_k_spin.value(),
            top_p=self.top_p_spin.value(),
            seed=None if seed < 0 else seed,
        )

    def values(self) -> dict[str, Any]:
        """The settings as :class:`DecodingViewState` holds them."""
        return dict(
            temperature=self.temperature_spin.value(),
            top_k=self.top_k_spin.value(),
            top_p=self.top_p_spin.value(),
            seed=self.seed_spin.value(),
        )

    def show_values(self, state: DecodingViewState) -> None:
        self.temperature_spin.setValue(state.temperature)
        self.top_k_spin.setValue(state.top_k)
        self.top_p_spin.setValue(state.top_p)
        self.seed_spin.setValue(state.seed)


class GenerationMode:
    """A decoder-only model's decoding: its prompt continued."""

    prompted = True  # the sentence is a prompt: its label, and Sample mode with its settings
    cross_attention = False  # it reads no source: its candidates take the whole width

    def input_texts(self) -> InputTexts:
        return InputTexts(
            placeholder=tr("Type the beginning of a text and press Enter"),
            tooltip=prompt_help(),
            start=tr("Generate"),
            sample=tr("Random prompt"),
            output=tr("Continuation"),
            nbest=tr("n-best continuations"),
        )

    def sample_tip(self) -> str:
        return tr(
            "Put the beginning of a random sentence of the test split (sentences the model never trained "
            "on) in the box, for the model to continue."
        )

    def max_len_tip(self) -> str:
        return tr(
            "Longest continuation in tokens (auto: 50, or what the model's length leaves after the prompt). "
            "At most {n}: the model's length limit."
        )

    def sentence_of(self, source: str) -> str:
        return prompt_of(source)

    def output_line(self, view: DecodeView, text: str) -> tuple[str, str]:
        """The prompt followed by its continuation (in bold); “…” while it goes on."""
        title = tr("Text") if view.at_end else tr("Text so far")
        prompt = " ".join(view.settings.text.split())
        more = "" if view.at_end else "…"
        return title, f"{html.escape(prompt + joined(prompt, text))}<b>{html.escape(text)}</b>{more}"

    def reference(self, view: DecodeView) -> str | None:
        return None  # the prompt's own sentence is not a translation to compare with

    def cut_note(self) -> str:
        return tr(
            "The prompt has {total} tokens but the model reads at most {kept}: it continues the first {kept}, "
            "the other {cut} were ignored."
        )

    def prefix(self, view: DecodeView, pieces: list[str]) -> list[str]:
        return list(view.source_tokens) + pieces  # the model reads the prompt before what it wrote

    def axis(self, step: DecodeStep | None, settings: DecodeSettings) -> str:
        """The next token given the text so far; a sampled step's at its temperature."""
        if step is not None and step.sampled:
            return tr("P(token | text so far) at temperature {t}").format(t=f"{settings.temperature:g}")
        return GENERATION_AXIS

    def draw_note(
        self, step: DecodeStep, settings: DecodeSettings, drawn: int | None, piece: Callable[[int], str]
    ) -> str:
        """How a sampled step's token was drawn: at random, among the bars not cut; said when it is not shown."""
        if not step.sampled:
            return ""
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
            said = tr("The token drawn, “{token}”, is not among the {n} shown.")
            notes.append(said.format(token=piece(step.kept[0].token), n=len(step.top_tokens[0])))
        return " ".join(notes)
