"""The tokenizers of Hugging Face model folders, with the same interface as :class:`TextTokenizer`.

A model opened from a Hugging Face folder (Marian opus-mt, GPT-2, BERT) comes with its own tokenizer and its
own special-token ids; the classes here read those files and give the ids the model was trained with, so the
session, batching and display code can treat them like the project's own :class:`TextTokenizer`:

- :class:`MarianSpmTokenizer` (kind ``marian_spm``): one side (source or target) of an opus-mt model —
  SentencePiece pieces (``source.spm`` / ``target.spm``) looked up in ``vocab.json``, exactly as
  ``transformers``' ``MarianTokenizer`` does.
- :class:`HFJsonTokenizer` (kind ``hf_json``): GPT-2's byte-level BPE or BERT's WordPiece, read from
  ``tokenizer.json`` or rebuilt from ``vocab.json`` + ``merges.txt`` (GPT-2) or ``vocab.txt`` (BERT).

Unlike :class:`TextTokenizer`, text is encoded as given (no whitespace collapsing of our own): the ids are the
ones ``transformers`` gives for the same text. ``encode`` never adds special tokens; the session adds its
start and end tokens (``bos_id``/``eos_id``) itself. :func:`tokenizer_from_json` rebuilds any of the project's
tokenizers from its ``to_json()``. Nothing here imports ``transformers``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import sentencepiece
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

from model.data.tokenization import ENCODE_CHUNK, TOKENIZER_KINDS, Encoded, TextTokenizer, _byte_decoder
from model.io import gentle
from model.io.safe_files import NotAFileError, check_regular, read_regular

SPIECE_UNDERLINE = "▁"
MARIAN_KIND, HF_JSON_KIND = "marian_spm", "hf_json"
HF_MODEL_TYPES = ("marian", "gpt2", "bert")
_UNUSED_ROW = re.compile(r"\[unused\d+\]")  # BERT's reserved, never-trained vocabulary rows
_GPT2_END = "<|endoftext|>"
_BERT_NAMES = {"pad": "[PAD]", "bos": "[CLS]", "eos": "[SEP]", "unk": "[UNK]", "mask": "[MASK]"}
_BERT_KEYS = {"pad": "pad_token", "bos": "cls_token", "eos": "sep_token", "unk": "unk_token", "mask": "mask_token"}


class HFTokenizerError(ValueError):
    """A model folder's tokenizer files are missing, unreadable or lack a required special token."""


# -- reading a folder -----------------------------------------------------------------------------------------


def _present(path: Path) -> bool:
    """Whether the tokenizer file ``path`` is there; a name that is not a regular file (a named pipe, which
    would block a reader, or a folder) is refused rather than taken as absent."""
    if not os.path.lexists(path):
        return False
    try:
        check_regular(path)
    except NotAFileError as exc:
        raise HFTokenizerError(str(exc)) from None
    except OSError:
        return False  # a broken link: as good as missing
    return True


def _read_json(path: Path, required: bool = False) -> Any:
    """The JSON in ``path``; ``{}`` for an optional file that is not there."""
    if not _present(path):
        if required:
            raise HFTokenizerError(f"{path.parent}: the tokenizer file {path.name} is missing")
        return {}
    try:
        return gentle.json_loads(read_regular(path).decode("utf-8"))  # (a vocab.json: the window draws on meanwhile)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HFTokenizerError(f"{path.parent}: cannot read the tokenizer file {path.name} ({exc})") from None


