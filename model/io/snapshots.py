"""What the engine hands the window: frozen dataclasses of numpy arrays and plain values.

Nothing here imports PyTorch: the window imports these types before the engine has loaded it, and
an answer that crosses from the engine thread to the window is one of these, never a tensor or a
module. Masks follow the one convention of :mod:`model.core.masks`: True means "may attend".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from model.core.config import Positional
    from model.data.tokenization import Encoded
    from model.interpret.results import LensTable


# -- decoding ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hypothesis:
    """A finished translation candidate."""

    tokens: list[int]  # generated ids, no BOS; ends with EOS unless cut at max_len
    log_prob: float  # sum of the tokens' log-probabilities
    score: float  # log_prob / ((5 + len(tokens)) / 6) ** length_penalty


@dataclass(frozen=True)
class Candidate:
    """One continuation considered at a step: prefix ``parent`` + ``token``."""

    parent: int  # row of the live prefix it extends (in DecodeStep.prefixes)
    token: int
    log_prob: float  # cumulative log-probability of prefix + token
    status: str  # "live" (kept in the beam), "finished" (EOS or max_len) or "pruned"
    prob: float = float("nan")  # P(token | prefix, source), this step's own probability


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
    finished: list[Hypothesis]  # hypotheses completed at this step, in the order of the finished ones in `kept`
    cross_attention: np.ndarray | None  # [n_live, layers, heads, S] this position's cross-attention
    self_attention: np.ndarray | None  # [n_live, layers, heads, index + 1] decoder self-attention
    # sampling: which of top_tokens top-k / top-p removed before drawing ([n_live, k], True = cut); None otherwise
    cut: np.ndarray | None = None
    sampled: bool = False  # the kept token was drawn at random (top_probs are then at the sampling temperature)

    @property
    def live_after(self) -> list[list[int]]:
        """The prefixes alive after this step, in beam order."""
        return [self.prefixes[c.parent] + [c.token] for c in self.kept if c.status == "live"]


@dataclass(frozen=True)
class Translation:
    """A translated sentence."""

    source: Encoded  # the source as the tokenizer split it (unknown spans included)
    source_ids: list[int]  # what the encoder read: tokens + EOS, cut to max_len
    text: str  # the best translation
    tokens: list[int]  # its ids (no BOS; EOS last when produced)
    hypotheses: list[tuple[str, float, float]]  # beam search: (text, score, log_prob), best first
    truncated: bool  # the source was longer than the model accepts and was cut
    reference: str | None  # the corpus translation, when the source is a corpus sentence


# -- attention -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RouterView:
    """What one Mixture-of-Experts layer's router did with the tokens of one input."""

    stack: str  # "encoder" or "decoder"
    layer: int  # 0-based, within its stack
    tokens: list[str]  # the positions routed (the stack's input tokens)
    probs: np.ndarray  # [T, N] router probabilities
    chosen: np.ndarray  # [T, k] the experts each token went to, most probable first
    weights: np.ndarray  # [T, k] the weights of their outputs (k = 1: p_i itself; k ≥ 2: renormalised)


@dataclass(frozen=True)
class Inspection:
    """Attention of one source/target pair, teacher-forced, as numpy."""

    src_tokens: list[str]  # encoder positions (keys of cross-attention)
    tgt_tokens: list[str]  # decoder inputs: <bos> + target (queries of decoder maps)
    out_tokens: list[str]  # what each decoder position predicts: target + <eos>
    encoder: np.ndarray  # [layers, heads, S, S]
    decoder_self: np.ndarray  # [layers, heads, T, T]
    cross: np.ndarray  # [layers, heads, T, S]
    target_probs: np.ndarray  # [T] probability the model gave each out_token
    teacher_forced: bool  # False when the target is the model's own greedy output
    step: int = 0  # training step of the weights that produced it
    source: str = ""  # the source text
    target_ids: tuple[int, ...] = ()  # the target ids (no BOS/EOS), for asking about the same pair again
    # per kind ("encoder" [S, S], "decoder_self" [T, T], "cross" [T, S]): True = may attend, as the model masked it
    masks: dict[str, np.ndarray] = field(default_factory=dict)
    routing: tuple[RouterView, ...] = ()  # per MoE layer, encoder's first (empty for a dense model)
    # the model's family: "encoder_decoder"; "decoder_only" (maps in decoder_self; encoder and cross empty,
    # src_tokens empty); "encoder_only" (maps in encoder; decoder_self and cross empty, tgt/out_tokens empty)
    arch: str = "encoder_decoder"


