"""Optimisation: the paper's Adam and Noam schedule, label smoothing, clipping, metrics, evaluation."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sacrebleu
import torch
from torch import nn

from model.core.transformer import Transformer
from model.data.batching import IGNORE, BatchStream, EncodedPairs, batches_in_order, collate
from model.data.stream import StreamedBatches
from model.data.text_batching import TextStream
from model.data.tokenization import Tokenizing
from model.decoding.search import greedy_decode, output_budget
from model.families.objectives import mean_load, run_batch
from model.families.registry import scores
from model.training import distributed
from model.training.config import (  # noqa: F401 — the settings, re-exported where they were
    OPTIMIZERS,
    SCHEDULES,
    TRAIN_PRESETS,
    TrainConfig,
    TrainingDiverged,
    learning_rate,
    noam_lr,
    train_config_for,
)
from model.training.device import prepare_optimizers, training_autocast

# what a Trainer draws its batches from: a split in memory (pairs or texts), a streamed file, a rank's share
AnyStream = BatchStream | TextStream | StreamedBatches | distributed.Sharded


def divergence_advice(cfg: TrainConfig, norm: str) -> list[str]:
    """What to change after a divergence, leaving out what is already so (clipping on, Pre-LN)."""
    advice = [f"lower it (the Noam factor, now {cfg.noam_factor:g})" if cfg.schedule == "noam" else "lower it"]
    advice.append(f"lengthen the warm-up (now {cfg.warmup_steps} steps)" if cfg.warmup_steps else "add a warm-up")
    if cfg.clip_norm == 0:
        advice.append("turn on gradient clipping (1.0 is usual)")
    elif cfg.clip_norm > 1.0:
        advice.append(f"clip gradients harder (now at {cfg.clip_norm:g}; 1.0 is usual)")
    if norm == "post":
        advice.append("try Pre-LN, which trains more stably")
    return advice


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    prepare_optimizers()  # the first construction's imports, without collector pauses for other threads
    params = [p for p in model.parameters() if p.requires_grad]
    betas = (cfg.beta1, cfg.beta2)
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=0.0, betas=betas, eps=cfg.eps, weight_decay=cfg.weight_decay)
    return torch.optim.Adam(params, lr=0.0, betas=betas, eps=cfg.eps)


@dataclass(frozen=True)
class Snapshot:
    """Weights, optimizer state and data position after ``step`` updates, copied to the CPU."""

    step: int
    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    stream: dict[str, int]
    weight_norm: float  # global L2 norm of the weights


class Trainer:
    """One optimizer, one batch stream, one model: ``train_step()`` does one update.

    Divergence guard: every ``snapshot_every`` steps the weights and optimizer state are copied to the CPU.
    A copy becomes the one to go back to only after the ``snapshot_every`` steps that follow it stayed in
    range: finite loss no worse than twice that of guessing uniformly (2·ln V + 1), gradient norm at most
    100× the median of the interval before, weight norm at most 4× that of the copy before. (Weights one
    update before a NaN are usually ruined already, so the last finite weights are not good enough.)
    When the loss or the gradient stops being finite, that copy is restored and :class:`TrainingDiverged`
    raised; the copy taken when training started is the fallback.
    """

    SNAPSHOT_EVERY = 50  # steps between copies: cheap (a CPU copy of weights and moments every 50 steps)
    GRAD_SPIKE = 100.0  # a gradient norm this many times the interval's median is out of range
    WEIGHT_GROWTH = 4.0  # weights whose norm grew this much in one interval are out of range

    def __init__(
        self,
        model: Transformer,
        cfg: TrainConfig,
        stream: AnyStream,
        step: int = 0,
        snapshot_every: int = 0,
        remake_stream: Callable[..., AnyStream] | None = None,
    ) -> None:
        self.model, self.cfg, self.stream = model, cfg, stream
        # the stream at a saved position (epoch=…, position=…), for going back after a divergence
        self.remake_stream = remake_stream or (
            lambda **at: BatchStream(stream.data, stream.batch_size, stream.seed, **at)  # type: ignore[arg-type,union-attr]
        )
        self.optimizer = make_optimizer(model, cfg)
        # several ranks (torchrun): gradients averaged by DistributedDataParallel, losses weighted by all tokens
        self.ddp = distributed.wrap(model) if distributed.active() else None
        self.step = step  # updates done so far
        self.snapshot_every = snapshot_every or self.SNAPSHOT_EVERY
        self.loss_limit = 2 * math.log(model.cfg.tgt_vocab_size) + 1
        self.good: Snapshot | None = None  # what a divergence goes back to (taken at the first step)
        self._candidate: Snapshot | None = None  # becomes ``good`` if the next interval stays in range
        self._in_range = True  # every step since the candidate was taken
        self._grad_norms: list[float] = []  # this interval's
        self._grad_limit = math.inf

    def apply_settings(self) -> None:
        """Put the configuration's betas, eps and weight decay into the optimizer (after loading a state)."""
        for group in self.optimizer.param_groups:
            group["betas"] = (self.cfg.beta1, self.cfg.beta2)
            group["eps"] = self.cfg.eps
            if "weight_decay" in group:
                group["weight_decay"] = self.cfg.weight_decay if self.cfg.optimizer == "adamw" else 0.0

    def lr_at(self, step: int) -> float:
        return learning_rate(self.cfg, step, self.model.cfg.d_model)

    def train_step(self) -> dict[str, Any]:
        """One update. → step, loss, lr, token_accuracy, grad_norm, tokens_per_s, aux_loss, expert_load."""
        model, device = self.model, self.model.device
        if self.good is None:  # here, not in __init__: a loaded optimizer state arrives after construction
            self.good = self.snapshot()
        step = self.step + 1
        lr = self.lr_at(step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        t0 = time.perf_counter()
        batch = next(self.stream).to(device)
        model.train()
        with training_autocast(device):
            out = run_batch(model, batch, self.cfg.label_smoothing, forward=self.ddp)
        loss_value, acc_value, n_tokens, finite, objective = self._totals(out, batch.n_tokens)
        if not finite:
            self._diverged(step, "loss", lr)
        self.optimizer.zero_grad(set_to_none=True)
        objective.backward()
        clip = self.cfg.clip_norm if self.cfg.clip_norm > 0 else math.inf
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        if not torch.isfinite(grad_norm):
            self.optimizer.zero_grad(set_to_none=True)
            self._diverged(step, "gradient", lr)
        self.optimizer.step()
        self.step = step
        grad_value = float(grad_norm)
        seconds = time.perf_counter() - t0
        self._watch(loss_value, grad_value)
        return {
            "step": step,
            "loss": loss_value,
            "lr": lr,
            "token_accuracy": acc_value,
            "grad_norm": grad_value,
            "tokens_per_s": n_tokens / seconds,
            "aux_loss": float(out.aux),  # the balance loss, mean over the MoE layers: 1 at balance
            "expert_load": mean_load(out.load),
        }

    def _totals(self, out: Any, n_tokens: int) -> tuple[float, float, int, bool, torch.Tensor]:
        """(loss, token accuracy, tokens, all finite, the objective to differentiate) of this step's batch, or
        with several ranks of all their batches: the objective is then weighted so that DistributedDataParallel's
        average of the gradients is the gradient of the loss over all ranks' tokens."""
        loss, finite = out.loss.item(), bool(torch.isfinite(out.objective))  # note: CPU–GPU sync points
        if self.ddp is None:
            accuracy = float(out.correct) / out.counted if out.counted else float("nan")
            return loss, accuracy, n_tokens, finite, out.objective
        counted, loss_sum, broken, correct, all_tokens = distributed.sums(
            out.counted, loss * out.counted, float(not finite), float(out.correct), n_tokens
        )  # one collective: what all ranks' batches hold, and whether any of them diverged
        weight = out.counted * torch.distributed.get_world_size() / max(1.0, counted)
        accuracy = correct / counted if counted else float("nan")
        return loss_sum / max(1.0, counted), accuracy, int(all_tokens), broken == 0, out.objective * weight

    # -- divergence guard ----------------------------------------------------------------------------------------
    def _watch(self, loss: float, grad_norm: float) -> None:
        """Note whether this step was in range; at the end of an interval, promote or replace the candidate."""
        self._in_range &= loss <= self.loss_limit and grad_norm <= self._grad_limit
        self._grad_norms.append(grad_norm)
        last = self._candidate or self.good
        assert last is not None  # good is taken at the first step, before any _watch
        if self.step - last.step < self.snapshot_every:
            return
        now = self.snapshot()
        candidate = self._candidate
        if candidate is not None and self._in_range and now.weight_norm <= self.WEIGHT_GROWTH * candidate.weight_norm:
            self.good = candidate  # its next interval stayed in range
        self._candidate = now
        self._in_range = math.isfinite(now.weight_norm)
        self._grad_limit = self.GRAD_SPIKE * statistics.median(self._grad_norms)
        self._grad_norms = []

    def snapshot(self) -> Snapshot:
        """A CPU copy of the weights, the optimizer state and the data position, now."""
        weights = {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}
        norms = torch.stack([torch.linalg.vector_norm(w.float()) for w in weights.values()])
        return Snapshot(
            self.step,
            weights,
            _cpu_copy(self.optimizer.state_dict()),
            self.stream.state_dict(),
            float(torch.linalg.vector_norm(norms)),
        )

    def restore(self, snapshot: Snapshot) -> None:
        """Go back to ``snapshot``: weights, optimizer state, data position and step."""
        self.model.load_state_dict(snapshot.model)
        self.optimizer.load_state_dict(_cpu_copy(snapshot.optimizer))  # a copy: the optimizer updates it in place
        self.stream = self.remake_stream(**snapshot.stream)
        self.step = snapshot.step
        self._candidate, self._in_range, self._grad_norms = None, True, []

    def _diverged(self, step: int, what: str, lr: float) -> None:
        assert self.good is not None  # taken at the first step, before anything can diverge
        self.restore(self.good)
        raise TrainingDiverged(step, what, lr, self.step, divergence_advice(self.cfg, self.model.cfg.norm))

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "step": self.step, "stream": self.stream.state_dict()}


