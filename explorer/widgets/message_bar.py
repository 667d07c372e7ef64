"""A non-modal bar across the top of the window: a message and a few buttons, never blocking."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton

from explorer.widgets import named
from explorer.widgets.wrapped_label import WrappedLabel

STYLES = {
    "info": "background: #e8f1fb; border: 1px solid #9db3d6;",
    "warning": "background: #fff4d6; border: 1px solid #e0b84d;",
    "error": "background: #fde3e3; border: 1px solid #d9534f;",
}


class MessageBar(QFrame):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("message_bar")
        self.label = named(WrappedLabel(), "message_text")  # (wrapped: measured no narrower than a short line)
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # messages quote file names and sentences: never markup
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(8, 4, 8, 4)
        self._layout.addWidget(self.label, 1)
        self.buttons: list[QPushButton] = []
        self.kind = ""
        self.hide()

    @property
    def showing(self) -> bool:
        return not self.isHidden()

    def show_message(
        self,
        text: str,
        level: str = "info",
        actions: Sequence[tuple[str, Callable[[], object]]] | None = None,
        closable: bool = True,
        kind: str = "",
    ) -> None:
        for b in self.buttons:
            b.deleteLater()
        self.buttons = []
        # light backgrounds in every theme, so the text is always dark
        self.setStyleSheet(
            f"#message_bar {{ {STYLES[level]} border-radius: 4px; }} #message_text {{ color: #1a1a1a; }}"
        )
        self.label.setText(text)
        self.level = level
        self.kind = kind  # what the message is about, for code that may take it back (e.g. "welcome")
        for label, callback in actions or []:
            b = QPushButton(label)
            b.clicked.connect(self._hide_then(callback))
            self._layout.addWidget(b)
            self.buttons.append(b)
        if closable:
            b = QPushButton("✕")
            b.setFlat(True)
            b.setFixedWidth(28)
            b.clicked.connect(self.hide)
            self._layout.addWidget(b)
            self.buttons.append(b)
        self.show()

    def _hide_then(self, callback: Callable[[], object]) -> Callable[[], None]:
        """A button's action: the bar goes away, then the callback runs."""

        def act() -> None:
            self.hide()
            callback()

        return act
