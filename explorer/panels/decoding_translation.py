"""Translation stepping: an encoder–decoder model translates the sentence, greedily or by beam search, one token a
step. What it shows its own way on the decoding panel's shared views (:mod:`explorer.panels.decoding_views`): the
sentence and its translation so far, the corpus's reference translation to compare with, and each step's
cross-attention (where the token looked in the source) beside the candidates.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from explorer.i18n import tr
from explorer.panels.decoding_views import InputTexts
from explorer.widgets.candidates import AXIS
from model.io.snapshots import DecodeSettings, DecodeStep, DecodeView


class TranslationMode:
    """An encoder–decoder model's decoding (and the words of the page an encoder-only model does not show)."""

    prompted = False  # a sentence to translate: no prompt label, no Sample mode
    cross_attention = True  # the decoder reads the source: the step's cross-attention beside its candidates

    def input_texts(self) -> InputTexts:
        return InputTexts(
            placeholder=tr("Type a sentence and press Enter"),
            tooltip="",
            start=tr("Decode"),
            sample=tr("Random test sentence"),
            output=tr("Translation"),
            nbest=tr("n-best list"),
        )

    def sample_tip(self) -> str:
        return tr(
            "Put a random sentence of the test split (sentences the model never trained on) in the box and "
            "decode it; its reference translation is shown."
        )

    def max_len_tip(self) -> str:
        return tr("Longest output in tokens (auto: 1.5 × the input + 10). At most {n}: the model's length limit.")

    def sentence_of(self, source: str) -> str:
        return source

    def output_line(self, view: DecodeView, text: str) -> tuple[str, str]:
        """“Output so far” while decoding, “Translation” once a hypothesis has finished."""
        done = view.at_end and bool(view.hypotheses)
        title, text = (tr("Translation"), text or "∅") if done else (tr("Output so far"), text or "…")
        return title, f"<b>{html.escape(text)}</b>"

    def reference(self, view: DecodeView) -> str | None:
        return view.reference

    def cut_note(self) -> str:
        return tr(
            "The input has {total} tokens but the model reads at most {kept}: "
            "only the first {kept} were translated, the other {cut} were ignored."
        )

    def prefix(self, view: DecodeView, pieces: list[str]) -> list[str]:
        return pieces

    def axis(self, step: DecodeStep | None, settings: DecodeSettings) -> str:
        """The next token given its prefix and the source."""
        return AXIS

    def draw_note(
        self, step: DecodeStep, settings: DecodeSettings, drawn: int | None, piece: Callable[[int], str]
    ) -> str:
        return ""  # greedy and beam search draw nothing
