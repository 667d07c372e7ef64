"""Completion of the word being typed (explorer/widgets/word_completer.py): the word at the cursor, the words that
begin like it offered in a popup, and a word chosen put in place of that word only, as one edit."""

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QLineEdit  # noqa: E402

from explorer.widgets.word_completer import WordCompleter, is_word_char  # noqa: E402


@pytest.fixture
def box(qtbot):
    box = QLineEdit()
    qtbot.addWidget(box)
    box.resize(300, 30)
    box.show()
    qtbot.waitExposed(box)
    box.completer_ = WordCompleter(box)
    box.completer_.set_words(["cat", "car", "Dog", "dogma"])
    return box


def typed(box: QLineEdit, text: str, cursor: int | None = None) -> WordCompleter:
    box.setText(text)
    box.setCursorPosition(len(text) if cursor is None else cursor)
    return box.completer_


def test_letters_digits_and_underscores_make_a_word():
    assert [is_word_char(c) for c in "a9_中 .,-"] == [True, True, True, True, False, False, False, False]


def test_the_word_at_the_cursor_runs_over_letters_on_both_sides(box):
    assert typed(box, "the ca").word_span() == (4, 6, 6)
    assert typed(box, "the cat sat", cursor=5).word_span() == (4, 5, 7)  # the|c|at: the whole word "cat"
    assert typed(box, "the ", cursor=4).word_span() == (4, 4, 4)  # after a space: an empty word


def test_the_words_that_begin_like_the_typed_part_are_offered(box):
    completer = typed(box, "the DO")
    completer.update_popup()  # case-insensitive: Dog and dogma
    assert completer.list.isVisible() and completer.completionCount() == 2
    typed(box, "the ").update_popup()  # nothing typed of the word: nothing offered
    assert not completer.list.isVisible()
    typed(box, "the x").update_popup()  # no word begins so
    assert not completer.list.isVisible()
    typed(box, "the dogma").update_popup()  # the word typed in full is all there is to offer
    assert not completer.list.isVisible()


def test_a_word_chosen_replaces_only_the_word_at_the_cursor_as_one_edit(box):
    completer = typed(box, "the ca sat", cursor=6)
    completer.choose("car")
    assert box.text() == "the car sat" and box.cursorPosition() == 7 and not completer.list.isVisible()
    box.undo()
    assert box.text() == "the ca sat"


def test_tab_takes_the_first_word_offered(qtbot, box):
    completer = typed(box, "a c")
    completer.update_popup()
    assert completer.list.isVisible()
    qtbot.keyClick(completer.list, Qt.Key.Key_Tab)
    assert box.text() == "a cat" and not completer.list.isVisible()


def test_words_reach_qt_only_when_first_needed_and_a_newer_list_replaces_a_waiting_one(box):
    """A new model's 65,000 words are kept aside when it arrives; typing (or asking for the model) hands them to
    Qt. A list that never reached Qt is replaced whole by a newer one."""
    completer = box.completer_
    completer.set_words(["apple", "Apricot"])
    completer.set_words(["banana", "band", "Bandit"])
    assert completer.has_words() and completer._words.rowCount() == 0  # none has reached Qt yet
    typed(box, "a ban").update_popup()
    assert completer._words.stringList() == ["banana", "band", "Bandit"]
    assert completer.list.isVisible() and completer.completionCount() == 3
    completer.set_words([])
    assert not completer.has_words() and completer.words.rowCount() == 0
