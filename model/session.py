"""One facade over data, tokenizers, model, training and decoding.

The explorer's engine thread and the command-line tools both drive a
:class:`Session`; nothing else reaches into the model. Results leave it as
plain Python values and numpy arrays.
"""

from __future__ import annotations

import bisect
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from model.core.attention import NOTES_EXAMPLE, MultiHeadAttention, attention_steps
from model.core.config import SINGLE_STREAM, ModelConfig
from model.core.masks import decoder_self_mask, padding_mask
from model.core.positional import LearnedPositionalEncoding
from model.core.transformer import AttentionMaps, Transformer
from model.data import BatchStream, Corpus, DataError, DataSpec, EncodedPairs, Specials, encode_pairs, load_corpus
from model.data.corpus import is_monolingual
from model.data.stream import ChunkEncoder, StreamedBatches, line_parser
from model.data.stream import Progress as StreamProgress
from model.data.text_batching import EncodedTexts, TextStream, encode_texts
from model.data.tokenization import (
    MASK,
    SPECIAL_TOKENS,
    Encoded,
    TextTokenizer,
    TokenizerSpec,
    Tokenizing,
    normalize_text,
)
from model.decoding.search import (
    BeamStepper,
    SampleStepper,
    Sampling,
    beam_search,
    fill_mask,
    generate,
    greedy_decode,
    output_budget,
)
from model.families.objectives import evaluate_text
from model.hf.tokenizers import AnyTokenizer, tokenizer_from_json
from model.io.checkpoint import (
    DAMAGED,
    CheckpointError,
    check_model_size,
    check_weights,
    load_checkpoint,
    save_checkpoint,
)
from model.io.snapshots import (  # torch-free; still importable from here
    TRAIN_METRICS,
    AttentionExplanation,
    FillMaskView,
    History,
    Inspection,
    MaskPrediction,
    RouterView,
    Translation,
)
from model.training.device import resolve_device, without_collector_pauses
from model.training.distributed import Sharded
from model.training.trainer import AnyStream, TrainConfig, Trainer, TrainingDiverged, evaluate, make_optimizer

GENERATE_TOKENS = 50  # how far a decoder-only model continues a prompt unless told otherwise
TRAIN_KEYS = TRAIN_METRICS  # the per-step history's columns (see model.io.snapshots.StepColumns)
NEWER_METRICS = ("aux_loss",)  # columns a checkpoint written before them lacks (read as zeros)
VERSION = "0.1.0"


# exp(x) overflows float64 beyond ~709; a row whose largest scaled score passes this is shifted by it
# (softmax does not change when a constant is subtracted from a row).
EXP_LIMIT = 700.0


def explain(
    q,
    k,
    v,
    mask,
    title: str,
    query_tokens: list[str],
    key_tokens: list[str],
    kind: str = "example",
    layer: int = -1,
    head: int = -1,
    bias=None,
    positional: str = "",
) -> AttentionExplanation:
    """Spell out attention for given Q, K, V (tensors or nested lists) with the engine's own code; ``bias``
    (T5's relative bias, ``[Lq, Lk]``) is part of the scaled scores, as in the model; ``positional``: what the
    model's positions did inside this attention (:attr:`AttentionExplanation.positional`)."""
    q, k, v = (torch.as_tensor(x, dtype=torch.float64) for x in (q, k, v))
    mask = None if mask is None else torch.as_tensor(mask, dtype=torch.bool)
    bias = None if bias is None else torch.as_tensor(bias, dtype=torch.float64)
    steps = attention_steps(q, k, v, mask, bias)
    n = lambda t: t.detach().cpu().numpy()  # noqa: E731
    top = steps.masked.amax(dim=-1, keepdim=True)  # [Lq, 1]; −inf for a fully masked row
    shift = torch.where(top > EXP_LIMIT, top, torch.zeros_like(top))
    exp = (steps.masked - shift).exp()  # exp(−inf) = 0 where masked
    return AttentionExplanation(
        title,
        query_tokens,
        key_tokens,
        n(steps.query),
        n(steps.keys),
        n(steps.values),
        n(steps.scores),
        n(steps.scaled),
        n(steps.mask),
        n(steps.weights),
        n(steps.output),
        n(exp),
        n(shift[..., 0]),
        kind,
        layer,
        head,
        positional,
    )


def notes_example() -> AttentionExplanation:
    """The worked example Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2 (also in study notes)."""
    ex = NOTES_EXAMPLE
    labels = ["x1", "x2", "x3"]
    title = "worked example: Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2"
    return explain(ex["Q"], ex["K"], ex["V"], None, title, labels, labels)


def attention_masks(src: torch.Tensor, tgt_in: torch.Tensor, pad_id: int) -> dict[str, np.ndarray]:
    """The masks the model applies to one pair ``src [1, S]`` → ``tgt_in [1, T]``, per kind of attention, as
    numpy: "encoder" ``[S, S]``, "decoder_self" ``[T, T]``, "cross" ``[T, S]``; True = may attend."""
    S, T = src.shape[1], tgt_in.shape[1]
    keys = padding_mask(src, pad_id)[0, 0]  # [1, S]
    return {
        "encoder": keys.expand(S, S).cpu().numpy().copy(),
        "decoder_self": decoder_self_mask(tgt_in, pad_id)[0, 0].cpu().numpy().copy(),
        "cross": keys.expand(T, S).cpu().numpy().copy(),
    }


SplitName = Literal["train", "valid", "test"]


def check_family(arch: str, data: DataSpec, train: TrainConfig) -> None:
    """Raise a DataError a person can act on when the data does not suit the family (before anything loads)."""
    text = is_monolingual(data)
    if arch in SINGLE_STREAM and not text:
        family = "decoder-only" if arch == "decoder_only" else "encoder-only"
        raise DataError(
            f"A {family} model learns from plain text, and {data.name} is pairs of sentences to translate: "
            f"choose a text task (text-grammar-en, text-grammar-zh, text-hsk-en, text-hsk-zh) or a plain-text "
            f"file (one sentence per line), or the encoder-decoder family"
        )
    if arch not in SINGLE_STREAM and text:
        raise DataError(
            f"{data.name} is text in one language: an encoder-decoder model needs sentence pairs to translate. "
            f"Choose the decoder-only or encoder-only family, or a translation task"
        )
    if train.nsp and arch != "encoder_only":
        raise DataError(
            "next-sentence prediction is learnt by encoder-only (BERT) models; turn it off or choose that family"
        )


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
    return tuple(sorted(words, key=lambda w: (w.casefold(), w)))


