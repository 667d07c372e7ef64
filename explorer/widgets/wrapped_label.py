"""A word-wrapped label for the bars above the panels (a lesson's slide, a message): its height is never measured
for a width narrower than a short line."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

LINE_CHARS = 40  # the narrowest line a height is measured for, in average characters


class WrappedLabel(QLabel):
    """A word-wrapped label whose height for a width is the one for at least :data:`LINE_CHARS` characters.

    The bars above the docks are the main window's menu widget, and Qt gives it the height its text needs at the
    window's *minimum* width (``QLayout::totalMinimumSize``). In presenter mode one narrow panel sets that minimum
    (the Lanes view: under 160 px), where a slide's two lines wrapped into thirty: the window asked for 795 px of
    a 768-pixel screen.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)

    def heightForWidth(self, width: int) -> int:  # noqa: N802 — Qt's name
        least = self.fontMetrics().averageCharWidth() * LINE_CHARS
        return super().heightForWidth(max(width, least))
