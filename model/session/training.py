"""A session's training: the trainer on its batches, updates with their metrics, evaluations, going back."""

from __future__ import annotations

import bisect
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from model.data import BatchStream
from model.data.stream import StreamedBatches
from model.data.text_batching import EncodedTexts, TextStream
from model.families.objectives import evaluate_text
from model.session.data import SessionData
from model.training.distributed import Sharded
from model.training.trainer import AnyStream, Trainer, TrainingDiverged, evaluate, learning_rate


@dataclass(frozen=True)
class TrainStep:
    """One update's metrics (the columns of :class:`~model.io.snapshots.StepColumns`), and the evaluation on the
    valid split that followed it, when one did (every ``eval_every`` steps)."""

    step: int  # the update's number
    loss: float
    lr: float
    token_accuracy: float
    grad_norm: float  # before clipping
    tokens_per_s: float
    aux_loss: float  # Mixture-of-Experts load-balancing loss (0 for a dense model)
    expert_load: tuple[float, ...]  # each expert's share of the token assignments, averaged over layers (): dense
    time: float  # seconds of training so far
    evaluation: dict[str, Any] | None = None  # step, time, split, loss and the family's scores

    @classmethod
    def of(cls, record: Mapping[str, Any], evaluation: dict[str, Any] | None = None) -> TrainStep:
        """From the trainer's record of an update (with its ``time``)."""
        names = [f.name for f in fields(cls) if f.name not in ("expert_load", "evaluation")]
        return cls(
            **{name: record[name] for name in names},
            expert_load=tuple(record.get("expert_load", ())),
            evaluation=evaluation,
        )

    def to_dict(self) -> dict[str, Any]:
        """The update's metrics as the history and the training log keep them (without the evaluation)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "evaluation"}
        out["expert_load"] = list(self.expert_load)
        return out


class SessionTraining(SessionData):
    """Training a session's model on its data: one trainer, kept until the settings or the data change."""

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
        return np.array([learning_rate(self.train_cfg, s, self.model_cfg.d_model) for s in range(1, steps + 1)])

    def train_steps(self, n: int = 1) -> list[TrainStep]:
        """Do ``n`` updates; evaluate on the valid split every ``eval_every`` steps.

        Returns one :class:`TrainStep` per update, with the evaluation that followed it (``split``, ``loss``,
        ``exact_match``, ``bleu``, …) where one did.
        Raises :class:`~model.training.trainer.TrainingDiverged` after going back to the last snapshot taken while
        training was in range (weights, optimizer state, step and the metrics up to it).
        """
        trainer = self.trainer
        if self._clock is None:
            self._clock = time.perf_counter() - self.elapsed
        done: list[TrainStep] = []
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
            evaluation = None
            every = self.train_cfg.eval_every
            if every and self.step % every == 0 and self.rank == 0:  # (other ranks' results would go nowhere)
                evaluation = self.evaluate("valid", self.train_cfg.eval_sentences)
            done.append(TrainStep.of(record, evaluation))
        self.elapsed = time.perf_counter() - self._clock
        return done

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
