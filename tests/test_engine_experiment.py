"""An experiment in the engine (explorer/engine_experiment.py), driven without a window: the variant and its baseline
train in turns as two runs, each exactly as the headless pair trains them (the same batches and initial weights:
their losses step by step equal :class:`model.experiments.paired.PairedRun`'s); each is its own run for the curves;
the comparison at a pause holds both runs' figures, attention and outputs; either run can be looked inside while both
train on; another model ends the experiment; an unknown experiment is refused and changes nothing."""

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer import commands as cmd  # noqa: E402
from explorer.answers import EngineStatus, ExperimentCompared, MetricsBatch, ProbeSnapshot, RunInfo  # noqa: E402
from explorer.worker import Engine  # noqa: E402
from model.experiments.paired import PairedRun  # noqa: E402
from model.experiments.variants import variant_named  # noqa: E402
from tests.test_worker import _copy_spec  # noqa: E402

STEPS = 12


class Seen:
    def __init__(self, engine: Engine) -> None:
        self.got: list[object] = []
        for signal in (
            engine.status_changed,
            engine.run_described,
            engine.metrics_logged,
            engine.experiment_compared,
            engine.probe_recorded,
        ):
            signal.connect(self.got.append)
        self.failed: list[tuple[int, str]] = []
        engine.engine_failed.connect(lambda rid, message: self.failed.append((rid, message)))

    def of(self, kind) -> list:
        return [g for g in self.got if isinstance(g, kind)]

    def losses(self, run_id: int) -> np.ndarray:
        batches = [b for b in self.of(MetricsBatch) if b.run_id == run_id and len(b.steps)]
        return np.concatenate([b.steps.loss for b in batches]) if batches else np.zeros(0)

    def paused_at(self, step: int) -> bool:
        return any(s.state == "paused" and s.step == step for s in self.of(EngineStatus))


@pytest.fixture
def engine(qtbot):
    engine = Engine("cpu", threads=1)
    seen = Seen(engine)
    engine.start()
    try:
        yield engine, seen
    finally:
        engine.shutdown(None, timeout_ms=30000)


def test_both_runs_train_in_turns_exactly_as_the_headless_pair(qtbot, engine):
    engine, seen = engine
    engine.submit(cmd.RunExperiment("no_positional"))
    engine.submit(cmd.Step(n=STEPS))  # (the experiment would train for its 600 updates)
    qtbot.waitUntil(lambda: seen.paused_at(STEPS), timeout=120000)
    info = next(i for i in seen.of(RunInfo) if i.experiment is not None)
    e = info.experiment
    assert (e.name, e.run, e.predicted) == ("no_positional", "variant", "lower") and e.steps == 600
    baseline_id, variant_id = e.run_ids
    assert info.run_id == variant_id and e.other.run_id == baseline_id and e.other.experiment.run == "baseline"
    assert info.model_config.positional == "none" and e.other.model_config.positional == "sinusoidal"

    pair = PairedRun(variant_named("no_positional"), eval_every=50)
    pair.train(STEPS)
    np.testing.assert_allclose(seen.losses(baseline_id), pair.baseline.history.train["loss"], rtol=1e-5)
    np.testing.assert_allclose(seen.losses(variant_id), pair.changed.history.train["loss"], rtol=1e-5)
    assert not np.allclose(seen.losses(baseline_id), seen.losses(variant_id))  # the change shows in the loss

    qtbot.waitUntil(lambda: any(c.step == STEPS for c in seen.of(ExperimentCompared)), timeout=30000)
    compared = seen.of(ExperimentCompared)[-1]  # both where they paused
    assert compared.run_ids == (baseline_id, variant_id)
    assert compared.measure == pytest.approx((pair.measure("baseline"), pair.measure("variant")), nan_ok=True)
    assert compared.outputs == tuple(pair.outputs(len(compared.outputs))) and len(compared.outputs) == 4
    probe = next(p for p in reversed(seen.of(ProbeSnapshot)))
    assert compared.inspections is not None
    base, variant = compared.inspections
    want = pair.changed.inspect(probe.source, probe.target)
    np.testing.assert_allclose(variant.cross, want.cross, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(base.cross, pair.baseline.inspect(probe.source, probe.target).cross, atol=1e-6)


def test_either_run_is_looked_inside_while_both_train_on(qtbot, engine):
    engine, seen = engine
    engine.submit(cmd.RunExperiment("one_head"))
    engine.submit(cmd.Step(n=3))
    qtbot.waitUntil(lambda: seen.paused_at(3), timeout=120000)
    baseline_id, variant_id = next(i for i in seen.of(RunInfo) if i.experiment).experiment.run_ids
    engine.submit(cmd.LookInside("baseline"))
    qtbot.waitUntil(lambda: seen.of(RunInfo)[-1].run_id == baseline_id, timeout=30000)
    shown = seen.of(RunInfo)[-1]
    assert shown.experiment.run == "baseline" and shown.experiment.other.run_id == variant_id
    assert shown.model_config.n_heads != shown.experiment.other.model_config.n_heads  # one head vs h heads
    engine.submit(cmd.Step(n=2))
    qtbot.waitUntil(lambda: seen.paused_at(5), timeout=60000)
    assert len(seen.losses(baseline_id)) == len(seen.losses(variant_id)) == 5
    assert seen.of(EngineStatus)[-1].run_id == baseline_id
    # another model: the experiment is over, and a LookInside is refused
    engine.submit(cmd.NewModel(_copy_spec()))
    qtbot.waitUntil(lambda: seen.of(RunInfo)[-1].run_id > variant_id, timeout=60000)
    assert seen.of(RunInfo)[-1].experiment is None
    rid = engine.submit(cmd.LookInside("variant"))
    qtbot.waitUntil(lambda: any(r == rid for r, _ in seen.failed), timeout=30000)


def test_an_unknown_experiment_is_refused_and_changes_nothing(qtbot, engine):
    engine, seen = engine
    engine.submit(cmd.NewModel(_copy_spec()))
    qtbot.waitUntil(lambda: bool(seen.of(RunInfo)), timeout=60000)
    rid = engine.submit(cmd.RunExperiment("no_such_thing"))
    qtbot.waitUntil(lambda: any(r == rid for r, _ in seen.failed), timeout=30000)
    message = next(m for r, m in seen.failed if r == rid)
    assert "no_such_thing" in message and "no_positional" in message  # what exists, to choose from
    assert len(seen.of(RunInfo)) == 1 and seen.of(EngineStatus)[-1].state == "idle"
