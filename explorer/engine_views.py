"""The engine's handlers that look inside the current model: attention for a sentence, one head spelled out, the
positional tables, step-through decoding, filled masks, a random sentence of the corpus. Each answers its request
with its id."""

from __future__ import annotations

from explorer.answers import (
    DecodeStepped,
    EngineMessage,
    Explained,
    InspectionReady,
    Int8Changed,
    LanesStepped,
    MaskFilled,
    PositionalReady,
    SentenceSampled,
)
from explorer.commands import (
    Decode,
    DecodeLanes,
    Explain,
    ExplainWorkedExample,
    FillMask,
    Inspect,
    Positional,
    SampleSentence,
    SetInt8,
)
from explorer.engine_base import EngineBase
from explorer.failures import NO_LANES, RefusedRequest
from model.decoding.lanes import LanesDriver
from model.decoding.stepping import DecodeDriver


class ViewHandlers(EngineBase):
    """Views of the current model, asked for by the panels (engine thread)."""

    def _inspect(self, c: Inspect) -> None:
        s = self._need_session()
        self.inspection_ready.emit(InspectionReady(c.request_id, s.inspect(c.source, c.target)))

    def _explain(self, c: Explain) -> None:
        """Spell out one head."""
        target = None if c.target_ids is None else list(c.target_ids)
        explanation = self._need_session().explain_attention(c.source, target, c.kind, c.layer, c.head)
        self.explained.emit(Explained(c.request_id, explanation))

    def _explain_worked_example(self, c: ExplainWorkedExample) -> None:
        from model.session import notes_example

        self.explained.emit(Explained(c.request_id, notes_example()))

    def _positional(self, c: Positional) -> None:
        self.positional_ready.emit(PositionalReady(c.request_id, self._need_session().positional_tables()))

    def _decode(self, c: Decode) -> None:
        """Step-through decoding: action start (with settings), step, back, run, reset, goto, show."""
        session = self._need_session()
        if self._decoder is None:  # _install drops the driver of an old session
            self._decoder = DecodeDriver(session, lens=self._lens_watched)
        if c.action == "start":
            if c.settings is None:
                raise ValueError("a decoding start needs its settings")
            view = self._decoder.start(c.settings)
        else:
            view = self._decoder.act(c.action, c.position)
        self.decode_stepped.emit(DecodeStepped(c.request_id, view))

    def _set_int8(self, c: SetInt8) -> None:
        """The int8 fast mode on or off; a decoding under way is started again by the panel (its steps so far
        were computed the other way)."""
        report = self._need_session().set_int8(c.on)
        self._decoder = self._lanes = None
        if report is None:
            self.int8_changed.emit(Int8Changed(c.request_id, False))
        else:
            changed = Int8Changed(c.request_id, True, report.sentences, report.same_tokens, report.max_logprob_change)
            self.int8_changed.emit(changed)

    def _decode_lanes(self, c: DecodeLanes) -> None:
        """Decoding lanes: start (one settings per lane), step, back, run, reset, show."""
        session = self._need_session()
        if c.action == "start":
            self._lanes = LanesDriver(session)
            view = self._lanes.start(list(c.settings))
        elif self._lanes is None:
            raise RefusedRequest(EngineMessage(NO_LANES))
        else:
            view = self._lanes.act(c.action)
        self.lanes_stepped.emit(LanesStepped(c.request_id, view))

    def _fill_mask(self, c: FillMask) -> None:
        s = self._need_session()
        self.mask_filled.emit(MaskFilled(c.request_id, s.fill_mask(c.text, c.mask_positions, c.top_k)))

    def _sample_sentence(self, c: SampleSentence) -> None:
        """A random source sentence of the asked split (or the next one with sentences), with its reference; a
        corpus that cannot be read (a moved file) is said in the answer, for the panel that asked."""
        s = self._need_session()
        try:
            source, reference, split = s.sample_source(c.split, self._rng)
        except (ValueError, OSError) as exc:  # DataError is a ValueError
            self.sentence_sampled.emit(SentenceSampled(c.request_id, self._run_id, c.split, error=str(exc)))
            return
        self.sentence_sampled.emit(SentenceSampled(c.request_id, self._run_id, c.split, split, source, reference))