@dataclass(frozen=True)
class DecodeSession:
    """A sentence being decoded step by step."""

    source: Encoded
    source_ids: list[int]
    source_tokens: list[str]  # display pieces of source_ids
    stepper: BeamStepper
    reference: str | None


class Session:
    """A model with its tokenizers, data and training state."""

    def __init__(
        self,
        *,
        model_cfg: ModelConfig,
        train_cfg: TrainConfig,
        data_spec: DataSpec,
        tokenizer_spec: TokenizerSpec,
        src_tok: AnyTokenizer,
        tgt_tok: AnyTokenizer,
        device: torch.device,
        preset: str = "custom",
        corpus: Corpus | None = None,
    ) -> None:
        self.model_cfg, self.train_cfg, self.data_spec = model_cfg, train_cfg, data_spec
        self.tokenizer_spec, self.src_tok, self.tgt_tok = tokenizer_spec, src_tok, tgt_tok
        self.device, self.preset = device, preset
        torch.manual_seed(train_cfg.seed)
        self.model = Transformer(model_cfg).to(device).eval()  # exact outputs; each training step switches to train
        self.history = History()
        self.step = 0
        self.elapsed = 0.0  # seconds of training before this process (from a checkpoint)
        self.dirty = False  # trained since the last save
        self.notes: dict[str, Any] = {}  # free-form provenance: command, data, purpose
        self._corpus = corpus
        self._encoded: dict[str, EncodedPairs | EncodedTexts] = {}
        self.data_cache: Path | None = None  # where a streamed file's scan and encoded chunks are kept
        self.data_progress: StreamProgress | None = None  # hears how reading a streamed file goes
        self.rank, self.world = 0, 1  # this process's place among the ranks of a distributed run
        self._chunks: ChunkEncoder | None = None
        self._trainer: Trainer | None = None
        self._pending: dict[str, Any] | None = None  # optimizer/stream state from a checkpoint
        self._clock: float | None = None

    # -- creation ----------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        data: DataSpec,
        preset: str = "tiny",
        train: TrainConfig | None = None,
        tokenizer: TokenizerSpec | None = None,
        shared_tokenizer: bool = False,
        device: str = "auto",
        data_cache: Path | None = None,
        progress: StreamProgress | None = None,
        **model_overrides: Any,
    ) -> Session:
        """Load the data, train tokenizers on its training split, and build a fresh model.

        ``model_overrides`` are :class:`ModelConfig` fields (``d_model=…``, ``norm="pre"``…). A streamed file
        (see :mod:`model.data.stream`) trains the tokenizers on its sample; ``data_cache`` keeps its scan and
        encoded chunks, ``progress`` hears how reading it goes.
        """
        train = train or TrainConfig()
        tokenizer = tokenizer or TokenizerSpec()
        arch = model_overrides.get("arch", "encoder_decoder")
        check_family(arch, data, train)
        corpus = load_corpus(data, data_cache, progress)
        session = cls._with_tokenizers(
            data, preset, train, tokenizer, shared_tokenizer, device, corpus, progress, model_overrides
        )
        session.data_cache, session.data_progress = data_cache, progress
        return session

    @classmethod
    def _with_tokenizers(
        cls,
        data: DataSpec,
        preset: str,
        train: TrainConfig,
        tokenizer: TokenizerSpec,
        shared_tokenizer: bool,
        device: str,
        corpus: Corpus,
        progress: StreamProgress | None,
        model_overrides: dict[str, Any],
    ) -> Session:
        arch = model_overrides.get("arch", "encoder_decoder")
        if progress is not None and corpus.stream is not None:
            progress("training the tokenizers", None, f"on a sample of {len(corpus.train):,} pairs")
        if arch in SINGLE_STREAM:  # one stream of text, one tokenizer
            src_tok = tgt_tok = TextTokenizer.train(corpus.texts("train"), tokenizer, masking=arch == "encoder_only")
            if train.nsp:
                model_overrides.setdefault("n_classes", 2)
            cfg = ModelConfig.preset(
                preset, src_vocab_size=0, tgt_vocab_size=0, vocab_size=src_tok.vocab_size, **model_overrides
            )
            return cls(
                model_cfg=cfg,
                train_cfg=train,
                data_spec=data,
                tokenizer_spec=tokenizer,
                src_tok=src_tok,
                tgt_tok=tgt_tok,
                device=resolve_device(device),
                preset=preset,
                corpus=corpus,
            )
        src_texts = [s for s, _ in corpus.train]
        tgt_texts = [t for _, t in corpus.train]
        if shared_tokenizer:
            src_tok = tgt_tok = TextTokenizer.train(src_texts + tgt_texts, tokenizer)
        else:
            src_tok, tgt_tok = TextTokenizer.train(src_texts, tokenizer), TextTokenizer.train(tgt_texts, tokenizer)
        model_overrides.setdefault("shared_vocab", shared_tokenizer)
        cfg = ModelConfig.preset(
            preset, src_vocab_size=src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size, **model_overrides
        )
        return cls(
            model_cfg=cfg,
            train_cfg=train,
            data_spec=data,
            tokenizer_spec=tokenizer,
            src_tok=src_tok,
            tgt_tok=tgt_tok,
            device=resolve_device(device),
            preset=preset,
            corpus=corpus,
        )

    @property
    def shared_tokenizer(self) -> bool:
        return self.src_tok is self.tgt_tok

    # -- data --------------------------------------------------------------------------
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
            reserve = (1 if cfg.arch == "decoder_only" else 2) if cfg.single_stream else None  # as encoded()
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
                    reserve = 1 if cfg.arch == "decoder_only" else 2
                    self._encoded[split] = encode_texts(
                        self.corpus.texts(split), self.tgt_tok, cfg.max_len, reserve, self.specials
                    )
                else:
                    self._encoded[split] = encode_pairs(
                        self.corpus.split(split), self.src_tok, self.tgt_tok, cfg.max_len, self.specials
                    )
        return self._encoded[split]

    @property
    def specials(self) -> Specials:
        """The model's padding, start and end token ids, with which its batches are laid out."""
        cfg = self.model_cfg
        return Specials(cfg.pad_id, cfg.bos_id, cfg.eos_id)

    @property
    def text_kind(self) -> str:
        """What a single-stream model learns: "lm" (decoder-only) or "mlm" (encoder-only)."""
        return "lm" if self.model_cfg.arch == "decoder_only" else "mlm"

    def text_options(self) -> dict[str, Any]:
        """The batching options of an encoder-only model: what may be masked, and next-sentence pairs."""
        if self.model_cfg.arch != "encoder_only":
            return {}
        tok = self.tgt_tok
        return dict(
            vocab_size=tok.vocab_size,
            mask_id=tok.mask_id,
            first_regular_id=tok.first_regular_id,
            nsp=self.train_cfg.nsp,
            max_len=self.model_cfg.max_len,
        )

    def _make_stream(self, epoch: int = 0, position: int = 0, chunk: int = 0) -> AnyStream:
        cfg = self.train_cfg
        if self.corpus.stream is not None:
            texts = {"kind": self.text_kind, **self.text_options()} if self.model_cfg.single_stream else None
            return StreamedBatches(
                self.chunk_encoder(), cfg.batch_size, cfg.seed, epoch, chunk, position, self.rank, self.world, texts
            )
        data = self.encoded("train")
        stream: BatchStream | TextStream
        if isinstance(data, EncodedTexts):
            stream = TextStream(
                data, cfg.batch_size, cfg.seed, self.text_kind, epoch=epoch, position=position, **self.text_options()
            )
        else:
            stream = BatchStream(data, cfg.batch_size, cfg.seed, epoch=epoch, position=position)
        if self.world > 1:  # every rank draws the same batches and keeps its share
            return Sharded(stream, self.rank, self.world)
        return stream

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

    # -- training ----------------------------------------------------------------------
    @property
    def trainer(self) -> Trainer:
        if self._trainer is None:
            pending = self._pending or {}
            stream_state = pending.get("stream", {"epoch": 0, "position": 0})
            stream = self._make_stream(**stream_state)
            self._trainer = Trainer(self.model, self.train_cfg, stream, step=self.step, remake_stream=self._make_stream)
            if pending.get("optimizer") is not None:
                self._trainer.optimizer.load_state_dict(pending["optimizer"])
                self._trainer.apply_settings()  # the saved state carries the old betas/eps/weight decay
            self._pending = None
        return self._trainer

    def lr_schedule(self, steps: int) -> np.ndarray:
        """The learning rate for updates 1..steps, for drawing the schedule ahead of time."""
        from model.training.trainer import learning_rate

        return np.array([learning_rate(self.train_cfg, s, self.model_cfg.d_model) for s in range(1, steps + 1)])

    def train_steps(self, n: int = 1) -> list[dict[str, Any]]:
        """Do ``n`` updates; evaluate on the valid split every ``eval_every`` steps.

        Returns the records produced: one per update (``step``, ``time``, ``loss``,
        ``lr``, ``token_accuracy``, ``grad_norm``, ``tokens_per_s``) and one per
        evaluation (``split``, ``loss``, ``exact_match``, ``bleu``, …).
        Raises :class:`~model.training.trainer.TrainingDiverged` after going back to the last snapshot taken while
        training was in range (weights, optimizer state, step and the metrics up to it).
        """
        trainer = self.trainer
        if self._clock is None:
            self._clock = time.perf_counter() - self.elapsed
        records: list[dict[str, Any]] = []
        for _ in range(n):
            try:
                record = trainer.train_step()  # in train mode (dropout on)
            except TrainingDiverged:
                self._rewind(trainer.step)
                raise
            finally:
                self.model.eval()  # between steps the model computes exactly, as after Session.load
            self.step = trainer.step
            self.dirty = True
            record["time"] = time.perf_counter() - self._clock
            self.history.add_step(record)
            records.append(record)
            every = self.train_cfg.eval_every
            if every and self.step % every == 0 and self.rank == 0:  # (other ranks' results would go nowhere)
                records.append(self.evaluate("valid", self.train_cfg.eval_sentences))
        self.elapsed = time.perf_counter() - self._clock
        return records

    def _rewind(self, step: int) -> None:
        """The trainer went back to ``step`` (after a divergence): forget the metrics of the steps after it."""
        self.step = step
        self.dirty = True
        keep = bisect.bisect_right(self.history.train["step"], step)
        for column in self.history.train.values():
            del column[keep:]
        self.history.evals = [e for e in self.history.evals if e["step"] <= step]

    def pause_clock(self) -> None:
        """Stop counting wall time (while paused); the next train_steps starts it again."""
        if self._clock is not None:
            self.elapsed = time.perf_counter() - self._clock
            self._clock = None

    def evaluate(self, split: str = "valid", max_sentences: int | None = None) -> dict[str, Any]:
        """Loss, exact match and BLEU on a split (decoder-only: loss and perplexity; encoder-only: loss and
        masked-token accuracy); recorded in the history."""
        data = self.encoded(split)
        result: dict[str, Any]
        if isinstance(data, EncodedTexts):
            result = evaluate_text(
                self.model, data, self.text_kind, self.train_cfg.label_smoothing, **self.text_options()
            )
        else:
            refs = [t for _, t in self.corpus.split(split)]
            result = evaluate(
                self.model,
                data,
                refs,
                self.tgt_tok,
                self.corpus.tgt_lang,
                self.train_cfg.label_smoothing,
                max_sentences,
            )
        now = time.perf_counter() - self._clock if self._clock is not None else self.elapsed
        record = {"step": self.step, "time": now, "split": split, **result}
        self.history.evals.append(record)
        return record

    # -- decoding ----------------------------------------------------------------------
    def _source(self, text: str) -> tuple[Encoded, list[int], bool]:
        """What a model reads of ``text``: the encoder (tokens + EOS), or a decoder-only model's prompt (the
        tokens; BOS is read before them), cut to fit."""
        arch = self.model_cfg.arch
        if not normalize_text(text):
            raise ValueError(
                "Type a prompt to continue." if arch == "decoder_only" else "Type a sentence to translate."
            )
        if arch == "decoder_only":
            encoded = self.src_tok.encode(text)
            room = self.model_cfg.max_len - 2  # BOS before, at least one generated token after
            return encoded, encoded.ids[:room], len(encoded.ids) > room
        encoded = self.src_tok.encode(text)
        # what the encoder reads (as in training)
        ids = encoded.ids[: self.model_cfg.max_len - 1] + [self.model_cfg.eos_id]
        return encoded, ids, len(encoded.ids) > self.model_cfg.max_len - 1

    def default_max_len(self, n_source: int) -> int:
        if self.model_cfg.arch == "decoder_only":  # a continuation, not a translation of the prompt
            return min(GENERATE_TOKENS, self.model_cfg.max_len - n_source - 1)
        return output_budget(n_source, self.model_cfg.max_len)

    def reference_for(self, text: str) -> str | None:
        """The corpus translation of ``text``, looked up only once the corpus is in memory: a translation
        never waits for its data to be read (a second for the teaching grammar)."""
        if self._corpus is None:
            return None
        try:
            return self._corpus.reference_for(text)
        except Exception:  # the data may be gone (a moved file); a reference is optional
            return None

    def translate(
        self,
        text: str,
        beam_size: int = 1,
        max_len: int | None = None,
        length_penalty: float = 0.6,
        with_reference: bool = True,
    ) -> Translation:
        """Translate one sentence; ``with_reference`` also looks it up in the corpus, if that is in memory."""
        encoded, ids, truncated = self._source(text)
        max_len = max_len or self.default_max_len(len(ids))
        src = torch.tensor(ids, device=self.device)
        if beam_size <= 1:
            tokens = greedy_decode(self.model, src, max_len)[0]
            hyps = [(self.tgt_tok.decode(tokens), float("nan"), float("nan"))]
        else:
            found = beam_search(self.model, src, beam_size, max_len, length_penalty)
            tokens = found[0].tokens
            hyps = [(self.tgt_tok.decode(h.tokens), h.score, h.log_prob) for h in found]
        reference = self.reference_for(text) if with_reference else None
        return Translation(encoded, ids, hyps[0][0], tokens, hyps, truncated, reference)

    def stepper(
        self,
        text: str,
        beam_size: int = 1,
        max_len: int | None = None,
        length_penalty: float = 0.6,
        top_k: int = 10,
        sampling: Sampling | None = None,
    ) -> DecodeSession:
        """Decoding of ``text`` one step at a time (greedy when beam_size is 1; drawn at random with
        ``sampling``). For a decoder-only model ``text`` is the prompt it continues."""
        encoded, ids, _ = self._source(text)
        max_len = max_len or self.default_max_len(len(ids))
        src = torch.tensor(ids, device=self.device)
        stepper: BeamStepper
        if sampling is not None:
            stepper = SampleStepper(self.model, src, max_len, sampling, top_k)
        else:
            stepper = BeamStepper(self.model, src, beam_size, max_len, length_penalty if beam_size > 1 else 0.0, top_k)
        tokens = [self.src_tok.display_token(i) for i in ids]
        return DecodeSession(encoded, ids, tokens, stepper, self.reference_for(text))

    @torch.inference_mode()
    def inspect(self, src_text: str, tgt_text: str | None = None, tgt_ids: list[int] | None = None) -> Inspection:
        """All attention maps for ``src_text`` → ``tgt_text`` (or target ids), teacher-forced;
        with neither, for the model's own greedy translation. A decoder-only model: the prompt ``src_text``
        and its continuation (given, or the model's own greedy one); an encoder-only model: the text."""
        if self.model_cfg.arch == "decoder_only":
            return self._inspect_generation(src_text, tgt_text, tgt_ids)
        if self.model_cfg.arch == "encoder_only":
            return self._inspect_ids(self._masked_input(src_text, ())[0], src_text)
        _, ids, _ = self._source(src_text)
        src = torch.tensor([ids], device=self.device)
        target_given = tgt_ids is not None
        if tgt_ids is None:
            tgt_ids = (
                greedy_decode(self.model, src, self.default_max_len(len(ids)))[0]
                if tgt_text is None
                else self.tgt_tok.encode_ids(tgt_text)
            )
        # the decoder reads BOS + y, so y may use all positions but one
        cfg = self.model_cfg
        y = [t for t in tgt_ids if t != cfg.eos_id][: cfg.max_len - 1]
        tgt_in = torch.tensor([[cfg.bos_id, *y]], device=self.device)
        out = [*y, cfg.eos_id]
        self.model.eval()
        logits, maps = self.model(src, tgt_in, return_attention=True)
        logits = logits[0].float()
        logits[:, cfg.never_emitted] = float("-inf")  # as in decoding: PAD and BOS are never emitted
        probs = logits.softmax(-1)[torch.arange(len(out)), torch.tensor(out, device=self.device)]

        def stack(ws: list[torch.Tensor]) -> np.ndarray:
            return torch.stack([w[0] for w in ws]).float().cpu().numpy()

        show = self.tgt_tok.display_token
        return Inspection(
            src_tokens=[self.src_tok.display_token(i) for i in ids],
            tgt_tokens=[show(i) for i in [cfg.bos_id, *y]],
            out_tokens=[show(i) for i in out],
            encoder=stack(maps.encoder),
            decoder_self=stack(maps.decoder_self),
            cross=stack(maps.cross),
            target_probs=probs.cpu().numpy(),
            teacher_forced=tgt_text is not None or target_given,
            step=self.step,
            source=src_text,
            target_ids=tuple(y),
            masks=attention_masks(src, tgt_in, cfg.pad_id),
            routing=self._routing(
                maps, [self.src_tok.display_token(i) for i in ids], [show(i) for i in [cfg.bos_id, *y]]
            ),
        )

    def _routing(self, maps: AttentionMaps, enc_tokens: list[str], dec_tokens: list[str]) -> tuple[RouterView, ...]:
        """The routing of one input (batch row 0) per MoE layer, as numpy."""
        n = lambda t: t[0].float().cpu().numpy()  # noqa: E731
        views = [
            RouterView("encoder", i, enc_tokens, n(r.probs), n(r.chosen), n(r.weights))
            for i, r in enumerate(maps.encoder_routing)
        ]
        views += [
            RouterView("decoder", i, dec_tokens, n(r.probs), n(r.chosen), n(r.weights))
            for i, r in enumerate(maps.decoder_routing)
        ]
        return tuple(views)

    def _inspect_generation(self, prompt: str, tgt_text: str | None, tgt_ids: list[int] | None) -> Inspection:
        """A decoder-only model over BOS + prompt + continuation: its causal self-attention, and at each
        position the probability of the token that follows."""
        cfg = self.model_cfg
        _, ids, _ = self._source(prompt)
        given = tgt_ids is not None or tgt_text is not None
        if tgt_ids is None:
            tgt_ids = (
                self.tgt_tok.encode_ids(tgt_text)
                if tgt_text is not None
                else generate(self.model, ids, self.default_max_len(len(ids)))
            )
        y = [t for t in tgt_ids if t != cfg.eos_id][: cfg.max_len - 1 - len(ids)]
        seq = [cfg.bos_id, *ids, *y]
        out = [*ids, *y, cfg.eos_id]
        x = torch.tensor([seq], device=self.device)
        self.model.eval()
        logits, maps = self.model(x, return_attention=True)
        logits = logits[0].float()
        logits[:, cfg.never_emitted] = float("-inf")
        probs = logits.softmax(-1)[torch.arange(len(out)), torch.tensor(out, device=self.device)]
        show = self.tgt_tok.display_token
        tokens = [show(i) for i in seq]
        L, H, T = cfg.n_layers, cfg.n_heads, len(seq)
        return Inspection(
            src_tokens=[],
            tgt_tokens=tokens,
            out_tokens=[show(i) for i in out],
            encoder=np.zeros((0, H, 0, 0), np.float32),
            decoder_self=torch.stack([w[0] for w in maps.decoder_self]).float().cpu().numpy(),
            cross=np.zeros((L, H, T, 0), np.float32),
            target_probs=probs.cpu().numpy(),
            teacher_forced=given,
            step=self.step,
            source=prompt,
            target_ids=tuple(y),
            masks={"decoder_self": decoder_self_mask(x, cfg.pad_id)[0, 0].cpu().numpy().copy()},
            routing=self._routing(maps, [], tokens),
            arch="decoder_only",
        )

    def _masked_input(self, text: str, mask_positions: tuple[int, ...]) -> tuple[list[int], list[str | None]]:
        """An encoder-only model's input for ``text``: BOS, the pieces (those at ``mask_positions`` — indexes
        into the input — replaced by <mask>), EOS; and the pieces that were replaced."""
        if not normalize_text(text):
            raise ValueError("Type a sentence; write <mask> where the model should fill a word in.")
        cfg = self.model_cfg
        mask_id = self.src_tok.mask_id
        if mask_id is not None and self.src_tok.id_to_token(mask_id) != MASK:  # BERT's [MASK]: <mask> works too
            text = text.replace(MASK, f" {self.src_tok.id_to_token(mask_id)} ")
        ids = [cfg.bos_id, *self.src_tok.encode_ids(text)[: cfg.max_len - 2], cfg.eos_id]
        originals: list[str | None] = [None] * len(ids)
        for p in mask_positions:
            if 0 < p < len(ids) - 1 and mask_id is not None and ids[p] != mask_id:
                originals[p] = self.src_tok.display_token(ids[p])
                ids[p] = mask_id
        return ids, originals

    @torch.inference_mode()
    def _inspect_ids(self, ids: list[int], text: str) -> Inspection:
        """An encoder-only model over ``ids``: its bidirectional self-attention (and routing)."""
        cfg = self.model_cfg
        x = torch.tensor([ids], device=self.device)
        self.model.eval()
        _, maps = self.model(x, return_attention=True)
        tokens = [self.src_tok.display_token(i) for i in ids]
        H, S = cfg.n_heads, len(ids)
        return Inspection(
            src_tokens=tokens,
            tgt_tokens=[],
            out_tokens=[],
            encoder=torch.stack([w[0] for w in maps.encoder]).float().cpu().numpy(),
            decoder_self=np.zeros((0, H, 0, 0), np.float32),
            cross=np.zeros((0, H, 0, S), np.float32),
            target_probs=np.zeros(0, np.float32),
            teacher_forced=True,
            step=self.step,
            source=text,
            masks={"encoder": padding_mask(x, cfg.pad_id)[0, 0].expand(S, S).cpu().numpy().copy()},
            routing=self._routing(maps, tokens, []),
            arch="encoder_only",
        )

    @torch.inference_mode()
    def fill_mask(self, text: str, mask_positions: tuple[int, ...] = (), top_k: int = 5) -> FillMaskView:
        """An encoder-only model's predictions for each <mask> of ``text`` (typed as ``<mask>``, or the input
        positions ``mask_positions`` masked: 1 is the first piece after BOS)."""
        if self.model_cfg.arch != "encoder_only":
            raise ValueError("Filling masks needs an encoder-only (BERT) model; this one is " + self.model_cfg.arch)
        mask_id = self.src_tok.mask_id
        if mask_id is None:
            raise ValueError("this model's tokenizer has no <mask> token, so it cannot fill masks")
        ids, originals = self._masked_input(text, mask_positions)
        shown = self._with_masks_written(text, [p for p, o in enumerate(originals) if o is not None])
        if mask_id not in ids:
            raise ValueError("Write <mask> where the model should fill a word in, or click a token to mask it.")
        show = self.src_tok.display_token
        predictions = [
            MaskPrediction(f.position, [show(t) for t in f.tokens], f.probs, originals[f.position])
            for f in fill_mask(self.model, ids, mask_id, top_k)
        ]
        tokens = [show(i) for i in ids]
        return FillMaskView(text, tokens, predictions, self._inspect_ids(ids, shown), self.step)

    def _with_masks_written(self, text: str, positions: list[int]) -> str:
        """``text`` (normalised) with the pieces at input ``positions`` (1 = the first after BOS) written as
        <mask>: the text the inspection names, so that asking about it again (the Q·K explainer) reads the
        same masked input."""
        encoded = self.src_tok.encode(text)
        out = encoded.text
        for p in sorted(positions, reverse=True):  # right to left: earlier spans stay where they are
            a, b = encoded.spans[p - 1]
            out = out[:a] + MASK + out[b:]
        return out

    def attention_masks(self, src_ids: list[int], tgt_in: list[int]) -> dict[str, np.ndarray]:
        """Where each attention of this model may look for one pair (True = may attend); ``tgt_in`` = BOS + y."""
        return attention_masks(torch.tensor([src_ids]), torch.tensor([tgt_in]), self.model_cfg.pad_id)

    @torch.inference_mode()
    def explain_attention(
        self, src_text: str, tgt_ids: list[int] | None, kind: str, layer: int, head: int
    ) -> AttentionExplanation:
        """One head of one attention block for ``src_text`` → ``tgt_ids`` (teacher-forced), spelled out.

        ``kind`` is "encoder", "decoder_self" or "cross". The block's inputs are caught
        during a normal forward pass; its own projections then give q, k and v.
        """
        cfg = self.model_cfg
        layers = self.model.encoder_layers if kind == "encoder" else self.model.decoder_layers
        if kind not in ("encoder", "decoder_self", "cross") or (kind == "cross" and cfg.single_stream):
            raise ValueError(f"no attention of kind {kind!r} in a {cfg.arch} model")
        if not (0 <= layer < len(layers) and 0 <= head < cfg.n_heads):
            raise ValueError(f"no layer {layer} / head {head} in this model")
        block = layers[layer].cross_attn if kind == "cross" else layers[layer].self_attn
        assert isinstance(block, MultiHeadAttention)  # nn.ModuleList items are typed as modules
        inputs, src_tokens, tgt_tokens = self._explain_inputs(src_text, tgt_ids)
        caught: dict[str, Any] = {}

        def catch(module, args, kwargs):
            caught["x"] = args[0]
            caught["memory"] = args[1] if len(args) > 1 else kwargs.get("memory")
            caught["mask"] = args[2] if len(args) > 2 else kwargs.get("mask")
            caught["bias"] = kwargs.get("bias")

        hook = block.register_forward_pre_hook(catch, with_kwargs=True)
        try:
            self.model.eval()
            self.model(*inputs)
        finally:
            hook.remove()
        x, memory, mask = caught["x"], caught["memory"], caught["mask"]
        if memory is None:
            q, k, v = block.project_qkv(x)
        else:
            q = block.project_query(x)
            k, v = block.project_memory(memory)
        q, k, v = q[0, head], k[0, head], v[0, head]  # [L, d_k]
        full_mask = None if mask is None else mask[0, 0].expand(q.shape[0], k.shape[0])
        queries = src_tokens if kind == "encoder" else tgt_tokens
        keys = tgt_tokens if kind == "decoder_self" else src_tokens
        names = {
            "encoder": "encoder self-attention",
            "decoder_self": "decoder self-attention",
            "cross": "cross-attention",
        }
        title = f"{names[kind]}, layer {layer + 1}, head {head + 1}"
        bias = caught.get("bias")
        if bias is not None:  # T5: each head's relative bias is part of its scaled scores
            bias = bias[0, head]
            title += " (scaled scores include T5's relative position bias)"
        inside = cfg.positional if cfg.positional in ("rope", "t5_relative") and memory is None else ""
        return explain(q, k, v, full_mask, title, queries, keys, kind, layer, head, bias, inside)

    def _explain_inputs(
        self, src_text: str, tgt_ids: list[int] | None
    ) -> tuple[list[torch.Tensor], list[str], list[str]]:
        """The forward pass :meth:`explain_attention` watches, for each family as :meth:`inspect` reads it, and
        the tokens of its encoder and decoder positions (an encoder-only model has no decoder's, a decoder-only
        one no encoder's: there the prompt and ``tgt_ids`` are one stream after BOS)."""
        cfg, show_src, show_tgt = self.model_cfg, self.src_tok.display_token, self.tgt_tok.display_token
        if cfg.arch == "encoder_only":
            ids = self._masked_input(src_text, ())[0]
            return [torch.tensor([ids], device=self.device)], [show_src(i) for i in ids], []
        _, ids, _ = self._source(src_text)
        y = [t for t in (tgt_ids or []) if t != cfg.eos_id]
        if cfg.arch == "decoder_only":
            seq = [cfg.bos_id, *ids, *y[: cfg.max_len - 1 - len(ids)]]
            return [torch.tensor([seq], device=self.device)], [], [show_tgt(i) for i in seq]
        tgt_in = [cfg.bos_id, *y[: cfg.max_len - 1]]
        src, tgt = torch.tensor([ids], device=self.device), torch.tensor([tgt_in], device=self.device)
        return [src, tgt], [show_src(i) for i in ids], [show_tgt(i) for i in tgt_in]

    def positional_tables(self) -> dict[str, Any]:
        """What the positional-encoding lab shows of this model: its kind, sizes, and a learned table."""
        cfg = self.model_cfg
        info: dict[str, Any] = {
            "kind": cfg.positional,
            "d_model": cfg.d_model,
            "max_len": cfg.max_len,
            "head_dim": cfg.head_dim,
            "step": self.step,
        }
        src_pos, tgt_pos = self.model.src_pos, self.model.tgt_pos
        if isinstance(src_pos, LearnedPositionalEncoding) and isinstance(tgt_pos, LearnedPositionalEncoding):
            info["source"] = src_pos.table().detach().float().cpu().numpy().copy()
            info["target"] = tgt_pos.table().detach().float().cpu().numpy().copy()
        for stack, table in (("t5_encoder", self.model.encoder_bias), ("t5_decoder", self.model.decoder_bias)):
            if table is not None:  # T5: the learned bias of each bucket and head, [buckets, heads]
                info[stack] = table.weight.detach().float().cpu().numpy().copy()
        return info

    # -- saving and loading -----------------------------------------------------------
    def save(self, path: str | Path, include_optimizer: bool = True) -> None:
        """Write everything needed to continue this run to ``path`` (atomically).

        Without the optimizer state the file is about a third of the size; training
        it further then starts Adam's moment estimates afresh.
        """
        trainer_state = self._trainer.state_dict() if self._trainer else (self._pending or {})
        meta = {
            "model_config": self.model_cfg.to_dict(),
            "train_config": self.train_cfg.to_dict(),
            "data_spec": self.data_spec.to_dict(),
            "tokenizer_spec": self.tokenizer_spec.to_dict(),
            "shared_tokenizer": self.shared_tokenizer,
            "preset": self.preset,
            "step": self.step,
            "elapsed": self.elapsed if self._clock is None else time.perf_counter() - self._clock,
            "evals": self.history.evals,
            "stream": trainer_state.get("stream", {"epoch": 0, "position": 0}),
            "notes": self.notes,
            "version": VERSION,
        }
        rng: dict[str, torch.Tensor | list[torch.Tensor]] = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.get_rng_state_all()
        payload = {
            "meta": json.dumps(meta, ensure_ascii=False),
            "model": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            "optimizer": trainer_state.get("optimizer") if include_optimizer else None,
            "src_tokenizer": self.src_tok.to_json(),
            "tgt_tokenizer": self.tgt_tok.to_json(),
            "history": {k: _column(v) for k, v in self.history.train.items()},
            "rng": rng,
        }
        save_checkpoint(path, payload)
        self.dirty = False

    @classmethod
    def load(
        cls, path: str | Path, device: str = "auto", progress: Callable[[str, float], None] | None = None
    ) -> Session:
        """Open a checkpoint. Raises :class:`CheckpointError` (and changes nothing) when it is unusable.

        Everything in the file is checked before the model is built: the configuration against the shapes
        of the stored weights, so a file that claims a huge model is refused without allocating it.
        The model comes in eval mode (no dropout: ``s.model(...)`` gives exact logits); training switches it.

        ``path`` may also be a Hugging Face model folder (Marian, GPT-2, BERT: see :mod:`model.hf.folders`);
        ``progress`` is then called with what is being done and the fraction done.
        """
        if Path(path).is_dir():
            from model.hf.folders import open_folder

            return open_folder(path, device, progress)
        data = load_checkpoint(path)
        saved = _read_saved_state(path, data)
        model_cfg, train_cfg = saved["model_cfg"], saved["train_cfg"]
        check_model_size(path, model_cfg)
        check_weights(path, model_cfg, data["model"])
        target = resolve_device(device)  # a ValueError of its own (e.g. no GPU), not the file's fault
        rng_before = torch.get_rng_state()  # building a session seeds the global generator
        try:
            session = cls(
                model_cfg=model_cfg,
                train_cfg=train_cfg,
                data_spec=saved["data_spec"],
                tokenizer_spec=saved["tokenizer_spec"],
                src_tok=saved["src_tok"],
                tgt_tok=saved["tgt_tok"],
                device=target,
                preset=saved["preset"],
            )
        except (RuntimeError, MemoryError) as exc:
            torch.set_rng_state(rng_before)
            raise CheckpointError(f"{path}: its model cannot be built on this machine ({exc})") from None
        try:
            session.model.load_state_dict(data["model"])
        except (RuntimeError, TypeError, ValueError, KeyError) as exc:
            torch.set_rng_state(rng_before)
            raise CheckpointError(f"{path}: the weights do not fit the model it describes ({exc})") from None
        try:
            if data.get("optimizer") is not None:  # fails now, not at the first training step
                _check_optimizer_state(make_optimizer(session.model, train_cfg), data["optimizer"])
        except (RuntimeError, TypeError, AttributeError, ValueError, KeyError, IndexError) as exc:
            torch.set_rng_state(rng_before)
            raise CheckpointError(f"{path}: its optimizer state does not fit its model ({exc}); {DAMAGED}") from None
        session.step, session.elapsed, session.notes = saved["step"], saved["elapsed"], saved["notes"]
        session.history.train.update(saved["history"])
        session.history.evals = saved["evals"]
        session._pending = {"optimizer": data.get("optimizer"), "stream": saved["stream"]}
        rng = saved["rng"]
        torch.set_rng_state(rng["torch"] if "torch" in rng else rng_before)
        if torch.cuda.is_available() and rng.get("cuda"):
            try:
                torch.cuda.set_rng_state_all(rng["cuda"])
            except (RuntimeError, TypeError, ValueError):
                pass  # another number of GPUs, or another kind: the CUDA generators keep their state
        return session

    def with_data(self, data: DataSpec, corpus: Corpus | None = None) -> None:
        """Train this model on other data from here on (fine-tuning: the model, its tokenizers and the
        optimizer's state stay; the new data is read with the model's own tokenizers; its batches start at its
        beginning). ``corpus``: the data already read, else it is read on first use. Raises a DataError a
        person can act on when the data does not suit the family."""
        check_family(self.model_cfg.arch, data, self.train_cfg)
        state = self._trainer.state_dict() if self._trainer is not None else (self._pending or {})
        self._pending = {"optimizer": state.get("optimizer"), "stream": {"epoch": 0, "position": 0}}
        self._trainer = None
        self.data_spec, self._corpus, self._encoded = data, corpus, {}

    # -- description -------------------------------------------------------------------
    def with_train_config(self, **changes: Any) -> None:
        """Change training settings that keep the model (learning rate, batch size, …)."""
        self.train_cfg = replace(self.train_cfg, **changes)
        if self._trainer is not None:
            self._pending = self._trainer.state_dict()
            self._trainer = None


