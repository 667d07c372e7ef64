"""From single texts to padded batches for decoder-only and encoder-only models.

Two kinds of batch, both right-padded with PAD:

- ``"lm"`` (GPT-style language model): the model reads ``ids = BOS + y`` and learns to
  predict ``targets = y + EOS``, one position ahead.
- ``"mlm"`` (BERT-style masked language model): the input is ``BOS y EOS`` (BOS plays
  [CLS], EOS plays [SEP]), or ``BOS a EOS b EOS`` for next-sentence prediction (NSP).
  About 15% of the regular tokens are chosen (:func:`mask_tokens`); the model learns to
  give back their original ids. Segment ids say which sentence a position belongs to.

The training stream is reproducible like :class:`model.data.batching.BatchStream`: an
epoch is a permutation drawn from ``(seed, epoch)``, bucketed by length in pools, and the
position (epoch, batch) is the whole state; the masks of a batch are drawn from
``(seed, epoch, position)``, so a resumed run gets exactly the same next batch.

Options shared by :class:`TextStream` and :func:`text_batches_in_order` (keywords):

- ``vocab_size``: the tokenizer's vocabulary size (``"mlm"``: random replacements are below it).
- ``mask_id``: the id of ``<mask>`` (``"mlm"``).
- ``first_regular_id``: the first id that is not a special token (``"mlm"``): with the project's
  four specials and ``<mask>`` at 4, that is 5. Only ids from here on are ever chosen or drawn.
- ``nsp``: build sentence pairs for next-sentence prediction (``"mlm"`` only).
- ``max_len``: the model's longest input; examples are cut to fit (needed with ``nsp``).
- ``mask_prob``: the share of maskable positions chosen (BERT: 0.15).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from model.data.batching import DEFAULT_SPECIALS, IGNORE, Specials, bucketed_plan
from model.data.tokenization import SPECIAL_TOKENS, Tokenizing

KINDS = ("lm", "mlm")
IS_NEXT, NOT_NEXT = 0, 1  # NSP labels, Hugging Face's convention: 0 = sentence B continues sentence A


@dataclass(frozen=True)
class EncodedTexts:
    """A split of single texts, tokenised and cut to fit the model."""

    ids: list[list[int]]  # each: tokens only, at most max_len − reserve
    truncated: int  # texts that had to be cut
    specials: Specials = Specials()  # the model's special ids


def encode_texts(
    texts: list[str], tok: Tokenizing, max_len: int, reserve: int = 2, specials: Specials = DEFAULT_SPECIALS
) -> EncodedTexts:
    """Token ids of ``texts``, each cut to ``max_len − reserve`` tokens, leaving room for the specials that the
    batch adds (``"lm"``: 1, BOS or EOS; ``"mlm"``: 2, BOS and EOS)."""
    limit = max_len - reserve
    if limit < 1:
        raise ValueError(f"max_len {max_len} leaves no room for text after {reserve} special tokens")
    ids = tok.encode_batch(texts)
    truncated = sum(len(t) > limit for t in ids)
    return EncodedTexts([t[:limit] for t in ids], truncated, specials)


@dataclass(frozen=True)
class LMBatch:
    ids: Tensor  # [B, T] BOS + tokens, right-padded
    targets: Tensor  # [B, T] tokens + EOS, right-padded with IGNORE (not predicted)
    n_tokens: int  # real (predicted) targets

    def to(self, device: torch.device) -> LMBatch:
        return LMBatch(self.ids.to(device), self.targets.to(device), self.n_tokens)


@dataclass(frozen=True)
class MLMBatch:
    ids: Tensor  # [B, T] BOS a EOS (b EOS), some tokens masked or replaced, right-padded
    segments: Tensor  # [B, T] 0 for sentence A with its BOS and EOS (and PAD), 1 for sentence B and its EOS
    labels: Tensor  # [B, T] the original id where a position was chosen, IGNORE (-100) elsewhere
    nsp_labels: Tensor | None  # [B] IS_NEXT (0) or NOT_NEXT (1), or None without NSP
    n_tokens: int  # chosen positions (may be 0 in a small batch: guard the loss)

    def to(self, device: torch.device) -> MLMBatch:
        nsp = None if self.nsp_labels is None else self.nsp_labels.to(device)
        return MLMBatch(self.ids.to(device), self.segments.to(device), self.labels.to(device), nsp, self.n_tokens)


def collate_lm(texts: list[list[int]], specials: Specials = DEFAULT_SPECIALS) -> LMBatch:
    """Pad token lists into a language-model batch with shifted targets."""
    B, T = len(texts), max(len(t) for t in texts) + 1
    ids = torch.full((B, T), specials.pad, dtype=torch.long)
    targets = torch.full((B, T), IGNORE, dtype=torch.long)
    for i, t in enumerate(texts):
        ids[i, : len(t) + 1] = torch.tensor([specials.bos, *t], dtype=torch.long)
        targets[i, : len(t) + 1] = torch.tensor([*t, specials.eos], dtype=torch.long)
    return LMBatch(ids, targets, int((targets != IGNORE).sum()))


def mask_tokens(
    ids: Tensor,
    maskable: Tensor,
    vocab_size: int,
    mask_id: int,
    first_regular_id: int,
    generator: torch.Generator,
    p: float = 0.15,
) -> tuple[Tensor, Tensor]:
    """BERT's masking: ``(masked ids, labels)``.

    Each position where ``maskable`` is True is chosen independently with probability ``p``; of the chosen,
    80% become ``mask_id``, 10% a uniformly random id in ``[first_regular_id, vocab_size)`` and 10% stay.
    Labels hold the original id at chosen positions and IGNORE (-100) elsewhere. ``generator`` must live on
    ``ids``' device; the draws depend only on it and the shape of ``ids``.
    """
    if vocab_size <= first_regular_id:
        raise ValueError(f"vocab_size {vocab_size} has no regular ids (first regular id: {first_regular_id})")
    chosen = (torch.rand(ids.shape, generator=generator, device=ids.device) < p) & maskable
    action = torch.rand(ids.shape, generator=generator, device=ids.device)
    random_ids = torch.randint(first_regular_id, vocab_size, ids.shape, generator=generator, device=ids.device)
    masked = torch.where(chosen & (action < 0.8), torch.full_like(ids, mask_id), ids)
    masked = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_ids, masked)
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE))
    return masked, labels


def nsp_examples(ids: list[list[int]], rng: random.Random) -> list[tuple[list[int], list[int], int]]:
    """Next-sentence pairs from consecutive lines: for each line i but the last, with probability ½
    ``(line i, line i+1, IS_NEXT)``, else ``(line i, a random line j ∉ {i, i+1}, NOT_NEXT)``."""
    n = len(ids)
    if n < 3:
        raise ValueError(f"next-sentence prediction needs at least 3 texts (got {n})")
    examples = []
    for i in range(n - 1):
        if rng.random() < 0.5:
            examples.append((ids[i], ids[i + 1], IS_NEXT))
        else:
            j = rng.randrange(n - 2)
            examples.append((ids[i], ids[j + 2 if j >= i else j], NOT_NEXT))
    return examples


@dataclass(frozen=True)
class _Options:
    """The checked options of a stream or evaluation (see the module's docstring)."""

    kind: str
    vocab_size: int = 0
    mask_id: int | None = None
    first_regular_id: int | None = None
    nsp: bool = False
    max_len: int | None = None
    mask_prob: float = 0.15
    specials: Specials = Specials()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown batch kind {self.kind!r}; choose one of {KINDS}")
        if self.nsp and self.kind != "mlm":
            raise ValueError("next-sentence prediction goes with kind='mlm'")
        if self.nsp and (self.max_len is None or self.max_len < 5):
            raise ValueError("next-sentence prediction needs max_len (at least 5: BOS a EOS b EOS)")
        if self.kind == "mlm":
            if self.mask_id is None or self.first_regular_id is None:
                raise ValueError("kind='mlm' needs mask_id and first_regular_id")
            if not len(SPECIAL_TOKENS) <= self.first_regular_id < self.vocab_size:
                raise ValueError(f"first_regular_id must be in [{len(SPECIAL_TOKENS)}, vocab_size)")
            if not len(SPECIAL_TOKENS) <= self.mask_id < self.vocab_size:
                raise ValueError(f"mask_id must be in [{len(SPECIAL_TOKENS)}, vocab_size)")
            if not 0 < self.mask_prob < 1:
                raise ValueError("mask_prob must be between 0 and 1")


Example = tuple[list[int], list[int] | None, int]  # (sentence A, sentence B or None, NSP label)


def _fit(example: Example, max_len: int | None, kind: str) -> Example:
    """``example`` cut to ``max_len``: a single text to max_len − 1 (lm) or − 2 (mlm); a pair's A and B each
    to fit max_len − 3, taking from the longer one (BERT's rule)."""
    a, b, label = example
    if max_len is None:
        return example
    if b is None:
        return a[: max_len - (1 if kind == "lm" else 2)], None, label
    budget = max_len - 3
    keep_a = min(len(a), max(budget - len(b), budget // 2))
    return a[:keep_a], b[: budget - keep_a], label


def collate_mlm(examples: list[Example], options: _Options, generator: torch.Generator) -> MLMBatch:
    """Lay out ``examples`` BERT-style (BOS a EOS [b EOS]), right-padded, and mask them with ``generator``."""
    rows = []
    bos, eos = options.specials.bos, options.specials.eos
    for a, b, _ in examples:
        tokens, segments = [bos, *a, eos], [0] * (len(a) + 2)
        if b is not None:
            tokens, segments = tokens + [*b, eos], segments + [1] * (len(b) + 1)
        rows.append((tokens, segments))
    B, T = len(rows), max(len(t) for t, _ in rows)
    ids = torch.full((B, T), options.specials.pad, dtype=torch.long)
    segs = torch.zeros((B, T), dtype=torch.long)
    for i, (tokens, segments) in enumerate(rows):
        ids[i, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        segs[i, : len(segments)] = torch.tensor(segments, dtype=torch.long)
    assert options.mask_id is not None and options.first_regular_id is not None  # checked by _Options
    maskable = (ids >= options.first_regular_id) & (ids != options.mask_id) & (ids != options.specials.pad)
    maskable &= (ids != bos) & (ids != eos)
    masked, labels = mask_tokens(
        ids, maskable, options.vocab_size, options.mask_id, options.first_regular_id, generator, options.mask_prob
    )
    nsp = torch.tensor([label for *_, label in examples], dtype=torch.long) if options.nsp else None
    return MLMBatch(masked, segs, labels, nsp, int((labels != IGNORE).sum()))


def _examples(data: EncodedTexts, options: _Options, rng: random.Random) -> list[Example]:
    """The examples of an epoch: the texts, or with NSP the pairs drawn with ``rng``; cut to fit."""
    if options.nsp:
        raw: list[Example] = list(nsp_examples(data.ids, rng))
    else:
        raw = [(t, None, IS_NEXT) for t in data.ids]
    return [_fit(e, options.max_len, options.kind) for e in raw]


def _length(example: Example) -> int:
    a, b, _ = example
    return len(a) + (0 if b is None else len(b))


def _generator(*numbers: int) -> torch.Generator:
    """A CPU generator seeded from ``numbers`` (e.g. a purpose, the seed, the epoch, the position)."""
    state = np.random.SeedSequence([n % 2**64 for n in numbers]).generate_state(2)
    return torch.Generator().manual_seed((int(state[0]) << 31) ^ int(state[1]))


def _collate(examples: list[Example], options: _Options, generator: torch.Generator) -> LMBatch | MLMBatch:
    if options.kind == "lm":
        return collate_lm([a for a, _, _ in examples], options.specials)
    return collate_mlm(examples, options, generator)


class TextStream:
    """Endless, reproducible training batches of single texts with length bucketing.

    ``kind`` is ``"lm"`` (:class:`LMBatch`) or ``"mlm"`` (:class:`MLMBatch`); the keyword options are those
    of the module's docstring. Each epoch is a permutation drawn from ``(seed, epoch)`` (with NSP, the pairs
    are drawn anew each epoch from ``(seed, epoch)`` too); pools of 50 batches are sorted by length, then the
    batch order is shuffled. The masks of the batch at ``position`` are drawn from ``(seed, epoch,
    position)``. The position (epoch, batch) is the whole state: a stream built with the same data, batch
    size, seed and options at a saved :meth:`state_dict` continues with exactly the next batch.
    """

    POOL = 50  # batches per sorting pool

    def __init__(
        self,
        data: EncodedTexts,
        batch_size: int,
        seed: int,
        kind: str,
        *,
        vocab_size: int = 0,
        mask_id: int | None = None,
        first_regular_id: int | None = None,
        nsp: bool = False,
        max_len: int | None = None,
        mask_prob: float = 0.15,
        epoch: int = 0,
        position: int = 0,
    ):
        if not data.ids:
            raise ValueError("no training texts to make batches from")
        self.options = _Options(kind, vocab_size, mask_id, first_regular_id, nsp, max_len, mask_prob, data.specials)
        self.data, self.batch_size, self.seed = data, batch_size, seed
        self.epoch, self.position = epoch, position
        self._examples, self._plan = self._epoch_plan(epoch)

    def _epoch_plan(self, epoch: int) -> tuple[list[Example], list[np.ndarray]]:
        examples = _examples(self.data, self.options, random.Random(f"nsp:{self.seed}:{epoch}"))
        lengths = np.array([_length(e) for e in examples])
        return examples, bucketed_plan(lengths, self.batch_size, self.seed, epoch, self.POOL)

    def __iter__(self) -> TextStream:
        return self

    def __next__(self) -> LMBatch | MLMBatch:
        if self.position >= len(self._plan):
            self.epoch, self.position = self.epoch + 1, 0
            self._examples, self._plan = self._epoch_plan(self.epoch)
        idx = self._plan[self.position]
        generator = _generator(0, self.seed, self.epoch, self.position)
        self.position += 1
        return _collate([self._examples[i] for i in idx], self.options, generator)

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}


def text_batches_in_order(
    data: EncodedTexts,
    batch_size: int,
    kind: str,
    *,
    vocab_size: int = 0,
    mask_id: int | None = None,
    first_regular_id: int | None = None,
    nsp: bool = False,
    max_len: int | None = None,
    mask_prob: float = 0.15,
    seed: int = 0,
) -> list[LMBatch] | list[MLMBatch]:
    """Evaluation batches: every text once (with NSP: every text but the last as sentence A), sorted by length
    for less padding. The NSP pairs and the masks come from ``seed`` alone, so every call gives the same
    batches."""
    options = _Options(kind, vocab_size, mask_id, first_regular_id, nsp, max_len, mask_prob, data.specials)
    examples = _examples(data, options, random.Random(f"nsp-eval:{seed}"))
    order = sorted(range(len(examples)), key=lambda i: _length(examples[i]))
    generator = _generator(1, seed)  # one generator for the whole pass, in order
    return [  # type: ignore[return-value]
        _collate([examples[i] for i in order[k : k + batch_size]], options, generator)
        for k in range(0, len(order), batch_size)
    ]
