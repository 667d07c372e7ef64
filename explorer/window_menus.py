"""The main window's menus: File (its commands are :class:`explorer.model_files.ModelFiles`'), Experiments (each
bundled experiment, run beside its baseline), View (language,
theme, presenter mode and its scenes, the panels, the layout) and Help; their actions by key in ``actions``."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMenuBar, QWidget

from explorer.appearance import THEMES
from explorer.i18n import LANGUAGES, N_, language, tr

if TYPE_CHECKING:
    from explorer.model_files import ModelFiles
    from explorer.presenter import Presenter

ACTION_NAMES = {
    "new": N_("New model…"),
    "open": N_("Open checkpoint…"),
    "save": N_("Save"),
    "open_folder": N_("Open model folder…"),
    "get_model": N_("Get a model from the Hub…"),
    "follow": N_("Follow a training run…"),
    "open_lesson": N_("Open a lesson…"),
    "add_slide": N_("Add this view to a lesson…"),
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
GET_TIP = N_(
    "Opus-MT translators, GPT-2 and BERT from the Hugging Face Hub, fetched into its cache and opened here; "
    "also without network, from the cache"
)
FOLLOW_TIP = N_(
    "Watch a run that another process writes into a folder (python -m model.train … --out DIR, torchrun on a "
    "cluster with the folder shared, a Hugging Face Trainer's output_dir, TensorBoard event files, or a loop's "
    "model.follow.RunWriter): its curves, its newest checkpoint, its probe's attention. Nothing is written into "
    "the folder."
)
ABOUT = N_(
    "Transformer Explorer trains an encoder–decoder Transformer on this computer and shows what happens "
    "inside it. Built on PyTorch, Qt (PySide6), pyqtgraph and Hugging Face tokenizers."
)


Shortcut = QKeySequence | QKeySequence.StandardKey


class LessonMenu(Protocol):
    """The File menu's lesson commands (:class:`explorer.lessons.runner.LessonRunner`)."""

    def ask_open(self) -> None: ...
    def ask_add_slide(self) -> None: ...


class MenuWindow(Protocol):
    """What the menus use of the main window (:class:`explorer.main_window.MainWindow`)."""

    docks: dict[str, QDockWidget]  # by panel key, in the order of the panels
    files: ModelFiles  # the File menu's commands
    presenter: Presenter

    @property
    def lessons(self) -> LessonMenu: ...

    def window(self) -> QWidget: ...  # Qt's: the window itself, as the parent of the actions
    def show_message(self, text: str, level: str = "info", actions=None) -> None: ...
    def new_model(self, start: bool = False) -> None: ...
    def set_language(self, code: str) -> None: ...
    def set_theme(self, name: str) -> None: ...
    def set_presenter(self, on: bool) -> None: ...
    def reset_layout(self) -> None: ...


