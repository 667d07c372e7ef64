"""The engine's training handlers (explorer/engine_training.py): start, pause, resume, stop, step N, pause at a step
or a loss, new training settings, the probe sentence, and one training step whose failure alone pauses training.
First the handlers driven directly on this thread, then the same seen through the window."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

pytest.importorskip("pytestqt")

from explorer.answers import ERROR, IDLE, PAUSED, TRAINING, EngineFailure, MetricsBatch, ProbeSnapshot  # noqa: E402
from explorer.commands import ChangeTraining, FailOnPurpose, PauseAt, SetProbe, Step  # noqa: E402
from explorer.engine_training import TrainingHandlers  # noqa: E402
from explorer.failures import NO_MODEL, RefusedRequest  # noqa: E402
from tests.copy_task_window import click, small_copy_task, steps_in_plot, train_steps  # noqa: E402


class Heard:
    """The training handlers on this thread (their signals arrive at once), and what they said."""

    def __init__(self, session=None) -> None:
        self.engine = TrainingHandlers()
        self.engine.session = session
        self.states: list[str] = []
        self.batches: list[MetricsBatch] = []
        self.failures: list[EngineFailure] = []
        self.paused_at: list[tuple[int, float]] = []
        self.runs: list = []
        self.probes: list[ProbeSnapshot] = []
        e = self.engine
        e.status_changed.connect(lambda s: self.states.append(s.state))
        e.metrics_logged.connect(self.batches.append)
        e.failure_named.connect(self.failures.append)
        e.paused_at.connect(lambda step, loss: self.paused_at.append((step, loss)))
        e.run_described.connect(self.runs.append)
        e.probe_recorded.connect(self.probes.append)

    def steps(self) -> list[int]:
        return [int(s) for b in self.batches for s in b.steps.step]


@pytest.fixture
def heard(qtbot, copy_session_factory):
    return Heard(copy_session_factory())


def test_step_n_trains_n_updates_then_pauses(heard):
    e = heard.engine
    e._step(Step(n=3))
    assert e._state == TRAINING and heard.states == [TRAINING]
    for _ in range(3):
        e._train_guarded()
    assert e._state == PAUSED and e.session.step == 3 and heard.states[-1] == PAUSED
    assert heard.steps() == [1, 2, 3]  # every step sent by the time it pauses
    e._resume()  # no Step N left: it trains on
    e._train_guarded()
    assert e._state == TRAINING and e.session.step == 4


def test_pause_resume_and_stop(heard):
    e = heard.engine
    e._pause()  # nothing trains: nothing to pause
    assert e._state == IDLE
    e._start()
    e._train_guarded()
    e._pause()
    assert e._state == PAUSED and heard.states[-1] == PAUSED
    e._resume()
    assert e._state == TRAINING
    e._step(Step(n=5))
    e._train_guarded()
    e._stop_training()  # the Step N left is dropped
    assert e._state == IDLE and e._steps_left == 0 and e.session.step == 2


def test_commands_that_train_need_a_model(qtbot):
    e = Heard().engine
    for command in (e._start, e._resume, lambda: e._step(Step(n=2))):
        with pytest.raises(RefusedRequest) as refused:
            command()
        assert refused.value.message.text == NO_MODEL
    assert e._state == IDLE


def test_pause_at_a_step_fires_once(heard):
    e = heard.engine
    e._set_pause_at(PauseAt(step=2))
    e._start()
    e._train_guarded()
    assert e._state == TRAINING
    e._train_guarded()
    loss = e.session.history.train["loss"][-1]
    assert e._state == PAUSED and heard.paused_at == [(2, loss)]
    e._resume()
    e._train_guarded()  # once: Resume trains on
    assert e._state == TRAINING and heard.paused_at == [(2, loss)]


def test_pause_at_a_loss_is_reached_when_the_loss_falls_to_it(heard):
    e = heard.engine
    with pytest.raises(ValueError, match="finite loss"):
        e._set_pause_at(PauseAt(loss=math.inf))
    e._set_pause_at(PauseAt(loss=1e9))  # any loss of a first step is at or below it
    e._start()
    e._train_guarded()
    assert e._state == PAUSED and [step for step, _ in heard.paused_at] == [1]


@pytest.mark.parametrize("step, loss", [(2.5, None), ("3", None), (None, math.nan), (None, "low")])
def test_pause_at_refuses_what_is_not_a_step_or_a_finite_loss(qtbot, step, loss):
    e = Heard().engine
    with pytest.raises(ValueError, match="whole step number and a finite loss"):
        e._set_pause_at(PauseAt(step=step, loss=loss))
    assert e._pause_at == {"step": None, "loss": None}


def test_a_failed_step_pauses_with_an_error_and_keeps_the_weights(heard):
    e = heard.engine
    e._start()
    e._train_guarded()
    e._fail_next_step = "simulated failure"  # what FailOnPurpose(in_training=True) asks for
    e._step(Step(n=4))
    e._train_guarded()
    assert e._state == ERROR and e.session.step == 1 and e._steps_left == 0
    [failure] = heard.failures
    assert failure.request_id == 0 and "simulated failure" in failure.message.worded()
    assert "nothing was lost" in failure.message.worded()
    e._resume()  # Resume continues
    e._train_guarded()
    assert e._state == TRAINING and e.session.step == 2


def test_new_training_settings_keep_the_run_and_its_weights(heard):
    e = heard.engine
    e._run_id = 4
    e._start()
    e._train_guarded()
    weights = {k: v.clone() for k, v in e.session.model.state_dict().items()}
    train = e.session.train_cfg
    e._change_training(ChangeTraining(replace(train, label_smoothing=0.0, batch_size=7)))
    assert (e.session.train_cfg.label_smoothing, e.session.train_cfg.batch_size) == (0.0, 7)
    [info] = heard.runs
    assert info.run_id == 4 and "ls 0 " in info.label and info.train_config.batch_size == 7
    assert all((v == weights[k]).all() for k, v in e.session.model.state_dict().items())


def test_the_probe_sentence_chosen_and_back_to_the_default(heard):
    e = heard.engine
    e._set_probe(SetProbe(source=" 3 1 4 ", target="3 1 4", every=2))
    [chosen] = heard.probes
    assert (chosen.source, chosen.target, chosen.step) == ("3 1 4", "3 1 4", 0)
    assert set(chosen.entropy) == {"encoder", "decoder_self", "cross"}
    e._set_probe(SetProbe(source="3 1 4", target="3 1 4", every=2))  # the same sentence: no new timeline
    assert len(heard.probes) == 1
    e._start()
    e._train_guarded()
    e._train_guarded()  # every 2 steps
    assert [p.step for p in heard.probes] == [0, 2]
    e._set_probe(SetProbe(source=""))  # the default again: the first test sentence and its reference
    first = e.session.corpus.test[0]
    assert (heard.probes[-1].source, heard.probes[-1].target) == first


# -- through the window --------------------------------------------------------------------------------------------
def test_train_pause_resume_stop(make_window, qtbot):
    window = make_window()
    small_copy_task(window)
    click(qtbot, window, "train_start_button")
    qtbot.waitUntil(lambda: steps_in_plot(window) >= 5, timeout=20000)
    assert window.status.state == "training" and window.state_label.text() == "training"
    seen = steps_in_plot(window)
    qtbot.waitUntil(lambda: steps_in_plot(window) > seen + 5, timeout=10000)  # the curve keeps growing
    window.training.redraw()
    x, y = window.training.plots["loss_plot"].shown(window.status.run_id, "train")
    assert len(x) > seen and (y > 0).all()

    click(qtbot, window, "train_pause_button")
    qtbot.waitUntil(lambda: window.status.state == "paused", timeout=5000)
    paused_at = window.status.step
    qtbot.wait(500)
    assert window.status.step == paused_at and steps_in_plot(window) == paused_at  # nothing arrives while paused
    assert window.training.pause_button.text() == "Resume"

    click(qtbot, window, "train_pause_button")  # Resume
    qtbot.waitUntil(lambda: window.status.step > paused_at + 3, timeout=10000)
    click(qtbot, window, "train_stop_button")
    qtbot.waitUntil(lambda: window.status.state == "idle", timeout=5000)
    stopped_at = window.status.step
    qtbot.wait(300)
    assert window.status.step == stopped_at
    assert window.loss_label.text().startswith("loss ")


def test_step_n_and_evaluation_points(make_window, qtbot):
    window = make_window()
    small_copy_task(window)
    train_steps(window, qtbot, 50)
    qtbot.wait(200)
    run = window.status.run_id
    assert steps_in_plot(window) == 50
    evals_x, _ = window.training.plots["loss_plot"].data(run, "valid")
    assert list(evals_x) == [25, 50]
    em_x, em_y = window.training.plots["quality_plot"].data(run, "exact_match")
    assert list(em_x) == [25, 50] and all(0 <= v <= 100 for v in em_y)
    sched_x, sched_y = window.training.plots["lr_plot"].data(run, "schedule")
    assert len(sched_x) >= 2000  # drawn ahead of time
    used_x, used_y = window.training.plots["lr_plot"].data(run, "lr")
    assert used_y == pytest.approx(sched_y[:50])
    assert window.training.step_marker.value() == 50


def test_engine_error_becomes_a_message_and_the_window_survives(make_window, qtbot):
    window = make_window()
    small_copy_task(window)
    click(qtbot, window, "train_start_button")
    qtbot.waitUntil(lambda: window.status.step > 3, timeout=20000)
    window.engine.submit(FailOnPurpose(message="simulated failure", in_training=True))
    qtbot.waitUntil(lambda: window.message_bar.showing, timeout=5000)
    assert "simulated failure" in window.message_bar.label.text()
    assert "nothing was lost" in window.message_bar.label.text()
    qtbot.waitUntil(lambda: window.status.state == "error", timeout=5000)
    step = window.status.step
    click(qtbot, window, "train_pause_button")  # "Resume" after an error
    qtbot.waitUntil(lambda: window.status.step > step + 3, timeout=10000)
    click(qtbot, window, "train_stop_button")


def test_a_diverging_run_is_stopped_with_advice(make_window, qtbot):
    window = make_window()
    small_copy_task(window)
    form = window.training.form
    form.schedule.setCurrentText("constant")
    form.warmup.setValue(0)
    form.rate.setValue(100.0)
    form.clip.setValue(0.0)
    click(qtbot, window, "train_start_button")
    qtbot.waitUntil(lambda: window.message_bar.showing, timeout=30000)
    text = window.message_bar.label.text()
    assert "Training stopped at step" in text and "learning rate" in text
    # the engine names the failure, then sends its state: a separate event, that may come a turn later
    qtbot.waitUntil(lambda: window.status.state == "error", timeout=5000)
    qtbot.wait(200)
    shown, _ = window.training.plots["loss_plot"].data(window.training.current.run_id, "train")
    assert len(shown) == 0 or shown[-1] <= window.status.step  # the curve ends where the kept weights are


def test_step_n_paused_and_resumed_still_stops_after_n(make_window, qtbot):
    window = make_window()
    small_copy_task(window)
    window.training.step_n.setValue(40)
    click(qtbot, window, "train_step_n_button")
    qtbot.waitUntil(lambda: window.status.step >= 5, timeout=20000)
    click(qtbot, window, "train_pause_button")
    qtbot.waitUntil(lambda: window.status.state == "paused", timeout=5000)
    assert window.status.step < 40
    click(qtbot, window, "train_pause_button")  # Resume: the unfinished Step 40 goes on…
    qtbot.waitUntil(lambda: window.status.state == "paused" and window.status.step == 40, timeout=30000)
    qtbot.wait(300)
    assert window.status.step == 40  # …and stops at 40
