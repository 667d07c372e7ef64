"""Whether the window has drawn what the engine sent it (explorer/window_quiet.py): the flag the engine's thread
waits on, and the engine's waits while it follows a new run (explorer/engine_following.py)."""

import threading
import time

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QObject  # noqa: E402

from explorer import window_quiet  # noqa: E402
from explorer.window_quiet import WindowQuiet, wait_for  # noqa: E402


def test_quiet_after_two_checks_in_a_row_without_drawing_and_at_once_when_drawing_begins(qtbot):
    parent = QObject()
    drawing = [False]
    w = WindowQuiet(parent, lambda: drawing[0])
    w.timer.stop()  # checked by hand here
    assert w.quiet.is_set()  # nothing sent yet
    drawing[0] = True
    w.check()
    assert not w.quiet.is_set()
    drawing[0] = False
    w.check()
    assert not w.quiet.is_set()  # what the last drawing began (a layout, a paint) may still be posted
    w.check()
    assert w.quiet.is_set()
    drawing[0] = True
    w.check()
    assert not w.quiet.is_set()


def test_the_engine_waits_until_the_window_is_quiet_and_never_longer_than_the_cap(qtbot, monkeypatch):
    parent = QObject()
    drawing = [True]
    w = WindowQuiet(parent, lambda: drawing[0])
    assert not w.timer.isActive()  # not asked: the window checks nothing
    monkeypatch.setattr(window_quiet, "LONGEST_WAIT_S", 30.0)
    done = threading.Event()
    threading.Thread(target=lambda: (wait_for(w), done.set())).start()  # the engine's thread asks
    qtbot.wait(200)
    assert not done.is_set()  # the window still draws
    drawing[0] = False
    qtbot.waitUntil(done.is_set, timeout=5000)
    qtbot.waitUntil(lambda: not w.timer.isActive(), timeout=2000)  # quiet: the checks stop
    monkeypatch.setattr(window_quiet, "LONGEST_WAIT_S", 0.05)
    drawing[0] = True
    started = time.monotonic()
    wait_for(w)  # a window that draws on and on: the engine goes on after the cap
    assert time.monotonic() - started < 5


def test_without_a_window_nothing_waits():
    started = time.monotonic()
    for _ in range(100):
        wait_for(None)
    assert time.monotonic() - started < 1.0


def test_a_new_runs_log_model_and_probe_each_wait_for_the_window_to_draw_what_came_before(qtbot, tmp_path, monkeypatch):
    """The engine and the window share the GIL: a followed run's first checkpoint is read once the window has drawn
    the run's log, its probe computed once the panels have taken in the model, and the engine answers the panels
    once the probe is drawn. A newer checkpoint of the same run is read once the window has drawn the log's new
    lines, and its probe computed once the panels show the newer weights (beside a busy program, the window's
    drawing and the engine's reading shared one core: the window was 10–13 ms late at the newer checkpoints)."""
    transformers = pytest.importorskip("transformers")
    import explorer.engine_following as following
    from explorer.commands import Follow
    from model.follow import RunWriter
    from tests.hf_folders import gpt2_folder
    from tests.test_engine_following import Following

    source = gpt2_folder(tmp_path / "models")
    model = transformers.AutoModelForCausalLM.from_pretrained(source)
    tokenizer = transformers.AutoTokenizer.from_pretrained(source)
    out = tmp_path / "run"
    w = RunWriter(out, tokenizer=tokenizer)
    for step in range(1, 4):
        w.log(step, loss=3.0 / step, perplexity=20.0 / step)
    w.checkpoint(model, 3)
    seen = Following()
    waits: list[tuple[int, int, int]] = []  # what the window had been sent at each wait: scalars, runs, probes
    monkeypatch.setattr(
        following, "wait_for", lambda quiet: waits.append((len(seen.scalars), len(seen.runs), len(seen.probes)))
    )
    holder = QObject()
    seen.engine.window_quiet = WindowQuiet(holder, lambda: False)  # (its waits recorded above)
    seen.engine._start_following(Follow(str(out), probe="The cat sat"))
    assert waits == [(1, 0, 0), (1, 1, 0), (2, 1, 1)]  # (the log is sent again whole with the model)
    w.log(4, loss=0.5, perplexity=4.0)
    w.checkpoint(model, 4)
    seen.look()
    assert len(seen.probes) == 2
    assert waits[3:] == [(3, 1, 1), (3, 2, 1)]  # the new line sent; then the newer weights too


def test_settled_asks_the_window_once_without_waiting_and_says_yes_once_it_has_drawn_or_after_the_cap(
    qtbot, monkeypatch
):
    parent = QObject()
    drawing = [True]
    w = WindowQuiet(parent, lambda: drawing[0])
    monkeypatch.setattr(window_quiet, "LONGEST_WAIT_S", 30.0)
    assert window_quiet.settled(None)  # no window: nothing to wait for
    started = time.monotonic()
    assert not window_quiet.settled(w)  # asked: the window checks now
    assert time.monotonic() - started < 0.5  # (and the caller goes on at once)
    qtbot.waitUntil(w.timer.isActive, timeout=2000)
    qtbot.wait(100)
    assert not window_quiet.settled(w)  # still drawing
    drawing[0] = False
    qtbot.waitUntil(w.quiet.is_set, timeout=2000)
    assert window_quiet.settled(w)
    assert not window_quiet.settled(w)  # the next piece of work asks again
    drawing[0] = True
    monkeypatch.setattr(window_quiet, "LONGEST_WAIT_S", 0.05)
    qtbot.wait(100)
    assert window_quiet.settled(w)  # a window that draws on and on: the work goes on after the cap


def test_the_engines_deferred_work_waits_for_the_window_to_draw_and_commands_are_answered_meanwhile(qtbot, monkeypatch):
    """What a new model does not need for its first screen (describing its corpus: 0.3 s of Python generating the
    grammar task's sentences) ran while the window drew the new run's curves, and each made the other wait:
    the window's timer was 40-65 ms late. It now waits for the window to have drawn, and the engine's loop goes
    on answering meanwhile."""
    import explorer.worker as worker
    from explorer.commands import Pause
    from explorer.worker import Engine

    monkeypatch.setattr(worker, "QUIET_S", 0.01)
    monkeypatch.setattr(window_quiet, "LONGEST_WAIT_S", 30.0)
    drawing = [True]
    holder = QObject()
    engine = Engine("cpu", threads=1)
    engine.window_quiet = WindowQuiet(holder, lambda: drawing[0])
    done = threading.Event()
    engine._later.append(done.set)
    engine.start()
    try:
        qtbot.wait(600)
        assert not done.is_set()  # the window still draws
        engine.submit(Pause())  # a command meanwhile: taken
        qtbot.waitUntil(lambda: engine._queue.empty(), timeout=5000)
        drawing[0] = False
        qtbot.waitUntil(done.is_set, timeout=5000)
    finally:
        assert engine.shutdown(None, timeout_ms=20000)
