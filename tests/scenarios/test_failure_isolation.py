"""A failed request never stops training: every kind of command is made to fail while a model trains, and the
engine answers that request with a message and keeps training; only a failing training step pauses it."""

import inspect

import pytest

pytest.importorskip("pytestqt")

from explorer import commands as cmd  # noqa: E402
from explorer.answers import EngineStatus, MetricsBatch  # noqa: E402
from explorer.commands import NewModelSpec  # noqa: E402
from explorer.worker import Engine  # noqa: E402
from model.data import DataSpec  # noqa: E402
from model.data.tokenization import TokenizerSpec  # noqa: E402
from model.io.snapshots import DecodeSettings  # noqa: E402
from model.training.trainer import train_config_for  # noqa: E402


def _spec(data: DataSpec | None = None):
    d = data or DataSpec(task="copy", n_train=300, n_valid=20, n_test=20, length=6, min_length=3, alphabet=6)
    return NewModelSpec(d, "tiny", {}, train_config_for("tiny", eval_every=0, batch_size=16), TokenizerSpec("word"))


# each command made to fail: by a request that cannot be served, or (for commands whose request cannot be wrong)
# by its handler raising an unexpected error — the worst kind
UNEXPECTED = RuntimeError("a handler that breaks")
FAILING: dict[type, tuple[cmd.Command, str | None]] = {  # command → (the request, the handler made to raise)
    cmd.NewModel: (cmd.NewModel(_spec(DataSpec(task=None, path="/no/such/pairs.tsv"))), None),
    cmd.Load: (cmd.Load("/no/such/model.ckpt"), None),
    cmd.Save: (cmd.Save("/proc/no-such-folder/model.ckpt"), None),
    cmd.Follow: (cmd.Follow("/no/such/run"), None),
    cmd.Start: (cmd.Start(), "_start"),
    cmd.Resume: (cmd.Resume(), "_resume"),
    cmd.Pause: (cmd.Pause(), "_pause"),
    cmd.Stop: (cmd.Stop(), "_stop_training"),
    cmd.Step: (cmd.Step(n=2), "_step"),
    cmd.ChangeTraining: (cmd.ChangeTraining(train_config_for("tiny", eval_every=0, batch_size=16)), "_change_training"),
    cmd.ChangeData: (cmd.ChangeData(DataSpec(task=None, path="/no/such/pairs.tsv")), None),
    cmd.PauseAt: (cmd.PauseAt(loss=float("nan")), None),
    cmd.Inspect: (cmd.Inspect(source="1 2 3"), "_inspect"),
    cmd.Explain: (cmd.Explain(source="1 2 3", target_ids=None, kind="cross", layer=99, head=0), None),
    cmd.ExplainWorkedExample: (cmd.ExplainWorkedExample(), "_explain_worked_example"),
    cmd.Positional: (cmd.Positional(), "_positional"),
    cmd.Decode: (cmd.Decode("step"), None),  # before any sentence was started
    cmd.DecodeLanes: (cmd.DecodeLanes("step"), None),  # before any lanes were started
    cmd.FillMask: (cmd.FillMask(text="1 <mask> 3"), None),  # an encoder–decoder has no masked-LM head
    cmd.SetProbe: (cmd.SetProbe(source="1 2 3"), "_set_probe"),
    cmd.SampleSentence: (cmd.SampleSentence(), "_sample_sentence"),
    cmd.SetInt8: (cmd.SetInt8(on=True), "_set_int8"),
    cmd.Attribute: (cmd.Attribute(source="1 2 3", steps=0), None),  # no integration steps
    cmd.LogitLensOf: (cmd.LogitLensOf(source="1 2 3"), "_logit_lens"),
    cmd.SetAblation: (cmd.SetAblation(heads=(("cross", 99, 0),)), None),  # no such layer
    cmd.WatchLens: (cmd.WatchLens(on=True), "_watch_lens"),
    cmd.HeadImportanceOf: (cmd.HeadImportanceOf(sentences=4), "_head_importance"),
    cmd.RunExperiment: (cmd.RunExperiment("no_such_experiment"), None),
    cmd.LookInside: (cmd.LookInside("baseline"), None),  # no experiment is open
    cmd.FailOnPurpose: (cmd.FailOnPurpose(message="a deliberate failure"), None),
}


def test_every_command_class_has_a_failure_here():
    members = [c for _, c in inspect.getmembers(cmd, inspect.isclass) if issubclass(c, cmd.Command)]
    classes = set(members) - {cmd.Command, cmd.Shutdown}
    assert classes == set(FAILING)


