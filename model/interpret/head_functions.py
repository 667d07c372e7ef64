"""Scores of the functions attention heads are known to learn, per layer and head, from one :class:`Inspection`.

Each score is a mean attention weight, in [0, 1], over the query rows it is defined on (Olsson et al. 2022 for
induction heads; Voita et al. 2019 for positional, previous-token and <eos> heads):

- ``previous_token`` (self-attention): the weight row i puts on key i − 1, mean over the rows i ≥ 1.
- ``alignment`` (cross-attention), diagonal or monotonic alignment: row i of a ``[T, S]`` map is expected near
  source position c_i = min(S − 1, ⌊i·S/T + ½⌋), the key nearest the diagonal i·S/T; the score is the weight on
  the keys j with |j − c_i| ≤ ``ALIGNMENT_WINDOW`` (1), mean over the rows. A perfectly diagonal map scores 1; a
  uniform one scores (number of keys in the window) / S averaged over the rows (3/S away from the ends).
  The window of ±1 also counts a head that looks at the source word the position has just read rather than the
  one it is about to write: both are the monotonic alignment a copy or a translation learns.
- ``first_token``: the weight on key 0 (<bos>, BERT's first token, the source's first word), mean over the rows.
- ``eos``: the weight on the keys whose token is the model's end token (``EOS_TEXTS``: <eos>, or a Hugging
  Face folder's </s>, [SEP], <|endoftext|>), mean over the rows; NaN when no key is one.
- ``induction`` (causal self-attention, GPT's above all): for each query i whose token already appeared at a
  position j < i − 1, the weight on the keys j + 1 (the tokens that followed its earlier occurrences: "A B … A →
  look at B"), mean over those queries; NaN when no token of the probe repeats.

Padding is left out, as the model leaves it out: a key no row may attend to (the engine's mask, True = may attend)
is not a position, nor is its query row in a self-attention, nor a decoder row in cross-attention whose own
position is padding; the scores are those of the map restricted to the real positions. Masked cells weigh 0
already. A kind a model lacks (no rows or no keys) scores NaN.

numpy only: the engine thread calls :func:`head_functions` for every probe snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from model.io.snapshots import Inspection

KINDS = ("encoder", "decoder_self", "cross")  # the attention kinds of an Inspection (its fields)
ALIGNMENT_WINDOW = 1  # keys either side of the diagonal's own that count as aligned
EOS_TEXTS = frozenset({"<eos>", "</s>", "[SEP]", "<|endoftext|>"})  # end tokens as Inspection shows them


@dataclass(frozen=True)
class HeadFunction:
    """One known function of a head: its id and the kinds of attention it is scored on (the window names it)."""

    id: str
    kinds: tuple[str, ...]


HEAD_FUNCTIONS = (
    HeadFunction("previous_token", ("encoder", "decoder_self")),
    HeadFunction("alignment", ("cross",)),
    HeadFunction("first_token", KINDS),
    HeadFunction("eos", ("encoder", "cross")),
    HeadFunction("induction", ("decoder_self",)),
)


def functions_of(kind: str) -> tuple[HeadFunction, ...]:
    """The functions scored on attention of ``kind``, in the order offered."""
    return tuple(f for f in HEAD_FUNCTIONS if kind in f.kinds)


def head_functions(inspection: Inspection) -> dict[str, dict[str, np.ndarray]]:
    """Per kind, per function that applies to it (:data:`HEAD_FUNCTIONS`), the scores ``[layers, heads]``."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for kind in KINDS:
        maps = np.asarray(getattr(inspection, kind), dtype=np.float64)  # [L, H, Lq, Lk]
        rows, keys = _real_positions(inspection, kind, maps.shape[2], maps.shape[3])
        w = maps[:, :, rows][:, :, :, keys]
        q_tokens, k_tokens = _tokens(inspection, kind, rows, keys)
        scores = {}
        for f in functions_of(kind):
            score = SCORERS[f.id](w, q_tokens, k_tokens) if w.shape[2] and w.shape[3] else _nan(w)
            score.setflags(write=False)
            scores[f.id] = score
        out[kind] = scores
    return out


