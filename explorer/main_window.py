"""The main window: dockable panels, menus, status bar, and everything that talks to the engine."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, QStandardPaths, Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup, QIcon, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QInputDialog,
    QMainWindow,
    QMenuBar,
    QVBoxLayout,
    QWidget,
)

from explorer import dialogs
from explorer.answers import DATA_STAGES, TRAINING, EngineStatus, FollowStatus, LoadProgress, MetricsBatch, RunInfo
from explorer.appearance import THEMES, apply_theme, set_presenter_font
from explorer.autosave import Autosave
from explorer.commands import (
    Follow,
    Load,
    NewModel,
    Save,
    Start,
)
from explorer.engine_client import EngineClient
from explorer.first_launch import SCRATCH, FirstLaunch
from explorer.help import HelpBox
from explorer.help_families import family_topic
from explorer.i18n import LANGUAGES, N_, language, tr
from explorer.panels.attention import AttentionPanel
from explorer.panels.data_view import DataPanel
from explorer.panels.decoding import DecodingPanel
from explorer.panels.model_info import ModelPanel
from explorer.panels.model_map import ModelMapPanel, ModelPart
from explorer.panels.positional import PositionalPanel
from explorer.panels.training import TrainingPanel
from explorer.presenter import Presenter
from explorer.recent_files import RecentFiles
from explorer.status_row import StatusRow
from explorer.widgets.message_bar import MessageBar
from explorer.worker import Engine
from model.core.config import ModelConfig
from model.io.follow import RunFolderError, check_run_folder
from resources import default_model, resource_path

Panel = TrainingPanel | DecodingPanel | AttentionPanel | PositionalPanel | ModelPanel | DataPanel | ModelMapPanel
ATTENTION_OF_PART = {
    "encoder_self_attention": "encoder",
    "decoder_self_attention": "decoder_self",
    "cross_attention": "cross",
}
CHECKPOINT_FILTER = N_("Transformer Explorer checkpoints (*.ckpt);;All files (*)")
FOLDER_TIP = N_(
    "A model downloaded from the Hugging Face Hub (huggingface-cli download NAME --local-dir DIR): "
    "a Marian translator (opus-mt-…), GPT-2 or BERT"
)
FOLLOW_TIP = N_(
    "Watch a run that another process writes into a folder (python -m model.train … --out DIR, or "
    "torchrun on a cluster with the folder shared): its curves, its newest checkpoint, its probe "
    "snapshots. Nothing is written into the folder."
)
DEFAULT_SIZE = (1500, 920)  # the window on a screen that has room for it
SIDE_BY_SIDE_WIDTH = 1200  # narrower screens show the decoding panel and the attention map as tabs


def is_model_path(path: str) -> bool:
    """What the window opens as a model: a checkpoint (.ckpt), or a folder (a Hugging Face model's: Marian
    opus-mt, GPT-2, BERT; the engine says what is wrong with one that is not)."""
    return path.lower().endswith(".ckpt") or Path(path).is_dir()


def default_data_dir() -> Path:
    return Path(
        QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
        or Path.home() / ".transformer-explorer"
    )


class MainWindow(QMainWindow):
    PANELS = (
        ("training", N_("Training")),
        ("decoding", N_("Decoding")),
        ("attention", N_("Attention")),
        ("positional", N_("Positional encoding")),
        ("model", N_("Model")),
        ("data", N_("Data")),
        ("map", N_("Model map")),
    )

    def __init__(
        self,
        engine: Engine | None = None,
        settings: QSettings | None = None,
        data_dir: Path | None = None,
        device: str = "auto",
        open_path: str | None = None,
        start_default: bool = True,
        follow_path: str | None = None,
    ) -> None:
        super().__init__()
        self.setObjectName("main_window")
        self.settings = settings or QSettings()
        self.data_dir = Path(data_dir) if data_dir else default_data_dir()
        self.engine = engine or Engine(device)
        self.client = EngineClient(self.engine)
        self.status = EngineStatus("idle", 0, 0, False, None, "")
        self._after_save: dict[int, Callable[[], None]] = {}
        self._last_loss: float | None = None
        self._last_speed: float | None = None
        self._bundled_requests: set[int] = set()  # loads of the bundled model asked for from the menu
        self._opening: tuple[int, str] | None = None  # the load the status bar follows: its request, its name
        self.bundled_run: int | None = None  # the run that is the bundled model, while it is open
        self._create_panels()
        self._create_docks()
        self.presenter = Presenter(self)
        self.presenter.changed.connect(self._on_presenting)
        self._create_top_bar()
        self.first_launch = FirstLaunch(self.client, self.settings, self.message_bar, start_default)
        self.first_launch.use_panels(
            self.training, self.model_panel, self.decoding, self.attention, self.train_from_scratch
        )
        self.autosave = Autosave(self.data_dir, self.client, self.message_bar)
        self.first_launch.busy = lambda: self.autosave.restoring is not None
        self._build_menus()
        self._build_status_bar()
        self._connect_engine()
        self._connect_panels()
        language.changed.connect(self.retranslate)
        self._restore_window(training_first=not start_default and not open_path)
        self.retranslate()
        self._begin(open_path, start_default)
        if follow_path:
            QTimer.singleShot(0, lambda: self.follow_run(follow_path))

    # -- building the window ---------------------------------------------------------------------------
    def _create_panels(self) -> None:
        self.training = TrainingPanel()
        self.decoding = DecodingPanel()
        self.attention = AttentionPanel()
        self.positional = PositionalPanel()
        self.positional.attach(self.client)
        self.model_panel = ModelPanel()
        self.data_panel = DataPanel()
        self.model_map = ModelMapPanel()
        self.panels: dict[str, Panel] = {
            "training": self.training,
            "decoding": self.decoding,
            "attention": self.attention,
            "positional": self.positional,
            "model": self.model_panel,
            "data": self.data_panel,
            "map": self.model_map,
        }

    def _create_docks(self) -> None:
        """Each panel in a dock, under its help box; then the default layout."""
        self.docks: dict[str, QDockWidget] = {}
        self.help_boxes: dict[str, HelpBox] = {}
        for key, _ in self.PANELS:
            dock = QDockWidget(self)
            dock.setObjectName(f"{key}_dock")
            holder = QWidget()
            holder_layout = QVBoxLayout(holder)
            holder_layout.setContentsMargins(0, 0, 0, 0)
            holder_layout.setSpacing(0)
            self.help_boxes[key] = HelpBox(key)
            self.help_boxes[key].attach_to(holder)  # over the panel: the button in the dock's title bar
            holder_layout.addWidget(self.panels[key], 1)
            dock.setWidget(holder)
            dock.setFeatures(
                QDockWidget.DockWidgetFeature.DockWidgetMovable
                | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                | QDockWidget.DockWidgetFeature.DockWidgetClosable
            )
            self.docks[key] = dock
            on_screen = getattr(self.panels[key], "set_on_screen", None)
            if on_screen is not None:  # panels that draw only what is looked at
                dock.visibilityChanged.connect(on_screen)
        centre = QWidget()
        centre.setMaximumSize(0, 0)
        self.setCentralWidget(centre)
        self.setDockNestingEnabled(True)
        self._default_layout()
        self._default_state = self.saveState()

    def _create_top_bar(self) -> None:
        """The menu bar with the message bar under it, above the docks."""
        self.menu_bar = QMenuBar()
        self.message_bar = MessageBar()
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.setSpacing(2)
        top_layout.addWidget(self.menu_bar)
        top_layout.addWidget(self.presenter.bar)
        top_layout.addWidget(self.message_bar)
        self.setMenuWidget(top)

    def _connect_engine(self) -> None:
        """The answers that concern the whole window; panels connect their own (see EngineClient)."""
        e = self.engine
        e.status_changed.connect(self._on_status)
        e.metrics_logged.connect(self._on_metrics)
        e.run_described.connect(self._on_run)
        e.data_described.connect(self.data_panel.on_data)
        e.engine_failed.connect(self._on_failed)
        e.load_progressed.connect(self._on_load_progress)
        e.follow_changed.connect(self._on_follow)
        e.saved.connect(self._on_saved)
        e.paused_at.connect(self._on_paused_at)

    def _connect_panels(self) -> None:
        self.training.scratch_requested.connect(self.train_from_scratch)
        self.training.attach(self.client, self._when_discarded)
        self.training.acted.connect(self.first_launch.person_takes_over)
        self.training.acted.connect(lambda: self._bring_forward("training"))
        self.decoding.attach(self.client)
        self.decoding.sentence_asked.connect(self.first_launch.welcome_done)
        self.attention.attach(self.client, self.decoding)
        self.attention.snapshot_selected.connect(self.training.set_probe_marker)
        self.model_map.part_chosen.connect(self._on_part_chosen)

    def _on_part_chosen(self, part: ModelPart) -> None:
        """A part of the model map opens the view that shows it: an attention sublayer → that layer in the
        attention map; the positional encoding → the PE lab; the output layer and softmax → the candidates."""
        kind = ATTENTION_OF_PART.get(part.kind)
        if kind is not None:
            a = self.attention
            a.kind.setCurrentIndex(a.kind.findData(kind))
            if part.layer is not None:
                a.layer.setValue(part.layer + 1)
            a.show_tab("map")
            self._bring_forward("attention")
        elif part.kind in ("positional", "embedding"):
            self._bring_forward("positional")
        elif part.kind in ("softmax", "output_linear"):
            self.decoding.set_focus(None)
            self._bring_forward("decoding")

    def _bring_forward(self, key: str) -> None:
        """Show a panel in front of its tab group; nothing to do (and no re-layout of the whole window,
        50–80 ms) when it is on screen already."""
        dock = self.docks[key]
        if dock.isVisible() and not dock.visibleRegion().isEmpty():
            return
        dock.show()
        dock.raise_()

    def _restore_window(self, training_first: bool) -> None:
        """The size, layout and theme of the last session; the default ones on a first launch, with the
        Training panel in front when the program starts without a model to look into (``--new``)."""
        geometry = self.settings.value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        else:
            self._fit_to_screen()
        state = self.settings.value("window/state")
        if isinstance(state, QByteArray):
            self.restoreState(state)
        elif training_first:
            self.docks["training"].raise_()
        self._base_font = QApplication.font()
        self.presenting = False
        theme = self.settings.value("theme")
        self.set_theme(str(theme) if theme in THEMES else "light")
        self.setAcceptDrops(True)
        self.setWindowIcon(QIcon(str(resource_path("icons/transformer-explorer.svg"))))

    def _begin(self, open_path: str | None, start_default: bool) -> None:
        self.engine.start()
        self.autosave.offer(self._when_discarded, self.first_launch.person_takes_over)
        # Load once the event loop runs: loading on the engine thread while the window is still being built
        # would compete with it for the GIL and delay the window.
        if open_path:
            QTimer.singleShot(0, lambda: self.first_launch.open_at_start(open_path))
        elif start_default:  # its views say that it is being read, instead of showing empty axes
            views = (self.decoding, self.attention, self.positional, self.model_map)
            self.first_launch.cover(views, self.status_corner.say_loading)
            QTimer.singleShot(0, self.first_launch.open_default_model)

    def _on_paused_at(self, step: int, loss: float) -> None:
        text = tr("Paused by itself at step {step} (loss {loss:.3f}), as asked.").format(step=step, loss=loss)
        self.show_message(text, "info")

    def train_from_scratch(self) -> None:
        """A fresh model with the Training panel's settings, training at once."""
        self.new_model(start=True)

    # -- drag and drop -----------------------------------------------------------------------------
    @staticmethod
    def _dropped_model(event) -> str | None:
        """The first checkpoint (.ckpt) or folder (a Hugging Face model's, the engine checks) dropped."""
        for url in event.mimeData().urls():
            if url.isLocalFile() and is_model_path(url.toLocalFile()):
                return url.toLocalFile()
        return None

    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if self._dropped_model(event):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        path = self._dropped_model(event)
        if path:
            event.acceptProposedAction()
            self.open_checkpoint(path)

    # -- layout -------------------------------------------------------------------------------------
    def _default_layout(self) -> None:
        """The decoding views beside the attention map; training, model and data tabbed behind the
        decoding panel, the positional lab and the model map behind the attention map. On a screen
        narrower than both side by side need, everything shares one area as tabs."""
        d = self.docks
        for dock in d.values():
            dock.setFloating(False)
            dock.show()
        left = ("decoding", "training", "model", "data")
        right = ("attention", "positional", *(("map",) if "map" in d else ()))
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, d["decoding"])
        if self._screen_size()[0] >= SIDE_BY_SIDE_WIDTH:
            self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, d["attention"])
            self.resizeDocks([d["decoding"], d["attention"]], [52, 48], Qt.Orientation.Horizontal)
        else:
            self.tabifyDockWidget(d["decoding"], d["attention"])
        for group in (left, right):
            for before, key in zip(group, group[1:]):
                self.tabifyDockWidget(d[before], d[key])
        d["attention"].raise_()
        d["decoding"].raise_()

    @staticmethod
    def _screen_size() -> tuple[int, int]:
        screen = QApplication.primaryScreen()
        if screen is None:
            return DEFAULT_SIZE
        area = screen.availableGeometry()
        return area.width(), area.height()

    def _fit_to_screen(self) -> None:
        """The default size, or the whole screen where that is smaller (a laptop, a projector)."""
        width, height = self._screen_size()
        if width >= DEFAULT_SIZE[0] + 40 and height >= DEFAULT_SIZE[1] + 60:
            self.resize(*DEFAULT_SIZE)
        else:
            screen = QApplication.primaryScreen()
            if screen is not None:
                self.setGeometry(screen.availableGeometry())
            self.setWindowState(Qt.WindowState.WindowMaximized)

    def set_language(self, code: str) -> None:
        language.set(code)  # every panel retranslates itself
        self.settings.setValue("language", code)
        for a in self.language_group.actions():
            a.setChecked(a.objectName() == f"action_language_{code}")

    def set_theme(self, name: str) -> None:
        apply_theme(name, self)
        self.settings.setValue("theme", name)
        self.menu_actions[f"theme_{name}"].setChecked(True)
        self.theme = name

    def set_presenter(self, on: bool) -> None:
        """Presenter mode: full screen, one view at a time in large type, keys for a clicker (see
        :mod:`explorer.presenter`); the editing controls hidden; a new sentence plays by itself."""
        self.presenter.set_on(on)

    def _on_presenting(self, on: bool) -> None:
        self.presenting = on
        self.menu_actions["presenter"].setChecked(on)
        set_presenter_font(self, on, self._base_font)
        self.training.set_presenting(on)
        self.decoding.set_presenting(on)  # after the font: its large type is a size of the new one
        self.attention.set_presenting(on)

    def _fill_scenes_menu(self) -> None:
        """Save the current scene, recall a saved one (entering presenter mode), delete one."""
        menu = self.scenes_menu
        menu.clear()
        save = menu.addAction(tr("Save the current scene…"), self._save_scene)
        save.setObjectName("action_save_scene")
        names = self.presenter.scenes.names()
        if names:
            menu.addSeparator()
        for name in names:
            menu.addAction(name, partial(self._recall_scene, name))
        if names:
            delete = menu.addMenu(tr("Delete a scene"))
            for name in names:
                delete.addAction(name, partial(self.presenter.delete_scene, name))

    def _save_scene(self) -> None:
        name, ok = QInputDialog.getText(
            self,
            tr("Save the current scene"),
            tr("Name of the scene (the view, sentence, decoding mode and attention layer/head are kept):"),
        )
        if ok and name.strip():
            self.presenter.save_scene(name.strip())
            self.note(tr("Scene “{name}” saved").format(name=name.strip()), 4000)

    def _recall_scene(self, name: str) -> None:
        self.presenter.apply_scene(name)
        self.set_presenter(True)

    def reset_layout(self) -> None:
        self.restoreState(self._default_state)
        for dock in self.docks.values():
            dock.show()

    # -- menus and status bar ----------------------------------------------------------------------
    def _build_menus(self) -> None:
        bar = self.menu_bar
        self.file_menu = bar.addMenu("")
        self.view_menu = bar.addMenu("")
        self.help_menu = bar.addMenu("")
        self.menu_actions: dict[str, QAction] = {}

        def action(key: str, slot, shortcut=None) -> QAction:
            a = QAction(self)
            a.setObjectName(f"action_{key}")
            a.triggered.connect(slot)
            if shortcut is not None:
                a.setShortcut(shortcut)
            self.menu_actions[key] = a
            return a

        self.file_menu.addAction(action("new", self.new_model, QKeySequence.StandardKey.New))
        self.file_menu.addAction(action("open", lambda: self.open_checkpoint(), QKeySequence.StandardKey.Open))
        self.file_menu.addAction(action("open_folder", lambda: self.open_model_folder()))
        self.file_menu.addAction(action("follow", lambda: self.follow_run()))
        self.file_menu.addAction(action("open_bundled", self.open_bundled))
        self.file_menu.addAction(action("save", self.save, QKeySequence.StandardKey.Save))
        self.file_menu.addAction(action("save_as", self.save_as, QKeySequence.StandardKey.SaveAs))
        self.recent_menu = self.file_menu.addMenu("")
        self.recent = RecentFiles(self.settings, self.recent_menu, self.open_checkpoint, self.data_dir)
        self.file_menu.addSeparator()
        self.file_menu.addAction(action("quit", self.close, QKeySequence.StandardKey.Quit))
        self.language_menu = self.view_menu.addMenu("")
        self.language_group = QActionGroup(self)
        for code, name in LANGUAGES.items():
            a = self.language_menu.addAction(name, partial(self.set_language, code))
            a.setObjectName(f"action_language_{code}")
            a.setCheckable(True)
            a.setChecked(code == language.code)
            self.language_group.addAction(a)
        self.theme_menu = self.view_menu.addMenu("")
        self.theme_group = QActionGroup(self)
        for name in THEMES:
            a = action(f"theme_{name}", lambda _=False, n=name: self.set_theme(n))
            a.setCheckable(True)
            self.theme_group.addAction(a)
            self.theme_menu.addAction(a)
        presenter = action("presenter", self.set_presenter, QKeySequence("F5"))
        presenter.setCheckable(True)
        self.addAction(presenter)  # F5 also works while presenting, when the menu bar is hidden
        self.view_menu.addAction(presenter)
        self.scenes_menu = self.view_menu.addMenu("")
        self.scenes_menu.setObjectName("scenes_menu")
        self.scenes_menu.aboutToShow.connect(self._fill_scenes_menu)
        self.view_menu.addSeparator()
        for key, _ in self.PANELS:
            toggle = self.docks[key].toggleViewAction()
            toggle.setObjectName(f"action_show_{key}")
            self.view_menu.addAction(toggle)
        self.view_menu.addSeparator()
        self.view_menu.addAction(action("reset_layout", self.reset_layout))
        self.help_menu.addAction(action("about", self._about))
        self.recent.rebuild()

    def _build_status_bar(self) -> None:
        """The notes and the status at the right of the menu bar (see :class:`StatusRow`)."""
        self._labels_timer = QTimer(self, singleShot=True, interval=200)
        self._labels_timer.timeout.connect(self._update_status_labels)
        row = self.status_corner = StatusRow()  # kept: the menu bar does not own its corner widget
        self.note_label, self.device_label, self.state_label = row.note_label, row.device_label, row.state_label
        self.step_label, self.loss_label, self.speed_label = row.step_label, row.loss_label, row.speed_label
        self.menu_bar.setCornerWidget(row, Qt.Corner.TopRightCorner)

    def note(self, text: str, ms: int = 0, tip: str = "") -> None:
        """A passing note beside the status (``ms`` = 0: until the next one); ``tip``: its tooltip."""
        self.status_corner.note(text, ms, tip)

    # what the Decoding panel is for each family: its dock's title and its explanation
    DECODING_OF = {
        "encoder_decoder": (N_("Decoding"), "decoding"),
        "decoder_only": (N_("Decoding"), "generation"),
        "encoder_only": (N_("Fill the mask"), "family_encoder_only"),
    }

    def _follow_family(self, cfg: ModelConfig) -> None:
        title, topic = self.DECODING_OF.get(cfg.arch, self.DECODING_OF["encoder_decoder"])
        self._decoding_title = title
        self.docks["decoding"].setWindowTitle(tr(title))
        self.help_boxes["decoding"].set_topic(topic, "")
        for key in ("training", "map"):  # each family's own explanation, with its experts' and T5's paragraphs
            self.help_boxes[key].set_topic(family_topic(key, cfg), "")

    def retranslate(self) -> None:
        titles = {**dict(self.PANELS), "decoding": getattr(self, "_decoding_title", N_("Decoding"))}
        for key, dock in self.docks.items():
            dock.setWindowTitle(tr(titles[key]))
            self.panels[key].retranslate()
            self.help_boxes[key].retranslate()
        self.file_menu.setTitle(tr("&File"))
        self.view_menu.setTitle(tr("&View"))
        self.help_menu.setTitle(tr("&Help"))
        self.recent_menu.setTitle(tr("Recent files"))
        self.language_menu.setTitle(tr("Language"))
        self.theme_menu.setTitle(tr("Theme"))
        self.scenes_menu.setTitle(tr("Scenes"))
        self.presenter.bar.retranslate()
        names = {
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
        for key, text in names.items():
            self.menu_actions[key].setText(tr(text))
        self.menu_actions["open_folder"].setToolTip(tr(FOLDER_TIP))
        self.menu_actions["follow"].setToolTip(tr(FOLLOW_TIP))
        self.file_menu.setToolTipsVisible(True)
        self._update_title()
        self._update_status_labels()

    def _update_title(self) -> None:
        if self.status.path:
            name = Path(self.status.path).name
        elif self.bundled_run is not None and self.status.run_id == self.bundled_run:
            name = tr("the bundled model (English → Chinese, teaching grammar)")
        else:
            name = tr("unsaved model")
        self.setWindowTitle(f"{'• ' if self.status.dirty else ''}{name} — Transformer Explorer")

    def _update_status_labels(self) -> None:
        self.status_corner.show_status(self.status, self._last_loss, self._last_speed)

    # -- engine events --------------------------------------------------------------------------------
    def _on_status(self, status: EngineStatus) -> None:
        new_path = status.path if status.path and status.path != self.status.path else None
        changed = dataclasses.replace(status, step=0) != dataclasses.replace(self.status, step=0)
        self.status = status
        self.positional.training = status.state == TRAINING
        self.first_launch.on_state(status.state)
        if new_path is not None:
            self.recent.remember(new_path)
        if changed:
            self._update_title()
            self._update_status_labels()
        else:  # only the step moved
            self._update_status_labels_soon()

    def _on_metrics(self, batch: MetricsBatch) -> None:
        if len(batch.steps):
            self._last_loss = float(batch.steps.loss[-1])
            self._last_speed = float(batch.steps.tokens_per_s[-1])
        self._update_status_labels_soon()

    def _update_status_labels_soon(self) -> None:
        """The status bar follows the step and the loss at most 5 times a second."""
        if not self._labels_timer.isActive():
            self._labels_timer.start()

    def _on_load_progress(self, p: LoadProgress) -> None:
        """What the engine is reading of the model being opened, and how far it has come."""
        self._opening = (p.request_id, p.name)
        if p.stage in DATA_STAGES:  # a big data file for a new model: its reading, then its tokenizers
            text = tr("Preparing {name} — {stage}…").replace("{stage}", tr(p.stage))
            short = text + (f" {100 * p.fraction:.0f}%" if p.fraction >= 0 else "")
            if p.stage == "reading":  # the rate and the time left; megabytes and lines in the tooltip
                short += f" ({', '.join(p.detail.split(', ')[-2:])})"
            self.note_about(p.name, short)
            self.note_label.setToolTip(text.replace("{name}", p.name) + f" {p.detail}")
        elif p.fraction < 1.0:
            text = tr("Opening {name} — {stage}… {percent}%")
            self.note_about(
                p.name, text.replace("{stage}", tr(p.stage)).replace("{percent}", f"{100 * p.fraction:.0f}")
            )

    def _on_opened(self, info: RunInfo) -> None:
        """The model the status bar was following is open."""
        if self._opening is not None and info.origin == self._opening[0]:
            self.note_about(self._opening[1], tr("Opened {name}"), 5000)
            self._opening = None

    def note_about(self, name: str, text: str, ms: int = 0) -> None:
        """A note naming a file or folder (``{name}`` in ``text``), shortened where the note would not show it all."""
        self.status_corner.note_about(name, text, ms)

    def _on_run(self, info: RunInfo) -> None:
        self._on_opened(info)
        automatic = self.first_launch.is_automatic(info)
        if automatic or info.origin in self._bundled_requests:
            self.bundled_run = info.run_id
        elif info.run_id != self.bundled_run:
            self.bundled_run = None
        self._update_title()
        # a late automatic load never overwrites settings the person has been editing meanwhile
        self.training.on_run(info, fill_form=not (automatic and self.training.form.edited))
        self.decoding.on_run(info)
        self._follow_family(info.model_config)
        self.attention.on_run(info)
        self.positional.on_run(info)
        self.model_panel.on_run(info)
        self.data_panel.on_run(info)
        self.model_map.on_run(info)
        self.autosave.arrived(info)
        if automatic:
            self.first_launch.arrived(info)
        elif info.origin in self._bundled_requests:
            self._bundled_requests.discard(info.origin)
            self.first_launch.show_sample(info)

    def _on_failed(self, request_id: int, message: str) -> None:
        self._after_save.pop(request_id, None)
        if self._opening is not None and request_id == self._opening[0]:  # not opened: the current model stays
            self._opening = None
            self.note("")
        message = self.first_launch.failed(request_id, message)
        self.autosave.failed(request_id)
        self.decoding.on_failed()
        self.show_message(message, "error")

    def _on_saved(self, request_id: int, path: str) -> None:
        self.note(tr("Saved") + f" {Path(path).name}", 5000)
        self.recent.remember(path)
        then = self._after_save.pop(request_id, None)
        if then is not None:
            then()

    def show_message(self, text: str, level: str = "info", actions=None) -> None:
        self.message_bar.show_message(text, level, actions)

    # -- commands ----------------------------------------------------------------------------------------
    def _when_discarded(self, then: Callable[[], object], question: str, always_ask: bool = False) -> None:
        """Run ``then`` once the current model may be replaced: ask first when work would be lost."""
        if self.status.dirty:
            choice = dialogs.ask(
                self,
                tr("Unsaved work"),
                question + "\n\n" + tr("Save it first?"),
                (dialogs.SAVE, dialogs.DISCARD, dialogs.CANCEL),
            )
            if choice == dialogs.SAVE:
                self.save(then=then)
            elif choice == dialogs.DISCARD:
                then()
        elif always_ask:
            if dialogs.ask(self, tr("Replace the model?"), question, (dialogs.YES, dialogs.CANCEL)) == dialogs.YES:
                then()
        else:
            then()

    def new_model(self, start: bool = False) -> None:
        """A fresh model from the Training panel's settings (training at once with ``start``)."""
        self.first_launch.person_takes_over()
        self._bring_forward("training")
        try:
            spec = self.training.form.spec()
        except ValueError as exc:
            self.show_message(str(exc), "error")
            return

        replaces_bundled = self.bundled_run is not None and self.status.run_id == self.bundled_run

        def replace() -> None:
            self.engine.submit(NewModel(spec))
            if start:
                self.engine.submit(Start())
            if replaces_bundled and not self.status.dirty:  # one click, and one click back (until training stops)
                said = tr(
                    "A new model is training from scratch. The bundled model is not lost: "
                    "File → Open the bundled model brings it back."
                )
                back = [(tr("Open the bundled model"), self.open_bundled)]
                self.message_bar.show_message(said, "info", back, kind=SCRATCH)

        question = (
            N_("Training from scratch replaces the current model.")
            if start
            else N_("A new model replaces the current one.")
        )
        self._when_discarded(replace, tr(question))

    def open_checkpoint(self, path: str | None = None, confirm: bool = True) -> None:
        """Open a checkpoint, or a Hugging Face model folder (see :meth:`open_model_folder`)."""
        if path is None:
            path, _ = QFileDialog.getOpenFileName(
                self, tr("Open checkpoint"), self.recent.last_folder(), tr(CHECKPOINT_FILTER)
            )
            if not path:
                return
        self.first_launch.person_takes_over()
        target = str(path)
        folder = Path(target).is_dir()

        def load() -> None:
            name = Path(target).name
            self._opening = (self.engine.submit(Load(target)), name)
            self.note_about(name, tr("Opening {name}…"))

        if confirm:
            question = (
                N_("Opening a model folder replaces the current model.")
                if folder
                else N_("Opening a checkpoint replaces the current model.")
            )
            self._when_discarded(load, tr(question))
        else:
            load()

    def open_model_folder(self, path: str | None = None) -> None:
        """A model folder downloaded from the Hugging Face Hub (a Marian opus-mt translator, GPT-2, BERT), read
        into this program's engine: every panel works on it, and the Training panel fine-tunes it."""
        if path is None:
            path = QFileDialog.getExistingDirectory(
                self, tr("Open a Hugging Face model folder"), self.recent.last_folder()
            )
            if not path:
                return
        self.open_checkpoint(path)

    def follow_run(self, path: str | None = None) -> None:
        """Show a training run another process writes into a folder: its curves live, its newest checkpoint as
        the model, its probe snapshots. Nothing is written into the folder."""
        if path is None:
            path = QFileDialog.getExistingDirectory(self, tr("Follow a training run"), self.recent.last_folder())
            if not path:
                return
        try:
            check_run_folder(path)
        except RunFolderError as exc:
            self.show_message(str(exc), "error")
            return
        self.first_launch.person_takes_over()
        folder = str(path)
        self._when_discarded(
            lambda: self.engine.submit(Follow(folder)), tr("Following a run replaces the current model.")
        )

    def _on_follow(self, f: FollowStatus) -> None:
        """The followed run's state, step and freshness in the status row; said once when the run has ended."""
        ended = self.status_corner.on_follow(f)
        if ended:
            self.show_message(ended, "info")

    def open_bundled(self) -> None:
        """The bundled, trained model again (asking first if unsaved work would be replaced)."""
        bundled = default_model()
        if bundled is None:
            self.show_message(tr("The bundled model is missing from this installation."), "error")
            return
        self.first_launch.person_takes_over()

        def load() -> None:
            self._bundled_requests.add(self.engine.submit(Load(str(bundled), kind="bundled")))

        self._when_discarded(load, tr("Opening the bundled model replaces the current model."))

    def save(self, then=None) -> None:
        """Save to the file the model came from; a model opened from a folder is saved as a checkpoint (Save as)."""
        if self.status.path and not Path(self.status.path).is_dir():
            rid = self.engine.submit(Save(self.status.path))
            if then:
                self._after_save[rid] = then
        else:
            self.save_as(then=then)

    def save_as(self, then=None) -> None:
        opened = Path(self.status.path) if self.status.path else None
        if opened is not None and opened.is_dir():  # a model folder: a checkpoint beside it, named after it
            suggested = str(opened.parent / f"{opened.name}.ckpt")
        else:
            suggested = str(Path(self.recent.last_folder()) / "model.ckpt")
        path, _ = QFileDialog.getSaveFileName(self, tr("Save checkpoint"), suggested, tr(CHECKPOINT_FILTER))
        if not path:
            return
        if not Path(path).suffix:
            path += ".ckpt"
        rid = self.engine.submit(Save(path))
        if then:
            self._after_save[rid] = then

    def recent_files(self) -> list[str]:
        return self.recent.files()

    @property
    def autosave_path(self) -> Path:
        return self.autosave.path

    # -- closing ------------------------------------------------------------------------------------------
    def closeEvent(self, event) -> None:  # noqa: N802
        """Stop the engine after its current step, autosave unsaved work, and join the thread. While
        training that takes well under 2 s; a step or a save that lasts longer is waited for rather
        than cut off (cutting it off would lose the work being saved)."""
        if self.presenting:  # the layout and the font of the window outside presenter mode are kept
            self.presenter.set_on(False)
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.training.timer.stop()
        self.positional.refresh_timer.stop()
        self.decoding.play_timer.stop()
        if self.engine.isRunning() and not self.engine.shutdown(str(self.autosave_path), timeout_ms=2000):
            self.note(tr("Finishing the current step and saving your work…"))
            QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
            self.engine.wait()  # never leave a running thread behind: that would abort the program
            QApplication.restoreOverrideCursor()
        event.accept()

    def _about(self) -> None:
        self.show_message(
            tr(
                "Transformer Explorer trains an encoder–decoder Transformer on this computer and shows what happens "
                "inside it. Built on PyTorch, Qt (PySide6), pyqtgraph and Hugging Face tokenizers."
            ),
            "info",
        )
