"""Questions to the person, in one place (tests answer them by replacing :func:`ask`)."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractButton, QMessageBox, QWidget

from explorer.i18n import N_, tr

SAVE, DISCARD, CANCEL, YES = "save", "discard", "cancel", "yes"
_B = QMessageBox.StandardButton
_BUTTONS = {
    SAVE: (_B.Save, N_("Save")),
    DISCARD: (_B.Discard, N_("Discard")),
    CANCEL: (_B.Cancel, N_("Cancel")),
    YES: (_B.Yes, N_("Yes")),
}


def ask(parent: QWidget, title: str, text: str, choices: tuple[str, ...]) -> str:
    """A modal question; returns the key of the chosen button (CANCEL when closed)."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=parent)
    buttons: dict[QAbstractButton, str] = {}
    for key in choices:
        standard, label = _BUTTONS[key]
        buttons[box.addButton(standard)] = key
        box.button(standard).setText(tr(label))
    box.exec()
    return buttons.get(box.clickedButton(), CANCEL)
