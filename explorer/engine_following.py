"""Following a run another process writes (:class:`explorer.commands.Follow`): the engine reads the run's folder
four times a second and passes on what is new — its log as metrics, its checkpoint as the model every panel shows,
its probe snapshots — and how fresh it is."""

from __future__ import annotations

import time
from pathlib import Path

from explorer.answers import IDLE, Evaluation, FollowStatus, MetricsBatch, ProbeSnapshot
from explorer.commands import Follow
from explorer.engine_base import attention_entropy
from explorer.engine_files import FileHandlers
from explorer.engine_loading import prepare_optimizers_aside
from explorer.run_following import RunFollowing
from model.interpret.head_functions import head_functions
from model.io.follow import RunWatcher, run_ending
from model.io.snapshots import StepColumns


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
                ProbeSnapshot(
                    self._run_id,
                    inspection.step,
                    inspection.source,
                    target,
                    inspection,
                    entropy,
                    head_functions(inspection),
                )
            )
