"""Reading a Hugging Face ``Trainer`` output folder while the Trainer writes it (see :mod:`model.io.follow`).

What the Trainer leaves in its ``output_dir``:

- ``checkpoint-N/`` at every save: the model (``model.safetensors`` or ``pytorch_model.bin``, ``config.json``),
  the tokenizer's files when it was given one, the optimizer's state, and last ``trainer_state.json``, whose
  ``log_history`` holds every log entry up to step N. A checkpoint is taken as complete once its
  ``trainer_state.json`` is there; older ones are deleted under ``save_total_limit``, possibly while being read.
- ``trainer_state.json`` in the folder itself when the script calls ``trainer.save_state()`` (at the end).

A log entry becomes records the follow code takes: one with ``loss`` a training step (``learning_rate`` → lr,
``grad_norm``, ``mean_token_accuracy`` → token accuracy), one with ``eval_loss`` an evaluation of the "valid" split;
every other number of an entry (``epoch``, ``eval_bleu``, ``eval_runtime``, ``train_runtime`` …) is a scalar
under its own name. :func:`model.follow.RunWriter` writes checkpoints of the same shape, with an empty log.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.io.safe_files import NotAFileError, open_regular

STATE = "trainer_state.json"
CHECKPOINT = re.compile(r"checkpoint-(\d{1,12})")
STATE_LIMIT = 256 << 20  # bytes of a trainer_state.json: a long run's log is a few MB; more is not a Trainer's
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")

Scalars = dict[str, tuple[list[int], list[float]]]  # per tag: its points' steps and values


def checkpoints(folder: Path) -> list[tuple[int, Path]]:
    """The complete checkpoints in ``folder`` (``checkpoint-N/`` holding its ``trainer_state.json``), by step."""
    found = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        m = CHECKPOINT.fullmatch(entry.name)
        try:
            if m and entry.is_dir() and _regular(Path(entry.path) / STATE):
                found.append((int(m.group(1)), Path(entry.path)))
        except OSError:  # deleted under save_total_limit meanwhile
            continue
    return sorted(found)


def is_trainer_folder(folder: Path) -> bool:
    """Whether ``folder`` looks like a Trainer's output (a checkpoint, even an unfinished one, or its state)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return STATE in names or any(CHECKPOINT.fullmatch(n) for n in names)


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def file_signature(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of a regular file; None when there is none (a pipe is no checkpoint)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def add_scalars(into: Scalars, points: Scalars) -> None:
    """Append ``points`` to ``into``, tag by tag."""
    for tag, (steps, values) in points.items():
        have = into.setdefault(tag, ([], []))
        have[0].extend(steps)
        have[1].extend(values)


class TrainerStateError(ValueError):
    """A trainer_state.json that is not the Trainer's (not JSON, too big, no log_history list)."""


def read_state(path: Path) -> dict[str, Any]:
    """The trainer state in ``path``; :class:`TrainerStateError` naming what is wrong, OSError when it is gone."""
    try:
        with open_regular(path) as f:
            data = f.read(STATE_LIMIT + 1)
    except NotAFileError as exc:
        raise TrainerStateError(str(exc)) from exc
    if len(data) > STATE_LIMIT:
        raise TrainerStateError(f"{path} is over {STATE_LIMIT >> 20} MB, more than a Trainer's log; it is not read")
    try:
        state = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise TrainerStateError(f"{path} is not JSON ({exc}); a Trainer writes it whole at every save") from exc
    if not isinstance(state, dict) or not isinstance(state.get("log_history", []), list):
        raise TrainerStateError(f"{path} holds no log_history list, so it is not a Trainer's state")
    return state


def _number(value: Any) -> bool:
    """A number a float holds (NaN and infinity too: a diverged loss is a point of its curve)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, float) or (isinstance(value, int) and abs(value) < 2**63)


# a log's names (the Trainer's, or this project's own in a RunWriter loop's lines) → the training plots' metrics
TRAIN_NAMES = {
    "loss": "loss",
    "learning_rate": "lr",
    "lr": "lr",
    "grad_norm": "grad_norm",
    "mean_token_accuracy": "token_accuracy",
    "token_accuracy": "token_accuracy",
    "tokens_per_s": "tokens_per_s",
    "time": "time",
}


def entry_records(entry: Any) -> tuple[list[dict[str, Any]], Scalars]:
    """What one ``log_history`` entry holds: the training step or evaluation record it is (none for a summary
    such as train_runtime), and its other numbers as scalars at its step. Not an entry (no whole step): nothing."""
    given: Any = entry.get("step") if isinstance(entry, dict) else None
    if not _number(given) or not math.isfinite(given) or not 0 <= given == int(given):
        return [], {}
    step = int(given)
    numbers = {k: float(v) for k, v in entry.items() if isinstance(k, str) and k != "step" and _number(v)}
    records: list[dict[str, Any]] = []
    used: set[str] = set()
    if "loss" in numbers:
        record: dict[str, Any] = {"step": step, **dict.fromkeys(set(TRAIN_NAMES.values()), math.nan)}
        record.update({TRAIN_NAMES[k]: numbers[k] for k in TRAIN_NAMES if k in numbers})
        records.append(record)
        used |= TRAIN_NAMES.keys()
    if "eval_loss" in numbers:
        records.append({"step": step, "split": "valid", "loss": numbers["eval_loss"]})
        used.add("eval_loss")
    scalars = {k: ([step], [v]) for k, v in numbers.items() if k not in used}
    return records, scalars


@dataclass
class TrainerLog:
    """The log of a Trainer folder as it grows: read again whenever the newest state file changes, and passed on as
    what is new since (the same entries first: else the log was rewritten, a restarted run, and all is new)."""

    folder: Path
    problem: str = ""  # the last state file that could not be read, and why
    _taken: list[Any] = field(default_factory=list)  # the entries passed on so far
    _signature: tuple[Any, ...] | None = None

    def newest_state(self) -> Path | None:
        """The newest state: the last complete checkpoint's, or the folder's own when it is as new (save_state)."""
        found = checkpoints(self.folder)
        newest = found[-1][1] / STATE if found else None
        own = self.folder / STATE
        mine, theirs = file_signature(own), None if newest is None else file_signature(newest)
        if mine is not None and (theirs is None or mine[2] >= theirs[2]):  # written after the last checkpoint
            return own
        return newest

    def read(self) -> tuple[list[dict[str, Any]], Scalars, bool]:
        """(new records, new scalars, whether they start again from the beginning)."""
        path = self.newest_state()
        signature = None if path is None else (path, file_signature(path))
        if path is None or signature == self._signature:
            return [], {}, False
        try:
            history = read_state(path).get("log_history", [])
        except FileNotFoundError:
            return [], {}, False  # deleted under save_total_limit: the next poll finds the newer one
        except (OSError, TrainerStateError) as exc:
            self.problem = str(exc)
            self._signature = signature  # not read again until it changes
            return [], {}, False
        self._signature = signature
        n = len(self._taken)
        reset = len(history) < n or history[:n] != self._taken
        fresh = history if reset else history[n:]
        self._taken = list(history)
        records: list[dict[str, Any]] = []
        scalars: Scalars = {}
        for entry in fresh:
            more, points = entry_records(entry)
            records += more
            add_scalars(scalars, points)
        return records, scalars, reset


def has_weights(checkpoint: Path) -> bool:
    return any(_regular(checkpoint / name) for name in WEIGHTS) and _regular(checkpoint / "config.json")
