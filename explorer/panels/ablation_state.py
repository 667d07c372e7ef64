"""Which heads are switched off, as a value (Qt-free): the all-heads grid, the head-importance map and the decoding
panel's note read it; the engine's answer (``AblationChanged``) is what it holds once confirmed.

A head is ``(kind, layer, head)``, 0-based, with the kind of :data:`model.interpret.results.HEAD_KINDS`
("encoder", "decoder", "cross"); the attention panel names its maps by the attention kinds of
:class:`model.io.snapshots.Inspection` ("encoder", "decoder_self", "cross") — :data:`HEAD_KIND` maps one to the other.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace

import numpy as np

from model.interpret.results import AblationDiff, Head

HEAD_KIND = {"encoder": "encoder", "decoder_self": "decoder", "cross": "cross"}  # attention kind → head kind
ATTENTION_KIND = {head: attention for attention, head in HEAD_KIND.items()}  # head kind → attention kind
MODES = ("zero", "mean")


@dataclass(frozen=True)
class AblationState:
    """The heads switched off (sorted, no repeats) and how: their output zeroed, or replaced by its mean."""

    heads: tuple[Head, ...] = ()
    mode: str = "zero"  # one of MODES

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads", tuple(sorted(set(self.heads))))

    def toggled(self, head: Head) -> AblationState:
        """The same with ``head`` switched off, or on again if it was off."""
        heads = set(self.heads) ^ {head}
        return replace(self, heads=tuple(heads))

    def with_mode(self, mode: str) -> AblationState:
        return replace(self, mode=mode)

    def cleared(self) -> AblationState:
        """All heads on (the mode stays)."""
        return replace(self, heads=())

    def cells(self, attention_kind: str) -> set[tuple[int, int]]:
        """(layer, head) of the heads off among the maps of ``attention_kind`` (an Inspection's kind)."""
        kind = HEAD_KIND.get(attention_kind)
        return {(layer, head) for k, layer, head in self.heads if k == kind}

    def is_off(self, head: Head) -> bool:
        return head in self.heads


def changed_positions(before: tuple[str, ...], after: tuple[str, ...]) -> list[int]:
    """The positions of ``after`` whose tokens are not ``before``'s, aligned as a diff aligns them: one token put in
    marks that token, not every token after it."""
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    return [j for tag, _, _, j1, j2 in matcher.get_opcodes() if tag != "equal" for j in range(j1, j2)]


def probability_rows(diff: AblationDiff) -> list[tuple[str, float, float]]:
    """Each of the former output's tokens with its probability (teacher-forced) before and after (NaN after: not
    among the model's top guesses any more)."""
    after = np.asarray(diff.after_probs, dtype=float)
    return [
        (token, float(diff.before_probs[i]), float(after[i]) if i < len(after) else float("nan"))
        for i, token in enumerate(diff.before[: len(diff.before_probs)])
    ]
