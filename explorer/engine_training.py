"""The engine's training handlers: start, pause, resume, stop, step N, pause at a step or a loss, new training
settings or data for the current model, the probe sentence; and one training step, whose failure alone pauses
training (state ``error``; Resume continues)."""

from __future__ import annotations

import math
from dataclasses import fields

from explorer.answers import ERROR, IDLE, PAUSED, TRAINING, EngineFailure
from explorer.commands import ChangeData, ChangeTraining, PauseAt, SetProbe, Step
from explorer.engine_base import EngineBase
from explorer.failures import failure_message
from model.training.config import TrainingDiverged


class TrainingHandlers(EngineBase):
    """Training the current model, one step at a time between commands (engine thread)."""

    def _start(self) -> None:
        self._need_session()
        self._steps_left = 0
        self._state = TRAINING
        self._publish_status()

    def _resume(self) -> None:
        """Continue after a pause or an error; an unfinished Step N keeps counting."""
        self._need_session()
        self._state = TRAINING
        self._publish_status()

    def _pause(self) -> None:
        if self._state in (TRAINING, ERROR) and self.session is not None:
            self._state = PAUSED
            self.session.pause_clock()
            self._flush_metrics(force=True)
            self._compare()
        self._publish_status()

    def _stop_training(self) -> None:
        self._steps_left = 0
        self._state = IDLE
        if self.session is not None:
            self.session.pause_clock()
        self._flush_metrics(force=True)
        self._publish_status()

    def _set_pause_at(self, c: PauseAt) -> None:
        """Pause by itself at a step or a loss; checked here, so that a bad value never reaches a training step."""
        finite = isinstance(c.loss, (int, float)) and math.isfinite(c.loss)
        if not (c.step is None or isinstance(c.step, int)) or not (c.loss is None or finite):
            raise ValueError(f"pause at: a whole step number and a finite loss are needed (got {c.step!r}, {c.loss!r})")
        self._pause_at = {"step": c.step, "loss": c.loss}

    def _step(self, c: Step) -> None:
        self._need_session()
        self._steps_left = max(1, c.n)
        self._state = TRAINING
        self._publish_status()

    def _change_training(self, c: ChangeTraining) -> None:
        """Change training settings of the current model (learning rate, batch size…)."""
        s = self._need_session()
        changes = {
            f.name: getattr(c.train, f.name)
            for f in fields(c.train)
            if getattr(c.train, f.name) != getattr(s.train_cfg, f.name)
        }
        if changes:
            s.with_train_config(**changes)
        self.run_described.emit(self._run_info(s))  # same run id: the schedule and label update
        self._publish_status()

    def _change_data(self, c: ChangeData) -> None:
        """Train the current model on other data; its weights, tokenizers and optimizer state stay."""
        s = self._need_session()
        from model.data import load_corpus
        from model.session import check_family

        check_family(s.model_cfg.arch, c.data, s.train_cfg)
        corpus = load_corpus(c.data, s.data_cache, self._data_progress(c.request_id, c.data))  # a DataError first
        s.with_data(c.data, corpus)
        self.run_described.emit(self._run_info(s))  # same run id: the label and the data rows update
        self._describe_data()
        if not self._probe.get("chosen"):  # the default probe is a sentence of the data: the new data's
            self._default_probe(s)
            self._record_probe()
        self._publish_status()

    def _set_probe(self, c: SetProbe) -> None:
        """Choose the probe sentence (and target) and how often it is re-run while training."""
        source = c.source.strip()
        before = (self._probe["source"], self._probe["target"])
        self._probe.update(source=source or None, target=c.target.strip() or None, every=c.every, chosen=bool(source))
        if not source and self.session is not None:
            self._default_probe(self.session)
        if (self._probe["source"], self._probe["target"]) != before:  # a new sentence starts a new timeline
            self._record_probe()

    def _train_guarded(self) -> None:
        """One training step; a failure of training itself pauses it (state ``error``: Resume continues)."""
        try:
            if self._fail_next_step is not None:
                message, self._fail_next_step = self._fail_next_step, None
                raise RuntimeError(message)
            self._train_one()
        except Exception as exc:  # noqa: BLE001 — becomes a message; the weights stay those of the last step
            self._training_failed(exc)

    def _training_failed(self, exc: Exception) -> None:
        message = failure_message(exc, training=True)
        self._state = ERROR
        self._steps_left = 0
        if self.session is not None:
            self.session.pause_clock()
        self._flush_metrics(force=True)
        if isinstance(exc, TrainingDiverged) and self.session is not None:
            self.run_described.emit(self._run_info(self.session))  # rolled back: the history up to the kept step
        self.failure_named.emit(EngineFailure(0, message))
        self._publish_status()

    def _train_one(self) -> None:
        session = self._need_session()
        self._train_companion()  # an experiment's other run: the pair takes turns
        for done in session.train_steps(1):
            self._pending_steps.append(done.to_dict())
            if done.evaluation is not None:
                self._pending_evals.append(done.evaluation)
        every = self._probe["every"]
        if every and session.step % every == 0:
            self._record_probe()
        at_step, at_loss = self._pause_at["step"], self._pause_at["loss"]
        loss = session.history.train["loss"][-1]
        if (at_step is not None and session.step >= at_step) or (at_loss is not None and loss <= at_loss):
            self._pause_at = {"step": None, "loss": None}  # once: Resume trains on
            self._state = PAUSED
            session.pause_clock()
            self._flush_metrics(force=True)
            self.paused_at.emit(session.step, loss)
            self._compare()
            self._publish_status()
            return
        if self._steps_left:
            self._steps_left -= 1
            if self._steps_left == 0:
                self._state = PAUSED
                session.pause_clock()
                self._flush_metrics(force=True)
                self._compare()  # an experiment: both runs where they stopped
                self._publish_status()
                return
        self._flush_metrics()
