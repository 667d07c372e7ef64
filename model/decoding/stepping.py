"""Step-through decoding, answered as immutable :class:`~model.io.snapshots.DecodeView` snapshots.

A :class:`DecodeDriver` keeps one sentence being decoded. Each step is one decoder call for all live
prefixes (:class:`~model.decoding.BeamStepper`); a view's teacher-forced maps of the prefix in focus
are put together from the rows those calls recorded — at each position, the row of the beam the
focus descends from, found by following the back-pointers — and the encoder's self-attention of the
start (a decoder-only model: the rows of its prompt, recorded as it was read), so showing a step
computes nothing more. Views are kept per position: Back, Show and Go to a
position already shown compute nothing at all. Every answer is on the weights of the moment: when
training has changed them since the stepper was built, it is rebuilt and replayed to the same
position first.

The logit lens of the current step comes the same way, when it is watched (:meth:`DecodeDriver.watch_lens`): each
decoder call also keeps its residual stream, and the view reads the row of the prefix in focus out through the
final norm and the output layer; watching it from the middle of a sentence replays the sentence once.

No PyTorch is imported here (the session does the computing), so the window may import this module.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from model.interpret.results import LensTable
from model.io.snapshots import (
    Candidate,
    DecodeSettings,
    DecodeStep,
    DecodeView,
    Hypothesis,
    Inspection,
    RouterView,
)

if TYPE_CHECKING:
    from model.decoding.search import DecoderRows
    from model.session import DecodeSession, Session

ACTIONS = ("step", "back", "run", "reset", "goto", "show")
# The views of one sentence kept for going back: a long output of a large model steps through views that grow as
# T² (decoder self-attention), so the least recently shown go beyond this.
VIEW_CACHE_BYTES = 256 * 2**20


class DecodeError(ValueError):
    """A request a person can put right; ``code`` names it, for the window to say in its language."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


_decode_ids = itertools.count(1)  # across drivers: a new run's first sentence is still a new sentence


