"""Tokenizers, trained in-process with Hugging Face ``tokenizers`` (nothing fetched from a hub).

Kinds and what a round trip ``decode(encode(text))`` gives back:

- ``char``: one token per character, spaces included — the text itself.
- ``word``: words split at whitespace and punctuation, Chinese one token per
  character — the text with a single space between words, none before
  punctuation (``, . ! ? ; : ) ]``), none inside contractions and possessive 's
  (``don't``, ``Li Hua's``), and none next
  to Chinese characters or full-width punctuation.
- ``bpe``: byte-pair encoding over characters, spaces marked with ``▁``
  (SentencePiece style) — the text itself.
- ``wordpiece``: BERT's WordPiece over the ``word`` split — as ``word``.
- ``byte_bpe``: GPT-2's byte-level BPE — the text itself; nothing is ever unknown.

Every kind first normalises text to Unicode NFC, strips it and collapses runs of
whitespace to one space. A character the vocabulary lacks becomes ``<unk>``
(id 3), and :meth:`TextTokenizer.encode` reports the spans that were unknown.
Special tokens have fixed ids: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from model.core.settings import from_plain, to_plain

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)
# Masked-language-model tokenizers (encoder-only models) have one more special token, right after the others.
MASK = "<mask>"
MASK_ID = 4
TOKENIZER_KINDS = ("char", "word", "bpe", "wordpiece", "byte_bpe")

# Chinese characters and CJK/full-width punctuation: no spaces are kept next to them.
_CJK = r"\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_SPACE_BY_CJK = re.compile(rf"(?<=[{_CJK}]) | (?=[{_CJK}])")
_SPACE_BEFORE_PUNCT = re.compile(r" (?=[,.!?;:%)\]}])")
_SPACE_AFTER_OPEN = re.compile(r"(?<=[(\[{]) ")
_SPACED_APOSTROPHE = re.compile(r"(?<=\w) ' (?=(?:s|t|re|ve|ll|d|m)\b)")  # Hua's, don't, we're


ENCODE_CHUNK = 1000  # texts per call into the tokenizer (see TextTokenizer.encode_batch)


def normalize_text(text: str) -> str:
    """NFC, stripped, whitespace runs collapsed to one space — applied before every kind."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def join_words(tokens: Iterable[str]) -> str:
    """Detokenise a word split: the ``word`` and ``wordpiece`` kinds' normal form."""
    text = " ".join(tokens)
    text = _SPACED_APOSTROPHE.sub("'", text)
    text = _SPACE_BEFORE_PUNCT.sub("", text)
    text = _SPACE_AFTER_OPEN.sub("", text)
    return _SPACE_BY_CJK.sub("", text)


def contains_cjk(text: str) -> bool:
    return re.search(f"[{_CJK}]", text) is not None


@dataclass(frozen=True)
class TokenizerSpec:
    """How to build a tokenizer."""

    kind: str = "word"  # one of TOKENIZER_KINDS
    vocab_size: int = 8000  # upper bound; BPE/WordPiece keep every character seen, whatever the bound
    min_frequency: int = 1  # pieces seen fewer times in training become <unk>

    def __post_init__(self) -> None:
        if self.kind not in TOKENIZER_KINDS:
            raise ValueError(f"Unknown tokenizer kind {self.kind!r}; choose one of {TOKENIZER_KINDS}")
        if self.vocab_size < len(SPECIAL_TOKENS) + 1:
            raise ValueError(f"vocab_size must be at least {len(SPECIAL_TOKENS) + 1} (got {self.vocab_size})")
        if self.min_frequency < 1:
            raise ValueError(f"min_frequency must be at least 1 (got {self.min_frequency})")

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TokenizerSpec:
        """Build from plain data (e.g. read from a checkpoint): unknown keys are refused, missing ones take
        the defaults (see :func:`model.core.settings.from_plain`)."""
        return from_plain(cls, data, "tokenizer description")


@dataclass(frozen=True)
class Encoded:
    """One encoded text: ids and pieces, with spans into ``text`` (the normalised input)."""

    text: str  # the normalised text that was encoded
    ids: list[int]
    tokens: list[str]  # the pieces as the tokenizer names them
    spans: list[tuple[int, int]]  # character span of each piece in ``text``
    unknown: list[tuple[int, int]]  # spans that became <unk>

    @property
    def unknown_text(self) -> list[str]:
        return [self.text[a:b] for a, b in self.unknown]


class Tokenizing(Protocol):
    """What the data pipeline and the evaluation need of a tokenizer: :class:`TextTokenizer`, or a model's own
    tokenizer read from a Hugging Face folder (:mod:`model.hf.tokenizers`)."""

    @property
    def kind(self) -> str: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def special_ids(self) -> frozenset[int]: ...
    def display_token(self, i: int) -> str: ...
    def encode_batch(self, texts: list[str]) -> list[list[int]]: ...
    def decode(self, ids: Iterable[int]) -> str: ...
    def normal_form(self, text: str) -> str: ...


def _build(kind: str) -> tuple[Tokenizer, Callable[..., trainers.Trainer]]:
    """An untrained tokenizer of ``kind`` and the trainer class to fit it."""
    if kind in ("word", "wordpiece"):
        model = models.WordLevel(unk_token=UNK) if kind == "word" else models.WordPiece(unk_token=UNK)
        tok = Tokenizer(model)
        # BERT's rules: split at whitespace and punctuation; each Chinese character a word.
        tok.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False
        )
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        if kind == "wordpiece":
            tok.decoder = decoders.WordPiece(cleanup=False)
        return tok, trainers.WordLevelTrainer if kind == "word" else trainers.WordPieceTrainer
    if kind == "char":
        tok = Tokenizer(models.WordLevel(unk_token=UNK))
        tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), "isolated")
        tok.decoder = decoders.Fuse()
        return tok, trainers.WordLevelTrainer
    if kind == "bpe":
        tok = Tokenizer(models.BPE(unk_token=UNK))
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        return tok, trainers.BpeTrainer
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok, trainers.BpeTrainer


