"""Interface language: English (the source strings) and Simplified Chinese.

Widgets call :func:`tr` for every visible string and re-set their texts in a
``retranslate()`` method; the main window listens to :data:`language.changed`
and calls every panel's, so switching language takes effect at once, without a
restart.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from explorer.i18n_zh import ZH  # English source string → Chinese

LANGUAGES = {"en": "English", "zh": "简体中文"}


class _Language(QObject):
    changed = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.code = "en"

    def set(self, code: str) -> None:
        if code not in LANGUAGES:
            raise ValueError(f"unknown language {code!r}; choose one of {', '.join(LANGUAGES)}")
        if code != self.code:
            self.code = code
            self.changed.emit(code)


language = _Language()


def N_(text: str) -> str:  # noqa: N802 — gettext's name for "translated later"
    """Marks a string for translation where it is defined; :func:`tr` translates it where it is shown."""
    return text


def tr(text: str) -> str:
    """``text`` in the current interface language."""
    if language.code == "zh":
        return ZH.get(text, text)
    return text


# The marks that join translated parts in code ("Parameters" + ": " + a number): full width in Chinese, which
# needs no space after them (nor between two parts).
FULL_WIDTH = {": ": "：", "; ": "；", ", ": "，", "(": "（", ")": "）", " ": ""}


def mark(text: str) -> str:
    """The punctuation ``text`` (": ", "; ", ", ", "(", ")", or " " between two parts) as the interface language
    writes it."""
    return FULL_WIDTH.get(text, text) if language.code == "zh" else text