def _cpu_copy(value: Any) -> Any:
    """``value`` with every tensor in it copied to the CPU (dicts, lists and tuples followed)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {k: _cpu_copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cpu_copy(v) for v in value)
    return value


@torch.no_grad()
def evaluate(
    model: Transformer,
    data: EncodedPairs,
    references: list[str],
    tgt_tok: Tokenizing,
    tgt_lang: str,
    label_smoothing: float,
    max_sentences: int | None = None,
    batch_size: int = 64,
) -> dict[str, Any]:
    """Teacher-forced loss over the split; exact match and BLEU of greedy decodes of
    its first ``max_sentences`` sentences (all when None).

    Loss uses the training criterion (label smoothing included) so the training
    and validation curves compare. A decode is exactly right when its text equals
    the reference in the tokenizer's normal form. BLEU is ``sacrebleu``'s corpus
    BLEU, with its ``zh`` tokenizer for Chinese targets.
    """
    model.eval()
    device = model.device
    loss_fn = nn.CrossEntropyLoss(ignore_index=IGNORE, label_smoothing=label_smoothing, reduction="sum")
    total, tokens, aux, loads = 0.0, 0, [], []
    for batch in batches_in_order(data, batch_size):
        batch = batch.to(device)
        logits, extras = model(batch.src, batch.tgt_in, return_extras=True)
        logits = logits.float()
        total += loss_fn(logits.view(-1, logits.shape[-1]), batch.tgt_out.view(-1)).item()
        tokens += batch.n_tokens
        aux.append(float(extras.aux_loss))
        loads.append(mean_load(extras.load))
    n = len(data.src) if max_sentences is None else min(max_sentences, len(data.src))
    hyps: list[str] = []
    for k in range(0, n, batch_size):
        chunk = data.src[k : min(n, k + batch_size)]
        src = collate(chunk, [[0]] * len(chunk), data.specials).src.to(device)
        longest = max(len(s) for s in chunk)
        max_len = output_budget(longest, model.cfg.max_len)
        hyps.extend(tgt_tok.decode(ids) for ids in greedy_decode(model, src, max_len))
    refs = [tgt_tok.normal_form(r) for r in references[:n]]
    exact = sum(h == r for h, r in zip(hyps, refs)) / max(1, n)
    bleu = sacrebleu.corpus_bleu(hyps, [refs], tokenize="zh" if tgt_lang == "zh" else "13a").score if n else 0.0
    result: dict[str, Any] = {"loss": total / max(1, tokens), "exact_match": exact, "bleu": bleu, "sentences": n}
    # with experts: the balancing loss and each expert's share, as the other families
    if "aux_loss" in scores(model.cfg) and aux:
        result["aux_loss"] = sum(aux) / len(aux)
        result["expert_load"] = torch.tensor(loads).mean(0).tolist()
    return result
