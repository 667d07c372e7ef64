"""Greedy, beam-search and sampled decoding, and steppers that expose every step.

For an encoder–decoder model the source is the sentence to translate; for a decoder-only model it is the
prompt, which the model reads after BOS before it continues it (:func:`generate`). Sampling draws each token
from the model's distribution divided by a temperature, cut to the ``top_k`` most probable tokens and/or to the
smallest set whose probability reaches ``top_p`` (nucleus sampling); temperature 0 is greedy.

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

import dataclasses
from dataclasses import dataclass
from typing import Literal, Protocol, overload

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from model.core.masks import padding_mask
from model.core.transformer import AttentionMaps, DecoderState, Transformer
from model.interpret.lens import final_states
from model.io.snapshots import Candidate, DecodeStep, Hypothesis  # torch-free; still importable from here


def length_normalized_score(log_prob: float, length: int, length_penalty: float) -> float:
    """GNMT length normalisation: log_prob / ((5 + length) / 6) ** α."""
    return log_prob / ((5 + length) / 6) ** length_penalty


@dataclass(frozen=True)
class Sampling:
    """How to draw tokens: temperature > 0, optionally cut by top-k and/or top-p; a seed makes draws repeat."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if not self.temperature > 0:
            raise ValueError(f"sampling needs a temperature above 0 (got {self.temperature}); 0 is greedy")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"top_k must be at least 1 (got {self.top_k})")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1] (got {self.top_p})")


def filter_logits(logits: Tensor, top_k: int | None = None, top_p: float | None = None) -> Tensor:
    """``logits [..., V]`` with the tokens that top-k and top-p remove set to −∞.

    top-k keeps the k most probable tokens; top-p keeps the smallest set of most probable tokens whose
    probability reaches p (the token that crosses p is kept). Both: a token must survive both cuts.
    """
    out = logits
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]
        out = out.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1:
        probs, order = out.softmax(-1).sort(dim=-1, descending=True)
        before = probs.cumsum(-1) - probs  # mass of the more probable tokens
        drop_sorted = before >= top_p  # the set already reached p without this token
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        out = out.masked_fill(drop, float("-inf"))
    return out


def _generator(seed: int | None, device: torch.device) -> torch.Generator:
    gen = torch.Generator(device=device)
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(seed)
    return gen


@dataclass(frozen=True)
class RoutingRows:
    """What one Mixture-of-Experts layer's router did with the token each prefix read at one position."""

    probs: np.ndarray  # [n_live, N] router probabilities
    chosen: np.ndarray  # [n_live, k] the experts the token went to, most probable first
    weights: np.ndarray  # [n_live, k] the weights of their outputs


@dataclass(frozen=True)
class DecoderRows:
    """What one decoder call computed at one position, for every live prefix (numpy copies)."""

    self_attention: np.ndarray  # [n_live, layers, heads, position + 1] over the prefix read so far (BOS first)
    cross_attention: np.ndarray  # [n_live, layers, heads, S]
    eos_probs: np.ndarray  # [n_live] P(EOS | prefix, source)
    routing: tuple[RoutingRows, ...] = ()  # per decoder layer with experts (none in a dense model)
    residuals: Tensor | None = None  # [n_live, layers, d] each layer's output here, while the lens is watched


LENS_TOP = 5
PREFILL_BLOCK = 128  # prompt positions read in one call (its logits: 128 × the vocabulary, ~26 MB for GPT-2)


def output_budget(n_source: int, max_len: int) -> int:
    """How many tokens decoding may produce for a source of ``n_source`` tokens: 1.5× plus 10, within max_len."""
    return min(max_len, int(1.5 * n_source) + 10)


def _forbidden_bias(model: Transformer) -> Tensor:
    """Added to logits so that PAD and BOS are never chosen (unless one of them is also EOS, as in GPT-2)."""
    bias = torch.zeros(model.cfg.tgt_vocab_size, device=model.device)
    bias[model.cfg.never_emitted] = float("-inf")
    return bias


def _as_batch(src: Tensor | list, device: torch.device, allow_empty: bool = False) -> Tensor:
    src = torch.as_tensor(src, dtype=torch.long, device=device)
    if src.dim() == 1:
        src = src[None]
    if src.dim() != 2 or (src.shape[1] == 0 and not allow_empty):
        raise ValueError("the source must hold at least one token ([S] or [B, S] ids)")
    return src