@dataclass(frozen=True)
class MaskPrediction:
    """An encoder-only model's guesses for one masked position."""

    position: int  # index into FillMaskView.tokens
    tokens: list[str]  # the most probable fillers, best first
    probs: list[float]  # their probabilities
    original: str | None = None  # the token that was there, when a person masked a token by clicking it


@dataclass(frozen=True)
class FillMaskView:
    """A sentence with masked positions and what an encoder-only model predicts for each."""

    text: str  # as typed
    tokens: list[str]  # the input the model read: <bos> pieces <eos>, masked ones as <mask>
    predictions: list[MaskPrediction]  # one per masked position, left to right
    inspection: Inspection  # the bidirectional self-attention over this input (and the routing)
    step: int  # training step of the weights used


@dataclass(frozen=True)
class AttentionExplanation:
    """One head's attention spelled out: Attention(Q, K, V) = softmax(QKᵀ / √d_k) V, step by step (without the
    √d_k where the model does not divide by it: :attr:`root_scaled`)."""

    title: str  # what this is (kind, layer, head — or the worked example)
    query_tokens: list[str]  # one per row of Q
    key_tokens: list[str]  # one per row of K and V
    q: np.ndarray  # [Lq, d_k] this head's queries (after W^Q, and RoPE when used)
    k: np.ndarray  # [Lk, d_k]
    v: np.ndarray  # [Lk, d_v]
    scores: np.ndarray  # QKᵀ [Lq, Lk]
    scaled: np.ndarray  # QKᵀ / √d_k (+ b, T5's relative position bias, when the model has one)
    mask: np.ndarray  # True = may attend
    weights: np.ndarray  # softmax of the scaled, masked scores
    output: np.ndarray  # weights · V [Lq, d_v] (this head's part, before W^O)
    exp: np.ndarray  # exp(scaled − shift) [Lq, Lk], 0 where masked: weights = exp / Σ exp, checkable by hand
    shift: np.ndarray  # [Lq] subtracted before exp: 0, or the row's largest score where exp would overflow
    kind: str = "example"  # "example" (the worked example) | "encoder" | "decoder_self" | "cross"
    layer: int = -1  # 0-based layer of the head, −1 for the worked example
    head: int = -1  # 0-based head, −1 for the worked example
    # what positions did inside this attention: "rope" (q and k were rotated), "t5_relative" (scaled includes the
    # head's relative bias b); "" for nothing (cross-attention, positions added to the embeddings, the example)
    positional: str = ""
    # scaled = QKᵀ / √d_k (the paper); False: a model with scaled_attention off, whose scaled scores are QKᵀ itself
    root_scaled: bool = True


# -- positions ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PositionalTables:
    """What the positional-encoding lab shows of a model: its kind of positions, its sizes, and its tables."""

    kind: Positional
    d_model: int
    max_len: int
    head_dim: int
    step: int  # training step of the weights
    source: np.ndarray | None = None  # learned tables [max_len, d_model]; None for the other kinds
    target: np.ndarray | None = None
    t5_encoder: np.ndarray | None = None  # T5: the learned bias [buckets, heads] of the encoder's self-attention
    t5_decoder: np.ndarray | None = None  # … and of the decoder's (None where the model has no such stack)
    sinusoids: np.ndarray | None = None  # the fixed table [max_len, d_model] a sinusoidal model adds; else None


