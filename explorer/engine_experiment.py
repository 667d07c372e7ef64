"""An experiment in the window (:class:`explorer.commands.RunExperiment`): a bundled variant and its baseline
(:class:`model.experiments.paired.PairedRun`) live in the engine together. Each is a run of its own (its run id,
its curves); the one looked inside (the variant at first, :class:`explorer.commands.LookInside` swaps) is the model
every panel shows, and both train in turns, one update each, on the same batches. At every probe snapshot the pair
is compared (:class:`explorer.answers.ExperimentCompared`): the experiment's figure for each, the probe sentence's
attention in each at the same step, and the same held-out sentences' outputs."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from explorer.answers import TRAINING, EngineFailure, ExperimentCompared, ExperimentInfo, RunInfo
from explorer.commands import LookInside, RunExperiment
from explorer.engine_base import run_info_of
from explorer.engine_files import FileHandlers
from explorer.failures import failure_message
from model.training.config import TrainingDiverged

if TYPE_CHECKING:
    from model.experiments.paired import PairedRun
    from model.session import Session

OUTPUTS = 4  # held-out sentences compared
EVAL_EVERY = 50  # each run's held-out scores, drawn as curves side by side


class ExperimentHandlers(FileHandlers):
    """Run an experiment, look inside either of its runs, train the run not shown, compare them (engine
    thread)."""

    def _experiment(self, c: RunExperiment | LookInside) -> None:
        match c:
            case RunExperiment():
                self._run_experiment(c)
            case LookInside():
                self._look_inside(c)

    def _run_experiment(self, c: RunExperiment) -> None:
        """Build both runs (a ValueError for an unknown variant), show the variant, and train the pair for the
        variant's number of updates (then pause: Resume trains on)."""
        from model.experiments.paired import PairedRun
        from model.experiments.variants import variant_named

        variant = variant_named(c.variant)
        pair = PairedRun(variant, preset=c.preset, device=self._device.type, eval_every=EVAL_EVERY)
        self._pair, self._pair_stopped = pair, set()
        self._run_id += 1  # the baseline's run id; the variant takes the next one as it is installed
        self._pair_ids = {"baseline": self._run_id, "variant": self._run_id + 1}
        self._install(pair.changed, path=None, origin=c.request_id)
        self._default_probe(pair.changed)  # (unless the person chose one) the comparison's sentence from the start
        self._steps_left = c.steps or variant.steps
        self._state = TRAINING
        self._publish_status()

    def _look_inside(self, c: LookInside) -> None:
        """Every panel shows the other run of the pair (its run id: the panels take it as the model shown)."""
        pair = self._pair
        if pair is None:
            raise ValueError("no experiment is open: Experiments → run one first")
        session = pair.sessions[c.run]
        if session is self.session:
            return
        self._flush_metrics(force=True)  # the steps so far belong to the run they were trained in
        self.session, self._run_id = session, self._pair_ids[c.run]
        self._decoder = self._lanes = None
        self._ablation = ()
        self._probe_step = -1
        self.run_described.emit(self._run_info(session))
        self._record_probe()
        self._publish_status()

    # -- what the window is told ------------------------------------------------------------------------------------
    def _run_info(self, s: Session) -> RunInfo:
        """A run of the experiment says which it is and carries the other run (its curves, its label)."""
        info = run_info_of(s, self._run_id, self._follow)
        pair = self._pair
        if pair is None or not self._in_pair(s):
            return info
        run = "variant" if s is pair.changed else "baseline"
        other = "baseline" if run == "variant" else "variant"
        other_info = replace(
            run_info_of(pair.sessions[other], self._pair_ids[other]), experiment=self._experiment_info(other)
        )
        return replace(info, experiment=replace(self._experiment_info(run), other=other_info))

    def _experiment_info(self, run: str) -> ExperimentInfo:
        assert self._pair is not None
        v = self._pair.variant
        return ExperimentInfo(
            v.name,
            v.title,
            v.title_zh,
            v.expect,
            v.expect_zh,
            v.measure,
            v.predicted,
            v.steps,
            "variant" if run == "variant" else "baseline",
            (self._pair_ids["baseline"], self._pair_ids["variant"]),
        )

    # -- training both ------------------------------------------------------------------------------------------------
    def _train_companion(self) -> None:
        """One update of the run not shown (before the shown run's: the pair takes turns). A run that diverges
        stops there (said once); the other trains on."""
        pair = self._pair
        if pair is None:
            return
        run = "baseline" if self.session is pair.changed else "variant"
        if run in self._pair_stopped:
            return
        session = pair.sessions[run]
        try:
            done = session.train_steps(1)
        except TrainingDiverged as exc:
            self._pair_stopped.add(run)
            self.failure_named.emit(EngineFailure(0, failure_message(exc, training=True)))
            return
        pending = self._companion_pending.setdefault(self._pair_ids[run], ([], []))
        for step in done:
            pending[0].append(step.to_dict())
            if step.evaluation is not None:
                pending[1].append(step.evaluation)

    def _compare(self) -> None:
        """Both runs at this step, side by side (after each probe snapshot of the shown run)."""
        pair = self._pair
        if pair is None or self.session is None or not self._in_pair(self.session):
            return
        source, target = self._probe.get("source"), self._probe.get("target")
        inspections = None
        if source:
            try:
                inspections = (pair.baseline.inspect(source, target), pair.changed.inspect(source, target))
            except ValueError:
                inspections = None
        measure = (_measured(pair, "baseline"), _measured(pair, "variant"))
        self.experiment_compared.emit(
            ExperimentCompared(
                (self._pair_ids["baseline"], self._pair_ids["variant"]),
                self.session.step,
                measure,
                inspections,
                tuple(pair.outputs(OUTPUTS)),
            )
        )


def _measured(pair: PairedRun, run: str) -> float:
    try:
        return pair.measure(run)
    except (ValueError, RuntimeError):
        return math.nan