def _check_max_len(max_len: int) -> None:
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1 (got {max_len})")


@overload
def greedy_decode(
    model: Transformer, src: Tensor, max_len: int, use_cache: bool = True, return_log_probs: Literal[False] = False
) -> list[list[int]]: ...
@overload
def greedy_decode(
    model: Transformer, src: Tensor, max_len: int, use_cache: bool = True, *, return_log_probs: Literal[True]
) -> tuple[list[list[int]], Tensor]: ...
@torch.inference_mode()  # on the implementation: a decorator on an @overload stub is thrown away
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
    if state is not None and B == 1 and not return_log_probs:
        return [_greedy_one(model, state, forbid, max_len)]
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


def _greedy_one(model: Transformer, state: DecoderState, forbid: Tensor, max_len: int) -> list[int]:
    """Cached greedy decoding of a single source: the same choices as the batched loop, with the fewest
    operations per step (each one is a few percent of a small model's step)."""
    eos = model.cfg.eos_id
    token = torch.full((1,), model.cfg.bos_id, dtype=torch.long, device=forbid.device)
    out: list[int] = []
    for _ in range(max_len):
        token = model.decode_step(token, state)[0].add_(forbid).argmax(-1)
        out.append(int(token))
        if out[-1] == eos:
            break
    return out


def _strip(row: list[int], eos_id: int, pad_id: int) -> list[int]:
    """Tokens up to and including the first EOS; PAD fillers dropped."""
    if eos_id in row:
        return row[: row.index(eos_id) + 1]
    return [t for t in row if t != pad_id]