def _real_positions(inspection: Inspection, kind: str, n_rows: int, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """Which query rows and keys are positions of the input, not padding (bool ``[Lq]``, ``[Lk]``)."""
    rows, keys = np.ones(n_rows, bool), np.ones(n_keys, bool)
    allowed = inspection.masks.get(kind)
    if allowed is not None and allowed.shape == (n_rows, n_keys):
        keys &= allowed.any(axis=0)
        rows &= allowed.any(axis=1)
    if kind != "cross" and n_rows == n_keys:
        rows &= keys  # a padded position is no query either
    decoder = inspection.masks.get("decoder_self")
    if kind == "cross" and decoder is not None and decoder.shape == (n_rows, n_rows):
        rows &= decoder.any(axis=0)
    return rows, keys


def _tokens(inspection: Inspection, kind: str, rows: np.ndarray, keys: np.ndarray) -> tuple[list[str], list[str]]:
    """The tokens of the real query rows and keys (empty strings where the inspection names none)."""
    source, target = inspection.src_tokens, inspection.tgt_tokens
    queries, key_tokens = (source, source) if kind == "encoder" else (target, target if kind != "cross" else source)

    def pick(tokens: list[str], real: np.ndarray) -> list[str]:
        tokens = tokens if len(tokens) == len(real) else [""] * len(real)
        return [t for t, r in zip(tokens, real) if r]

    return pick(queries, rows), pick(key_tokens, keys)


def _nan(w: np.ndarray) -> np.ndarray:
    return np.full(w.shape[:2], np.nan)


def previous_token(w: np.ndarray, _q: list[str], _k: list[str]) -> np.ndarray:
    """Mean over rows i ≥ 1 of ``w[..., i, i − 1]``; ``w [L, H, T, T]`` → ``[L, H]``."""
    if min(w.shape[2:]) < 2:
        return _nan(w)
    return np.diagonal(w, offset=-1, axis1=2, axis2=3).mean(-1)  # the elements w[i + 1, i]


def first_token(w: np.ndarray, _q: list[str], _k: list[str]) -> np.ndarray:
    """Mean over rows of the weight on key 0."""
    return w[:, :, :, 0].mean(-1)


def end_token(w: np.ndarray, _q: list[str], k_tokens: list[str]) -> np.ndarray:
    """Mean over rows of the weight on the end-of-sequence keys; NaN without one."""
    ends = [j for j, t in enumerate(k_tokens) if t in EOS_TEXTS]
    return w[:, :, :, ends].sum(-1).mean(-1) if ends else _nan(w)


def diagonal_band(n_rows: int, n_keys: int, window: int = ALIGNMENT_WINDOW) -> np.ndarray:
    """``[T, S]`` True where key j is within ``window`` of c_i = min(S − 1, ⌊i·S/T + ½⌋)."""
    centre = np.minimum(n_keys - 1, np.floor(np.arange(n_rows) * n_keys / n_rows + 0.5)).astype(int)
    return np.abs(np.arange(n_keys)[None, :] - centre[:, None]) <= window


def alignment(w: np.ndarray, _q: list[str], _k: list[str]) -> np.ndarray:
    """Mean over rows of the weight within the diagonal band (:func:`diagonal_band`)."""
    band = diagonal_band(w.shape[2], w.shape[3])
    return (w * band).sum(-1).mean(-1)


def induction(w: np.ndarray, q_tokens: list[str], k_tokens: list[str]) -> np.ndarray:
    """Mean, over the queries i whose token appeared at some j < i − 1, of the weight on those keys j + 1."""
    if q_tokens != k_tokens:  # induction is defined within one sequence
        return _nan(w)
    per_query = []
    for i, token in enumerate(q_tokens):
        after = [j + 1 for j in range(i - 1) if q_tokens[j] == token]
        if after:
            per_query.append(w[:, :, i, after].sum(-1))
    return np.mean(per_query, axis=0) if per_query else _nan(w)


Scorer = Callable[[np.ndarray, list[str], list[str]], np.ndarray]
SCORERS: dict[str, Scorer] = {
    "previous_token": previous_token,
    "alignment": alignment,
    "first_token": first_token,
    "eos": end_token,
    "induction": induction,
}
