"""A session's decoding: what a model reads of a sentence, whole translations, and decoding step by step."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from model.data.tokenization import Encoded, normalize_text
from model.decoding.int8 import Int8Comparison, Int8Linears, compare
from model.decoding.search import (
    BeamStepper,
    SampleStepper,
    Sampling,
    beam_search,
    greedy_decode,
    output_budget,
)
from model.io.snapshots import Translation
from model.session.state import SessionState

GENERATE_TOKENS = 50  # how far a decoder-only model continues a prompt unless told otherwise
# what the int8 fast mode is compared on when the model has no held-out sentences of its own
CHECK_SENTENCES = (
    "I read a book yesterday.",
    "My older brother bought a new red bicycle for his daughter last weekend.",
    "Where is the train station?",
    "She likes to drink tea in the morning.",
    "We will go to the park if it does not rain tomorrow.",
    "How much does this cost?",
    "The teacher asked the students to write a short story.",
    "He has lived in Beijing for three years.",
)


@dataclass(frozen=True)
class DecodeSession:
    """A sentence being decoded step by step."""

    source: Encoded
    source_ids: list[int]
    source_tokens: list[str]  # display pieces of source_ids
    stepper: BeamStepper
    reference: str | None


class SessionDecoding(SessionState):
    """Translating a sentence (or continuing a prompt) with a session's model."""

    def _source(self, text: str) -> tuple[Encoded, list[int], bool]:
        """What a model reads of ``text``: the encoder (tokens + EOS), or a decoder-only model's prompt (the
        tokens; BOS is read before them), cut to fit."""
        generating = "generate" in self.model_cfg.family.decoding  # a decoder-only model continues a prompt
        if not normalize_text(text):
            raise ValueError("Type a prompt to continue." if generating else "Type a sentence to translate.")
        if generating:
            encoded = self.src_tok.encode(text)
            room = self.model_cfg.max_len - 2  # BOS before, at least one generated token after
            return encoded, encoded.ids[:room], len(encoded.ids) > room
        encoded = self.src_tok.encode(text)
        # what the encoder reads (as in training)
        ids = encoded.ids[: self.model_cfg.max_len - 1] + [self.model_cfg.eos_id]
        return encoded, ids, len(encoded.ids) > self.model_cfg.max_len - 1

    def default_max_len(self, n_source: int) -> int:
        if "generate" in self.model_cfg.family.decoding:  # a continuation, not a translation of the prompt
            return min(GENERATE_TOKENS, self.model_cfg.max_len - n_source - 1)
        return output_budget(n_source, self.model_cfg.max_len)

    def reference_for(self, text: str) -> str | None:
        """The corpus translation of ``text``, looked up only once the corpus is in memory: a translation
        never waits for its data to be read (a second for the teaching grammar)."""
        if self._corpus is None:
            return None
        try:
            return self._corpus.reference_for(text)
        except Exception:  # the data may be gone (a moved file); a reference is optional
            return None

    def translate(
        self,
        text: str,
        beam_size: int = 1,
        max_len: int | None = None,
        length_penalty: float = 0.6,
        with_reference: bool = True,
    ) -> Translation:
        """Translate one sentence; ``with_reference`` also looks it up in the corpus, if that is in memory."""
        encoded, ids, truncated = self._source(text)
        max_len = max_len or self.default_max_len(len(ids))
        src = torch.tensor(ids, device=self.device)
        if beam_size <= 1:
            tokens = greedy_decode(self.model, src, max_len)[0]
            hyps = [(self.tgt_tok.decode(tokens), float("nan"), float("nan"))]
        else:
            found = beam_search(self.model, src, beam_size, max_len, length_penalty)
            tokens = found[0].tokens
            hyps = [(self.tgt_tok.decode(h.tokens), h.score, h.log_prob) for h in found]
        reference = self.reference_for(text) if with_reference else None
        return Translation(encoded, ids, hyps[0][0], tokens, hyps, truncated, reference)

    @property
    def int8(self) -> bool:
        """Whether cached decoding steps run in the int8 fast mode (float32, exact, is the default)."""
        return isinstance(self.model.step_linear, Int8Linears)

    def set_int8(self, on: bool) -> Int8Comparison | None:
        """The int8 fast mode of decoding on or off. On: every cached decoding step computes its linear layers
        with int8 weights (CPU; a translator's greedy and beam search, the stepper); returns how far greedy
        decodings of a few sentences then differ from float32 (held-out sentences of the model's data, else
        :data:`CHECK_SENTENCES`). Off: float32 again, exactly as before."""
        if not on:
            self.model.step_linear = self.model.float_linear
            return None
        if "translate" not in self.model_cfg.family.decoding:
            raise ValueError("The int8 fast mode is for translation models (an encoder and a decoder).")
        if self.device.type != "cpu":
            raise ValueError("The int8 fast mode is for decoding on the CPU; on a GPU float32 is fast already.")
        int8 = Int8Linears()
        int8.prepare(self.model)
        held_out = [src for src, _ in self._corpus.test[:8]] if self._corpus is not None else []
        sources = [torch.tensor(self._source(t)[1]) for t in (held_out or CHECK_SENTENCES)]
        report = compare(self.model, sources, min(40, self.model_cfg.max_len - 1), int8)
        self.model.step_linear = int8
        return report

    def stepper(
        self,
        text: str,
        beam_size: int = 1,
        max_len: int | None = None,
        length_penalty: float = 0.6,
        top_k: int = 10,
        sampling: Sampling | None = None,
        lens: bool = False,
    ) -> DecodeSession:
        """Decoding of ``text`` one step at a time (greedy when beam_size is 1; drawn at random with
        ``sampling``). For a decoder-only model ``text`` is the prompt it continues. ``lens``: each step also reads
        the logit lens out of its decoder call."""
        encoded, ids, _ = self._source(text)
        max_len = max_len or self.default_max_len(len(ids))
        src = torch.tensor(ids, device=self.device)
        stepper: BeamStepper
        if sampling is not None:
            stepper = SampleStepper(self.model, src, max_len, sampling, top_k, lens=lens)
        else:
            penalty = length_penalty if beam_size > 1 else 0.0
            stepper = BeamStepper(self.model, src, beam_size, max_len, penalty, top_k, lens=lens)
        tokens = [self.src_tok.display_token(i) for i in ids]
        return DecodeSession(encoded, ids, tokens, stepper, self.reference_for(text))
