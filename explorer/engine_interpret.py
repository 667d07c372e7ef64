"""The engine's handlers that ask the current model *why*: attribution, the logit lens, heads switched off for
every view, and the head-importance sweep (:mod:`model.interpret`, through the session). Engine thread only."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from explorer.answers import AblationChanged, Attributed, ImportanceReady, LensReady, SweepProgress
from explorer.commands import (
    Attribute,
    Command,
    Decode,
    DecodeLanes,
    Explain,
    FillMask,
    HeadImportanceOf,
    Inspect,
    LogitLensOf,
    SetAblation,
    WatchLens,
)
from explorer.engine_base import EngineBase
from model.interpret.results import AblationDiff, Attribution, Head, LensTable

if TYPE_CHECKING:
    from model.session import Session

# the views of the model that the heads switched off apply to
ABLATED_VIEWS = (Inspect, Explain, Decode, DecodeLanes, FillMask, Attribute, LogitLensOf, WatchLens)
# what a person asks that a long attribution (integrated gradients over a 512-token text: minutes) steps aside for
ASKED_FIRST = (Attribute, LogitLensOf, Decode, DecodeLanes, FillMask, Inspect, Explain)


class _AskedSince(Exception):
    """Raised from an attribution's progress: the person asked for something else meanwhile."""


