"""How to train, as plain settings: the paper's Adam and Noam schedule, presets per model size.

Kept free of PyTorch, so that the window can show and check these settings before the engine
has loaded it. The fields a person sets carry their label, help and range (:mod:`model.core.settings`),
from which the command line and the settings form are made."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from model.core.settings import ConfigError, choice_problems, from_plain, setting, to_plain

Optimizer = Literal["adam", "adamw"]
Schedule = Literal["noam", "constant", "cosine"]
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)
SCHEDULES: tuple[str, ...] = get_args(Schedule)


@dataclass(frozen=True)
class TrainConfig:
    """How to train. The defaults are the paper's, scaled to small models."""

    batch_size: int = setting(64, "Batch size", "sentence pairs per step", form=True, low=1, high=8192, step=8)
    optimizer: Optimizer = setting("adam", "Optimizer", "adam (the paper) or adamw (decoupled weight decay)")
    beta1: float = 0.9
    beta2: float = 0.98  # the paper's β2
    eps: float = 1e-9  # the paper's ε
    weight_decay: float = setting(0.0, "Weight decay", "AdamW only: decoupled weight decay")
    schedule: Schedule = setting(
        "noam", "Schedule", "noam (the paper), constant or cosine, each after a linear warm-up", form=True
    )
    warmup_steps: int = setting(
        4000,
        "Warm-up steps",
        "steps of rising rate (the paper's 4000; fewer for small models)",
        flag="warmup",
        form=True,
        low=0,
        high=1000000,
        step=100,
    )
    # The form shows noam_factor and lr in one row: the one the schedule uses.
    noam_factor: float = setting(
        1.0,
        "Noam factor",
        "Noam: factor in front of d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)",
        form=True,
        low=1e-6,
        high=100.0,
        step=0.1,
        decimals=3,
    )
    lr: float = setting(
        5e-4,
        "Learning rate",
        "constant/cosine: learning rate after warm-up",
        form=True,
        low=1e-6,
        high=100.0,
        step=0.1,
        decimals=6,
    )
    total_steps: int = setting(10000, "Total steps", "cosine: step where the rate reaches zero")
    label_smoothing: float = setting(
        0.1, "Label smoothing", "the paper's ε_ls", form=True, low=0.0, high=0.95, step=0.05, decimals=2
    )
    clip_norm: float = setting(
        1.0,
        "Gradient clipping",
        "gradient clipping by global norm; 0 turns it off",
        form=True,
        low=0.0,
        high=1000.0,
        step=0.5,
        decimals=2,
    )
    seed: int = setting(0, "Seed", "weights, dropout and batch order", form=True, low=0, high=2**31 - 1)
    eval_every: int = setting(
        500,
        "Evaluate every",
        "steps between evaluations on the valid split",
        form=True,
        low=0,
        high=1000000,
        step=100,
    )
    eval_sentences: int = setting(
        200, "Evaluation sentences", "valid sentences decoded at each evaluation, the final one too"
    )
    nsp: bool = setting(
        False,
        "Next-sentence prediction",
        "encoder-only: also learn whether sentence B follows sentence A "
        "(BERT's NSP; pairs from consecutive lines of the text)",
    )

    def __post_init__(self) -> None:
        problems = _type_problems(self)
        if problems:  # the checks below compare numbers
            raise ConfigError("Invalid training configuration", problems)
        problems.extend(choice_problems(self))  # optimizer, schedule
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
            raise ConfigError("Invalid training configuration", problems)

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """Build from plain data (e.g. read from a checkpoint): unknown keys are refused, missing ones take
        the defaults (see :func:`model.core.settings.from_plain`)."""
        return from_plain(cls, data, "training configuration")


def _type_problems(cfg: TrainConfig) -> list[str]:
    """Each field holds the kind of value its default has (ints whole, floats finite numbers, strings text)."""
    problems = []
    for f in dataclasses.fields(cfg):
        value, kind = getattr(cfg, f.name), type(f.default)
        if kind is int and not (isinstance(value, int) and not isinstance(value, bool)):
            problems.append(f"{f.name} must be a whole number (got {value!r})")
        elif kind is float and not (
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        ):
            problems.append(f"{f.name} must be a finite number (got {value!r})")
        elif kind is str and not isinstance(value, str):
            problems.append(f"{f.name} must be text (got {value!r})")
    return problems


# Training settings that suit each model preset (warm-up scaled to how long such a model trains); each starts
# from seed 0. Choosing a preset in the settings form sets the fields named here.
TRAIN_PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(warmup_steps=400, batch_size=64, eval_every=200, seed=0),
    "small": dict(warmup_steps=1000, batch_size=64, eval_every=500, seed=0),
    "paper_base": dict(warmup_steps=4000, batch_size=64, eval_every=1000, seed=0),
    "paper_big": dict(warmup_steps=4000, batch_size=64, eval_every=1000, seed=0),
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
    """The loss or the gradient stopped being a finite number.

    The failing update is not applied, and the weights and optimizer state go back to the last snapshot
    taken while training was in range (``restored_step``), from which training can continue at a lower rate.
    """

    def __init__(self, step: int, what: str, lr: float, restored_step: int, advice: list[str]) -> None:
        self.step, self.restored_step = step, restored_step
        super().__init__(
            f"Training stopped at step {step}: the {what} became infinite or NaN, so that update was not applied. "
            f"The weights and optimizer state are back at step {restored_step}, the last point where the loss "
            f"and gradients were in range, so training can continue from there. The likely cause is a learning "
            f"rate too high for this model (it was {lr:.3g}): {_either(advice)}."
        )


def _either(items: list[str]) -> str:
    """'a', 'a or b', 'a, b or c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]
