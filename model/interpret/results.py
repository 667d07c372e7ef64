"""What the interpretation tools return: frozen dataclasses of numpy arrays, without PyTorch, so the window can
import them (as :mod:`model.io.snapshots`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ATTRIBUTION_METHODS = ("integrated_gradients", "gradient_x_input", "attention_rollout")
HEAD_KINDS = ("encoder", "decoder", "cross")  # what ``(kind, layer, head)`` names: the attention a head belongs to
ABLATION_MODES = ("zero", "mean")

Head = tuple[str, int, int]  # (kind, layer, head), 0-based


@dataclass(frozen=True)
class Attribution:
    """How much each input token contributed to each output token.

    ``scores [T, S]``: target token t (row) × source token s (column) — the encoder's input for a translator,
    the prompt (BOS first) for a GPT, the sentence for a BERT. ``prefix_scores [T, T]``: target t × the output
    read before it (``prefix_tokens``: the decoder's input, BOS then y₁…; for a GPT the continuation's tokens);
    nonzero only where the model could read it (a lower triangle; all zero for a BERT, which has no prefix).

    For integrated gradients, ``logprob`` and ``baseline_logprob`` ``[T]`` are the explained quantity at the input
    and at the all-zero-embedding baseline: each row of scores and prefix_scores sums to their difference
    (completeness). With ``contrast`` the last row explains log P(target) − log P(contrast) instead.
    """

    method: str
    source: str
    source_tokens: tuple[str, ...]
    target_tokens: tuple[str, ...]
    prefix_tokens: tuple[str, ...]
    scores: np.ndarray  # [T, S]
    prefix_scores: np.ndarray  # [T, T]
    logprob: np.ndarray | None = None  # [T] (integrated gradients)
    baseline_logprob: np.ndarray | None = None  # [T]
    contrast: str | None = None  # the token Y of "why X rather than Y" (last row)
    step: int = 0  # the training step of the weights
    steps: int = 0  # integration steps (integrated gradients)

    def total(self) -> np.ndarray:
        """Each target's attribution summed over source and prefix ``[T]``."""
        return self.scores.sum(1) + self.prefix_scores.sum(1)


@dataclass(frozen=True)
class LogitLens:
    """What each layer would predict: ``probs [n_layers, T, vocab]``, the residual stream after each layer of the
    decoder stack (a GPT's or BERT's one stack) passed through the final norm and the output layer. The last
    layer is the model's own distribution. ``positions``: the tokens read at each of the T positions;
    ``targets``: what the model outputs there (its own choice, or the target given)."""

    source: str
    positions: tuple[str, ...]
    targets: tuple[str, ...]
    target_ids: tuple[int, ...]
    probs: np.ndarray  # [n_layers, T, vocab]
    step: int = 0

    def top(self, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` most likely ids per layer and position and their probabilities, each ``[n_layers, T, k]``."""
        ids = np.argsort(-self.probs, axis=-1, kind="stable")[..., :k]
        return ids, np.take_along_axis(self.probs, ids, -1)

    def target_probs(self) -> np.ndarray:
        """``[n_layers, T]``: each layer's probability of the token the model outputs at each position."""
        return self.probs[:, np.arange(len(self.target_ids)), list(self.target_ids)]

    def first_layer(self) -> np.ndarray:
        """Per position ``[T]``: the first layer (0-based) from which the final layer's top token stays the top one."""
        top = self.probs.argmax(-1)  # [L, T]
        same = top == top[-1][None]
        from_here_on = np.flip(np.logical_and.accumulate(np.flip(same, 0), 0), 0)  # same at l and every later layer
        return from_here_on.argmax(0)  # the last layer is always the same: there is a first True


@dataclass(frozen=True)
class HeadImportance:
    """Michel et al. (2019): the change of a score when one head is ablated, per attention kind ``[layers,
    heads]``, over ``sentences`` held-out sentences. Positive ``loss`` deltas: the model does worse without it."""

    metric: str  # "loss" (Δloss) with "accuracy" (Δ token accuracy) alongside
    base: dict[str, float]  # the scores with every head: {"loss": …, "accuracy": …}
    delta_loss: dict[str, np.ndarray]  # kind → [L, H]
    delta_accuracy: dict[str, np.ndarray]  # kind → [L, H]
    sentences: int
    step: int = 0
    mode: str = "zero"
    complete: bool = True  # False: cancelled part-way (the heads not reached are NaN)


@dataclass(frozen=True)
class LensTable:
    """The logit lens as the window draws it: the top tokens of each layer at each position, each layer's
    probability of the model's output there, and where that output first becomes (and stays) the top token."""

    source: str
    positions: tuple[str, ...]  # [T] the tokens read
    targets: tuple[str, ...]  # [T] what the model outputs
    top_tokens: tuple[tuple[tuple[str, ...], ...], ...]  # [n_layers][T][k]
    top_probs: np.ndarray  # [n_layers, T, k]
    target_probs: np.ndarray  # [n_layers, T]
    first_layer: np.ndarray  # [T], 0-based
    step: int = 0


@dataclass(frozen=True)
class AblationDiff:
    """What switching heads off changed for one input: the model's own output before and after, and the
    probability of each of the former output's tokens (teacher-forced) before and after."""

    source: str
    heads: tuple[Head, ...]
    mode: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    before_probs: np.ndarray  # [len(before)]
    after_probs: np.ndarray  # [len(before)]: the same tokens with the heads off (NaN: not among the top guesses)

    @property
    def changed(self) -> bool:
        return self.before != self.after
