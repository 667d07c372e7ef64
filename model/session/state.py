"""What a session holds: the settings, the tokenizers, the model and the training state its parts share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from model.core.config import ModelConfig
from model.core.transformer import Transformer
from model.data import Corpus, DataSpec, EncodedPairs, Specials
from model.data.stream import ChunkEncoder
from model.data.stream import Progress as StreamProgress
from model.data.text_batching import EncodedTexts
from model.data.tokenization import TokenizerSpec
from model.hf.tokenizers import AnyTokenizer
from model.io.snapshots import History
from model.training.trainer import TrainConfig, Trainer


class SessionState:
    """A model with its tokenizers, data and training state: the fields every part of a session reads."""

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
        self._means_kept: tuple[tuple[int, int], Any] | None = None  # heads' mean outputs for mean ablation

    @property
    def shared_tokenizer(self) -> bool:
        return self.src_tok is self.tgt_tok

    @property
    def specials(self) -> Specials:
        """The model's padding, start and end token ids, with which its batches are laid out."""
        cfg = self.model_cfg
        return Specials(cfg.pad_id, cfg.bos_id, cfg.eos_id)