# -- step-through decoding -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeSettings:
    text: str
    beam_size: int = 1  # 1 = greedy
    length_penalty: float = 0.6
    max_len: int | None = None  # None: from the source length
    top_k: int = 10  # candidates recorded and shown per step
    # sampling (decoder-only models, beam_size 1): temperature > 0 draws each token at random from
    # softmax(logits / temperature), cut to the sample_top_k most probable (0: no cut) and to the smallest set
    # whose probability reaches top_p (1: no cut); the seed makes the draws repeat
    temperature: float = 0.0
    sample_top_k: int = 0
    top_p: float = 1.0
    seed: int | None = 0

    @property
    def sampling(self) -> bool:
        return self.temperature > 0 and self.beam_size == 1


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
    # per source piece, the text typed for it (an unknown piece reads <unk>, the person typed e.g. "cat"); EOS: "<eos>"
    source_typed: tuple[str, ...] = ()
    # the logit lens of the current step (the focus's last position), read out of its own decoder call (None: not
    # watched)
    lens: LensTable | None = None


@dataclass(frozen=True)
class Lane:
    """One way of decoding shown beside others: its settings' name, its own view, the log-probability of its
    prefix in focus (the model's own, at temperature 1), and where that prefix first differs from the first
    lane's (None: not so far)."""

    label: str
    view: DecodeView
    log_prob: float
    parted_at: int | None


@dataclass(frozen=True)
class LanesView:
    """Several decodings of one sentence on one step cursor (greedy, beam, sampling with several seeds)."""

    text: str
    position: int  # the shared cursor: steps shown (a finished lane stays at its end)
    lanes: tuple[Lane, ...]
    at_end: bool  # no lane has a further step


@dataclass(frozen=True)
class Compared:
    """One held-out sentence and what each run of an experiment (a variant beside its baseline) made of it."""

    source: str  # the sentence read (a GPT's prompt: the first half of a text)
    reference: str  # what the data says comes out (the rest of the text)
    baseline: str
    variant: str


@dataclass(frozen=True)
class StepColumns:
    """Training metrics of consecutive updates, one array per metric (the engine's history records)."""

    step: np.ndarray
    time: np.ndarray  # seconds of training so far
    loss: np.ndarray
    lr: np.ndarray
    token_accuracy: np.ndarray
    grad_norm: np.ndarray  # before clipping
    tokens_per_s: np.ndarray
    aux_loss: np.ndarray  # Mixture-of-Experts load-balancing loss (0 for a dense model)
    # [n, N]: each expert's share of the token assignments at each update, averaged over layers ([n, 0]: dense)
    expert_load: np.ndarray

    @classmethod
    def of(cls, records: Sequence[Mapping[str, Any]]) -> StepColumns:
        columns = {f: _read_only(np.array([r[f] for r in records], dtype=np.float64)) for f in TRAIN_METRICS}
        return cls(**columns, expert_load=_loads([r.get("expert_load", []) for r in records]))

    @classmethod
    def from_history(cls, history: Mapping[str, Sequence[Any]]) -> StepColumns:
        columns = {f: _read_only(np.array(history[f], dtype=np.float64)) for f in TRAIN_METRICS}
        return cls(**columns, expert_load=_loads(history.get("expert_load", [[]] * len(history["step"]))))

    def __len__(self) -> int:
        return len(self.step)


@dataclass
class History:
    """Every training step's metrics (as columns) and every evaluation (as rows): a session's, or the log of a
    run the window follows."""

    # per metric a column; "expert_load" holds a list per step (each expert's share; empty for a dense model)
    train: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in (*TRAIN_METRICS, "expert_load")})
    evals: list[dict[str, Any]] = field(default_factory=list)

    def add_step(self, record: Mapping[str, Any]) -> None:
        for k in TRAIN_METRICS:
            self.train[k].append(record[k])
        self.train["expert_load"].append(list(record.get("expert_load", [])))


def _read_only(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _loads(rows: Sequence[Sequence[float]]) -> np.ndarray:
    width = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), width), np.nan)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return _read_only(out)


# the number the engine records at every update, in order (model.session keeps its history by them); each update
# also records "expert_load", a list (empty for a dense model)
TRAIN_METRICS: tuple[str, ...] = tuple(f.name for f in fields(StepColumns) if f.name != "expert_load")
