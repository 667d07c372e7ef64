"""The main window's menus: File (its commands are :class:`explorer.model_files.ModelFiles`'), View (language,
theme, presenter mode and its scenes, the panels, the layout) and Help; their actions by key in ``actions``."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMenuBar

from explorer.appearance import THEMES
from explorer.i18n import LANGUAGES, N_, language, tr

if TYPE_CHECKING:
    from explorer.main_window import MainWindow

ACTION_NAMES = {
    "new": N_("New model…"),
    "open": N_("Open checkpoint…"),
    "save": N_("Save"),
    "open_folder": N_("Open model folder…"),
    "follow": N_("Follow a training run…"),
    "open_bundled": N_("Open the bundled model"),
    "save_as": N_("Save as…"),
    "quit": N_("Quit"),
    "reset_layout": N_("Reset layout"),
    "about": N_("About Transformer Explorer"),
    "theme_light": N_("Light"),
    "theme_dark": N_("Dark"),
    "presenter": N_("Presenter mode"),
}
FOLDER_TIP = N_(
    "A model downloaded from the Hugging Face Hub (huggingface-cli download NAME --local-dir DIR): "
    "a Marian translator (opus-mt-…), GPT-2 or BERT"
)
FOLLOW_TIP = N_(
    "Watch a run that another process writes into a folder (python -m model.train … --out DIR, or "
    "torchrun on a cluster with the folder shared): its curves, its newest checkpoint, its probe "
    "snapshots. Nothing is written into the folder."
)
ABOUT = N_(
    "Transformer Explorer trains an encoder–decoder Transformer on this computer and shows what happens "
    "inside it. Built on PyTorch, Qt (PySide6), pyqtgraph and Hugging Face tokenizers."
)


Shortcut = QKeySequence | QKeySequence.StandardKey


class WindowMenus:
    """The menus on ``window``'s menu bar ``bar``."""

    def __init__(self, window: MainWindow, bar: QMenuBar) -> None:
        self.window = window
        self.file_menu = bar.addMenu("")
        self.view_menu = bar.addMenu("")
        self.help_menu = bar.addMenu("")
        self.actions: dict[str, QAction] = {}
        self._fill_file_menu()
        self._fill_view_menu()
        self.help_menu.addAction(self._action("about", lambda: window.show_message(tr(ABOUT), "info")))

    def _action(self, key: str, slot: Callable[..., object], shortcut: Shortcut | None = None) -> QAction:
        a = QAction(self.window)
        a.setObjectName(f"action_{key}")
        a.triggered.connect(slot)
        if shortcut is not None:
            a.setShortcut(shortcut)
        self.actions[key] = a
        return a

    def _fill_file_menu(self) -> None:
        w, keys, menu = self.window, QKeySequence.StandardKey, self.file_menu
        menu.addAction(self._action("new", w.new_model, keys.New))
        menu.addAction(self._action("open", lambda: w.files.open_checkpoint(), keys.Open))
        menu.addAction(self._action("open_folder", lambda: w.files.open_model_folder()))
        menu.addAction(self._action("follow", lambda: w.files.follow_run()))
        menu.addAction(self._action("open_bundled", lambda: w.files.open_bundled()))
        menu.addAction(self._action("save", lambda: w.files.save(), keys.Save))
        menu.addAction(self._action("save_as", lambda: w.files.save_as(), keys.SaveAs))
        self.recent_menu = menu.addMenu("")  # filled by explorer.recent_files.RecentFiles
        menu.addSeparator()
        menu.addAction(self._action("quit", w.close, keys.Quit))

    def _fill_view_menu(self) -> None:
        w, menu = self.window, self.view_menu
        self.language_menu = menu.addMenu("")
        self.language_group = QActionGroup(w)
        for code, name in LANGUAGES.items():
            a = self.language_menu.addAction(name, partial(w.set_language, code))
            a.setObjectName(f"action_language_{code}")
            a.setCheckable(True)
            a.setChecked(code == language.code)
            self.language_group.addAction(a)
        self.theme_menu = menu.addMenu("")
        self.theme_group = QActionGroup(w)
        for name in THEMES:
            a = self._action(f"theme_{name}", lambda _=False, n=name: w.set_theme(n))
            a.setCheckable(True)
            self.theme_group.addAction(a)
            self.theme_menu.addAction(a)
        presenter = self._action("presenter", w.set_presenter, QKeySequence("F5"))
        presenter.setCheckable(True)
        w.addAction(presenter)  # F5 also works while presenting, when the menu bar is hidden
        menu.addAction(presenter)
        self.scenes_menu = menu.addMenu("")
        self.scenes_menu.setObjectName("scenes_menu")
        self.scenes_menu.aboutToShow.connect(lambda: w.presenter.fill_scenes_menu(self.scenes_menu))
        menu.addSeparator()
        for key, _ in w.PANELS:
            toggle = w.docks[key].toggleViewAction()
            toggle.setObjectName(f"action_show_{key}")
            menu.addAction(toggle)
        menu.addSeparator()
        menu.addAction(self._action("reset_layout", w.reset_layout))

    def retranslate(self) -> None:
        self.file_menu.setTitle(tr("&File"))
        self.view_menu.setTitle(tr("&View"))
        self.help_menu.setTitle(tr("&Help"))
        self.recent_menu.setTitle(tr("Recent files"))
        self.language_menu.setTitle(tr("Language"))
        self.theme_menu.setTitle(tr("Theme"))
        self.scenes_menu.setTitle(tr("Scenes"))
        for key, text in ACTION_NAMES.items():
            self.actions[key].setText(tr(text))
        self.actions["open_folder"].setToolTip(tr(FOLDER_TIP))
        self.actions["follow"].setToolTip(tr(FOLLOW_TIP))
        self.file_menu.setToolTipsVisible(True)
