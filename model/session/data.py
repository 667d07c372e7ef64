"""A session's data: the corpus, its splits as token ids, and the words a person may type."""

from __future__ import annotations

import random
from typing import Any, Literal

from model.data import Corpus, DataError, EncodedPairs, encode_pairs, load_corpus
from model.data.stream import ChunkEncoder, line_parser
from model.data.text_batching import EncodedTexts, encode_texts
from model.data.tokenization import SPECIAL_TOKENS, Tokenizing
from model.io import gentle
from model.session.state import SessionState
from model.training.device import without_collector_pauses

SplitName = Literal["train", "valid", "test"]


def whole_words(tok: Tokenizing) -> tuple[str, ...]:
    """The pieces of ``tok`` that a person types as words, sorted without regard to case: for ``word`` and
    ``wordpiece`` every piece with a letter or digit except the special ones and word continuations (``##…``);
    for ``bpe`` and ``byte_bpe`` the pieces that begin a word (``▁cat``, `` cat``), without that mark; for
    ``char`` none (completing one character completes nothing)."""
    if tok.kind == "char":
        return ()
    # a model's own tokenizer: Marian's SentencePiece marks word starts with ▁, GPT-2's bytes with a space;
    # BERT's WordPiece marks continuations with ## and has [unusedN] rows
    mark = {"bpe": "▁", "byte_bpe": " ", "marian_spm": "▁"}.get(tok.kind)
    if tok.kind == "hf_json" and getattr(tok, "model_type", "") == "gpt2":
        mark = " "
    words = set()
    specials = tok.special_ids
    for i in range(len(SPECIAL_TOKENS), tok.vocab_size):
        if i in specials:
            continue
        piece = tok.display_token(i)
        if piece.startswith("[unused"):
            continue
        if mark is not None:
            if not piece.startswith(mark):
                continue
            piece = piece[len(mark) :]
        elif piece.startswith("##"):
            continue
        if any(ch.isalnum() for ch in piece):
            words.add(piece)
    return tuple(gentle.sorted_in_slices(words, key=lambda w: (w.casefold(), w)))  # (the window draws meanwhile)


class SessionData(SessionState):
    """The data a session trains and evaluates on, read on first use and kept as token ids."""

    @property
    def corpus(self) -> Corpus:
        """The sentence pairs (generated or read on first use; raises DataError if unavailable)."""
        if self._corpus is None:
            self._corpus = load_corpus(self.data_spec, self.data_cache, self.data_progress)
        return self._corpus

    def chunk_encoder(self) -> ChunkEncoder:
        """A streamed file's chunks as token ids (see :mod:`model.data.stream`)."""
        scan = self.corpus.stream
        if scan is None:
            raise DataError(f"{self.data_spec.name} is not read as a stream")
        if self._chunks is None or self._chunks.scan is not scan:
            parse = line_parser(scan.fmt, self.data_spec.src_key, self.data_spec.tgt_key, self.data_spec.swap)
            cfg = self.model_cfg
            reserve = cfg.family.text_specials if cfg.single_stream else None  # as encoded()
            self._chunks = ChunkEncoder(
                scan, parse, self.src_tok, self.tgt_tok, cfg.max_len, self.specials, self.data_cache, reserve
            )
        return self._chunks

    def encoded(self, split: str) -> EncodedPairs | EncodedTexts:
        """A split as ids: sentence pairs (encoder–decoder), or texts (single-stream families)."""
        if split not in self._encoded:
            # tens of thousands of id lists that live as long as the session: made without the collector's
            # full walks (each held the interpreter, the window's thread included, for ~0.1 s) and kept out
            # of them afterwards
            cfg = self.model_cfg
            with without_collector_pauses():
                if cfg.single_stream:  # LM: BOS + text (or text + EOS); MLM: BOS text EOS
                    self._encoded[split] = encode_texts(
                        self.corpus.texts(split), self.tgt_tok, cfg.max_len, cfg.family.text_specials, self.specials
                    )
                else:
                    self._encoded[split] = encode_pairs(
                        self.corpus.split(split), self.src_tok, self.tgt_tok, cfg.max_len, self.specials
                    )
        return self._encoded[split]

    @property
    def text_kind(self) -> str:
        """What a single-stream model learns: "lm" (decoder-only) or "mlm" (encoder-only)."""
        return self.model_cfg.family.objective

    def text_options(self) -> dict[str, Any]:
        """The batching options of an encoder-only model: what may be masked, and next-sentence pairs."""
        if self.model_cfg.family.objective != "mlm":
            return {}
        tok = self.tgt_tok
        return dict(
            vocab_size=tok.vocab_size,
            mask_id=tok.mask_id,
            first_regular_id=tok.first_regular_id,
            nsp=self.train_cfg.nsp,
            max_len=self.model_cfg.max_len,
        )

    def sample_source(self, split: SplitName, rng: random.Random) -> tuple[str, str, SplitName]:
        """A random pair of ``split``, or of the next split that has sentences (test → valid → train): its
        source, its reference and the split it came from. Raises DataError if the corpus cannot be read."""
        order: tuple[SplitName, ...] = ("test", "valid", "train")
        for name in order[order.index(split) :]:
            pairs = self.corpus.split(name)
            if pairs:
                source, target = rng.choice(pairs)
                return source, target, name
        raise DataError(f"{self.data_spec.name} has no sentences")

    def source_words(self) -> tuple[str, ...]:
        """The source vocabulary's whole words, for completing what a person types (see :func:`whole_words`)."""
        return whole_words(self.src_tok)
