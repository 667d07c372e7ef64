"""The engine's record of a run it follows (:class:`explorer.commands.Follow`): what the engine has read of the run's
folder so far. The handlers that read the folder are :mod:`explorer.engine_following`'s; this record sits below them
and below :mod:`explorer.engine_base`, which holds it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from explorer.answers import Evaluation
from model.io.follow import Poll, RunWatcher
from model.io.snapshots import TRAIN_METRICS, History, StepColumns
from model.io.tensorboard_events import drop_purged
from model.io.trainer_folder import Scalars, add_scalars


class RunFollowing:
    """The engine's record of a run it follows: the log so far, the probe snapshots not yet sent (engine thread
    only; what reaches the window are MetricsBatch, RunInfo, ProbeSnapshot and FollowStatus)."""

    def __init__(self, watcher: RunWatcher, request_id: int) -> None:
        self.watcher, self.request_id = watcher, request_id
        self.run_id = -1  # the run id its model was given in the window
        self.history = History()  # the log so far, as columns (a long run's log stays compact)
        self.probes: list[Path] = []
        self.polled = self.said = 0.0
        self.ended = ""  # how the run ended, as its final checkpoint says ("" while it runs)
        self.logged: Scalars = {}  # the log's other numbers so far, per tag (a Trainer's eval_bleu, epoch …)
        self.events: Scalars = {}  # the TensorBoard event files' scalars so far, per tag

    @property
    def last_step(self) -> int:
        steps = self.history.train["step"]
        return int(steps[-1]) if steps else 0

    def take(self, records: list[dict[str, Any]], reset: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Keep the log's new lines (all of them again after a reset); → the new training steps and evaluations."""
        steps = [step for step in map(_step_record, (r for r in records if "split" not in r)) if step is not None]
        evals = [r for r in records if "split" in r and isinstance(r.get("loss"), (int, float))]
        if reset:
            self.history = History()
        for step in steps:
            self.history.add_step(step)
        self.history.evals.extend(evals)
        return steps, evals

    def take_scalars(self, poll: Poll) -> tuple[Scalars, bool]:
        """Keep the poll's scalars; → what the window is to draw: the new points, or (True) all of them again
        after either source was rewritten, or a TensorBoard writer restarted from an earlier step."""
        if poll.reset:
            self.logged = {}
        if poll.events_reset:
            self.events = {}
        drop_purged(self.events, poll.events_purged)
        add_scalars(self.logged, poll.scalars)
        add_scalars(self.events, poll.events)
        if poll.reset or poll.events_reset or poll.events_purged:
            return self.all_scalars(), True
        fresh: Scalars = {}
        add_scalars(fresh, poll.scalars)
        add_scalars(fresh, poll.events)
        return fresh, False

    def all_scalars(self) -> Scalars:
        everything: Scalars = {}
        add_scalars(everything, self.logged)
        add_scalars(everything, self.events)
        return everything

    def steps(self) -> StepColumns:
        return StepColumns.from_history(self.history.train)

    def evaluations(self) -> tuple[Evaluation, ...]:
        return tuple(Evaluation.of(e) for e in self.history.evals)


def _step_record(record: dict[str, Any]) -> dict[str, Any] | None:
    """A training line of a log with the numbers the plots take: those it lacks are NaN (a dense model's log has
    no aux_loss; a loop's RunWriter may log only its loss); None for a line without a loss."""
    if not isinstance(record.get("loss"), (int, float)) or isinstance(record.get("loss"), bool):
        return None
    out = {"aux_loss": 0.0, "expert_load": record.get("expert_load", [])}
    for key in TRAIN_METRICS:
        value = record.get(key, out.get(key, math.nan))
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return None
        out[key] = float(value)
    return out
