"""Optimisation: the paper's Adam and Noam schedule, label smoothing, clipping, metrics, evaluation."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any

import sacrebleu
import torch
from torch import nn

from model.data.batching import BatchStream, EncodedPairs, batches_in_order, collate
from model.decoding import greedy_decode, output_budget
from model.device import training_autocast
from model.tokenization import PAD_ID, TextTokenizer
from model.transformer import Transformer

OPTIMIZERS = ("adam", "adamw")
SCHEDULES = ("noam", "constant", "cosine")


@dataclass(frozen=True)
class TrainConfig:
    """How to train. The defaults are the paper's, scaled to small models."""

    batch_size: int = 64  # sentence pairs per step
    optimizer: str = "adam"  # "adam" (the paper) | "adamw" (decoupled weight decay)
    beta1: float = 0.9
    beta2: float = 0.98  # the paper's β2
    eps: float = 1e-9  # the paper's ε
    weight_decay: float = 0.0  # AdamW only
    schedule: str = "noam"  # "noam" | "constant" | "cosine"
    noam_factor: float = 1.0  # Noam: lr = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)
    lr: float = 5e-4  # constant / cosine: the rate after warm-up
    warmup_steps: int = 4000  # the paper's 4000; smaller for small models
    total_steps: int = 10000  # cosine: the step where the rate reaches zero
    label_smoothing: float = 0.1  # the paper's ε_ls
    clip_norm: float = 1.0  # gradient clipping by global norm; 0 turns it off
    seed: int = 0  # weights, dropout and batch order
    eval_every: int = 500  # steps between evaluations on the valid split
    eval_sentences: int = 200  # valid sentences decoded for exact match and BLEU

    def __post_init__(self) -> None:
        problems = []
        if self.optimizer not in OPTIMIZERS:
            problems.append(f"optimizer must be one of {OPTIMIZERS}")
        if self.schedule not in SCHEDULES:
            problems.append(f"schedule must be one of {SCHEDULES}")
        if self.batch_size < 1:
            problems.append("batch_size must be at least 1")
        if self.warmup_steps < 1 and self.schedule == "noam":
            problems.append("the Noam schedule needs warmup_steps ≥ 1")
        if self.warmup_steps < 0:
            problems.append("warmup_steps cannot be negative")
        if not 0 <= self.label_smoothing < 1:
            problems.append("label_smoothing must be in [0, 1)")
        if self.clip_norm < 0:
            problems.append("clip_norm must be ≥ 0 (0 = no clipping)")
        if self.lr <= 0 or self.noam_factor <= 0:
            problems.append("learning rates must be positive")
        if self.schedule == "cosine" and self.total_steps <= self.warmup_steps:
            problems.append("the cosine schedule needs total_steps > warmup_steps")
        if self.eval_every < 0 or self.eval_sentences < 0:
            problems.append("eval_every and eval_sentences must be ≥ 0")
        if problems:
            raise ValueError("Invalid training configuration: " + "; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# Training settings that suit each model preset (warm-up scaled to how long such a model trains).
TRAIN_PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(warmup_steps=400, batch_size=64, eval_every=200),
    "small": dict(warmup_steps=1000, batch_size=64, eval_every=500),
    "paper_base": dict(warmup_steps=4000, batch_size=64, eval_every=1000),
    "paper_big": dict(warmup_steps=4000, batch_size=64, eval_every=1000),
}


def train_config_for(preset: str, **overrides: Any) -> TrainConfig:
    """Training settings for a model preset, with any field overridden."""
    return TrainConfig(**{**TRAIN_PRESETS.get(preset, {}), **overrides})


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """lr = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), step counted from 1.

    (At step 0 the formula would divide by zero; the first update is step 1.)
    """
    if step < 1:
        raise ValueError("steps are counted from 1")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def learning_rate(cfg: TrainConfig, step: int, d_model: int) -> float:
    """The learning rate used for update number ``step`` (from 1)."""
    if cfg.schedule == "noam":
        return noam_lr(step, d_model, cfg.warmup_steps, cfg.noam_factor)
    warm = min(1.0, step / cfg.warmup_steps) if cfg.warmup_steps else 1.0
    if cfg.schedule == "constant":
        return cfg.lr * warm
    if step <= cfg.warmup_steps:
        return cfg.lr * warm
    progress = min(1.0, (step - cfg.warmup_steps) / (cfg.total_steps - cfg.warmup_steps))
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * progress))