class DecodeDriver:
    """One sentence decoded step by step (engine thread only)."""

    def __init__(self, session: Session, lens: bool = False) -> None:
        self.session = session
        self.lens = lens  # read the logit lens out of each step (only while someone looks at it)
        self.decode_id = 0
        self.settings: DecodeSettings | None = None
        self._decode: DecodeSession | None = None
        self._built_at = -1
        self._views: dict[int, DecodeView] = {}  # by position, for the stepper of the moment; least recent first
        self._cached_bytes = 0

    def start(self, settings: DecodeSettings) -> DecodeView:
        """A new sentence. If it cannot be decoded, the old one is dropped too: the panel has cleared it."""
        self._decode, self.settings = None, settings
        self._build(0)
        self.decode_id = next(_decode_ids)
        return self.view()

    def act(self, action: str, position: int | None = None) -> DecodeView:
        """Step, back, run (to the end), reset, goto ``position``, or show (the step shown now)."""
        if action not in ACTIONS:
            raise ValueError(f"unknown decoding action {action!r}")
        self._fresh()
        stepper = self._sentence.stepper
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
        return self.view()

    def view(self) -> DecodeView:
        """What the position shown now looks like: made once per position and kept (within VIEW_CACHE_BYTES;
        a view let go is made again from the recorded rows, still without calling the model)."""
        position = self._sentence.stepper.position
        view = self._views.pop(position, None)
        if view is None:
            view = self._make_view()
            self._cached_bytes += _size(view)
        self._views[position] = view  # the most recently shown last
        while self._cached_bytes > VIEW_CACHE_BYTES and len(self._views) > 1:
            self._cached_bytes -= _size(self._views.pop(next(iter(self._views))))
        return view

    def watch_lens(self, on: bool) -> None:
        """Read the logit lens out of each step from now on (``on``), or stop. A sentence stepped without it is
        replayed once to the same position, so that every position of the focus has its lens."""
        self.lens = on
        decode = self._decode
        if decode is None:
            return
        decode.stepper.lens = on
        if on and not all(row.residuals is not None for row in decode.stepper.rows):
            self._build(decode.stepper.position)

    # -- the stepper ---------------------------------------------------------------------------------------------
    @property
    def _sentence(self) -> DecodeSession:
        """The sentence being decoded (asked for only once one is: after _fresh or a start)."""
        assert self._decode is not None
        return self._decode

    @property
    def _settings(self) -> DecodeSettings:
        assert self.settings is not None
        return self.settings

    @property
    def _generating(self) -> bool:
        """A decoder-only model: the prompt is read by the decoder itself, before what it generates."""
        return "generate" in self.session.model_cfg.family.decoding

    def _build(self, position: int) -> None:
        s = self._settings
        self._views, self._cached_bytes = {}, 0
        sampling = None
        if s.sampling:
            from model.decoding.search import Sampling  # imports PyTorch: only where the engine runs

            sampling = Sampling(s.temperature, s.sample_top_k or None, s.top_p if s.top_p < 1 else None, s.seed)
        self._decode = decode = self.session.stepper(
            s.text, s.beam_size, s.max_len, s.length_penalty, s.top_k, sampling=sampling, lens=self.lens
        )
        self._built_at = self.session.step
        for _ in range(position):
            if decode.stepper.step() is None:
                break

    def _fresh(self) -> None:
        if self._decode is None:
            if self.settings is None:
                raise DecodeError("no_sentence", "Type a sentence and press Enter to start decoding.")
            self._build(0)  # the start failed: try again, so that the person reads why it fails
            self.decode_id = next(_decode_ids)
            return
        if self._built_at != self.session.step:  # the weights changed: same position, current weights
            self._build(self._decode.stepper.position)

    # -- views ---------------------------------------------------------------------------------------------------
    def _make_view(self) -> DecodeView:
        d, session = self._sentence, self.session
        stepper = d.stepper
        shown = tuple(stepper.history[: stepper.position])
        # finished hypotheses, best first (ties: the earlier step first), each with where it finished
        ranked = sorted(
            ((h, t, i) for t, step in enumerate(shown) for i, h in enumerate(step.finished)),
            key=lambda found: found[0].score,
            reverse=True,
        )
        decode = session.tgt_tok.decode
        hyps = tuple((decode(h.tokens), h.score, h.log_prob, tuple(h.tokens)) for h, _, _ in ranked)
        focus, end = _focus(shown, ranked, stepper.position, session.model_cfg.eos_id)
        generating = self._generating
        return DecodeView(
            decode_id=self.decode_id,
            settings=self._settings,
            source_tokens=tuple(d.source_tokens),
            unknown=frozenset(i for i, t in enumerate(d.source_ids) if t == session.src_tok.unk_id),
            source_length=len(d.source.ids),
            source_read=len(d.source_ids) - (not generating),  # a translator's EOS is added after the cut
            reference=d.reference,
            position=stepper.position,
            at_end=stepper.at_end,
            steps=shown,
            hypotheses=hyps,
            focus_tokens=tuple(focus),
            focus_text=decode(focus),
            inspection=self._inspection(focus, end),
            weights_step=session.step,
            source_typed=_typed(d, eos=not generating),
            lens=self._lens(focus, end),
        )

    def _lens(self, focus: list[int], end: tuple[int, int] | None) -> LensTable | None:
        """The logit lens of the current step (the last position of ``focus``: it reads the token before the
        last and predicts the last), read out of the residual stream that step's call kept; None when not
        watched or not kept."""
        d, session = self._sentence, self.session
        if not self.lens or end is None or not focus:
            return None
        t = len(focus) - 1
        column = d.stepper.lens_at(t, _back_pointers(d.stepper.history, end)[t], focus[t])
        if column is None:
            return None
        top_ids, top_probs, chosen = column[0][:, None], column[1][:, None], column[2][:, None]  # [layers, 1, …]
        tops, first = column[0][:, 0].tolist(), len(column[0]) - 1  # each layer's best; from where it stays
        while first and tops[first - 1] == tops[-1]:
            first -= 1
        show = session.tgt_tok.display_token
        read = focus[t - 1] if t else (d.source_ids[-1] if self._generating else session.model_cfg.bos_id)
        tokens = tuple(tuple(tuple(show(int(i)) for i in ids) for ids in layer) for layer in top_ids)
        said = (show(read),), (show(focus[t]),)
        return LensTable(self._settings.text, *said, tokens, top_probs, chosen, np.array([first]), session.step)

    def _inspection(self, focus: list[int], end: tuple[int, int] | None) -> Inspection:
        """Source → ``focus``, teacher-forced, from the recorded rows; ``end`` = (position, row) of the focus's
        last decoder position. Without one (an output cut at max_len, read at a position the search never
        computes), the session computes the whole pair. A decoder-only model's prompt comes first: its rows
        were recorded as it was read, before the first step."""
        d, session = self._sentence, self.session
        cfg = session.model_cfg
        generating = self._generating
        y = [t for t in focus if t != cfg.eos_id]
        read = [cfg.bos_id, *d.source_ids, *y] if generating else [cfg.bos_id, *y]  # what the decoder reads
        if end is None or (generating and cfg.pad_id in read[1:]):  # a whole pass hides padding; a step reads it
            return session.inspect(self._settings.text, tgt_ids=focus)
        stepper = d.stepper
        chain = _back_pointers(stepper.history, end)  # the focus's row at positions 0 … len(y) after the prompt
        if len(stepper.rows) < len(chain):
            stepper.lookahead()  # the position after the last step: its one decoder call
        rows = [*stepper.prompt_rows, *stepper.rows[: len(chain)]]
        path = [0] * len(stepper.prompt_rows) + chain  # the prompt is read in row 0
        probs = [*stepper.prompt_probs.tolist()]  # P(prompt token | what precedes it)
        probs += [stepper.history[t].kept[chain[t + 1]].prob for t in range(len(y))]  # P(y_t | y_<t, source)
        probs.append(float(rows[-1].eos_probs[chain[-1]]))  # P(EOS | y, source)
        decoder_self, cross = _assemble(rows, path)
        assert stepper.encoder_attention is not None  # the session's steppers record
        show = session.tgt_tok.display_token
        tokens = [show(t) for t in read]
        if generating:  # causal, and no padding to hide (checked above)
            masks = {"decoder_self": np.tril(np.ones((len(read), len(read)), dtype=bool))}
        else:
            masks = session.attention_masks(d.source_ids, read)
        return Inspection(
            src_tokens=[] if generating else list(d.source_tokens),
            tgt_tokens=tokens,
            out_tokens=[show(t) for t in [*read[1:], cfg.eos_id]],
            encoder=stepper.encoder_attention,
            decoder_self=decoder_self,
            cross=cross,
            target_probs=np.array(probs, dtype=np.float32),
            teacher_forced=True,
            step=session.step,
            source=self._settings.text,
            target_ids=tuple(y),
            masks=masks,
            routing=_routing(rows, path, tokens) if generating else (),  # a translation's steps show no routing
            arch=cfg.arch,
        )


