"""A new model's arrival at the panels (explorer/run_arrival.py): those on screen at once, those behind another tab
one per turn of the event loop, in order, what comes after every panel last; a newer model drops what waited."""

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QCoreApplication, QObject  # noqa: E402

from explorer.run_arrival import RunArrival  # noqa: E402


@pytest.fixture
def arrival(qtbot):
    parent = QObject()
    looked_at = {"training", "attention"}
    a = RunArrival(parent, lambda key: key in looked_at)
    a.looked_at, a.parent_ = looked_at, parent
    return a


def steps(done: list, model: str, keys=("training", "decoding", "attention", "map", "why")):
    return [(key, lambda key=key: done.append(f"{key}:{model}")) for key in keys]


def test_the_panels_on_screen_hear_at_once_and_the_others_a_turn_each_in_order(arrival, qtbot):
    done: list[str] = []
    arrival.hand(steps(done, "A"), then=lambda: done.append("then:A"))
    assert done == ["training:A", "attention:A"]
    turns = []
    while arrival.waiting:
        QCoreApplication.processEvents()  # one timer event a turn
        turns.append(len(done))
    assert done == ["training:A", "attention:A", "decoding:A", "map:A", "why:A", "then:A"]
    assert turns[-1] == 6 and len(turns) >= 4  # not all in one turn


def test_a_newer_model_drops_what_waited_for_the_older_one(arrival, qtbot):
    done: list[str] = []
    arrival.hand(steps(done, "A"), then=lambda: done.append("then:A"))
    arrival.hand(steps(done, "B"), then=lambda: done.append("then:B"))
    qtbot.waitUntil(lambda: not arrival.waiting)
    qtbot.wait(20)
    assert done == ["training:A", "attention:A", "training:B", "attention:B", "decoding:B", "map:B", "why:B", "then:B"]


def test_finish_runs_what_waits_now_and_nothing_runs_twice(arrival, qtbot):
    done: list[str] = []
    arrival.hand(steps(done, "A"), then=lambda: done.append("then:A"))
    arrival.finish()
    assert done == ["training:A", "attention:A", "decoding:A", "map:A", "why:A", "then:A"]
    qtbot.wait(20)
    assert len(done) == 6


def test_with_every_panel_on_screen_everything_happens_at_once(arrival):
    arrival.looked_at.update({"decoding", "map", "why"})
    done: list[str] = []
    arrival.hand(steps(done, "A"), then=lambda: done.append("then:A"))
    assert done == ["training:A", "decoding:A", "attention:A", "map:A", "why:A", "then:A"]


def test_an_answer_reaches_a_panel_only_after_the_panel_has_heard_of_the_model(qtbot):
    """The engine's answers (a decoding step, an inspection, the data…) are about the newest model: one that comes
    while panels behind a tab still wait runs their steps first, so a panel never shows an answer that its own
    on_run (for the model the answer is about) then clears. A followed run's scalars do not end the waiting."""
    from explorer.answers import ScalarsLogged, SentenceSampled
    from explorer.worker import Engine

    engine = Engine("cpu")
    parent = QObject()
    arrival = RunArrival(parent, lambda key: key == "training")
    arrival.answers_after(engine)  # first, as the window does before its panels connect
    done: list[str] = []
    engine.scalars_logged.connect(lambda reply: done.append("scalars"))
    engine.sentence_sampled.connect(lambda reply: done.append(f"answer {reply.source}"))
    arrival.hand(steps(done, "A"), then=lambda: done.append("then:A"))
    engine.scalars_logged.emit(ScalarsLogged("run", True, (), (), ()))
    assert done == ["training:A", "scalars"]
    engine.sentence_sampled.emit(SentenceSampled(request_id=1, run_id=1, asked="test", source="hi"))
    assert done == ["training:A", "scalars", "decoding:A", "attention:A", "map:A", "why:A", "then:A", "answer hi"]


def test_a_panel_brought_to_the_front_runs_what_waits_and_one_sent_behind_does_not(arrival):
    done: list[str] = []
    arrival.hand(steps(done, "A"), then=lambda: done.append("then:A"))
    arrival.shown(False)
    assert done == ["training:A", "attention:A"]
    arrival.shown(True)
    assert done == ["training:A", "attention:A", "decoding:A", "map:A", "why:A", "then:A"]


def test_the_training_plots_wait_while_panels_take_in_a_model(make_window):
    """A plot's redraw in the same turn as a panel's taking in a new model made the window late: the window's plots
    redraw nothing while panels wait their turn."""
    from tests.training_batches import steps_batch

    window = make_window()
    plots = window.training.live_plots
    plots.add_steps(1, steps_batch(1, 1, 20).steps)
    loss = plots.plots["loss_plot"]
    window.arrival.waiting = [lambda: None]
    plots._tick()
    assert plots.held() and all(s.curve is None for s in loss.series.values())
    window.arrival.finish()
    plots._tick()
    assert not plots.held() and any(s.curve is not None for s in loss.series.values())


def test_a_panel_takes_a_model_in_its_own_steps_or_in_its_on_run():
    from explorer.run_arrival import panel_steps

    done: list[str] = []

    class OneStep:
        def on_run(self, info):
            done.append(f"on_run {info}")

    class TwoSteps(OneStep):
        def arrival_steps(self, info):
            return [lambda: done.append(f"first {info}"), lambda: done.append(f"second {info}")]

    steps = panel_steps("a", OneStep(), "m1") + panel_steps("b", TwoSteps(), "m1")
    assert [key for key, _ in steps] == ["a", "b", "b"]
    for _, step in steps:
        step()
    assert done == ["on_run m1", "first m1", "second m1"]
