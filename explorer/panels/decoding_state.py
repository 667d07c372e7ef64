"""What the decoding panel shows, as a value: the sentence, how it is decoded, the step, the presenter's focus and
auto-play. Presenter mode, its scenes and tests read and set this state (``DecodingPanel.view_state`` and
``DecodingPanel.show_view_state``), never the panel's widgets. Qt-free: it can be made and compared anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

SPEEDS = (0.5, 1.0, 2.0, 3.0, 5.0)  # auto-play's steps a second: the speed slider's notches (+ and − in presenter mode)
MODES = ("greedy", "beam", "sample")  # sample: offered for a decoder-only model only


@dataclass(frozen=True)
class DecodingViewState:
    """The decoding panel's sentence, settings and what it shows of the sentence decoded."""

    sentence: str = ""  # in the box: a translator's sentence, a decoder-only model's prompt
    mode: str = "greedy"  # one of MODES
    beam_size: int = 4  # beams kept (beam search)
    length_penalty: float = 0.6  # α of the GNMT length penalty (beam search)
    max_len: int = 0  # longest output in tokens; 0: auto
    temperature: float = 1.0  # sampling: divides the scores before the softmax
    top_k: int = 0  # sampling: draw among the k most probable tokens (0: no cut)
    top_p: float = 0.9  # sampling: draw among the most probable tokens whose probabilities reach p (1: no cut)
    seed: int = 0  # sampling: the same seed draws the same tokens (−1: a new seed for each sentence)
    step: int = 0  # steps shown of the sentence decoded (0: before the first); set, it goes there (goto)
    cross_layer: int = 1  # the decoder layer whose cross-attention the step shows (1 = the first)
    focus: str | None = None  # presenter mode's enlarged part: "candidates" or "tree"; None: what the mode needs
    playing: bool = False  # auto-play is stepping by itself
    speed: float = 2.0  # auto-play's steps a second: one of SPEEDS
