"""A session's files: building one for data, opening a checkpoint or a Hugging Face folder, saving, and changing
the data or the training settings of a model that stays."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Self

import torch

from model.core.config import ModelConfig
from model.data import Corpus, DataError, DataSpec, load_corpus
from model.data.corpus import is_monolingual
from model.data.stream import Progress as StreamProgress
from model.data.stream import TokenizerSample
from model.data.tokenization import TextTokenizer, TokenizerSpec
from model.families.registry import ENCODER_DECODER, FAMILIES
from model.hf.folders import load_into, read_folder, without_initialisation
from model.io.checkpoint import (
    DAMAGED,
    CheckpointError,
    check_model_size,
    check_weights,
    load_checkpoint,
    save_checkpoint,
)
from model.session.saved_state import check_optimizer_state, read_saved_state
from model.session.training import SessionTraining
from model.training.device import resolve_device
from model.training.trainer import TrainConfig, make_optimizer

VERSION = "0.1.0"


def check_family(arch: str, data: DataSpec, train: TrainConfig) -> None:
    """Raise a DataError a person can act on when the data does not suit the family (before anything loads)."""
    text = is_monolingual(data)
    family = FAMILIES.get(arch, ENCODER_DECODER)  # an unknown family is reported by the configuration
    if family.single_stream and not text:
        raise DataError(
            f"A {family.name} model learns from plain text, and {data.name} is pairs of sentences to translate: "
            f"choose a text task (text-grammar-en, text-grammar-zh, text-hsk-en, text-hsk-zh) or a plain-text "
            f"file (one sentence per line), or the encoder-decoder family"
        )
    if not family.single_stream and text:
        raise DataError(
            f"{data.name} is text in one language: an encoder-decoder model needs sentence pairs to translate. "
            f"Choose the decoder-only or encoder-only family, or a translation task"
        )
    if train.nsp and family.objective != "mlm":
        raise DataError(
            "next-sentence prediction is learnt by encoder-only (BERT) models; turn it off or choose that family"
        )


class SessionFiles(SessionTraining):
    """Where a session comes from and where it goes: built for data, opened from a file or folder, saved."""

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
    ) -> Self:
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
    ) -> Self:
        family = FAMILIES.get(model_overrides.get("arch", ENCODER_DECODER.arch), ENCODER_DECODER)
        if progress is not None and corpus.stream is not None:
            progress("training the tokenizers", None, TokenizerSample(len(corpus.train)))
        if family.single_stream:  # one stream of text, one tokenizer
            masking = family.objective == "mlm"
            src_tok = tgt_tok = TextTokenizer.train(corpus.texts("train"), tokenizer, masking=masking)
            if train.nsp:
                model_overrides.setdefault("n_classes", 2)
            sizes = dict(src_vocab_size=0, tgt_vocab_size=0, vocab_size=src_tok.vocab_size)
        else:
            src_texts = [s for s, _ in corpus.train]
            tgt_texts = [t for _, t in corpus.train]
            if shared_tokenizer:
                src_tok = tgt_tok = TextTokenizer.train(src_texts + tgt_texts, tokenizer)
            else:
                src_tok, tgt_tok = TextTokenizer.train(src_texts, tokenizer), TextTokenizer.train(tgt_texts, tokenizer)
            model_overrides.setdefault("shared_vocab", shared_tokenizer)
            sizes = dict(src_vocab_size=src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size)
        return cls(
            model_cfg=ModelConfig.preset(preset, **sizes, **model_overrides),
            train_cfg=train,
            data_spec=data,
            tokenizer_spec=tokenizer,
            src_tok=src_tok,
            tgt_tok=tgt_tok,
            device=resolve_device(device),
            preset=preset,
            corpus=corpus,
        )

    @classmethod
    def load(cls, path: str | Path, device: str = "auto", progress: Callable[[str, float], None] | None = None) -> Self:
        """Open a checkpoint. Raises :class:`CheckpointError` (and changes nothing) when it is unusable.

        Everything in the file is checked before the model is built: the configuration against the shapes
        of the stored weights, so a file that claims a huge model is refused without allocating it.
        The model comes in eval mode (no dropout: ``s.model(...)`` gives exact logits); training switches it.

        ``path`` may also be a Hugging Face model folder (Marian, GPT-2, BERT: see :mod:`model.hf.folders`);
        ``progress`` is then called with what is being done and the fraction done.
        """
        if Path(path).is_dir():
            return cls._open_folder(path, device, progress)
        data = load_checkpoint(path)
        saved = read_saved_state(path, data)
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
                check_optimizer_state(make_optimizer(session.model, train_cfg), data["optimizer"])
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

    @classmethod
    def _open_folder(cls, folder: str | Path, device: str, progress: Callable[[str, float], None] | None) -> Self:
        """A session on the Hugging Face model in ``folder`` (see :mod:`model.hf.folders`); raises
        :class:`~model.hf.folders.HFImportError`."""
        report = progress or (lambda what, done: None)
        found = read_folder(folder, report)
        report("building the model", 0.7)
        target = resolve_device(device)
        with without_initialisation():
            session = cls(
                model_cfg=found.model_cfg,
                train_cfg=found.train_cfg,
                data_spec=found.data_spec,
                tokenizer_spec=TokenizerSpec(),
                src_tok=found.src_tok,
                tgt_tok=found.tgt_tok,
                device=torch.device("cpu"),
                preset=found.name,
            )
        load_into(session.model, found.weights, found.where)
        session.model.to(target)
        session.device = target
        report("ready", 1.0)
        session.notes["origin"] = found.origin
        return session

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