def _column(values: list[Any]) -> torch.Tensor:
    """A history column as a tensor: numbers 1-D; the experts' loads ``[steps, N]`` (``[steps, 0]`` when dense)."""
    if values and isinstance(values[0], list):
        return torch.tensor(values, dtype=torch.float64).view(len(values), -1)
    return torch.tensor(values, dtype=torch.float64)


# -- reading a checkpoint's contents ------------------------------------------------------------------------------
def _read_saved_state(path: str | Path, data: dict[str, Any]) -> dict[str, Any]:
    """Everything a checkpoint holds besides weights and optimizer state, read and checked.

    Raises :class:`CheckpointError` naming the file and the field for anything of the wrong kind, so that a
    tampered or damaged file is refused before anything is built or changed.
    """

    def damaged(what: str) -> CheckpointError:
        return CheckpointError(f"{path}: {what}; {DAMAGED}")

    try:
        meta = json.loads(data["meta"])
    except (TypeError, ValueError):
        raise damaged("its settings are not readable (not JSON text)") from None
    if not isinstance(meta, dict):
        raise damaged("its settings are not a table of named values")
    out: dict[str, Any] = {}
    for key, build in (
        ("model_config", ModelConfig.from_dict),
        ("train_config", TrainConfig.from_dict),
        ("data_spec", DataSpec.from_dict),
        ("tokenizer_spec", TokenizerSpec.from_dict),
    ):
        if key not in meta:
            raise damaged(f"its settings lack {key}")
        try:
            out[key.replace("_config", "_cfg")] = build(meta[key])
        except (ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"{path}: its {key} cannot be used ({exc}); {DAMAGED}") from None
    out.update(_read_tokenizers(path, meta, data, out["model_cfg"], damaged))
    out.update(_read_progress(meta, damaged))
    out["history"] = _read_history(data.get("history"), damaged)
    out["rng"] = _read_rng(data, damaged)
    return out


