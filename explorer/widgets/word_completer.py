"""Completion of the word being typed in a line edit (not of the whole line), from a list of words."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QEvent, QObject, QStringListModel, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QCompleter, QLineEdit, QListView


def is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


class WordCompleter(QCompleter):
    """Offers the words that begin like the word at the cursor of ``line_edit`` (case-insensitive, in a popup
    under it) as the person types (:meth:`update_popup`). Choosing one (a click, Enter, or Tab for the first)
    replaces only that word, as one edit that Ctrl+Z undoes. Enter with no word chosen reaches the line edit."""

    def __init__(self, line_edit: QLineEdit) -> None:
        super().__init__(line_edit)
        self.line_edit = line_edit
        self._words = QStringListModel(self)
        self._pending: list[str] | None = None  # words not handed to Qt yet (see set_words)
        self.setModel(self._words)
        self.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
        self.setMaxVisibleItems(10)
        self.list = QListView()
        self.list.setObjectName("word_completion_popup")
        self.setPopup(self.list)  # the completer owns it now
        self.setWidget(line_edit)  # not line_edit.setCompleter: that would complete the whole line
        self.activated.connect(self.choose)  # the word clicked (or chosen with Enter, see eventFilter)
        self._choosing = False

    def set_words(self, words: Iterable[str]) -> None:
        """The words offered from now on. Qt gets them when they are first needed (typing, or :attr:`words`):
        a model's 65,000 words take 6–7 ms to copy, which a new model's arrival can do without."""
        self._pending = list(words)
        self.list.hide()

    @property
    def words(self) -> QStringListModel:
        """The words offered, as Qt's model."""
        self._hand_to_qt()
        return self._words

    def _hand_to_qt(self) -> None:
        if self._pending is not None:
            self._words.setStringList(self._pending)
            self._pending = None

    def has_words(self) -> bool:
        return bool(self._pending) if self._pending is not None else self._words.rowCount() > 0

    def word_span(self) -> tuple[int, int, int]:
        """(start, cursor, end) of the word at the cursor: the letters and digits around it."""
        text, cursor = self.line_edit.text(), self.line_edit.cursorPosition()
        start, end = cursor, cursor
        while start > 0 and is_word_char(text[start - 1]):
            start -= 1
        while end < len(text) and is_word_char(text[end]):
            end += 1
        return start, cursor, end

    def update_popup(self) -> None:
        """Show the words that begin like the part of the current word before the cursor (none: hidden)."""
        if self._choosing:
            return
        start, cursor, _ = self.word_span()
        self._hand_to_qt()
        prefix = self.line_edit.text()[start:cursor]
        self.setCompletionPrefix(prefix)
        count = self.completionCount()
        if not prefix or count == 0 or (count == 1 and self.currentCompletion() == prefix):
            self.list.hide()
            return
        popup = self.list
        rect = self.line_edit.cursorRect()
        rect.setWidth(popup.sizeHintForColumn(0) + popup.verticalScrollBar().sizeHint().width() + 8)
        self.complete(rect)

    def choose(self, word: str) -> None:
        """Put ``word`` in place of the word at the cursor."""
        start, _, end = self.word_span()
        self._choosing = True
        try:
            self.line_edit.setSelection(start, end - start)
            self.line_edit.insert(word)
        finally:
            self._choosing = False
        self.list.hide()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 — Qt's name
        popup = self.list
        if watched is popup and popup.isVisible() and isinstance(event, QKeyEvent):
            if event.type() == QEvent.Type.KeyPress and event.key() in (
                Qt.Key.Key_Return,
                Qt.Key.Key_Enter,
                Qt.Key.Key_Tab,
            ):
                index = popup.currentIndex()
                if not index.isValid() and event.key() == Qt.Key.Key_Tab:
                    index = self.completionModel().index(0, 0)
                popup.hide()
                if index.isValid():
                    self.choose(str(index.data()))
                    return True
        return super().eventFilter(watched, event)
