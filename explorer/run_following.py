"""The engine's record of a run it follows (:class:`explorer.commands.Follow`): what the engine has read of the run's
folder so far. The handlers that read the folder are :mod:`explorer.engine_following`'s; this record sits below them
and below :mod:`explorer.engine_base`, which holds it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from explorer.answers import Evaluation
from model.io.follow import RunWatcher
from model.io.snapshots import TRAIN_METRICS, History, StepColumns


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

    def steps(self) -> StepColumns:
        return StepColumns.from_history(self.history.train)

    def evaluations(self) -> tuple[Evaluation, ...]:
        return tuple(Evaluation.of(e) for e in self.history.evals)


def _step_record(record: dict[str, Any]) -> dict[str, Any] | None:
    """A training line of a metrics log with every number the plots take (a dense model's log has no aux_loss);
    None for a line without them."""
    out = {"aux_loss": 0.0, "expert_load": record.get("expert_load", []), "time": math.nan}
    for key in TRAIN_METRICS:
        value = record.get(key, out.get(key))
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return None
        out[key] = float(value)
    return out
