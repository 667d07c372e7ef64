"""Step-through decoding on the engine thread, answered as immutable :class:`DecodeView` snapshots.

A driver keeps one sentence being decoded. Every answer is computed on the
weights of the moment: when training has changed them since the stepper was
built, the stepper is rebuilt and replayed to the same position first.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from explorer.i18n import tr
from model.tokenization import UNK_ID

if TYPE_CHECKING:  # types only: PyTorch is loaded by the engine, after the window shows
    from model.decoding import DecodeStep
    from model.session import Inspection, Session


@dataclass(frozen=True)
class DecodeSettings:
    text: str
    beam_size: int = 1  # 1 = greedy
    length_penalty: float = 0.6
    max_len: int | None = None  # None: from the source length
    top_k: int = 10


@dataclass(frozen=True)
class DecodeView:
    """What the decoding panel (and the attention panel following it) shows."""

    decode_id: int  # which sentence; grows with every new start
    settings: DecodeSettings
    source_tokens: tuple[str, ...]  # encoder input pieces (EOS included)
    unknown: frozenset[int]  # indexes of source pieces that were not in the vocabulary
    source_length: int  # tokens the input has (EOS not counted)
    source_read: int  # of those, how many the encoder reads: the model's max_len cuts longer inputs
    reference: str | None  # corpus translation, when the sentence is from the corpus
    position: int  # steps shown (0 = before the first)
    at_end: bool  # no further step exists
    steps: tuple[DecodeStep, ...]  # the steps shown, oldest first (ids; the GUI names them)
    hypotheses: tuple[tuple[str, float, float, tuple[int, ...]], ...]  # finished: text, score, log P, ids
    focus_tokens: tuple[int, ...]  # the prefix in focus: greedy output / best live beam / best finished
    focus_text: str  # its detokenised text
    inspection: Inspection | None  # teacher-forced attention of source → focus prefix
    weights_step: int  # training step of the weights used


_decode_ids = itertools.count(1)  # across drivers: a new run's first sentence is still a new sentence


class DecodeDriver:
    """One sentence decoded step by step (engine thread only)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.decode_id = 0
        self.settings: DecodeSettings | None = None
        self._decode = None  # model.session.DecodeSession
        self._built_at = -1

    def start(self, settings: DecodeSettings) -> DecodeView:
        """A new sentence. If it cannot be decoded, the old one is dropped too: the panel has cleared it."""
        self._decode, self.settings = None, settings
        self._build(0)
        self.decode_id = next(_decode_ids)
        return self.view()

    def _build(self, position: int) -> None:
        s = self.settings
        self._decode = self.session.stepper(s.text, s.beam_size, s.max_len, s.length_penalty, s.top_k)
        self._built_at = self.session.step
        for _ in range(position):
            if self._decode.stepper.step() is None:
                break

    def _fresh(self) -> None:
        if self._decode is None:
            if self.settings is None:
                raise ValueError(tr("Type a sentence and press Enter to start decoding."))
            self._build(0)  # the start failed: try again, so that the person reads why it fails
            self.decode_id = next(_decode_ids)
            return
        if self._built_at != self.session.step:  # the weights changed: same position, current weights
            self._build(self._decode.stepper.position)

    def act(self, action: str, position: int | None = None) -> DecodeView:
        self._fresh()
        stepper = self._decode.stepper
        if action == "step":
            stepper.step()
        elif action == "back":
            stepper.back()
        elif action == "run":
            stepper.run()
            stepper.position = len(stepper.history)
        elif action == "reset":
            stepper.reset()
        elif action == "goto" and position is not None:
            while stepper.position < position and stepper.step() is not None:
                pass
            stepper.position = max(0, min(position, stepper.position))
        elif action != "show":
            raise ValueError(f"unknown decoding action {action!r}")
        return self.view()

    def view(self) -> DecodeView:
        d, session = self._decode, self.session
        stepper = d.stepper
        shown = tuple(stepper.history[: stepper.position])
        finished = [h for step in shown for h in step.finished]
        finished.sort(key=lambda h: h.score, reverse=True)
        decode = session.tgt_tok.decode
        hyps = tuple((decode(h.tokens), h.score, h.log_prob, tuple(h.tokens)) for h in finished)
        # the prefix in focus: the best live beam (greedy: the output so far), else the best finished one
        live = shown[-1].live_after if shown else []
        focus: list[int] = live[0] if live else (finished[0].tokens if finished else [])
        inspection = session.inspect(self.settings.text, tgt_ids=list(focus))
        return DecodeView(
            decode_id=self.decode_id,
            settings=self.settings,
            source_tokens=tuple(d.source_tokens),
            unknown=frozenset(i for i, t in enumerate(d.source_ids) if t == UNK_ID),
            source_length=len(d.source.ids),
            source_read=len(d.source_ids) - 1,  # EOS is added after the cut
            reference=d.reference,
            position=stepper.position,
            at_end=stepper.at_end,
            steps=shown,
            hypotheses=hyps,
            focus_tokens=tuple(focus),
            focus_text=decode(focus),
            inspection=inspection,
            weights_step=session.step,
        )