class TrainingDiverged(RuntimeError):
    """The loss or the gradient stopped being a finite number. The weights are those of the step before."""

    def __init__(self, step: int, what: str, lr: float) -> None:
        self.step = step
        super().__init__(
            f"Training stopped at step {step}: the {what} became infinite or NaN, so that update was not applied "
            f"and the weights from step {step - 1} are kept. The likely cause is a learning rate too high for "
            f"this model (it was {lr:.3g}): lower it (or the Noam factor), lengthen the warm-up, turn on "
            f"gradient clipping, or try Pre-LN."
        )


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    kw = dict(lr=0.0, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(params, weight_decay=cfg.weight_decay, **kw)
    return torch.optim.Adam(params, **kw)


class Trainer:
    """One optimizer, one batch stream, one model: ``train_step()`` does one update."""

    def __init__(self, model: Transformer, cfg: TrainConfig, stream: BatchStream, step: int = 0) -> None:
        self.model, self.cfg, self.stream = model, cfg, stream
        self.optimizer = make_optimizer(model, cfg)
        self.loss_fn = nn.CrossEntropyLoss(ignore_index=PAD_ID, label_smoothing=cfg.label_smoothing)
        self.step = step  # updates done so far

    def apply_settings(self) -> None:
        """Put the configuration's betas, eps and weight decay into the optimizer (after loading a state)."""
        for group in self.optimizer.param_groups:
            group["betas"] = (self.cfg.beta1, self.cfg.beta2)
            group["eps"] = self.cfg.eps
            if "weight_decay" in group:
                group["weight_decay"] = self.cfg.weight_decay if self.cfg.optimizer == "adamw" else 0.0

    def lr_at(self, step: int) -> float:
        return learning_rate(self.cfg, step, self.model.cfg.d_model)

    def train_step(self) -> dict[str, float]:
        """One update. → step, loss, lr, token_accuracy, grad_norm, tokens_per_s."""
        model, device = self.model, self.model.device
        step = self.step + 1
        lr = self.lr_at(step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        t0 = time.perf_counter()
        batch = next(self.stream).to(device)
        model.train()
        with training_autocast(device):
            logits = model(batch.src, batch.tgt_in)
        logits = logits.float()
        loss = self.loss_fn(logits.view(-1, logits.shape[-1]), batch.tgt_out.view(-1))
        if not torch.isfinite(loss):
            raise TrainingDiverged(step, "loss", lr)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip = self.cfg.clip_norm if self.cfg.clip_norm > 0 else math.inf
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        if not torch.isfinite(grad_norm):
            self.optimizer.zero_grad(set_to_none=True)
            raise TrainingDiverged(step, "gradient", lr)
        self.optimizer.step()
        self.step = step
        with torch.no_grad():
            real = batch.tgt_out != PAD_ID
            accuracy = (logits.argmax(-1) == batch.tgt_out)[real].float().mean()
        loss_value, acc_value = loss.item(), accuracy.item()  # note: CPU–GPU sync points
        seconds = time.perf_counter() - t0
        return {
            "step": step,
            "loss": loss_value,
            "lr": lr,
            "token_accuracy": acc_value,
            "grad_norm": float(grad_norm),
            "tokens_per_s": batch.n_tokens / seconds,
        }

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "step": self.step, "stream": self.stream.state_dict()}


@torch.no_grad()
def evaluate(
    model: Transformer,
    data: EncodedPairs,
    references: list[str],
    tgt_tok: TextTokenizer,
    tgt_lang: str,
    label_smoothing: float,
    max_sentences: int | None = None,
    batch_size: int = 64,
) -> dict[str, float]:
    """Teacher-forced loss over the split; exact match and BLEU of greedy decodes of
    its first ``max_sentences`` sentences (all when None).

    Loss uses the training criterion (label smoothing included) so the training
    and validation curves compare. A decode is exactly right when its text equals
    the reference in the tokenizer's normal form. BLEU is ``sacrebleu``'s corpus
    BLEU, with its ``zh`` tokenizer for Chinese targets.
    """
    model.eval()
    device = model.device
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD_ID, label_smoothing=label_smoothing, reduction="sum")
    total, tokens = 0.0, 0
    for batch in batches_in_order(data, batch_size):
        batch = batch.to(device)
        logits = model(batch.src, batch.tgt_in).float()
        total += loss_fn(logits.view(-1, logits.shape[-1]), batch.tgt_out.view(-1)).item()
        tokens += batch.n_tokens
    n = len(data.src) if max_sentences is None else min(max_sentences, len(data.src))
    hyps = []
    for k in range(0, n, batch_size):
        chunk = data.src[k : min(n, k + batch_size)]
        src = collate(chunk, [[0]] * len(chunk)).src.to(device)
        longest = max(len(s) for s in chunk)
        max_len = output_budget(longest, model.cfg.max_len)
        hyps.extend(tgt_tok.decode(ids) for ids in greedy_decode(model, src, max_len))
    refs = [tgt_tok.normal_form(r) for r in references[:n]]
    exact = sum(h == r for h, r in zip(hyps, refs)) / max(1, n)
    bleu = sacrebleu.corpus_bleu(hyps, [refs], tokenize="zh" if tgt_lang == "zh" else "13a").score if n else 0.0
    return {"loss": total / max(1, tokens), "exact_match": exact, "bleu": bleu, "sentences": n}
