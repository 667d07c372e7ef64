"""The training panel's settings column: the settings form, scrolling up and down, as wide as it needs."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtWidgets import QScrollArea, QWidget


class SettingsArea(QScrollArea):
    """The settings form's column: as wide as the form needs for every label and value to be read whole (its
    longest choice in the language shown), scrolling up and down only."""

    def __init__(self, form: QWidget) -> None:
        super().__init__()
        self.setWidget(form)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def _needed_width(self) -> int:
        """The form's least width (where a label and its field do not fit side by side, the label goes above;
        nothing is cut), the vertical scroll bar and the frame."""
        form = self.widget()
        inner = form.minimumSizeHint().width() if form is not None else 0
        return inner + self.verticalScrollBar().sizeHint().width() + 2 * self.frameWidth()

    def sizeHint(self) -> QSize:  # noqa: N802 — Qt's name
        return QSize(self._needed_width(), super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(self._needed_width(), super().minimumSizeHint().height())

    def eventFilter(self, watched, event) -> bool:  # noqa: N802
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()  # another language or family: other widths
        return super().eventFilter(watched, event)
