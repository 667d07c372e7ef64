"""The decoding requests still being computed (explorer/panels/decoding_progress.py): a request out longer than
BUSY_AFTER_MS makes the busy state, which says which step is computing and how many clicks wait behind it; an
answer settles it and everything sent before it; a fast answer shows nothing."""

import pytest

pytest.importorskip("pytestqt")

from explorer.panels.decoding_progress import BUSY_AFTER_MS, DecodingProgress  # noqa: E402


@pytest.fixture
def progress(qtbot):
    progress = DecodingProgress()
    changes: list[bool] = []
    progress.changed.connect(lambda: changes.append(progress.busy))
    progress.changes = changes
    return progress


def test_a_slow_step_says_which_step_computes_and_how_many_clicks_wait(qtbot, progress):
    progress.answered(0, 2)  # not a request of its: ignored
    assert progress.position == 0
    progress.sent(10, "step")
    assert not progress.busy and progress.queued == 0  # not yet: a fast step shows nothing
    with qtbot.waitSignal(progress.changed, timeout=5 * BUSY_AFTER_MS):
        pass
    assert progress.busy and progress.describe() == "Computing step 1…"
    progress.sent(11, "step")
    progress.sent(12, "step")
    assert progress.queued == 2 and progress.describe() == "Computing step 1… (2 more queued)"
    progress.answered(10, 1)  # the first step came: the next is computing, one more waits
    assert progress.busy and progress.describe() == "Computing step 2… (1 more queued)"
    progress.answered(12, 3)  # the newest: what was sent before it is answered too
    assert not progress.busy and progress.out == [] and progress.position == 3
    assert progress.changes == [True, True, True, True, False]


def test_a_fast_answer_never_shows_the_busy_state(qtbot, progress):
    progress.sent(20, "step")
    progress.answered(20, 1)
    qtbot.wait(2 * BUSY_AFTER_MS)
    assert not progress.busy and progress.changes == []


def test_a_start_and_other_actions_are_named_and_a_refusal_clears_everything(qtbot, progress):
    progress.sent(30, "start")
    progress.sent(31, "goto")
    with qtbot.waitSignal(progress.changed, timeout=5 * BUSY_AFTER_MS):
        pass
    assert progress.describe() == "Reading the sentence… (1 more queued)"
    progress.answered(30, 0)
    assert progress.describe() == "Computing…"  # a goto, run or back: no step number to give
    progress.failed()
    assert not progress.busy and progress.out == [] and progress.queued == 0
    assert progress.describe() == "Computing step 1…"  # (what it would say of the next step)
