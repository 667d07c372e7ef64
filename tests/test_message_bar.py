"""The non-modal bar across the top of the window (explorer/widgets/message_bar.py): a message in plain text, its
buttons, each of which closes the bar before it acts, and a ✕ unless the message must stay."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

import shiboken6  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from explorer.widgets.message_bar import STYLES, MessageBar  # noqa: E402


@pytest.fixture
def bar(qtbot):
    b = MessageBar()
    qtbot.addWidget(b)
    return b


def test_a_message_shows_with_its_buttons_and_a_close_button(bar):
    assert not bar.showing  # nothing to say yet
    bar.show_message("Training stopped at step <b>40</b>", "warning", [("Restore", lambda: None)], kind="restore")
    assert bar.showing and bar.label.text() == "Training stopped at step <b>40</b>"
    assert bar.label.textFormat() == Qt.TextFormat.PlainText  # file names and sentences are never read as markup
    assert [b.text() for b in bar.buttons] == ["Restore", "✕"]
    assert (bar.level, bar.kind) == ("warning", "restore") and STYLES["warning"] in bar.styleSheet()


def test_a_button_closes_the_bar_then_acts(bar, qtbot):
    seen = []
    bar.show_message("Unsaved work was kept.", "info", [("Restore", lambda: seen.append(bar.showing))])
    qtbot.mouseClick(bar.buttons[0], Qt.LeftButton)
    assert seen == [False] and not bar.showing  # hidden before the action ran (it may show a message of its own)


def test_the_close_button_hides_and_a_message_that_must_stay_has_none(bar, qtbot):
    bar.show_message("Saved.", "info")
    qtbot.mouseClick(bar.buttons[-1], Qt.LeftButton)
    assert not bar.showing
    bar.show_message("Loading…", "info", closable=False)
    assert bar.buttons == [] and bar.showing


def test_a_new_message_replaces_the_old_one_and_its_buttons(bar, qtbot):
    seen = []
    bar.show_message("first", "error", [("Retry", lambda: seen.append("retry")), ("Help", lambda: None)])
    old = list(bar.buttons)
    bar.show_message("second", "info", [("Open", lambda: seen.append("open"))], kind="")
    assert [b.text() for b in bar.buttons] == ["Open", "✕"] and bar.label.text() == "second"
    assert STYLES["info"] in bar.styleSheet() and STYLES["error"] not in bar.styleSheet()
    qtbot.waitUntil(lambda: not any(shiboken6.isValid(b) for b in old), timeout=2000)  # the old buttons go
    qtbot.mouseClick(bar.buttons[0], Qt.LeftButton)
    assert seen == ["open"]