class BeamStepper:
    """Beam search one token at a time, recording each step; ``back()`` revisits a
    recorded step without recomputing. ``beam_size=1`` is greedy decoding.

    One decoder call per position, for all live prefixes together. When recording, each call's
    attention rows are kept in :attr:`rows` (position t: what the prefixes entering step t computed
    as they read their last token), and the encoder's self-attention in :attr:`encoder_attention` (a
    decoder-only model: the rows of BOS and its prompt in :attr:`prompt_rows`, read before the first step);
    together they are the teacher-forced maps of any prefix the search made (see
    :mod:`model.decoding.stepping`). The call for the position after the last step is made when the next step
    needs it, or earlier by :meth:`lookahead`.

    Args:
        model: the Transformer (put in eval mode).
        src: one source sentence, 1-D token ids.
        beam_size: K, the number of hypotheses kept.
        max_len: the longest output in tokens (EOS included).
        length_penalty: α of the GNMT score.
        top_k: candidates recorded per prefix for display.
        record: keep per-step candidates and attention (off for plain beam search).
        lens: when recording, also keep each decoder call's residual stream, which the logit lens reads out
            (:meth:`lens_at`).
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
        sampling: Sampling | None = None,
        lens: bool = False,
    ) -> None:
        if beam_size < 1:
            raise ValueError(f"beam_size must be at least 1 (got {beam_size})")
        if length_penalty < 0:
            raise ValueError(f"length_penalty must be ≥ 0 (got {length_penalty})")
        if sampling is not None and beam_size != 1:
            raise ValueError("sampling draws one continuation: use beam_size 1")
        _check_max_len(max_len)
        self.model, self.beam_size = model, beam_size
        self.length_penalty, self.top_k, self.record, self.sampling = length_penalty, top_k, record, sampling
        self.lens = lens and record
        self._lens_bias: Tensor | None = None
        cfg = model.cfg
        model.eval()
        self.encoder_attention: np.ndarray | None = None  # [layers, heads, S, S], when recording
        # a decoder-only model's prompt, when recording: the rows of BOS and each prompt token but the last
        # (position i reads token i), and P(prompt token i + 1 | BOS, prompt tokens ≤ i) at each
        self.prompt_rows: list[DecoderRows] = []
        self.prompt_probs = np.zeros(0, np.float32)
        self._generator = None if sampling is None else _generator(sampling.seed, model.device)
        with torch.inference_mode():
            generating = "generate" in cfg.family.decoding  # a decoder-only model continues its prompt
            src = _as_batch(src, model.device, allow_empty=generating)
            if src.shape[0] != 1:
                raise ValueError("beam search decodes one source at a time; pass a 1-D tensor")
            self.src = src[0]
            self._forbid = _forbidden_bias(model)
            if generating:
                max_len = self._start_generation(max_len)
            else:
                self._start_translation(src, max_len, record)
        self.max_len = max_len
        self._allowed = cfg.tgt_vocab_size - 2  # every token but PAD and BOS
        self._prefixes: list[list[int]] = [[]]
        self._log_probs = torch.zeros(1, device=model.device)  # cumulative, per live prefix
        self._pending: Tensor | None = None  # next-token log-probabilities of the live prefixes, once computed
        self._finished: list[Hypothesis] = []
        self.history: list[DecodeStep] = []
        self.rows: list[DecoderRows] = []  # per position, when recording (one more than history after lookahead)
        self.position = 0  # steps currently shown (≤ len(history))

    def _start_translation(self, src: Tensor, max_len: int, record: bool) -> None:
        model, cfg = self.model, self.model.cfg
        if "translate" not in cfg.family.decoding:
            raise ValueError(f"an {cfg.arch} model does not generate text; fill masks with fill_mask")
        src_mask = padding_mask(src, cfg.pad_id)
        if record:
            memory, maps = model.encode(src, src_mask, return_attention=True)  # [1, S, d], shared by all beams
            self.encoder_attention = torch.stack([w[0] for w in maps]).float().cpu().numpy()
        else:
            memory = model.encode(src, src_mask)
        self._state: DecoderState = model.start_decoding(memory, src_mask, self.beam_size, capacity=max_len)
        self._last = torch.full((1,), cfg.bos_id, dtype=torch.long, device=model.device)

    def _start_generation(self, max_len: int) -> int:
        """A decoder-only model reads BOS and the prompt (all but its last token now, into the cache); the
        first step reads the last. → the longest continuation that fits the model's max_len."""
        model, cfg = self.model, self.model.cfg
        prompt = [cfg.bos_id, *self.src.tolist()]
        room = cfg.max_len - len(prompt) + 1  # positions for generated tokens (the last one is never read)
        if room < 1:
            raise ValueError(
                f"the prompt has {len(prompt) - 1} tokens; this model reads at most {cfg.max_len - 1}: shorten it"
            )
        max_len = min(max_len, room)
        self._state = model.start_generation(self.beam_size, capacity=len(prompt) - 1 + max_len)
        if self.record:  # no encoder: its map is empty, as in a decoder-only model's inspection
            self.encoder_attention = np.zeros((0, cfg.n_heads, 0, 0), np.float32)
        self._read_prompt(prompt)
        self._last = torch.tensor(prompt[-1:], dtype=torch.long, device=model.device)
        self.prompt_length = len(prompt) - 1
        return max_len

    def _read_prompt(self, prompt: list[int]) -> None:
        """BOS and the prompt but its last token into one row of the cache; when recording, each position's rows
        and the probability it gave the prompt's next token. Read in blocks of positions (:meth:`Transformer.prefill`:
        a 512-token prompt of GPT-2 small's width took 13 s a token at a time), except by a model with experts,
        whose routing is caught a call at a time."""
        if self.model.cfg.moe:
            self._read_prompt_by_token(prompt)
            return
        model, device, follows = self.model, self.model.device, []  # P(the next prompt token), per block
        for at in range(0, len(prompt) - 1, PREFILL_BLOCK):
            tokens = torch.tensor([prompt[at : min(at + PREFILL_BLOCK, len(prompt) - 1)]], device=device)
            logits, maps = model.prefill(tokens, self._state, need_weights=self.record)
            if not self.record:
                continue
            log_probs = (logits[0] + self._forbid).log_softmax(-1)  # [T, V]
            for i in range(tokens.shape[1]):
                rows = [m[:, :, i : i + 1, : at + i + 1] for m in maps]  # each as its own step would give it
                self.prompt_rows.append(_rows(log_probs[i : i + 1], rows, [], model.cfg.eos_id, []))
            following = torch.tensor(prompt[at + 1 : at + 1 + tokens.shape[1]], device=device)
            follows.append(log_probs.gather(1, following[:, None])[:, 0])
        if follows:  # one copy off the device for the whole prompt
            self.prompt_probs = torch.cat(follows).exp().float().cpu().numpy()

    def _read_prompt_by_token(self, prompt: list[int]) -> None:
        """:meth:`_read_prompt` a token per call, each call's routing caught as it happens."""
        model, device = self.model, self.model.device
        follows = []  # P(the next prompt token), one tensor per position
        for token, following in zip(prompt[:-1], prompt[1:]):
            tokens = torch.tensor([token], device=device)
            if not self.record:
                model.decode_step(tokens, self._state)
                continue
            logits, self_w, _, routing, _ = _recorded_step(model, tokens, self._state)
            log_probs = (logits + self._forbid).log_softmax(-1)  # [1, V]
            self.prompt_rows.append(_rows(log_probs, self_w, [], model.cfg.eos_id, routing))
            follows.append(log_probs[0, following])
        if follows:  # one copy off the device for the whole prompt
            self.prompt_probs = torch.stack(follows).exp().float().cpu().numpy()

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

    def lookahead(self) -> DecoderRows | None:
        """The rows of the position after the last computed step: the live prefixes reading their last
        token (one decoder call, made now unless made already; the next step uses it). None when no
        prefix is live or nothing is recorded."""
        if self.finished_computing or not self.record:
            return None
        with torch.inference_mode():
            self._forward()
        return self.rows[len(self.history)]

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
    def lens_at(self, position: int, row: int, token: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The logit lens of prefix ``row`` at ``position``, read out of the residual stream that position's
        decoder call kept: each layer's top ``LENS_TOP`` ids and probabilities ``[layers, k]`` and its probability
        of ``token`` ``[layers]`` (any token: a sampled one too). None when the call kept none."""
        residuals = self.rows[position].residuals if position < len(self.rows) else None
        if residuals is None:
            return None
        with torch.inference_mode():
            if self._lens_bias is None:  # made once: the output layer's bias with decoding's mask folded in
                bias = self.model.generator.bias
                self._lens_bias = self._forbid if bias is None else bias + self._forbid
            return _lens_column(self.model, residuals[row : row + 1], token, self._lens_bias)

    def _forward(self) -> Tensor:
        """The decoder call for the prefixes alive now → their next-token log-probabilities ``[n, V]``,
        made once per position (recording appends its rows to :attr:`rows`)."""
        if self._pending is None:
            if self.record:
                logits, self_w, cross_w, routing, kept = _recorded_step(self.model, self._last, self._state, self.lens)
                self._pending = (logits + self._forbid).log_softmax(-1)
                self.rows.append(_rows(self._pending, self_w, cross_w, self.model.cfg.eos_id, routing, kept))
            else:
                logits = self.model.decode_step(self._last, self._state)[0]
                self._pending = (logits + self._forbid).log_softmax(-1)
        return self._pending

    def _advance(self) -> DecodeStep:
        cfg = self.model.cfg
        t = len(self.history)  # tokens generated so far
        log_probs = self._forward()  # [n, V]
        self._pending = None
        n, V = log_probs.shape
        total = self._log_probs[:, None] + log_probs  # cumulative, [n, V]
        slots = min(self.beam_size - len(self._finished), n * self._allowed)
        if self.sampling is not None:  # one draw from the cut, tempered distribution
            flat = self._draw(log_probs)
            best = total.view(-1)[flat]
        else:
            best, flat = total.view(-1).topk(slots)  # sorted, best first
        parents, tokens = (flat // V).tolist(), (flat % V).tolist()
        scores, probs = best.tolist(), log_probs.view(-1)[flat].exp().tolist()

        live, finished, finished_hyps = [], [], []
        for parent, token, lp, p in zip(parents, tokens, scores, probs):
            prefix = self._prefixes[parent] + [token]
            if token == cfg.eos_id or len(prefix) == self.max_len:
                finished_hyps.append(
                    Hypothesis(prefix, lp, length_normalized_score(lp, len(prefix), self.length_penalty))
                )
                finished.append(Candidate(parent, token, lp, "finished", p))
            else:
                live.append(Candidate(parent, token, lp, "live", p))

        record = self._record(t, log_probs, total, live + finished, finished_hyps)
        if self.sampling is not None:
            record = self._sampled_record(record, log_probs)
        self._finished.extend(finished_hyps)
        self._prefixes = [self._prefixes[c.parent] + [c.token] for c in live]
        if live:
            device = log_probs.device
            self._state.reorder([c.parent for c in live])
            self._last = torch.tensor([c.token for c in live], device=device)
            self._log_probs = torch.tensor([c.log_prob for c in live], device=device)
        return record

    def _record(
        self, t: int, log_probs: Tensor, total: Tensor, kept: list[Candidate], finished: list[Hypothesis]
    ) -> DecodeStep:
        prefixes = self._prefixes  # lists are never mutated after creation; shared, not copied
        prefix_lps = self._log_probs.tolist()
        if not self.record:
            nothing = np.empty((0, 0), np.int64), np.empty((0, 0), np.float32)
            return DecodeStep(t, prefixes, prefix_lps, *nothing, kept, [], finished, None, None)
        k = min(self.top_k, self._allowed)
        top_lp, top_tok = log_probs.topk(k, dim=-1)  # [n, k]
        width = min(self.beam_size, self._allowed)
        cand_lp, cand_tok = total.topk(width, dim=-1)  # per-prefix best continuations
        cand_p = log_probs.gather(1, cand_tok).exp()
        taken = {(c.parent, c.token) for c in kept}
        pruned = [
            Candidate(row, tok, lp, "pruned", p)
            for row, (toks, lps, ps) in enumerate(zip(cand_tok.tolist(), cand_lp.tolist(), cand_p.tolist()))
            for tok, lp, p in zip(toks, lps, ps)
            if (row, tok) not in taken
        ]
        rows = self.rows[t]
        return DecodeStep(
            index=t,
            prefixes=prefixes,
            prefix_log_probs=prefix_lps,
            top_tokens=top_tok.cpu().numpy(),
            top_probs=top_lp.exp().float().cpu().numpy(),
            kept=kept,
            pruned=pruned,
            finished=finished,
            cross_attention=rows.cross_attention,
            self_attention=rows.self_attention,
        )

    def _draw(self, log_probs: Tensor) -> Tensor:
        """A token drawn for the one live prefix (as an index into the flattened ``[1, V]`` scores)."""
        return _draw_from(self, log_probs)

    def _sampled_record(self, record: DecodeStep, log_probs: Tensor) -> DecodeStep:
        """The step as sampling saw it: the candidates' probabilities at the temperature, those cut marked."""
        assert self.sampling is not None
        if not self.record:
            return dataclasses.replace(record, sampled=True)
        tempered, cut = _sampling_view(self.sampling, log_probs)
        k = min(self.top_k, self._allowed)
        top_lp, top_tok = tempered.topk(k, dim=-1)
        removed = cut.gather(1, top_tok).isneginf()
        return dataclasses.replace(
            record,
            top_tokens=top_tok.cpu().numpy(),
            top_probs=top_lp.exp().float().cpu().numpy(),
            cut=removed.cpu().numpy(),
            sampled=True,
            pruned=[],
        )


def _sampling_view(sampling: Sampling, log_probs: Tensor) -> tuple[Tensor, Tensor]:
    """The tempered log-probabilities ``[n, V]`` and, after the cuts, the logits that are drawn from."""
    tempered = (log_probs / sampling.temperature).log_softmax(-1)
    return tempered, filter_logits(tempered, sampling.top_k, sampling.top_p)


class RouterReport(Protocol):
    """What the router of a decoder layer with experts reports for the tokens it routed (``[B, L, ·]`` each)."""

    probs: Tensor
    chosen: Tensor
    weights: Tensor


def _recorded_step(
    model: Transformer,
    tokens: Tensor,
    state: DecoderState,
    keep_residuals: bool = False,
) -> tuple[Tensor, list[Tensor], list[Tensor], list[RouterReport], Tensor | None]:
    """``model.decode_step`` with its attention rows, and what the router of each decoder layer with experts
    did: caught as that sublayer returns it (its output and its routing; a dense one has no routing, and a
    step calls it as plain tensors), since the step itself keeps only the attention. With ``keep_residuals``:
    each layer's output at this position too, ``[n, layers, d]`` (what the logit lens reads out)."""
    caught: list[RouterReport] = []

    def catch(module: nn.Module, inputs: tuple, output: object) -> None:
        if isinstance(output, tuple) and output[1] is not None:
            caught.append(output[1])

    hooks = [layer.get_submodule("ffn").register_forward_hook(catch) for layer in model.decoder_layers]
    residuals: list[Tensor] | None = [] if keep_residuals else None
    try:
        logits, self_w, cross_w = model.decode_step(tokens, state, need_weights=True, residuals=residuals)
    finally:
        for hook in hooks:
            hook.remove()
    return logits, self_w, cross_w, caught, torch.cat(residuals, dim=1) if residuals else None


def _lens_column(
    model: Transformer, residuals: Tensor, token: int, bias: Tensor
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One prefix's residual stream at one position ``[1, layers, d]`` through the final norm and the output
    layer (``bias``: the output layer's own plus decoding's mask of PAD and BOS) → each layer's top ids and
    probabilities, and its probability of ``token``. Few operations: a step pays for each."""
    states = final_states(model, residuals)[0]  # [layers, d]
    probs = F.linear(states, model.generator.weight, bias).float().softmax(-1)  # [layers, V]
    top, ids = probs.topk(min(LENS_TOP, probs.shape[-1]), dim=-1)
    return ids.cpu().numpy(), top.cpu().numpy(), probs[:, token].cpu().numpy()


def _rows(
    log_probs: Tensor,
    self_w: list[Tensor],
    cross_w: list[Tensor],
    eos_id: int,
    routing: list[RouterReport],
    residuals: Tensor | None = None,
) -> DecoderRows:
    """One decoder call's record: per layer ``[n, H, 1, L]`` → ``[n, layers, H, L]``, P(EOS) per prefix, and
    each router's ``[n, 1, ·]`` → ``[n, ·]``. A decoder-only model has no cross-attention: ``[n, 0, H, 0]``."""
    stack = lambda ws: torch.stack([w[:, :, 0] for w in ws], dim=1).float().cpu().numpy()  # noqa: E731
    row = lambda t: t[:, 0].float().cpu().numpy()  # noqa: E731
    n, heads = self_w[0].shape[:2]
    cross = stack(cross_w) if cross_w else np.zeros((n, 0, heads, 0), np.float32)
    routers = tuple(RoutingRows(row(r.probs), row(r.chosen), row(r.weights)) for r in routing)
    return DecoderRows(stack(self_w), cross, log_probs[:, eos_id].exp().float().cpu().numpy(), routers, residuals)


def _draw_from(stepper: BeamStepper, log_probs: Tensor) -> Tensor:
    assert stepper.sampling is not None
    _, cut = _sampling_view(stepper.sampling, log_probs)
    return torch.multinomial(cut.softmax(-1), 1, generator=stepper._generator).view(-1)


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


class SampleStepper(GreedyStepper):
    """Sampled decoding one token at a time: each token drawn from the tempered, cut distribution, recorded
    with the candidates it was drawn from (``DecodeStep.cut`` marks those top-k / top-p removed)."""

    def __init__(
        self,
        model: Transformer,
        src: Tensor,
        max_len: int,
        sampling: Sampling,
        top_k: int = 10,
        record: bool = True,
        lens: bool = False,
    ) -> None:
        BeamStepper.__init__(
            self,
            model,
            src,
            beam_size=1,
            max_len=max_len,
            length_penalty=0.0,
            top_k=top_k,
            record=record,
            sampling=sampling,
            lens=lens,
        )


@torch.inference_mode()
def generate(
    model: Transformer,
    prompt_ids: Tensor | list[int],
    max_new_tokens: int,
    *,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    use_cache: bool = True,
) -> list[int]:
    """Continue a prompt with a decoder-only model. → the new tokens, EOS last when the model ended the text.

    The model reads BOS and the prompt (1-D ids), then one token at a time: the most probable one when
    ``temperature`` is 0 (greedy), else one drawn from softmax(logits / temperature) cut by ``top_k`` and
    ``top_p``; ``seed`` makes the draws repeat. With ``use_cache`` each step feeds only the newest token
    and reuses cached keys and values; without it each step re-runs the model over the whole sequence.
    Generation stops at EOS or after ``max_new_tokens`` (or when the model's max_len is reached).
    """
    cfg = model.cfg
    if "generate" not in cfg.family.decoding:
        raise ValueError(f"generate continues text with a decoder-only model; this one is {cfg.arch}")
    _check_max_len(max_new_tokens)
    model.eval()
    device = model.device
    ids = [cfg.bos_id, *torch.as_tensor(prompt_ids).view(-1).tolist()]
    steps = min(max_new_tokens, cfg.max_len - len(ids) + 1)
    if steps < 1:
        raise ValueError(f"the prompt has {len(ids) - 1} tokens; this model reads at most {cfg.max_len - 1}")
    sampling = Sampling(temperature, top_k, top_p, seed) if temperature > 0 else None
    gen = None if sampling is None else _generator(seed, device)
    forbid = _forbidden_bias(model)
    state = model.start_generation(1, len(ids) - 1 + steps) if use_cache else None
    if state is not None:  # BOS and the prompt but its last token, in blocks of positions
        for at in range(0, len(ids) - 1, PREFILL_BLOCK):
            model.prefill(torch.tensor([ids[at : min(at + PREFILL_BLOCK, len(ids) - 1)]], device=device), state)
    out: list[int] = []
    for _ in range(steps):
        if state is not None:
            logits = model.decode_step(torch.tensor(ids[-1:], device=device), state)[0]
        else:
            logits = model(torch.tensor([ids], device=device))[:, -1]
        log_probs = (logits + forbid).log_softmax(-1)  # [1, V]
        if sampling is None:
            token = int(log_probs.argmax(-1))
        else:
            _, cut = _sampling_view(sampling, log_probs)
            token = int(torch.multinomial(cut.softmax(-1), 1, generator=gen))
        out.append(token)
        ids.append(token)
        if token == cfg.eos_id:
            break
    return out


@dataclass(frozen=True)
class MaskFill:
    """The predictions for one ``<mask>`` position of an encoder-only model's input."""

    position: int  # index into the input ids
    tokens: list[int]  # the most probable tokens, best first (special tokens left out)
    probs: list[float]  # their probabilities (softmax over the whole vocabulary)


@torch.inference_mode()
def fill_mask(
    model: Transformer, ids: Tensor | list[int], mask_id: int, top_k: int = 5, segments: Tensor | None = None
) -> list[MaskFill]:
    """An encoder-only model's top-k predictions for each ``mask_id`` position of ``ids`` (1-D, the whole
    input: BOS … EOS). Every position reads the whole input, before and after it (bidirectional)."""
    x = _masked_batch(model, ids)
    return _mask_fills(model, x, model(x, segments=segments)[0], mask_id, top_k)


@torch.inference_mode()
def fill_mask_with_attention(
    model: Transformer, ids: Tensor | list[int], mask_id: int, top_k: int = 5
) -> tuple[list[MaskFill], AttentionMaps]:
    """:func:`fill_mask` and, from the same pass, the model's attention maps (and routing) over ``ids``."""
    x = _masked_batch(model, ids)
    logits, maps = model(x, return_attention=True)
    return _mask_fills(model, x, logits[0], mask_id, top_k), maps


def _masked_batch(model: Transformer, ids: Tensor | list[int]) -> Tensor:
    """``ids`` as a batch of one ``[1, T]`` for an encoder-only model (in eval mode)."""
    cfg = model.cfg
    if "fill_mask" not in cfg.family.decoding:
        raise ValueError(f"fill_mask is for encoder-only (masked-language) models; this one is {cfg.arch}")
    model.eval()
    return torch.as_tensor(ids, dtype=torch.long, device=model.device).view(1, -1)


def _mask_fills(model: Transformer, x: Tensor, logits: Tensor, mask_id: int, top_k: int) -> list[MaskFill]:
    """The top-k of the softmax ``logits [T, V]`` at each ``mask_id`` position of ``x [1, T]``, specials left out."""
    cfg = model.cfg
    probs = logits.float().softmax(-1)  # [T, V]
    specials = [cfg.pad_id, cfg.bos_id, cfg.eos_id, mask_id]
    ranked = probs.clone()
    ranked[:, specials] = -1.0
    k = min(top_k, cfg.vocab_size - len(specials))
    out = []
    for position in (x[0] == mask_id).nonzero().view(-1).tolist():
        p, tok = ranked[position].topk(k)
        out.append(MaskFill(position, tok.tolist(), p.tolist()))
    return out


def beam_search(
    model: Transformer,
    src: Tensor,
    beam_size: int,
    max_len: int,
    length_penalty: float = 0.6,
) -> list[Hypothesis]:
    """Beam search for one source (1-D ids); the hypotheses, best first."""
    return BeamStepper(model, src, beam_size, max_len, length_penalty, record=False).run()