def _read_tokenizers(
    path: str | Path,
    meta: dict[str, Any],
    data: dict[str, Any],
    cfg: ModelConfig,
    damaged: Callable[[str], CheckpointError],
) -> dict[str, Any]:
    shared = meta.get("shared_tokenizer", False)
    if not isinstance(shared, bool):
        raise damaged(f"its shared_tokenizer setting ({shared!r}) is not true or false")
    try:
        src_tok = tokenizer_from_json(data["src_tokenizer"])
        tgt_tok = src_tok if shared else tokenizer_from_json(data["tgt_tokenizer"])
    except Exception as exc:  # noqa: BLE001 — the tokenizers library raises plain Exception for bad JSON
        raise CheckpointError(f"{path}: its tokenizers cannot be read ({exc}); {DAMAGED}") from None
    sizes, rows = (src_tok.vocab_size, tgt_tok.vocab_size), (cfg.src_vocab_size, cfg.tgt_vocab_size)
    # a model opened from elsewhere may have more embedding rows than tokens, never fewer
    own = isinstance(src_tok, TextTokenizer)
    if (sizes != rows) if own else (sizes[0] > rows[0] or sizes[1] > rows[1]):
        raise CheckpointError(f"{path}: its tokenizers do not match its model; the file is inconsistent")
    return {"src_tok": src_tok, "tgt_tok": tgt_tok}


