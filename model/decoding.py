"""Greedy and beam-search decoding, and steppers that expose every step.

Token convention for every result: the generated ids without BOS, ending with
EOS when one was produced. Decoding never emits PAD or BOS: their logits are
set to −∞ before the softmax, so probabilities are renormalised over the rest.

Beam search keeps, at every step, the ``beam_size − |finished|`` best
continuations of all live prefixes together (one decoder call per step for all
beams, the key/value cache reordered by parent). A continuation ending in EOS,
or reaching ``max_len`` tokens, becomes a finished hypothesis and its slot
leaves the beam. So ``beam_size=1`` is exactly greedy decoding, and a beam wide
enough to keep every prefix is exhaustive search. Hypotheses are ranked by the
GNMT length-normalised score ``log_prob / ((5 + |Y|) / 6) ** α``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from model.masks import padding_mask
from model.transformer import DecoderState, Transformer


@dataclass(frozen=True)
class Hypothesis:
    """A finished translation candidate."""

    tokens: list[int]  # generated ids, no BOS; ends with EOS unless cut at max_len
    log_prob: float  # sum of the tokens' log-probabilities
    score: float  # log_prob / ((5 + len(tokens)) / 6) ** length_penalty


def length_normalized_score(log_prob: float, length: int, length_penalty: float) -> float:
    """GNMT length normalisation: log_prob / ((5 + length) / 6) ** α."""
    return log_prob / ((5 + length) / 6) ** length_penalty


@dataclass(frozen=True)
class Candidate:
    """One continuation considered at a step: prefix ``parent`` + ``token``."""

    parent: int  # row of the live prefix it extends (in DecodeStep.prefixes)
    token: int
    log_prob: float  # cumulative log-probability of prefix + token
    status: str  # "live" (kept in the beam), "finished" (EOS or max_len) or "pruned"


@dataclass(frozen=True)
class DecodeStep:
    """Everything one decoding step saw and decided. Arrays are numpy copies."""

    index: int  # 0 for the first generated token
    prefixes: list[list[int]]  # live prefixes entering this step (no BOS)
    prefix_log_probs: list[float]  # their cumulative log-probabilities
    top_tokens: np.ndarray  # [n_live, k] most probable next tokens per prefix
    top_probs: np.ndarray  # [n_live, k] their probabilities P(token | prefix, source)
    kept: list[Candidate]  # continuations taken: live ones first in beam order, then finished
    pruned: list[Candidate]  # per-prefix top-`beam_size` continuations that lost out
    finished: list[Hypothesis]  # hypotheses completed at this step
    cross_attention: np.ndarray | None  # [n_live, layers, heads, S] this position's cross-attention
    self_attention: np.ndarray | None  # [n_live, layers, heads, index + 1] decoder self-attention

    @property
    def live_after(self) -> list[list[int]]:
        """The prefixes alive after this step, in beam order."""
        return [self.prefixes[c.parent] + [c.token] for c in self.kept if c.status == "live"]


def output_budget(n_source: int, max_len: int) -> int:
    """How many tokens decoding may produce for a source of ``n_source`` tokens: 1.5× plus 10, within max_len."""
    return min(max_len, int(1.5 * n_source) + 10)


def _forbidden_bias(model: Transformer) -> Tensor:
    """Added to logits so that PAD and BOS are never chosen."""
    bias = torch.zeros(model.cfg.tgt_vocab_size, device=model.device)
    bias[[model.cfg.pad_id, model.cfg.bos_id]] = float("-inf")
    return bias


def _as_batch(src: Tensor | list, device: torch.device) -> Tensor:
    src = torch.as_tensor(src, dtype=torch.long, device=device)
    if src.dim() == 1:
        src = src[None]
    if src.dim() != 2 or src.shape[1] == 0:
        raise ValueError("the source must hold at least one token ([S] or [B, S] ids)")
    return src


def _check_max_len(max_len: int) -> None:
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1 (got {max_len})")


@torch.inference_mode()
def greedy_decode(
    model: Transformer,
    src: Tensor,
    max_len: int,
    use_cache: bool = True,
    return_log_probs: bool = False,
) -> list[list[int]] | tuple[list[list[int]], Tensor]:
    """Greedy decoding of a batch of sources ``[B, S]`` (or one ``[S]``).

    With ``use_cache`` each step feeds only the newest token and reuses cached
    keys/values; without it each step re-runs the decoder over the whole prefix
    (the reference the cache is tested against). With ``return_log_probs`` also
    returns the log-probabilities of every step ``[B, steps, V]`` (a row's
    entries after its EOS describe PAD fillers and mean nothing).
    """
    _check_max_len(max_len)
    model.eval()
    cfg = model.cfg
    src = _as_batch(src, model.device)
    B = src.shape[0]
    src_mask = padding_mask(src, cfg.pad_id)
    memory = model.encode(src, src_mask)
    forbid = _forbidden_bias(model)
    ys = torch.full((B, max_len + 1), cfg.pad_id, dtype=torch.long, device=src.device)
    ys[:, 0] = cfg.bos_id
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    state = model.start_decoding(memory, src_mask, B, capacity=max_len) if use_cache else None
    step_log_probs = []
    steps = 0
    for t in range(max_len):
        if state is not None:
            logits = model.decode_step(ys[:, t], state)[0]  # [B, V]
        else:
            logits = model.generator(model.decode(ys[:, : t + 1], memory, src_mask)[:, -1])
        logits = logits + forbid
        if return_log_probs:
            step_log_probs.append(logits.log_softmax(-1))
        next_token = logits.argmax(-1).masked_fill_(done, cfg.pad_id)  # finished rows emit PAD
        ys[:, t + 1] = next_token
        steps = t + 1
        done |= next_token == cfg.eos_id
        if bool(done.all()):
            break
    tokens = [_strip(row, cfg.eos_id, cfg.pad_id) for row in ys[:, 1 : steps + 1].tolist()]
    if return_log_probs:
        return tokens, torch.stack(step_log_probs, dim=1)
    return tokens


def _strip(row: list[int], eos_id: int, pad_id: int) -> list[int]:
    """Tokens up to and including the first EOS; PAD fillers dropped."""
    if eos_id in row:
        return row[: row.index(eos_id) + 1]
    return [t for t in row if t != pad_id]


class BeamStepper:
    """Beam search one token at a time, recording each step; ``back()`` revisits a
    recorded step without recomputing. ``beam_size=1`` is greedy decoding.

    Args:
        model: the Transformer (put in eval mode).
        src: one source sentence, 1-D token ids.
        beam_size: K, the number of hypotheses kept.
        max_len: the longest output in tokens (EOS included).
        length_penalty: α of the GNMT score.
        top_k: candidates recorded per prefix for display.
        record: keep per-step candidates and attention (off for plain beam search).
    """

    def __init__(
        self,
        model: Transformer,
        src: Tensor,
        beam_size: int,
        max_len: int,
        length_penalty: float = 0.6,
        top_k: int = 10,
        record: bool = True,
    ) -> None:
        if beam_size < 1:
            raise ValueError(f"beam_size must be at least 1 (got {beam_size})")
        if length_penalty < 0:
            raise ValueError(f"length_penalty must be ≥ 0 (got {length_penalty})")
        _check_max_len(max_len)
        self.model, self.beam_size, self.max_len = model, beam_size, max_len
        self.length_penalty, self.top_k, self.record = length_penalty, top_k, record
        cfg = model.cfg
        model.eval()
        with torch.inference_mode():
            src = _as_batch(src, model.device)
            if src.shape[0] != 1:
                raise ValueError("beam search decodes one source at a time; pass a 1-D tensor")
            self.src = src[0]
            src_mask = padding_mask(src, cfg.pad_id)
            memory = model.encode(src, src_mask)  # [1, S, d], shared by all beams
            self._state: DecoderState = model.start_decoding(memory, src_mask, beam_size, capacity=max_len)
            self._forbid = _forbidden_bias(model)
        self._allowed = cfg.tgt_vocab_size - 2  # every token but PAD and BOS
        self._prefixes: list[list[int]] = [[]]
        self._log_probs = torch.zeros(1, device=model.device)  # cumulative, per live prefix
        self._last = torch.full((1,), cfg.bos_id, dtype=torch.long, device=model.device)
        self._finished: list[Hypothesis] = []
        self.history: list[DecodeStep] = []
        self.position = 0  # steps currently shown (≤ len(history))

    # -- navigation ------------------------------------------------------------
    @property
    def finished_computing(self) -> bool:
        return not self._prefixes

    @property
    def at_end(self) -> bool:
        """True when the shown step is the last one there will ever be."""
        return self.finished_computing and self.position == len(self.history)

    @property
    def current(self) -> DecodeStep | None:
        return self.history[self.position - 1] if self.position else None

    def step(self) -> DecodeStep | None:
        """Show the next step: replayed if already computed, else computed. None at the end."""
        if self.position < len(self.history):
            self.position += 1
            return self.history[self.position - 1]
        if self.finished_computing:
            return None
        with torch.inference_mode():
            record = self._advance()
        self.history.append(record)
        self.position += 1
        return record

    def back(self) -> DecodeStep | None:
        """Go back one step (nothing is recomputed); returns the step now shown."""
        self.position = max(0, self.position - 1)
        return self.current

    def reset(self) -> None:
        """Back to before the first step; recorded steps are kept for replay."""
        self.position = 0

    def run(self) -> list[Hypothesis]:
        """Step to the end; the hypotheses, best first."""
        while self.step() is not None:
            pass
        return self.hypotheses()

    def hypotheses(self) -> list[Hypothesis]:
        """Finished hypotheses, best score first (the n-best list)."""
        return sorted(self._finished, key=lambda h: h.score, reverse=True)

    # -- one step of search --------------------------------------------------------
    def _advance(self) -> DecodeStep:
        cfg, state = self.model.cfg, self._state
        t = state.length  # tokens generated so far
        logits, self_w, cross_w = self.model.decode_step(self._last, state, need_weights=self.record)
        log_probs = (logits + self._forbid).log_softmax(-1)  # [n, V]
        n, V = log_probs.shape
        total = self._log_probs[:, None] + log_probs  # cumulative, [n, V]
        slots = min(self.beam_size - len(self._finished), n * self._allowed)
        best, flat = total.view(-1).topk(slots)  # sorted, best first
        parents, tokens = (flat // V).tolist(), (flat % V).tolist()
        scores = best.tolist()

        live, finished, kept_rows, kept_tokens, kept_scores = [], [], [], [], []
        finished_hyps = []
        for parent, token, lp in zip(parents, tokens, scores):
            prefix = self._prefixes[parent] + [token]
            if token == cfg.eos_id or len(prefix) == self.max_len:
                hyp = Hypothesis(prefix, lp, length_normalized_score(lp, len(prefix), self.length_penalty))
                finished_hyps.append(hyp)
                finished.append(Candidate(parent, token, lp, "finished"))
            else:
                live.append(Candidate(parent, token, lp, "live"))
                kept_rows.append(parent)
                kept_tokens.append(token)
                kept_scores.append(lp)

        record = self._record(t, log_probs, total, live + finished, self_w, cross_w, finished_hyps)
        self._finished.extend(finished_hyps)
        self._prefixes = [self._prefixes[c.parent] + [c.token] for c in live]
        if live:
            device = log_probs.device
            state.reorder(kept_rows)
            self._last = torch.tensor(kept_tokens, device=device)
            self._log_probs = torch.tensor(kept_scores, device=device)
        return record

    def _record(
        self,
        t: int,
        log_probs: Tensor,
        total: Tensor,
        kept: list[Candidate],
        self_w: list[Tensor] | None,
        cross_w: list[Tensor] | None,
        finished: list[Hypothesis],
    ) -> DecodeStep:
        prefixes = self._prefixes  # lists are never mutated after creation; shared, not copied
        prefix_lps = self._log_probs.tolist()
        if not self.record:
            return DecodeStep(
                t,
                prefixes,
                prefix_lps,
                np.empty((0, 0), np.int64),
                np.empty((0, 0), np.float32),
                kept,
                [],
                finished,
                None,
                None,
            )
        k = min(self.top_k, self._allowed)
        top_lp, top_tok = log_probs.topk(k, dim=-1)  # [n, k]
        width = min(self.beam_size, self._allowed)
        cand_lp, cand_tok = total.topk(width, dim=-1)  # per-prefix best continuations
        taken = {(c.parent, c.token) for c in kept}
        pruned = [
            Candidate(row, tok, lp, "pruned")
            for row, (toks, lps) in enumerate(zip(cand_tok.tolist(), cand_lp.tolist()))
            for tok, lp in zip(toks, lps)
            if (row, tok) not in taken
        ]
        # per layer [n, H, 1, L] → [n, layers, H, L]
        cross = torch.stack([w[:, :, 0] for w in cross_w], dim=1).float().cpu().numpy()
        self_att = torch.stack([w[:, :, 0] for w in self_w], dim=1).float().cpu().numpy()
        return DecodeStep(
            index=t,
            prefixes=prefixes,
            prefix_log_probs=prefix_lps,
            top_tokens=top_tok.cpu().numpy(),
            top_probs=top_lp.exp().float().cpu().numpy(),
            kept=kept,
            pruned=pruned,
            finished=finished,
            cross_attention=cross,
            self_attention=self_att,
        )


class GreedyStepper(BeamStepper):
    """Greedy decoding one token at a time (a beam of one), recording each step."""

    def __init__(self, model: Transformer, src: Tensor, max_len: int, top_k: int = 10, record: bool = True):
        super().__init__(model, src, beam_size=1, max_len=max_len, length_penalty=0.0, top_k=top_k, record=record)

    @property
    def output(self) -> list[int]:
        """The tokens generated up to the shown step."""
        step = self.current
        if step is None:
            return []
        return step.prefixes[0] + [step.kept[0].token]


def beam_search(
    model: Transformer,
    src: Tensor,
    beam_size: int,
    max_len: int,
    length_penalty: float = 0.6,
) -> list[Hypothesis]:
    """Beam search for one source (1-D ids); the hypotheses, best first."""
    return BeamStepper(model, src, beam_size, max_len, length_penalty, record=False).run()