class TextTokenizer:
    """A trained tokenizer with the project's fixed special tokens and normal forms."""

    # the fixed special ids, named as the tokenizers of Hugging Face model folders name theirs
    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID

    def __init__(self, tokenizer: Tokenizer, kind: str) -> None:
        for i, special in enumerate(SPECIAL_TOKENS):
            if tokenizer.token_to_id(special) != i:
                raise ValueError(f"tokenizer does not have {special} at id {i}")
        self.hf, self.kind = tokenizer, kind
        self._byte_decoder = _byte_decoder() if kind == "byte_bpe" else None

    # -- construction ---------------------------------------------------------------
    @classmethod
    def train(cls, texts: Iterable[str], spec: TokenizerSpec = TokenizerSpec(), masking: bool = False) -> TextTokenizer:
        """A tokenizer fitted to ``texts``; with ``masking`` it also has ``<mask>`` (id 4), which it finds
        where a person types it."""
        tok, trainer_cls = _build(spec.kind)
        specials = list(SPECIAL_TOKENS) + ([MASK] if masking else [])
        options = dict(special_tokens=specials, vocab_size=spec.vocab_size, min_frequency=spec.min_frequency)
        if spec.kind == "byte_bpe":
            options["initial_alphabet"] = pre_tokenizers.ByteLevel.alphabet()
        if spec.kind in ("bpe", "wordpiece", "byte_bpe"):
            options["show_progress"] = False
        tok.train_from_iterator((normalize_text(t) for t in texts), trainer_cls(**options))
        return cls(tok, spec.kind)

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "tokenizer": json.loads(self.hf.to_str())}, ensure_ascii=False)

    @classmethod
    def from_json(cls, data: str) -> TextTokenizer:
        obj = json.loads(data)
        if not isinstance(obj, dict) or obj.get("kind") not in TOKENIZER_KINDS:
            raise ValueError("not a saved tokenizer")
        return cls(Tokenizer.from_str(json.dumps(obj["tokenizer"])), obj["kind"])

    # -- vocabulary -------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size()

    @property
    def mask_id(self) -> int | None:
        """The id of ``<mask>`` (a masked-language-model tokenizer's), else None."""
        return MASK_ID if self.hf.token_to_id(MASK) == MASK_ID else None

    @property
    def special_ids(self) -> frozenset[int]:
        """The ids of the special tokens: pad, bos, eos, unk and, when there is one, mask."""
        specials = {PAD_ID, BOS_ID, EOS_ID, UNK_ID}
        return frozenset(specials if self.mask_id is None else specials | {self.mask_id})

    @property
    def first_regular_id(self) -> int:
        """The first id that is not a special token."""
        return len(SPECIAL_TOKENS) + (self.mask_id is not None)

    def id_to_token(self, i: int) -> str:
        return self.hf.id_to_token(i) or UNK

    def display_token(self, i: int) -> str:
        """A piece as a person should read it (byte-level pieces turned back into text)."""
        piece = self.id_to_token(i)
        if self._byte_decoder is not None and i >= len(SPECIAL_TOKENS):
            raw = bytes(self._byte_decoder.get(ch, 0x3F) for ch in piece)
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:  # a piece of a multi-byte character
                return "<" + " ".join(f"{b:02x}" for b in raw) + ">"
        return piece

    # -- encoding -------------------------------------------------------------------
    def encode(self, text: str) -> Encoded:
        text = normalize_text(text)
        enc = self.hf.encode(text, add_special_tokens=False)
        spans = [(int(a), int(b)) for a, b in enc.offsets]
        unknown = [s for i, s in zip(enc.ids, spans) if i == UNK_ID]
        return Encoded(text, list(enc.ids), list(enc.tokens), spans, unknown)

    def encode_ids(self, text: str) -> list[int]:
        return self.hf.encode(normalize_text(text), add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Ids for many texts at once (in parallel, in Rust), a chunk per call: a call holds the interpreter
        lock throughout (20,000 sentences: 170 ms, during which the window's thread could not run)."""
        ids: list[list[int]] = []
        for i in range(0, len(texts), ENCODE_CHUNK):
            chunk = [normalize_text(t) for t in texts[i : i + ENCODE_CHUNK]]
            ids.extend(e.ids for e in self.hf.encode_batch(chunk, add_special_tokens=False))
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ``ids`` in this kind's normal form; PAD/BOS/EOS dropped, unknowns as ``<unk>``."""
        ids = [i for i in ids if i >= UNK_ID]
        if self.kind in ("word", "wordpiece"):
            pieces = self.hf.decode(ids, skip_special_tokens=False)
            return join_words(pieces.split(" ")) if pieces else ""
        return self.hf.decode(ids, skip_special_tokens=False)

    def normal_form(self, text: str) -> str:
        """What ``decode(encode(text))`` gives when nothing is unknown: the text compared
        against when judging a translation exactly right."""
        text = normalize_text(text)
        if self.kind in ("word", "wordpiece"):
            pieces = self.hf.pre_tokenizer.pre_tokenize_str(self.hf.normalizer.normalize_str(text))
            return join_words(p for p, _ in pieces)
        return text


def _byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-ins for bytes, reversed: character → byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars, n = list(printable), 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars)}
