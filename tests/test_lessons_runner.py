"""A lesson run in the window (explorer/lessons/runner.py): every bundled lesson is stepped from its first slide to
its last, each question answered on the way, and each slide's scene is what the window shows — the view, the
sentence decoded to the slide's step, the attention head, the lanes; lesson 3 trains each experiment in the window
beside its baseline and shows the run each slide names; a clicker (PageDown / PageUp) steps the slides in presenter
mode; the current view saved as a slide reads back as it was shown."""

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from explorer.lessons import bundled_lessons  # noqa: E402
from explorer.lessons.lesson import read_lesson  # noqa: E402
from explorer.main_window import MainWindow  # noqa: E402


@pytest.fixture
def window(make_window, monkeypatch, qtbot):
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (1366, 768)))
    w = make_window()
    w.show()
    return w


def settled(window, slide) -> bool:
    """The window shows the slide's scene (its model arrived, its sentence decoded to its step)."""
    runner, scene = window.lessons, slide.scene
    if runner.pending is not None or window.presenter.view != scene.view:
        return False
    if slide.model.startswith("experiment:"):  # the run named, compared once with the other
        name, _, run = slide.model.removeprefix("experiment:").partition("/")
        e = window.experiment.experiment
        return e is not None and (e.name, e.run) == (name, run or "variant") and window.experiment.compared is not None
    if scene.view == "lanes":
        v = window.lanes.view
        return (
            v is not None
            and window.lanes.waiting is None
            and v.text == scene.sentence
            and (v.position == slide.steps or v.at_end)
        )
    if scene.sentence:
        d = window.decoding.view
        return (
            d is not None
            and not window.decoding.waiting
            and d.settings.text == scene.sentence
            and (d.position == slide.steps or d.at_end)
        )
    return True


def wait_settled(qtbot, window, slide, n: int) -> None:
    """Wait for the slide's scene; a slide that never settles is said with what the window was waiting for."""
    try:
        qtbot.waitUntil(lambda: settled(window, slide), timeout=180000)
    except qtbot.TimeoutError:
        runner, d, lanes = window.lessons, window.decoding.view, window.lanes.view
        raise AssertionError(
            f"slide {n + 1} ({slide.scene.view}, model {slide.model!r}) did not settle:"
            f" pending {runner.pending is not None}, experiment {window.experiment.experiment},"
            f" view {window.presenter.view}, message"
            f" {window.message_bar.label.text()!r}, decoding {None if d is None else (d.settings.text, d.position)}"
            f" waiting {window.decoding.waiting}, lanes {None if lanes is None else (lanes.text, lanes.position)}"
            f" waiting {window.lanes.waiting}"
        ) from None


def step_through(qtbot, window, path, press):
    lesson = read_lesson(path)
    assert window.lessons.open(path)
    for n, slide in enumerate(lesson.slides):
        assert window.lessons.index == n
        wait_settled(qtbot, window, slide, n)
        assert "could not be trained" not in window.message_bar.label.text(), window.message_bar.label.text()
        bar = window.lesson_bar
        assert bar.text.text() == slide.text and f"slide {n + 1} of {len(lesson.slides)}" in bar.where.text()
        a = window.attention.view()
        if slide.scene.view in ("attention", "explainer"):
            assert (a.kind, a.layer, a.head) == (slide.scene.attention_kind, slide.scene.layer, slide.scene.head)
        if slide.question is not None:
            assert "✓" not in bar.question.text() and bar.next_button.text() == "Show the answer"
            press()
            right = slide.question.choices[slide.question.answer]
            assert f"✓ {'ABCDEFGH'[slide.question.answer]}. {right}" in bar.question.text()
        if n + 1 < len(lesson.slides):
            press()
    assert not window.lesson_bar.next_button.isEnabled()  # the last slide
    return lesson


@pytest.mark.parametrize("number", [0, 1])
def test_a_bundled_lesson_is_stepped_from_first_to_last_slide(qtbot, window, number):
    step_through(qtbot, window, bundled_lessons()[number], window.lessons.next)
    window.lessons.back()
    assert window.lessons.index == len(read_lesson(bundled_lessons()[number]).slides) - 2


def test_the_experiments_lesson_trains_each_experiment_in_the_window(qtbot, window):
    window.lessons.experiment_steps = 3
    step_through(qtbot, window, bundled_lessons()[2], window.lessons.next)
    runs = {rid: info.experiment for rid, info in window.training.runs.items() if info.experiment is not None}
    names = {"no_positional", "no_scaling", "no_residual", "post_ln_no_warmup", "no_label_smoothing"}
    assert {e.name for e in runs.values()} == names
    last = [rid for rid, e in runs.items() if e.name == "no_label_smoothing"]
    loss = window.training.live_plots.plots["loss_plot"]
    assert len(last) == 2 and all(len(loss.data(rid, "train")[0]) == 3 for rid in last)  # both, 3 updates each
    assert not window.window_status.status.dirty  # an experiment is made again by one click: nothing to save


def test_an_experiment_that_cannot_be_trained_is_said_and_not_waited_for(qtbot, window):
    runner = window.lessons
    assert runner.open(bundled_lessons()[2])
    qtbot.waitUntil(lambda: runner.pending is None, timeout=60000)
    runner.pending = runner.slide
    runner._run_experiment("no_such_experiment", "baseline")
    qtbot.waitUntil(lambda: runner.pending is None, timeout=60000)
    said = window.message_bar.label.text()
    assert "no_such_experiment" in said and "no_positional" in said, said


def test_a_clicker_steps_the_slides_in_presenter_mode(qtbot, window):
    lesson = read_lesson(bundled_lessons()[0])
    window.lessons.open(bundled_lessons()[0])
    window.presenter.set_on(True)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    qtbot.waitUntil(lambda: settled(window, lesson.slides[0]), timeout=60000)
    QTest.keyClick(window, Qt.Key_PageDown)
    assert window.lessons.index == 1
    qtbot.waitUntil(lambda: settled(window, lesson.slides[1]), timeout=60000)
    QTest.keyClick(window, Qt.Key_PageUp)
    assert window.lessons.index == 0
    window.presenter.set_on(False)


def test_the_view_shown_is_added_as_a_slide(qtbot, window, tmp_path):
    lesson = read_lesson(bundled_lessons()[0])
    window.lessons.open(bundled_lessons()[0])
    for _ in range(4):
        window.lessons.next()
    shown = lesson.slides[3]
    qtbot.waitUntil(lambda: settled(window, shown), timeout=60000)
    path = tmp_path / "mine.toml"
    window.lessons.add_slide(path, "What I showed", "我展示的")
    added = read_lesson(path).slides[0]
    assert added.text == "What I showed" and added.steps == shown.steps
    assert (added.scene.view, added.scene.sentence) == (shown.scene.view, shown.scene.sentence)


def test_a_broken_lesson_is_said_and_changes_nothing(qtbot, window, tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("title = [", encoding="utf-8")
    assert not window.lessons.open(path)
    assert not window.lessons.running and not window.lesson_bar.isVisible()
    assert "cannot be opened" in window.message_bar.label.text()