def _typed(d: DecodeSession, eos: bool = True) -> tuple[str, ...]:
    """The text typed for each piece the encoder reads (its span of the normalised input); EOS as its piece.
    Without ``eos``: a decoder-only model's prompt, every piece typed."""
    spans = d.source.spans[: len(d.source_ids) - eos]  # the pieces kept (EOS is added after the cut)
    return tuple(d.source.text[a:b] for a, b in spans) + tuple(d.source_tokens[len(spans) :])


def _size(view: DecodeView) -> int:
    """Bytes a kept view holds of its own (the encoder's map and the steps are shared by all views)."""
    inspection = view.inspection
    return 0 if inspection is None else inspection.decoder_self.nbytes + inspection.cross.nbytes


def _finished_candidate(step: DecodeStep, i: int) -> Candidate:
    """The candidate of ``step`` that completed its ``i``-th finished hypothesis (finished ones follow the live)."""
    return [c for c in step.kept if c.status == "finished"][i]


def _back_pointers(history: list[DecodeStep], end: tuple[int, int]) -> list[int]:
    """The rows (prefix indexes) of one prefix at positions 0 … t, from its row at position t: the prefix in
    row r at position t is the r-th live continuation of step t − 1, whose parent is its row there."""
    t, row = end
    chain = [row]
    for step in reversed(history[:t]):
        row = step.kept[row].parent
        chain.append(row)
    return chain[::-1]


def _focus(
    shown: tuple[DecodeStep, ...], ranked: list[tuple[Hypothesis, int, int]], position: int, eos: int
) -> tuple[list[int], tuple[int, int] | None]:
    """The prefix in focus — the best live beam (greedy: the output so far), else the best finished one — and
    (position, row) of its last decoder position: None for an output cut at max_len (no EOS), which would
    be read at a position the search never computes."""
    live = shown[-1].live_after if shown else []
    if live or not ranked:
        return (live[0] if live else []), (position, 0)  # row 0: the best prefix entering there
    best, t, i = ranked[0]
    return best.tokens, ((t, _finished_candidate(shown[t], i).parent) if best.tokens[-1] == eos else None)


def _assemble(rows: list[DecoderRows], path: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Decoder self-attention ``[layers, heads, T, T]`` (0 beyond each position, which it could not see) and
    cross-attention ``[layers, heads, T, S]`` of one prefix: row t of each is that prefix's row ``path[t]`` at
    position t (a decoder-only model has no source: S = 0)."""
    layers, heads = rows[0].self_attention.shape[1:3]
    S = rows[0].cross_attention.shape[-1]
    T = len(path)
    # the lower triangle (row t's t + 1 weights, in tril_indices' order), a head at a time: row by row, the 150 MB
    # of a 512-token text's 12 x 12 maps held the GIL about a second, in one copy a few hundred ms, a layer at a
    # time 40-50 ms per layer under load (the copy faults fresh pages in; the window's timer stood still meanwhile)
    picked = [record.self_attention[row] for record, row in zip(rows, path)]  # each [layers, heads, t + 1]
    decoder_self = np.zeros((layers, heads, T, T), dtype=np.float32)
    query, key = np.tril_indices(T)
    for layer in range(layers):
        weights = np.concatenate([p[layer] for p in picked], axis=-1)  # [heads, T(T+1)/2]
        for head in range(heads):
            decoder_self[layer, head][query, key] = weights[head]
    cross = np.zeros((layers, heads, T, S), dtype=np.float32)
    if S:
        cross[:] = np.stack([record.cross_attention[row] for record, row in zip(rows, path)], axis=2)
    return decoder_self, cross


def _routing(rows: list[DecoderRows], path: list[int], tokens: list[str]) -> tuple[RouterView, ...]:
    """What each decoder router did with the tokens of one prefix (row ``path[t]`` at position t)."""
    return tuple(
        RouterView(
            "decoder",
            layer,
            tokens,
            np.stack([record.routing[layer].probs[row] for record, row in zip(rows, path)]),
            np.stack([record.routing[layer].chosen[row] for record, row in zip(rows, path)]),
            np.stack([record.routing[layer].weights[row] for record, row in zip(rows, path)]),
        )
        for layer in range(len(rows[0].routing))
    )