class WindowMenus:
    """The menus on ``window``'s menu bar ``bar``."""

    def __init__(self, window: MenuWindow, bar: QMenuBar) -> None:
        self.window = window
        self.file_menu = bar.addMenu("")
        self.experiments_menu = bar.addMenu("")
        self.view_menu = bar.addMenu("")
        self.help_menu = bar.addMenu("")
        self.actions: dict[str, QAction] = {}
        self._fill_file_menu()
        self._fill_experiments_menu()
        self._fill_view_menu()
        self.help_menu.addAction(self._action("about", lambda: window.show_message(tr(ABOUT), "info")))

    def _action(self, key: str, slot: Callable[..., object], shortcut: Shortcut | None = None) -> QAction:
        a = QAction(self.window.window())
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
        menu.addAction(self._action("get_model", lambda: w.files.get_model()))
        menu.addAction(self._action("follow", lambda: w.files.follow_run()))
        menu.addAction(self._action("open_bundled", lambda: w.files.open_bundled()))
        menu.addAction(self._action("open_lesson", lambda: w.lessons.ask_open()))
        menu.addAction(self._action("add_slide", lambda: w.lessons.ask_add_slide()))
        menu.addAction(self._action("save", lambda: w.files.save(), keys.Save))
        menu.addAction(self._action("save_as", lambda: w.files.save_as(), keys.SaveAs))
        self.recent_menu = menu.addMenu("")  # filled by explorer.recent_files.RecentFiles
        menu.addSeparator()
        menu.addAction(self._action("quit", w.window().close, keys.Quit))

    def _fill_experiments_menu(self) -> None:
        """One entry per bundled experiment: one click trains it beside its baseline (the Experiment panel)."""
        from model.experiments.variants import VARIANTS

        w = self.window
        self.experiments_menu.setObjectName("experiments_menu")
        for v in VARIANTS:
            self.experiments_menu.addAction(
                self._action(f"experiment_{v.name}", lambda _=False, n=v.name: w.files.run_experiment(n))
            )

    def _fill_view_menu(self) -> None:
        w, menu = self.window, self.view_menu
        self.language_menu = menu.addMenu("")
        self.language_group = QActionGroup(w.window())
        for code, name in LANGUAGES.items():
            a = self.language_menu.addAction(name, partial(w.set_language, code))
            a.setObjectName(f"action_language_{code}")
            a.setCheckable(True)
            a.setChecked(code == language.code)
            self.language_group.addAction(a)
        self.theme_menu = menu.addMenu("")
        self.theme_group = QActionGroup(w.window())
        for name in THEMES:
            a = self._action(f"theme_{name}", lambda _=False, n=name: w.set_theme(n))
            a.setCheckable(True)
            self.theme_group.addAction(a)
            self.theme_menu.addAction(a)
        presenter = self._action("presenter", w.set_presenter, QKeySequence("F5"))
        presenter.setCheckable(True)
        w.presenter.changed.connect(presenter.setChecked)  # checked while presenting, however it began or ended
        w.window().addAction(presenter)  # F5 also works while presenting, when the menu bar is hidden
        menu.addAction(presenter)
        self.scenes_menu = menu.addMenu("")
        self.scenes_menu.setObjectName("scenes_menu")
        self.scenes_menu.aboutToShow.connect(lambda: w.presenter.fill_scenes_menu(self.scenes_menu))
        menu.addSeparator()
        for key, dock in w.docks.items():  # in the order of the window's panels
            toggle = dock.toggleViewAction()
            toggle.setObjectName(f"action_show_{key}")
            menu.addAction(toggle)
        menu.addSeparator()
        menu.addAction(self._action("reset_layout", w.reset_layout))

    def retranslate(self) -> None:
        self.file_menu.setTitle(tr("&File"))
        self.experiments_menu.setTitle(tr("E&xperiments"))
        self._name_experiments()
        self.view_menu.setTitle(tr("&View"))
        self.help_menu.setTitle(tr("&Help"))
        self.recent_menu.setTitle(tr("Recent files"))
        self.language_menu.setTitle(tr("Language"))
        self.theme_menu.setTitle(tr("Theme"))
        self.scenes_menu.setTitle(tr("Scenes"))
        for key, text in ACTION_NAMES.items():  # (the experiments are named by _name_experiments)
            self.actions[key].setText(tr(text))
        self.actions["open_folder"].setToolTip(tr(FOLDER_TIP))
        self.actions["follow"].setToolTip(tr(FOLLOW_TIP))
        self.actions["get_model"].setToolTip(tr(GET_TIP))
        self.file_menu.setToolTipsVisible(True)

    def _name_experiments(self) -> None:
        from model.experiments.variants import VARIANTS

        zh = language.code == "zh"
        for v in VARIANTS:
            action = self.actions[f"experiment_{v.name}"]
            action.setText(v.title_zh if zh else v.title)
            action.setToolTip(v.expect_zh if zh else v.expect)
        self.experiments_menu.setToolTipsVisible(True)