def _token_name(value: Any) -> str | None:
    """A special token as the config files write it: a string, or a dict with its ``content``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


def tokenizer_settings(folder: Path) -> dict[str, Any]:
    """``tokenizer_config.json`` with ``special_tokens_map.json`` over it (what ``transformers`` does)."""
    settings = dict(_read_json(folder / "tokenizer_config.json") or {})
    settings.update(_read_json(folder / "special_tokens_map.json") or {})
    return settings


def _extra_special_names(settings: Mapping[str, Any]) -> list[str]:
    """The names of the additional special tokens the config files list."""
    extra = settings.get("additional_special_tokens") or settings.get("extra_special_tokens") or []
    names = [_token_name(v) for v in extra] if isinstance(extra, list) else []
    return [n for n in names if n]


def find_first_regular_id(special_ids: Iterable[int], vocab_size: int, token_of: Any) -> int:
    """The first id of the regular vocabulary: one past the last special token *below* it.

    Special tokens at the very end of the vocabulary (Marian's ``<pad>``, GPT-2's ``<|endoftext|>``) do not
    count; BERT's ``[unusedN]`` rows right after ``[MASK]`` are skipped too (bert-base-uncased has hundreds
    there; bert-base-chinese none). Used only to draw random replacement tokens for masked-LM training.
    """
    specials = set(special_ids)
    top = vocab_size - 1
    while top in specials:
        top -= 1
    below = [i for i in specials if i <= top]
    first = max(below) + 1 if below else 0
    while first <= top and _UNUSED_ROW.fullmatch(token_of(first) or ""):
        first += 1
    return first


def _clean_up_spaces(text: str) -> str:
    """``transformers``' ``clean_up_tokenization``: no space before punctuation and English contractions."""
    for spaced, tight in (
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ):
        text = text.replace(spaced, tight)
    return text