class InterpretHandlers(EngineBase):
    """Attribution, the logit lens, ablation and head importance, asked for by the panels (engine thread)."""

    @contextmanager
    def _ablated_for(self, c: Command) -> Iterator[None]:
        """The heads the person switched off stay off for every view of the model (never for training)."""
        if not self._ablation or self.session is None or not isinstance(c, ABLATED_VIEWS):
            yield
            return
        with self.session.ablated(self._ablation, self._ablation_mode):
            yield

    def _interpret(self, c: Attribute | LogitLensOf | WatchLens | SetAblation | HeadImportanceOf) -> None:
        """The commands that ask the model why, each to its handler."""
        match c:
            case Attribute():
                self._attribute(c)
            case LogitLensOf():
                self._logit_lens(c)
            case WatchLens():
                self._watch_lens(c)
            case SetAblation():
                self._set_ablation(c)
            case HeadImportanceOf():
                self._head_importance(c)

    def _attribute(self, c: Attribute) -> None:
        """Integrated gradients of a decoding's prefix reuse the rows already computed for a shorter prefix of it
        (a target's row never depends on the targets after it): stepping costs one new row per step. A long one
        says how far it is (``sweep_progressed``, by request id) and steps aside for what the person asks
        meanwhile (:meth:`_attribution_goes_on`)."""
        s = self._need_session()
        target = None if c.target_ids is None else list(c.target_ids)
        key = (self._run_id, s.step, c.source, c.method, c.steps, self._ablation, self._ablation_mode)
        before = self._attributions.get(key) if c.contrast_id is None and target is not None else None
        rows = None
        if before is not None and target is not None and list(before[0]) == target[: len(before[0])]:
            rows = list(range(len(before[0]), len(target)))
        try:
            found = s.attribute(
                c.source,
                c.method,
                target,
                c.contrast_id,
                c.steps,
                rows=rows,
                progress=lambda done, total: self._attribution_goes_on(c, done, total),
            )
        except _AskedSince:
            return
        if rows is not None and before is not None:
            found = _with_rows_of(found, before[1])
        if c.contrast_id is None and target is not None and c.method == "integrated_gradients":
            self._attributions = {key: (tuple(target), found)}
        self.attributed.emit(Attributed(c.request_id, found, self._ablation))

    def _attribution_goes_on(self, c: Attribute, done: int, total: int) -> None:
        """After each batch of integrated gradients' points: tell the window how far it is; stop if the window
        closes, or if the person asked for something meanwhile — then this attribution waits behind it (asked
        again at the end of the queue), unless a newer attribution replaces it."""
        self.sweep_progressed.emit(SweepProgress(c.request_id, done, total))
        queue = getattr(self, "_queue", None)  # the engine's (explorer/worker.py), read without taking from it
        if queue is None:
            return
        if getattr(self, "_stop", False):  # the window closes
            raise _AskedSince
        with queue.mutex:
            waiting = list(queue.queue)
        if any(isinstance(w, ASKED_FIRST) for w in waiting):
            if not any(isinstance(w, Attribute) for w in waiting):
                queue.put(c)
            raise _AskedSince

    def _logit_lens(self, c: LogitLensOf) -> None:
        s = self._need_session()
        target = None if c.target_ids is None else list(c.target_ids)
        lens = s.logit_lens(c.source, target)
        ids, probs = lens.top(c.top_k)
        show = s.tgt_tok.display_token
        tokens = tuple(tuple(tuple(show(int(i)) for i in row) for row in layer) for layer in ids)
        table = LensTable(
            lens.source, lens.positions, lens.targets, tokens, probs, lens.target_probs(), lens.first_layer(), lens.step
        )
        self.lens_ready.emit(LensReady(c.request_id, table, self._ablation))

    def _watch_lens(self, c: WatchLens) -> None:
        """The Why? panel shows the logit lens, or no longer: a decoding under way keeps what the lens reads from
        now on (replayed once to where it is), and so does every decoding started after."""
        self._lens_watched = c.on
        if self._decoder is not None:
            self._decoder.watch_lens(c.on)

    def _set_ablation(self, c: SetAblation) -> None:
        """Switch heads off (checked against the model first); compare the sentence's output before and after."""
        s = self._need_session()
        heads: tuple[Head, ...] = tuple((str(k), int(layer), int(h)) for k, layer, h in c.heads)
        with s.ablated(heads):  # a head the model lacks is refused here, before anything changes
            pass
        diff = self._ablation_diff(s, c.source, heads, c.mode) if c.source.strip() else None
        self._ablation, self._ablation_mode = heads, c.mode
        self._decoder = self._lanes = None  # a decoding stepped with other heads is not continued: started again
        self.ablation_changed.emit(AblationChanged(c.request_id, heads, c.mode, diff))

    def _ablation_diff(self, s: Session, source: str, heads: tuple[Head, ...], mode: str) -> AblationDiff:
        """The model's own output for ``source`` with every head on, and with ``heads`` off; the first's tokens'
        probabilities (teacher-forced) both ways."""
        if "fill_mask" in s.model_cfg.family.decoding:
            return self._fill_mask_diff(s, source, heads, mode)
        before = s.inspect(source)
        with s.ablated(heads, mode) if heads else nullcontext():
            after = s.inspect(source)
            same_tokens = s.inspect(source, tgt_ids=list(before.target_ids))
        cut = len(before.out_tokens) - len(before.target_probs)  # a GPT's rows cover the prompt too
        return AblationDiff(
            source,
            heads,
            mode,
            tuple(before.out_tokens),
            tuple(after.out_tokens),
            before.target_probs[max(0, cut) :].copy(),
            same_tokens.target_probs[max(0, cut) :].copy(),
        )

    def _fill_mask_diff(self, s: Session, text: str, heads: tuple[Head, ...], mode: str) -> AblationDiff:
        before = s.fill_mask(text)
        with s.ablated(heads, mode) if heads else nullcontext():
            after = s.fill_mask(text)
        kept = []
        for b, a in zip(before.predictions, after.predictions):
            kept.append(a.probs[a.tokens.index(b.tokens[0])] if b.tokens[0] in a.tokens else np.nan)
        return AblationDiff(
            text,
            heads,
            mode,
            tuple(p.tokens[0] for p in before.predictions),
            tuple(p.tokens[0] for p in after.predictions),
            np.array([p.probs[0] for p in before.predictions], np.float32),
            np.array(kept, np.float32),
        )

    def _head_importance(self, c: HeadImportanceOf) -> None:
        """Each head ablated in turn; progress after each, and the window's Cancel (or closing) stops it."""
        s = self._need_session()
        self._sweep_cancel.clear()

        def progress(done: int, total: int) -> bool:
            self.sweep_progressed.emit(SweepProgress(c.request_id, done, total))
            return not self._sweep_cancel.is_set()  # Cancel, or the window closing

        importance = s.head_importance(c.sentences, "loss", c.mode, progress)
        self.importance_ready.emit(ImportanceReady(c.request_id, importance))


def _with_rows_of(found: Attribution, earlier: Attribution) -> Attribution:
    """``found`` with the first rows taken from ``earlier`` (the same explanation of a shorter prefix)."""
    n = len(earlier.target_tokens)
    scores, prefix = found.scores.copy(), found.prefix_scores.copy()
    scores[:n] = earlier.scores
    prefix[:n, :n] = earlier.prefix_scores
    return replace(found, scores=scores, prefix_scores=prefix)
