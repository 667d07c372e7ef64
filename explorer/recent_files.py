"""The File menu's list of recently opened or saved checkpoints, kept in the settings."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMenu

MAX_RECENT = 8


class RecentFiles:
    def __init__(self, settings: QSettings, menu: QMenu, open_file: Callable[[str], None], autosave_dir: Path):
        self.settings, self.menu, self.open_file = settings, menu, open_file
        self.autosave_dir = autosave_dir  # autosaves there are not "recent files"

    def files(self) -> list[str]:
        value = self.settings.value("recent_files", [])
        if isinstance(value, str):
            return [value]
        return [str(v) for v in value] if isinstance(value, (list, tuple)) else []

    def remember(self, path: str) -> None:
        path = str(Path(path).resolve())
        if self.autosave_dir in Path(path).parents:
            return
        files = [path] + [p for p in self.files() if p != path]
        self.settings.setValue("recent_files", files[:MAX_RECENT])
        self.rebuild()

    def rebuild(self) -> None:
        self.menu.clear()
        files = self.files()
        for path in files:
            self.menu.addAction(Path(path).name, partial(self.open_file, path)).setToolTip(path)
        self.menu.setEnabled(bool(files))

    def last_folder(self) -> str:
        files = self.files()
        return str(Path(files[0]).parent) if files else str(Path.home())