def _read_progress(meta: dict[str, Any], damaged: Callable[[str], CheckpointError]) -> dict[str, Any]:
    """The preset's name, the step, the training time, notes, the data stream's position, the evaluations."""
    out: dict[str, Any] = {"preset": meta.get("preset", "custom")}
    if not isinstance(out["preset"], str):
        raise damaged(f"its preset name ({out['preset']!r}) is not text")
    out["step"] = meta.get("step", 0)
    if not _whole(out["step"]):
        raise damaged(f"its step ({out['step']!r}) is not a whole number ≥ 0")
    elapsed = meta.get("elapsed", 0.0)
    if not (isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) and 0 <= elapsed < math.inf):
        raise damaged(f"its training time ({elapsed!r}) is not a number of seconds")
    out["elapsed"] = float(elapsed)
    out["notes"] = meta.get("notes") or {}
    if not isinstance(out["notes"], dict):
        raise damaged("its notes are not a table of named values")
    stream = meta.get("stream") or {"epoch": 0, "position": 0}
    keys = set(stream) if isinstance(stream, dict) else set()
    if not (keys in ({"epoch", "position"}, {"epoch", "chunk", "position"}) and all(map(_whole, stream.values()))):
        raise damaged(f"its position in the training data ({stream!r}) is not an epoch and a batch number")
    out["stream"] = dict(stream)
    evals = meta.get("evals") or []
    if not (isinstance(evals, list) and all(_is_eval(e) for e in evals)):
        raise damaged("its list of evaluations is not a list of results (step, split, loss and scores)")
    out["evals"] = [dict(e) for e in evals]
    return out


