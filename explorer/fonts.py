"""A Chinese font for systems that have none: the bundled subset of Noto Sans CJK SC (SIL Open Font License).

A fresh Linux often has no font with Chinese glyphs, and every Chinese character — the 简体中文 interface, the
translations, the HSK sentences — would be an empty box. The subset (``resources/fonts``, rebuilt by
``resources/make_font_subset.py``) holds the characters the program shows and the common ones a person types.
It is registered only where no installed font covers Chinese, so an installed Chinese font always wins.
"""

from __future__ import annotations

from PySide6.QtGui import QFontDatabase, QFontInfo
from PySide6.QtWidgets import QApplication

from resources import resource_path

FONT_FILE = "fonts/NotoSansCJKsc-Subset.otf"


def system_has_chinese_font() -> bool:
    """Whether an installed font covers Simplified Chinese."""
    return bool(QFontDatabase.families(QFontDatabase.WritingSystem.SimplifiedChinese))


def add_bundled_font(app: QApplication) -> str | None:
    """Register the bundled font and make the application font's families (which widgets and pyqtgraph's
    text items use) the installed family it was drawn with, then the bundled one: Latin text keeps its
    font, and Qt falls back to the bundled one for Chinese. Returns the family, or None if the file could
    not be loaded."""
    # the family the default resolves to now: "Sans Serif" is only an alias, and once the bundled family
    # followed it in the list, Qt would skip the alias and draw Latin text with the bundled font too
    primary = QFontInfo(app.font()).family()
    font_id = QFontDatabase.addApplicationFont(str(resource_path(FONT_FILE)))
    families = QFontDatabase.applicationFontFamilies(font_id) if font_id >= 0 else []
    if not families:
        return None
    font = app.font()
    font.setFamilies([primary, families[0]])
    app.setFont(font)
    return families[0]


def register_chinese_font(app: QApplication) -> str | None:
    """Where no installed font covers Chinese, add the bundled one (see :func:`add_bundled_font`). Returns
    the family added, or None when none was needed or the font could not be loaded — Chinese then shows as
    before, and nothing else changes."""
    if system_has_chinese_font():
        return None
    return add_bundled_font(app)