class Answers:
    def __init__(self, engine: Engine) -> None:
        self.failed: dict[int, str] = {}
        self.states: list[EngineStatus] = []
        self.steps = 0
        engine.engine_failed.connect(lambda rid, message: self.failed.__setitem__(rid, message))
        engine.status_changed.connect(self.states.append)
        engine.metrics_logged.connect(self._on_metrics)

    def _on_metrics(self, batch: MetricsBatch) -> None:
        self.steps = max(self.steps, int(batch.steps.step[-1]) if len(batch.steps.step) else 0)


def _raising(*args, **kwargs):
    raise UNEXPECTED


@pytest.fixture
def training(qtbot):
    """An engine training a tiny copy model, and what it answers."""
    engine = Engine("cpu", threads=1)
    seen = Answers(engine)
    engine.start()
    engine.submit(cmd.NewModel(_spec()))
    engine.submit(cmd.Start())
    try:
        yield engine, seen
    finally:
        engine.shutdown(None, timeout_ms=30000)


def test_a_failing_request_of_every_kind_leaves_training_going(qtbot, training):
    engine, seen = training
    qtbot.waitUntil(lambda: seen.steps >= 3, timeout=30000)
    for kind, (request, handler) in FAILING.items():
        if handler is not None:
            setattr(engine, handler, _raising)  # the engine thread looks its handlers up on the instance
        before = seen.steps
        rid = engine.submit(request)
        qtbot.waitUntil(lambda rid=rid: rid in seen.failed, timeout=30000)
        if handler is not None:
            delattr(engine, handler)
        assert seen.failed[rid], kind  # answered with a message
        assert "Traceback" not in seen.failed[rid] and 'File "' not in seen.failed[rid], kind
        qtbot.waitUntil(lambda before=before: seen.steps >= before + 3, timeout=30000)  # training goes on
        assert seen.states[-1].state == "training", kind
    assert all(s.state != "error" for s in seen.states)
    unexpected = seen.failed[rid]  # FailOnPurpose: an unexpected error, said as one, that stopped nothing
    assert "a deliberate failure" in unexpected and "not carried out" in unexpected


def test_requests_flooding_in_before_a_sentence_leave_training_going(qtbot, training):
    """As measured: Decode(step) before any sentence was started, five requests every 50 ms, while a model trains
    (it put the engine in ``error`` at step 1 for good)."""
    engine, seen = training
    for _ in range(10):
        for _ in range(5):
            engine.submit(cmd.Decode("step"))
        qtbot.wait(50)
    qtbot.waitUntil(lambda: len(seen.failed) >= 10 and seen.steps >= 20, timeout=30000)
    assert seen.states[-1].state == "training" and all(s.state != "error" for s in seen.states)
    assert set(seen.failed.values()) == {"Type a sentence and press Enter to start decoding."}
    started = engine.submit(cmd.Decode("start", DecodeSettings(text="1 2 3")))
    engine.submit(cmd.Decode("step"))
    qtbot.wait(300)
    assert started not in seen.failed and seen.states[-1].state == "training"


def test_only_a_failing_training_step_pauses_training_and_resume_continues(qtbot, training):
    engine, seen = training
    qtbot.waitUntil(lambda: seen.steps >= 3, timeout=30000)
    engine.submit(cmd.FailOnPurpose(message="the step broke", in_training=True))
    # the status may come straight from the engine thread, the message by way of the window's: wait for both
    qtbot.waitUntil(lambda: seen.states[-1].state == "error" and 0 in seen.failed, timeout=30000)
    message = seen.failed[0]  # a training failure answers no request
    assert "the step broke" in message and "Training is paused" in message and "Traceback" not in message
    step = seen.states[-1].step
    engine.submit(cmd.Resume())
    qtbot.waitUntil(lambda: seen.steps >= step + 3 and seen.states[-1].state == "training", timeout=30000)


def test_closing_never_waits_for_the_engines_own_preparations(qtbot, monkeypatch):
    """The idle engine loads what training will need (torch's optimizer imports, 1–4 s) on a thread of its
    own: a window closed meanwhile shuts its engine down at once (it waited for the imports: 2.4–5.0 s)."""
    import threading

    import explorer.engine_loading as loading
    import explorer.worker as worker

    began, release = threading.Event(), threading.Event()

    def slow_preparation():
        began.set()
        release.wait(60)

    monkeypatch.setattr(loading, "prepare_optimizers", slow_preparation)
    monkeypatch.setattr(loading, "_preparing", None)
    monkeypatch.setattr(worker, "QUIET_S", 0.01)
    engine = Engine("cpu", threads=1)
    engine.start()
    try:
        qtbot.waitUntil(began.is_set, timeout=30000)  # (no model: the engine prepares while the person chooses)
        assert engine.shutdown(None, timeout_ms=20000)  # while the preparation is still going on
        assert engine.isFinished() and not release.is_set()
    finally:
        release.set()
        engine.wait()