def _read_rng(data: dict[str, Any], damaged: Callable[[str], CheckpointError]) -> dict[str, Any]:
    rng = data.get("rng") or {}
    if not isinstance(rng, dict):
        raise damaged("its random-number state is not a table")
    generator = rng.get("torch")
    if generator is not None and not (
        isinstance(generator, torch.Tensor)
        and generator.dtype == torch.uint8
        and generator.shape == torch.get_rng_state().shape
    ):
        raise damaged("its random-number state is not one this version of PyTorch can use")
    return {k: v for k, v in rng.items() if v is not None}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# what each family's evaluations score (besides the loss); with experts also aux_loss and expert_load
EVAL_SCORES = {
    "encoder_decoder": ("exact_match", "bleu"),
    "decoder_only": ("perplexity",),
    "encoder_only": ("mlm_accuracy",),
}


def _is_eval(record: Any) -> bool:
    def number(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    if not (isinstance(record, dict) and _whole(record.get("step")) and isinstance(record.get("split"), str)):
        return False
    scored = any(all(number(record.get(k)) for k in keys) for keys in EVAL_SCORES.values())
    load = record.get("expert_load", [])
    return number(record.get("loss")) and scored and isinstance(load, list) and all(number(x) for x in load)


def _read_history(history: Any, damaged) -> dict[str, list[float]]:
    """The per-step metric columns: all of TRAIN_KEYS, as equally long 1-D tensors of numbers (or none at all)."""
    if history is None or (isinstance(history, dict) and not history):
        return {}
    if not isinstance(history, dict):
        raise damaged(f"its metric history is a {type(history).__name__}, not a table of columns")
    columns: dict[str, list[Any]] = {}
    for key in TRAIN_KEYS:
        column = history.get(key)
        if column is None and key in NEWER_METRICS and isinstance(history.get("step"), torch.Tensor):
            column = torch.zeros_like(history["step"])  # a file from before this metric: none measured
        if not (isinstance(column, torch.Tensor) and column.dim() == 1 and column.is_floating_point()):
            raise damaged(f"its metric history has no usable column {key!r}")
        columns[key] = [float(x) for x in column.tolist()]
    if len({len(c) for c in columns.values()}) != 1:
        raise damaged("the columns of its metric history differ in length")
    n = len(columns["step"])
    load = history.get("expert_load")
    if load is None:
        columns["expert_load"] = [[] for _ in range(n)]
    elif isinstance(load, torch.Tensor) and load.is_floating_point() and load.dim() in (1, 2) and len(load) == n:
        columns["expert_load"] = load.view(n, -1).tolist() if n else []
    else:
        raise damaged("its experts' load history does not fit its other columns")
    return columns


def _check_optimizer_state(optimizer: torch.optim.Optimizer, state: Any) -> None:
    """Load a saved optimizer state into ``optimizer`` (a throwaway one) and check every tensor in it.

    ``load_state_dict`` checks the parameter groups; the moment estimates must also have their
    parameter's shape and be finite, or the first update would fail or spread NaN.
    """
    if not isinstance(state, dict):
        raise TypeError("the optimizer state is not a table")
    optimizer.load_state_dict(state)
    for param, values in optimizer.state.items():
        for name, value in values.items():
            if not isinstance(value, torch.Tensor):
                continue
            if value.dim() > 0 and value.shape != param.shape:
                raise ValueError(f"optimizer {name} of shape {list(value.shape)} for a weight {list(param.shape)}")
            if value.is_floating_point() and not bool(torch.isfinite(value).all()):
                raise ValueError(f"optimizer {name} holds NaN or infinite values")
