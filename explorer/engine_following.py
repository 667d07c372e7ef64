"""Following a run another process writes (:class:`explorer.commands.Follow`): the engine reads the run's folder
four times a second and passes on what is new — its log as metrics, its checkpoint as the model every panel shows,
its probe snapshots — and how fresh it is."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from explorer.answers import IDLE, Evaluation, FollowStatus, MetricsBatch, ProbeSnapshot
from explorer.commands import Follow
from explorer.engine_base import attention_entropy
from explorer.engine_files import FileHandlers
from explorer.engine_loading import prepare_optimizers_aside
from model.io.follow import RunWatcher, run_ending
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


class FollowingHandlers(FileHandlers):
    """Follow a run, take in what it wrote, stop following (engine thread)."""

    def _start_following(self, c: Follow) -> None:
        following = RunFollowing(RunWatcher(Path(c.folder)), c.request_id)  # RunFolderError: not a run
        self._state = IDLE
        self._follow = following
        self._poll_run(force=True)

    def _unfollow(self) -> None:
        self._follow = None
        self.follow_changed.emit(FollowStatus(""))

    def _poll_run(self, force: bool = False) -> None:
        """Take in what the followed run wrote since the last look (four times a second)."""
        f = self._follow
        assert f is not None
        now = time.monotonic()
        if not force and now - f.polled < 0.25:
            return
        f.polled = now
        poll = f.watcher.poll()
        fresh_steps, fresh_evals = f.take(poll.records, poll.reset)
        if f.ended and (poll.reset or any(step["step"] > self._weights_step() for step in fresh_steps)):
            f.ended = ""  # resumed: it runs again
        installed = poll.checkpoint and self._read_followed_checkpoint(f)  # a new run: its history is the log
        if self.session is None or installed:
            pass
        elif poll.reset:  # a rewritten log (a resume dropped lines): drawn anew
            self.run_described.emit(self._run_info(self.session))
        elif fresh_steps or fresh_evals:
            self.metrics_logged.emit(
                MetricsBatch(self._run_id, StepColumns.of(fresh_steps), tuple(map(Evaluation.of, fresh_evals)))
            )
        f.probes.extend(poll.probes)
        if self.session is not None:
            self._emit_followed_probes(f)
        if force or now - f.said > 1.0:
            f.said = now
            self.follow_changed.emit(
                FollowStatus(
                    str(f.watcher.folder),
                    f.last_step,
                    now - f.watcher.last_change,
                    self.session is None,
                    f.watcher.tail.bad,
                    f.watcher.skipped_probes,
                    f.watcher.problem,
                    f.ended,
                )
            )

    def _read_followed_checkpoint(self, f: RunFollowing) -> bool:
        """The run's checkpoint is new or was replaced: its model becomes the one every panel shows. → whether it
        was installed as a new run (whose history, the log so far, the window then draws whole)."""
        from model.io.checkpoint import CheckpointError
        from model.session import Session

        try:
            session = Session.load(f.watcher.checkpoint_path, device=self._device.type)
        except (CheckpointError, OSError, ValueError, EOFError, RuntimeError):
            f.watcher.retry_checkpoint()  # being copied by a sync tool, say: read it at the next look
            return False
        f.ended = run_ending(session.notes, session.step)  # the trainer's last save says that the run ended
        if self.session is None or f.run_id != self._run_id:
            self._install(session, path=None, origin=f.request_id)  # a new run in the plots: the log so far
            f.run_id = self._run_id
            # (the probes are the trainer's; torch's optimizer imports, 1–4 s, are read aside: polling goes on)
            self._later = [self._describe_data, prepare_optimizers_aside]
            return True
        session.data_cache = self.session.data_cache  # the same run, newer weights: the panels ask again as they need
        self.session = session
        if self._decoder is not None:  # the sentence being stepped through stays, at its step, on the new weights
            self._decoder.session = session
        self.run_described.emit(self._run_info(session))
        self._publish_status()
        return False

    def _weights_step(self) -> int:
        return self.session.step if self.session is not None else 0

    def _emit_followed_probes(self, f: RunFollowing) -> None:
        while f.probes:
            inspection = f.watcher.read_probe(f.probes.pop(0))
            if inspection is None:
                continue  # thinned out by the trainer meanwhile, or damaged (counted, said in the status bar)
            entropy = {k: attention_entropy(getattr(inspection, k)) for k in ("encoder", "decoder_self", "cross")}
            target = None if not inspection.teacher_forced else "".join(inspection.out_tokens[:-1])
            self.probe_recorded.emit(
                ProbeSnapshot(self._run_id, inspection.step, inspection.source, target, inspection, entropy)
            )
