"""Questions to the person, in one place (tests answer them by replacing :func:`ask`)."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

from explorer.i18n import N_, tr

SAVE, DISCARD, CANCEL, YES = "save", "discard", "cancel", "yes"
_BUTTONS = {
    SAVE: (QMessageBox.Save, N_("Save")),
    DISCARD: (QMessageBox.Discard, N_("Discard")),
    CANCEL: (QMessageBox.Cancel, N_("Cancel")),
    YES: (QMessageBox.Yes, N_("Yes")),
}


def ask(parent: QWidget, title: str, text: str, choices: tuple[str, ...]) -> str:
    """A modal question; returns the key of the chosen button (CANCEL when closed)."""
    box = QMessageBox(QMessageBox.Question, title, text, parent=parent)
    buttons = {}
    for key in choices:
        standard, label = _BUTTONS[key]
        buttons[box.addButton(standard)] = key
        box.button(standard).setText(tr(label))
    box.exec()
    return buttons.get(box.clickedButton(), CANCEL)
