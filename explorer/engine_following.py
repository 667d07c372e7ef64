"""Following a run another process writes (:class:`explorer.commands.Follow`): the engine reads the run's folder
four times a second and passes on what is new — its log as metrics, its checkpoint as the model every panel shows,
its probe snapshots — and how fresh it is."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from explorer.answers import IDLE, Evaluation, FollowStatus, MetricsBatch, ProbeSnapshot, ScalarsLogged
from explorer.commands import Follow
from explorer.engine_base import attention_entropy
from explorer.engine_files import FileHandlers
from explorer.run_following import RunFollowing
from explorer.window_quiet import WindowQuiet, wait_for
from model.interpret.head_functions import head_functions
from model.io.follow import RunWatcher, run_ending
from model.io.snapshots import StepColumns
from model.io.trainer_folder import CHECKPOINT, STATE, Scalars, has_weights

if TYPE_CHECKING:
    from model.training.device import ThreadGovernor


class FollowingHandlers(FileHandlers):
    """Follow a run, take in what it wrote, stop following (engine thread)."""

    _governor: ThreadGovernor | None = None  # PyTorch's threads fitted to the free cores (explorer.worker.Engine's)
    window_quiet: WindowQuiet | None = None  # whether the window has drawn what it was sent (explorer.window_quiet)

    def _start_following(self, c: Follow) -> None:
        following = RunFollowing(RunWatcher(Path(c.folder)), c.request_id)  # RunFolderError: not a run
        self._state = IDLE
        self._follow = following
        if c.probe.strip():  # the sentence whose attention is computed at each checkpoint (--probe)
            self._probe.update(source=c.probe.strip(), target=None, chosen=True)
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
        scalars, rewritten = f.take_scalars(poll)
        if scalars or rewritten:
            self._emit_scalars(f, scalars, rewritten)
        installed = poll.checkpoint and self._read_followed_checkpoint(f)  # a new run: its history is the log
        if installed:  # a new run in the plots: its scalars so far with it
            self._emit_scalars(f, f.all_scalars(), True)
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
        if installed:  # the panels draw the new run's probe on their timeline before the engine answers them
            wait_for(self.window_quiet)
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

        path = f.watcher.checkpoint_path
        new_run = self.session is None or f.run_id != self._run_id
        wait_for(self.window_quiet)  # the window draws the run's log first (the GIL is shared: explorer.window_quiet)
        self._fit_threads()
        try:
            session = Session.load(path, device=self._device.type)
        except (CheckpointError, OSError, ValueError, EOFError, RuntimeError) as exc:
            whole = path.is_dir() and (path / STATE).is_file() and has_weights(path)  # (not half deleted meanwhile)
            if whole and not isinstance(exc, OSError):  # a Trainer's checkpoint as it is: said, not tried again
                f.watcher.refuse_checkpoint(f"{path} cannot be opened: {exc}")
            else:  # being copied by a sync tool, or deleted under save_total_limit: the next look reads the newest
                f.watcher.retry_checkpoint()
            return False
        m = CHECKPOINT.fullmatch(path.name)
        if m and path.is_dir():
            session.step = int(m.group(1))  # a Trainer's checkpoint-N: its weights after N updates
        f.ended = run_ending(session.notes, session.step)  # the trainer's last save says that the run ended
        if new_run:
            self._install(session, path=None, origin=f.request_id)  # a new run in the plots: the log so far
            f.run_id = self._run_id
            # (the probes are the trainer's.) No optimizer is made here: the run trains in another process. Their
            # imports (1–4 s of holding the GIL, the window's too, in slices up to 180 ms) wait for a Start.
            self._later = [self._describe_data]
            wait_for(self.window_quiet)  # the panels take in the new model first
            self._probe_checkpoint(f)
            return True
        assert self.session is not None  # (not a new run)
        session.data_cache = self.session.data_cache  # the same run, newer weights: the panels ask again as they need
        self.session = session
        if self._decoder is not None:  # the sentence being stepped through stays, at its step, on the new weights
            self._decoder.session = session
        self.run_described.emit(self._run_info(session))
        self._publish_status()
        if f.watcher.computes_probes:  # the panels show the newer weights before the probe is computed on them
            wait_for(self.window_quiet)
        self._probe_checkpoint(f)
        return False

    def _probe_checkpoint(self, f: RunFollowing) -> None:
        """A run of checkpoint-N folders (a Trainer's, a RunWriter loop's) writes no probe snapshots: the probe's
        attention on the checkpoint just read, for the timeline. The probe is the one chosen (--probe, the Attention
        panel), else the sentence in the Decoding panel, else the data's first test sentence."""
        if not f.watcher.computes_probes or self.session is None:
            return
        self._fit_threads()
        settings = self._decoder.settings if self._decoder is not None else None
        if self._probe.get("chosen"):
            pass
        elif settings is not None and settings.text.strip():
            target = "" if self.session.model_cfg.single_stream else None
            self._probe.update(source=settings.text.strip(), target=target)
        else:
            self._default_probe(self.session)
        self._record_probe()

    def _fit_threads(self) -> None:
        """PyTorch's threads fitted to the cores other programs leave free now, before one of the long computations
        of a poll (a checkpoint read, its probe): the engine's loop does it between polls, but the first checkpoint
        and its probe come in one pass, and with a thread too many each operation waits for a helper that shares
        its core with a busy program (beside one, the first checkpoint's probe took 19 s, the next one's 1.4 s)."""
        if self._governor is not None:
            self._governor.apply()

    def _emit_scalars(self, f: RunFollowing, scalars: Scalars, reset: bool) -> None:
        tags = tuple(scalars)
        self.scalars_logged.emit(
            ScalarsLogged(
                str(f.watcher.folder),
                reset,
                tags,
                tuple(np.asarray(scalars[t][0], dtype=np.int64) for t in tags),
                tuple(np.asarray(scalars[t][1], dtype=np.float64) for t in tags),
            )
        )

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