def _special_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern finding typed special tokens, the longest first (as ``transformers``' trie)."""
    ordered = sorted(set(names), key=len, reverse=True)
    return re.compile("|".join(re.escape(n) for n in ordered)) if ordered else None


# -- SentencePiece pieces with character spans ----------------------------------------------------------------


def _byte_to_char(text: str) -> list[int]:
    """For each UTF-8 byte offset into ``text`` (and its end), the index of the character it falls in."""
    table: list[int] = []
    for i, ch in enumerate(text):
        table.extend([i] * len(ch.encode("utf-8")))
    table.append(len(text))
    return table


def align_pieces(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    """Character spans of SentencePiece ``pieces`` found in ``text`` in order (``▁`` read as a space); a piece
    that cannot be found (the model normalised it) gets an empty span where the search stands. Used only when
    the installed sentencepiece reports no offsets."""
    spans, pos = [], 0
    for piece in pieces:
        core = piece.replace(SPIECE_UNDERLINE, " ").strip()
        at = text.find(core, pos) if core else -1
        if at < 0:
            spans.append((pos, pos))
            continue
        spans.append((at, at + len(core)))
        pos = at + len(core)
    return spans


def spm_pieces_and_spans(sp: Any, text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """SentencePiece's pieces of ``text`` and their character spans, whichever sentencepiece is installed."""
    pieces = list(sp.encode(text, out_type=str))
    try:  # sentencepiece >= 0.2.2: character offsets directly
        got = sp.encode(text, return_type="offset_mapping")
        spans = [(int(a), int(b)) for a, b in got["offsets"]]
    except (TypeError, ValueError, KeyError):
        try:  # sentencepiece 0.2.0/0.2.1: byte offsets
            proto = sp.encode(text, out_type="immutable_proto")
            table = _byte_to_char(text)
            spans = [(table[p.begin], table[p.end]) for p in proto.pieces]
        except (TypeError, ValueError, AttributeError, IndexError):
            spans = []
    if len(spans) != len(pieces):
        spans = align_pieces(text, pieces)
    return pieces, spans


def _load_spm(model: bytes, where: str) -> Any:
    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(model)
    except (RuntimeError, OSError, ValueError) as exc:
        raise HFTokenizerError(f"{where}: not a SentencePiece model ({exc})") from None
    return processor


def _read_bytes(path: Path) -> bytes:
    if not _present(path):
        raise HFTokenizerError(f"{path.parent}: the tokenizer file {path.name} is missing")
    try:
        return read_regular(path)
    except OSError as exc:
        raise HFTokenizerError(f"{path.parent}: cannot read the tokenizer file {path.name} ({exc})") from None


# -- shared behaviour ---------------------------------------------------------------------------------------------


class _FolderTokenizer:
    """What both folder tokenizers share: the special ids and the derived conveniences."""

    kind: str
    pad_id: int
    bos_id: int
    eos_id: int
    unk_id: int
    mask_id: int | None
    special_ids: frozenset[int]
    vocab_size: int
    first_regular_id: int

    def encode(self, text: str) -> Encoded:
        raise NotImplementedError

    def decode(self, ids: Iterable[int]) -> str:
        raise NotImplementedError

    def encode_ids(self, text: str) -> list[int]:
        return self.encode(text).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [self.encode_ids(t) for t in texts]

    def normal_form(self, text: str) -> str:
        """What ``decode(encode(text))`` gives when nothing is unknown: the text compared against when
        judging a translation exactly right."""
        return self.decode(self.encode_ids(text))


# -- Marian (opus-mt): SentencePiece + vocab.json -----------------------------------------------------------------


class MarianSpmTokenizer(_FolderTokenizer):
    """One side of an opus-mt model's tokenizer, as ``transformers``' ``MarianTokenizer``.

    Text → SentencePiece pieces of this side's model (a leading language code ``>>xx<<`` kept as its own
    piece; typed special tokens such as ``</s>`` found as themselves) → ids from ``vocab.json`` (unknown pieces
    → ``<unk>``). ``encode_ids(text) + [eos_id]`` is ``MarianTokenizer(text)["input_ids"]`` (target side:
    ``text_target=``). Marian's decoder starts from the padding token, so ``bos_id == pad_id`` here.

    Decoding is ``MarianTokenizer.decode(ids, skip_special_tokens=True)``: special tokens (``</s>``, ``<unk>``,
    ``<pad>``) dropped, pieces joined by SentencePiece, ``▁`` read as a space, stripped. Like ``transformers``
    with a shared vocabulary, the target side joins pieces with the *source* model; with separate
    vocabularies, each side decodes with its own model and vocabulary (``transformers`` decodes source ids
    with the target vocabulary there, which gives nonsense). No Moses punctuation normalisation: text goes to
    SentencePiece as given (``MarianTokenizer`` sets up such a normaliser only when ``sacremoses`` is installed,
    and ``transformers`` 5 does not call it). ``vocab_size`` is the number of entries in this side's
    vocabulary file (the model's embedding rows).
    """

    kind = MARIAN_KIND

    def __init__(
        self,
        spm_model: bytes,
        vocab: Mapping[str, int],
        side: str,
        names: Mapping[str, str],
        decode_model: bytes | None = None,
        extra_specials: Iterable[str] = (),
        cleanup: bool = False,
    ) -> None:
        if side not in ("source", "target"):
            raise ValueError(f"side must be 'source' or 'target' (got {side!r})")
        self.side, self.vocab, self.names = side, dict(vocab), dict(names)
        self.cleanup = cleanup
        self._spm_bytes, self._decode_bytes = spm_model, decode_model
        self.spm = _load_spm(spm_model, f"the {side} SentencePiece model")
        self.decode_spm = self.spm if decode_model is None else _load_spm(decode_model, "the decoding model")
        self._inverse = {i: piece for piece, i in self.vocab.items()}
        for role in ("unk", "eos", "pad"):
            if self.names[role] not in self.vocab:
                raise HFTokenizerError(f"the vocabulary has no {self.names[role]} token")
        self.extra_specials = [n for n in extra_specials if n in self.vocab]
        special_names = [self.names["eos"], self.names["unk"], self.names["pad"], *self.extra_specials]
        self._special_names = set(special_names)
        self._special_re = _special_pattern(special_names)
        self.unk_id, self.eos_id = self.vocab[self.names["unk"]], self.vocab[self.names["eos"]]
        self.pad_id = self.bos_id = self.vocab[self.names["pad"]]
        self.mask_id = None
        self.special_ids = frozenset(self.vocab[n] for n in special_names)
        self.vocab_size = len(self.vocab)
        self.first_regular_id = find_first_regular_id(self.special_ids, self.vocab_size, self._inverse.get)

    # -- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_folder(cls, folder: str | Path, side: str, read: dict[str, Any] | None = None) -> MarianSpmTokenizer:
        """Side ``"source"`` or ``"target"`` of the Marian tokenizer in ``folder``; raises
        :class:`HFTokenizerError` naming the folder and the file when something is missing. ``read``: vocabularies
        already read by file name (both sides share ``vocab.json``: a real one takes ~70 ms to parse)."""
        folder = Path(folder)
        if side not in ("source", "target"):
            raise ValueError(f"side must be 'source' or 'target' (got {side!r})")
        settings = tokenizer_settings(folder)
        separate = bool(settings.get("separate_vocabs")) and _present(folder / "target_vocab.json")
        vocab_file = "target_vocab.json" if side == "target" and separate else "vocab.json"
        read = {} if read is None else read
        if vocab_file not in read:
            read[vocab_file] = _read_json(folder / vocab_file, required=True)
        vocab = read[vocab_file]
        if not isinstance(vocab, dict) or not all(isinstance(i, int) for i in vocab.values()):
            raise HFTokenizerError(f"{folder}: {vocab_file} is not a map from pieces to ids")
        spm_model = _read_bytes(folder / f"{side}.spm")
        _load_spm(spm_model, str(folder / f"{side}.spm"))
        decode_model = _read_bytes(folder / "source.spm") if side == "target" and not separate else None
        if decode_model is not None:
            _load_spm(decode_model, str(folder / "source.spm"))
        names = {"unk": "<unk>", "eos": "</s>", "pad": "<pad>"}
        for role in names:
            names[role] = _token_name(settings.get(f"{role}_token")) or names[role]
        missing = [n for n in names.values() if n not in vocab]
        if missing:
            raise HFTokenizerError(f"{folder}: {vocab_file} lacks the special token(s) {', '.join(missing)}")
        return cls(
            spm_model,
            vocab,
            side,
            names,
            decode_model,
            _extra_special_names(settings),
            bool(settings.get("clean_up_tokenization_spaces", False)),
        )

    def to_json(self) -> str:
        """Everything needed to rebuild this tokenizer (the SentencePiece models base64-encoded)."""
        decode = None if self._decode_bytes is None else base64.b64encode(self._decode_bytes).decode("ascii")
        return json.dumps(
            {
                "kind": self.kind,
                "side": self.side,
                "vocab": self.vocab,
                "names": self.names,
                "extra_specials": self.extra_specials,
                "cleanup": self.cleanup,
                "spm": base64.b64encode(self._spm_bytes).decode("ascii"),
                "decode_spm": decode,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> MarianSpmTokenizer:
        decode = obj.get("decode_spm")
        return cls(
            base64.b64decode(obj["spm"]),
            obj["vocab"],
            obj["side"],
            obj["names"],
            None if decode is None else base64.b64decode(decode),
            obj.get("extra_specials", ()),
            bool(obj.get("cleanup", False)),
        )

    # -- vocabulary -----------------------------------------------------------------------------------------------
    def id_to_token(self, i: int) -> str:
        return self._inverse.get(i, self.names["unk"])

    def display_token(self, i: int) -> str:
        """The piece as SentencePiece names it (``▁`` marks a space), like the ``bpe`` kind."""
        return self.id_to_token(i)

    # -- encoding ---------------------------------------------------------------------------------------------------
    def _chunks(self, text: str) -> list[tuple[int, str, bool]]:
        """``text`` cut at typed special tokens: (start, chunk, is a special token)."""
        out: list[tuple[int, str, bool]] = []
        pos = 0
        for m in self._special_re.finditer(text) if self._special_re else ():
            if m.start() > pos:
                out.append((pos, text[pos : m.start()], False))
            out.append((m.start(), m.group(), True))
            pos = m.end()
        if pos < len(text):
            out.append((pos, text[pos:], False))
        return out

    def _pieces(self, chunk: str, spans: bool) -> tuple[list[str], list[tuple[int, int]]]:
        """Pieces of a chunk without special tokens: a leading language code, then SentencePiece's."""
        code: list[str] = []
        if chunk.startswith(">>") and (end := chunk.find("<<")) != -1:
            code, chunk = [chunk[: end + 2]], chunk[end + 2 :]
        shift = len(code[0]) if code else 0
        if not spans:
            return code + list(self.spm.encode(chunk, out_type=str)), []
        pieces, where = spm_pieces_and_spans(self.spm, chunk)
        return code + pieces, [(0, shift)] * len(code) + [(a + shift, b + shift) for a, b in where]

    def encode(self, text: str) -> Encoded:
        """Ids (no ``</s>`` added), SentencePiece's pieces as it names them (an unknown piece keeps its text;
        its id is ``<unk>``'s) and their character spans in ``text``."""
        ids: list[int] = []
        tokens: list[str] = []
        spans: list[tuple[int, int]] = []
        for start, chunk, special in self._chunks(text):
            pieces, where = ([chunk], [(0, len(chunk))]) if special else self._pieces(chunk, spans=True)
            tokens.extend(pieces)
            ids.extend(self.vocab.get(p, self.unk_id) for p in pieces)
            spans.extend((a + start, b + start) for a, b in where)
        unknown = [s for i, s in zip(ids, spans) if i == self.unk_id]
        return Encoded(text, ids, tokens, spans, unknown)

    def encode_ids(self, text: str) -> list[int]:
        pieces: list[str] = []
        for _, chunk, special in self._chunks(text):
            pieces.extend([chunk] if special else self._pieces(chunk, spans=False)[0])
        return [self.vocab.get(p, self.unk_id) for p in pieces]

    def decode(self, ids: Iterable[int]) -> str:
        """As ``MarianTokenizer.decode(ids, skip_special_tokens=True)``."""
        tokens = [self.id_to_token(int(i)) for i in ids if int(i) not in self.special_ids]
        out, run = "", list[str]()
        for token in tokens:
            if token in self._special_names:  # only when the vocabulary names one piece twice
                out += self.decode_spm.decode_pieces(run) + token + " "
                run = []
            else:
                run.append(token)
        out = (out + self.decode_spm.decode_pieces(run)).replace(SPIECE_UNDERLINE, " ").strip()
        return _clean_up_spaces(out) if self.cleanup else out


# -- GPT-2 and BERT: tokenizers' JSON, or the older vocabulary files ---------------------------------------------


def _bert_from_vocab_txt(path: Path, settings: Mapping[str, Any], names: Mapping[str, str]) -> Tokenizer:
    """BERT's WordPiece tokenizer from ``vocab.txt``, as ``transformers``' ``BertTokenizer`` builds it."""
    try:
        wordpiece = models.WordPiece.from_file(str(path), unk_token=names["unk"])
    except Exception as exc:  # tokenizers raises its own exception type for unreadable files
        raise HFTokenizerError(f"{path.parent}: cannot read the tokenizer file {path.name} ({exc})") from None
    tok = Tokenizer(wordpiece)
    lowercase = bool(settings.get("do_lower_case", True))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=bool(settings.get("tokenize_chinese_chars", True)),
        strip_accents=settings.get("strip_accents"),
        lowercase=lowercase,
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok


def _gpt2_from_vocab_json(folder: Path, settings: Mapping[str, Any]) -> Tokenizer:
    """GPT-2's byte-level BPE from ``vocab.json`` and ``merges.txt``, as ``transformers``' ``GPT2Tokenizer``."""
    for name in ("vocab.json", "merges.txt"):
        if not _present(folder / name):
            raise HFTokenizerError(f"{folder}: the tokenizer file {name} is missing")
    try:
        vocab, merges = models.BPE.read_file(str(folder / "vocab.json"), str(folder / "merges.txt"))
    except Exception as exc:  # tokenizers raises its own exception type for unreadable files
        raise HFTokenizerError(f"{folder}: cannot read vocab.json/merges.txt ({exc})") from None
    bpe = models.BPE(vocab, merges, dropout=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=bool(settings.get("add_prefix_space", False)))
    tok.decoder = decoders.ByteLevel()
    return tok


def _special_names(model_type: str, settings: Mapping[str, Any]) -> dict[str, str | None]:
    """The names of pad/bos/eos/unk/mask for ``model_type``, from the config files or the defaults."""
    if model_type == "bert":
        return {role: _token_name(settings.get(key)) or _BERT_NAMES[role] for role, key in _BERT_KEYS.items()}
    end = _token_name(settings.get("eos_token")) or _GPT2_END
    return {
        "pad": _token_name(settings.get("pad_token")),
        "bos": _token_name(settings.get("bos_token")) or end,
        "eos": end,
        "unk": _token_name(settings.get("unk_token")) or end,
        "mask": None,
    }


def _read_hf_tokenizer(folder: Path, model_type: str, settings: Mapping[str, Any]) -> Tokenizer:
    """The folder's tokenizer: ``tokenizer.json``, else the model type's older vocabulary files."""
    names = _special_names(model_type, settings)
    if _present(folder / "tokenizer.json"):
        try:
            tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # tokenizers raises its own exception type for unreadable files
            raise HFTokenizerError(f"{folder}: cannot read the tokenizer file tokenizer.json ({exc})") from None
    elif model_type == "bert" and _present(folder / "vocab.txt"):
        tok = _bert_from_vocab_txt(folder / "vocab.txt", settings, {k: v or "" for k, v in names.items()})
    elif model_type == "gpt2" and _present(folder / "vocab.json"):
        tok = _gpt2_from_vocab_json(folder, settings)
    else:
        wanted = "tokenizer.json or vocab.txt" if model_type == "bert" else "tokenizer.json or vocab.json + merges.txt"
        raise HFTokenizerError(f"{folder}: no tokenizer files (looked for {wanted})")
    # as transformers: the special tokens the config files name are found where a person types them (those the
    # vocabulary lacks are not added: the model has no embedding for them)
    present = {t.content for t in tok.get_added_tokens_decoder().values()}
    named = dict.fromkeys([*names.values(), *_extra_special_names(settings)])
    specials = [n for n in named if n and n not in present and tok.token_to_id(n) is not None]
    tok.add_special_tokens([AddedToken(n, special=True, normalized=False) for n in specials])
    return tok


def _resolve_ids(
    tok: Tokenizer, model_type: str, names: Mapping[str, str | None], config: Mapping[str, Any], where: str
) -> dict[str, int | None]:
    """The special ids, looked up by name in ``tok`` (config.json's ``*_token_id`` when a name is absent)."""
    ids: dict[str, int | None] = {}
    for role, name in names.items():
        i = tok.token_to_id(name) if name else None
        fallback = config.get(f"{role}_token_id")
        if i is None and isinstance(fallback, int) and 0 <= fallback < tok.get_vocab_size():
            i = fallback
        ids[role] = i
    if model_type == "gpt2":
        if ids["eos"] is None:
            raise HFTokenizerError(f"{where}: the tokenizer has no end-of-text token {names['eos']}")
        for role in ("bos", "pad", "unk"):  # GPT-2 has no padding or unknown token: the end token serves
            ids[role] = ids["eos"] if ids[role] is None else ids[role]
        ids["mask"] = None
    missing = [str(names[r]) for r, i in ids.items() if i is None and (model_type == "bert" or r != "mask")]
    if missing:
        raise HFTokenizerError(f"{where}: the tokenizer lacks the special token(s) {', '.join(missing)}")
    return ids


class HFJsonTokenizer(_FolderTokenizer):
    """GPT-2's or BERT's tokenizer (a ``tokenizers.Tokenizer``), as ``transformers``' fast tokenizers.

    ``encode`` never adds special tokens: ``encode_ids(t)`` is ``GPT2TokenizerFast(t)["input_ids"]`` and
    ``BertTokenizerFast(t)["input_ids"][1:-1]``. Typed special tokens (``[MASK]``, ``<|endoftext|>``) are
    found as themselves. ``decode`` drops every special token and uses the tokenizer's decoder, as
    ``decode(ids, skip_special_tokens=True)``: BERT's WordPiece gives ``我 爱 你`` with spaces between Chinese
    characters, like ``transformers``; ``clean_up_tokenization_spaces`` is applied when tokenizer_config.json
    asks for it (never to BPE, as ``transformers`` 5).

    Special ids: BERT — pad ``[PAD]``, bos ``[CLS]``, eos ``[SEP]``, unk ``[UNK]``, mask ``[MASK]``; GPT-2 —
    bos = eos = ``<|endoftext|>``, and, as GPT-2 has neither padding nor unknown token, pad = unk = eos too
    (the engine pads batches on the right only, and byte-level BPE never meets an unknown character).
    """

    kind = HF_JSON_KIND

    def __init__(
        self, tokenizer: Tokenizer, model_type: str, ids: Mapping[str, int | None], cleanup: bool = False
    ) -> None:
        self.hf, self.model_type, self.cleanup = tokenizer, model_type, cleanup
        self.hf.no_padding()
        self.hf.no_truncation()
        self.ids = dict(ids)
        pad, bos, eos, unk = (int(self.ids[r] or 0) for r in ("pad", "bos", "eos", "unk"))
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = pad, bos, eos, unk
        self.mask_id = self.ids.get("mask")
        added = {i for i, t in tokenizer.get_added_tokens_decoder().items() if t.special}
        self.special_ids = frozenset({i for i in self.ids.values() if i is not None} | added)
        self.vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
        self.first_regular_id = find_first_regular_id(self.special_ids, self.vocab_size, tokenizer.id_to_token)
        decoder = tokenizer.decoder.__getstate__() if tokenizer.decoder is not None else b""
        self._byte_decoder = _byte_decoder() if b'"ByteLevel"' in bytes(decoder) else None
        model_unk = getattr(tokenizer.model, "unk_token", None)
        self._has_unknowns = model_unk is not None and tokenizer.token_to_id(model_unk) == self.unk_id
        self._is_bpe = type(tokenizer.model).__name__ == "BPE"

    # -- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_folder(cls, folder: str | Path, model_type: str) -> HFJsonTokenizer:
        """The tokenizer of the GPT-2 or BERT model in ``folder``; raises :class:`HFTokenizerError`."""
        if model_type not in ("gpt2", "bert"):
            raise ValueError(f"HFJsonTokenizer reads GPT-2 and BERT folders (got {model_type!r})")
        folder = Path(folder)
        settings = tokenizer_settings(folder)
        tok = _read_hf_tokenizer(folder, model_type, settings)
        config = _read_json(folder / "config.json") or {}
        ids = _resolve_ids(tok, model_type, _special_names(model_type, settings), config, str(folder))
        return cls(tok, model_type, ids, bool(settings.get("clean_up_tokenization_spaces", False)))

    def to_json(self) -> str:
        return json.dumps(
            {
                "kind": self.kind,
                "model_type": self.model_type,
                "ids": self.ids,
                "cleanup": self.cleanup,
                "tokenizer": json.loads(self.hf.to_str()),
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> HFJsonTokenizer:
        tok = Tokenizer.from_str(json.dumps(obj["tokenizer"]))
        return cls(tok, obj["model_type"], obj["ids"], bool(obj.get("cleanup", False)))

    # -- vocabulary -----------------------------------------------------------------------------------------------
    def id_to_token(self, i: int) -> str:
        return self.hf.id_to_token(i) or self.hf.id_to_token(self.unk_id) or ""

    def display_token(self, i: int) -> str:
        """A piece as a person should read it (byte-level pieces turned back into text)."""
        piece = self.id_to_token(i)
        if self._byte_decoder is None or i in self.special_ids:
            return piece
        raw = bytes(self._byte_decoder.get(ch, 0x3F) for ch in piece)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:  # a piece of a multi-byte character
            return "<" + " ".join(f"{b:02x}" for b in raw) + ">"

    # -- encoding ---------------------------------------------------------------------------------------------------
    def encode(self, text: str) -> Encoded:
        enc = self.hf.encode(text, add_special_tokens=False)
        spans = [(int(a), int(b)) for a, b in enc.offsets]
        unknown = [s for i, s in zip(enc.ids, spans) if i == self.unk_id] if self._has_unknowns else []
        return Encoded(text, list(enc.ids), list(enc.tokens), spans, unknown)

    def encode_ids(self, text: str) -> list[int]:
        return list(self.hf.encode(text, add_special_tokens=False).ids)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Ids for many texts at once, a chunk per call (as :meth:`TextTokenizer.encode_batch`)."""
        ids: list[list[int]] = []
        for i in range(0, len(texts), ENCODE_CHUNK):
            ids.extend(list(e.ids) for e in self.hf.encode_batch(texts[i : i + ENCODE_CHUNK], add_special_tokens=False))
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """As the fast tokenizer's ``decode(ids, skip_special_tokens=True)``."""
        text = self.hf.decode([int(i) for i in ids if int(i) not in self.special_ids], skip_special_tokens=True)
        return _clean_up_spaces(text) if self.cleanup and not self._is_bpe else text


# -- any tokenizer ------------------------------------------------------------------------------------------------

AnyTokenizer = TextTokenizer | MarianSpmTokenizer | HFJsonTokenizer


def tokenizer_from_json(data: str) -> AnyTokenizer:
    """Rebuild any of the project's tokenizers from its ``to_json()``."""
    try:
        obj = json.loads(data)
    except json.JSONDecodeError:
        raise ValueError("not a saved tokenizer") from None
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind in TOKENIZER_KINDS:
        return TextTokenizer.from_json(data)
    if kind == MARIAN_KIND:
        return MarianSpmTokenizer.from_dict(obj)
    if kind == HF_JSON_KIND:
        return HFJsonTokenizer.from_dict(obj)
    raise ValueError(f"not a saved tokenizer (kind {kind!r})")


def load_folder_tokenizers(folder: str | Path, model_type: str) -> tuple[AnyTokenizer, AnyTokenizer]:
    """(source, target) tokenizers of the Hugging Face model in ``folder``: Marian's two sides, or GPT-2's /
    BERT's one tokenizer twice (the same object). Files with the same contents as the last folder's give the same
    objects again (see :func:`_fingerprint`)."""
    folder = Path(folder)
    key = _fingerprint(folder, model_type)
    if key is not None and _LAST_READ and _LAST_READ[0] == key:
        return _LAST_READ[1]
    pair: tuple[AnyTokenizer, AnyTokenizer]
    if model_type == "marian":
        read: dict[str, Any] = {}
        pair = (
            MarianSpmTokenizer.from_folder(folder, "source", read),
            MarianSpmTokenizer.from_folder(folder, "target", read),
        )
    elif model_type in ("gpt2", "bert"):
        tok = HFJsonTokenizer.from_folder(folder, model_type)
        pair = tok, tok
    else:
        raise HFTokenizerError(
            f"{folder}: no tokenizer for model type {model_type!r} (known: {', '.join(HF_MODEL_TYPES)})"
        )
    _LAST_READ[:] = [key, pair] if key is not None else []
    return pair


# every file a folder's tokenizers are read from (config.json: GPT-2's and BERT's special ids)
_TOKENIZER_FILES = (
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "target_vocab.json",
    "source.spm",
    "target.spm",
    "tokenizer.json",
    "vocab.txt",
    "merges.txt",
    "config.json",
)
_LAST_READ: list[Any] = []  # [fingerprint, (source, target)] of the folder read last


def _fingerprint(folder: Path, model_type: str) -> tuple[Any, ...] | None:
    """The contents of ``folder``'s tokenizer files, hashed; None when one cannot be read (then the reading names
    it). Each checkpoint-N/ of a Trainer's run holds the same files: its tokenizers are built once, not at each
    checkpoint (for a 65,001-piece vocabulary that is ~0.3 s of Python, and the tables the window is sent of them,
    built once per tokenizer, are the same objects again)."""
    key: list[Any] = [model_type]
    for name in _TOKENIZER_FILES:
        try:
            key.append((name, hashlib.sha256(read_regular(folder / name)).digest() if _present(folder / name) else b""))
        except (OSError, HFTokenizerError):
            return None
    return tuple(key)
