"""The status at the right of the menu bar (explorer/status_row.py): passing notes, the engine's state, step, loss
and speed, and a followed run's state, step and freshness in place of the idle engine's."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from explorer.answers import EngineStatus, FollowStatus  # noqa: E402
from explorer.first_launch import LOADING  # noqa: E402
from explorer.i18n import ZH, language  # noqa: E402
from explorer.status_row import QUIET_S, StatusRow, how_long  # noqa: E402


@pytest.fixture
def row(qtbot):
    r = StatusRow()
    qtbot.addWidget(r)
    yield r
    language.set("en")


def texts(row: StatusRow) -> tuple[str, str, str, str]:
    return row.state_label.text(), row.step_label.text(), row.loss_label.text(), row.speed_label.text()


def test_how_long_is_said_in_seconds_then_in_minutes(qtbot):
    assert [how_long(s) for s in (-3, 0, 45.4, 119.4)] == ["0 s", "0 s", "45 s", "119 s"]
    assert [how_long(s) for s in (119.6, 150, 3600)] == ["2 min", "2 min", "60 min"]
    language.set("zh")
    try:
        assert how_long(45) == ZH["{n} s"].format(n=45) and how_long(600) == ZH["{n} min"].format(n=10)
    finally:
        language.set("en")


def test_the_engine_s_state_step_loss_and_speed(row):
    row.refresh()
    assert texts(row) == ("idle", "step 0", "loss –", "– tok/s")  # nothing heard yet
    row.show_status(EngineStatus("training", 12345, 1, True, None, "CPU"), 1.23456, 98765.4)
    assert texts(row) == ("training", "step 12,345", "loss 1.235", "98,765 tok/s")
    assert row.device_label.text() == "CPU"
    row.show_status(EngineStatus("paused", 7, 1, True, None, "CPU"), None, 0.0)
    assert texts(row) == ("paused", "step 7", "loss –", "– tok/s")


def test_a_passing_note_goes_by_itself_and_a_later_one_stays(row, qtbot):
    row.note("Saved model.ckpt", 50, tip="/home/me/model.ckpt")
    assert (row.note_label.text(), row.note_label.toolTip()) == ("Saved model.ckpt", "/home/me/model.ckpt")
    qtbot.waitUntil(lambda: row.note_label.text() == "", timeout=2000)
    row.note("first", 50)
    row.note("Opening big.tsv")  # until the next note: the first one's timer must not take it away
    qtbot.wait(150)
    assert row.note_label.text() == "Opening big.tsv"


def test_a_long_name_is_shortened_in_the_middle_and_whole_in_the_tooltip(row):
    name = "a-very-long-folder-name-" * 6 + "end.ckpt"
    row.note_about(name, "Opening {name}…")
    shown = row.note_label.text()
    assert shown.startswith("Opening a-very") and shown.endswith("end.ckpt…") and "…" in shown[8:-9]
    assert row.note_label.fontMetrics().horizontalAdvance(shown) <= row.note_label.width()
    assert row.note_label.toolTip() == f"Opening {name}…"
    row.note_about("m.ckpt", "Opening {name}…")
    assert row.note_label.text() == "Opening m.ckpt…"


def test_the_loading_note_is_taken_back_only_by_itself(row):
    row.say_loading(True)
    assert row.note_label.text() == LOADING
    row.say_loading(False)
    assert row.note_label.text() == ""
    row.say_loading(True)
    row.note("Opened m.ckpt")
    row.say_loading(False)  # another note came meanwhile: it stays
    assert row.note_label.text() == "Opened m.ckpt"


def test_a_followed_run_shows_its_own_state_step_and_freshness(row):
    row.show_status(EngineStatus("idle", 3, 1, False, None, "CPU"), None, None)
    assert row.on_follow(FollowStatus("/runs/base", step=0, waiting=True)) == ""
    assert row.note_label.text() == "Following base — waiting for its first checkpoint"
    assert texts(row)[:2] == ("following", "step 3")  # no log yet: the checkpoint's step
    row.on_follow(FollowStatus("/runs/base", step=1200, idle_s=4, bad_lines=2, skipped_probes=1, problem="bad.npz"))
    assert row.note_label.text() == (
        "Following base — last update 4 s ago · 2 lines of its log are not records · 1 probe snapshots skipped"
    )
    assert row.note_label.toolTip() == "/runs/base\nbad.npz" and texts(row)[:2] == ("following", "step 1,200")
    row.on_follow(FollowStatus("/runs/base", step=1200, idle_s=QUIET_S))
    assert row.note_label.text() == "Following base — nothing new for 2 min: has the run stopped?"


def test_a_run_that_ends_is_announced_once(row):
    row.on_follow(FollowStatus("/runs/base", step=40))
    said = row.on_follow(FollowStatus("/runs/base", step=50, ended="finished"))
    assert said == "The run in base has ended at step 50 (finished). The model shown is its final checkpoint."
    assert row.note_label.text() == "base: the run ended (finished)" and texts(row)[0] == "run ended"
    assert row.on_follow(FollowStatus("/runs/base", step=50, ended="finished")) == ""  # said once
    row.on_follow(FollowStatus(""))  # following no more: the engine's own state again
    assert row.note_label.text() == "" and row.following is None and texts(row)[:2] == ("idle", "step 0")
