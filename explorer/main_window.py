"""The main window: the panels in docks, the menus, and the status row at the right of the menu bar.

Behaviour lives elsewhere: the File menu's commands in :class:`explorer.model_files.ModelFiles`, the status row's
state in :class:`explorer.window_status.WindowStatus`, presenter mode and scenes in
:class:`explorer.presenter.Presenter`; each panel sends its own requests through
:class:`explorer.engine_client.EngineClient`. The window hands a new model to every panel (``_on_run``), in order.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, QStandardPaths, Qt, QTimer
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QMenuBar, QVBoxLayout, QWidget

from explorer.answers import TRAINING, EngineStatus, RunInfo
from explorer.appearance import THEMES, apply_theme
from explorer.autosave import Autosave
from explorer.engine_client import EngineClient
from explorer.first_launch import FirstLaunch
from explorer.help import HelpBox
from explorer.help_families import family_topic
from explorer.i18n import N_, language, tr
from explorer.lessons.runner import LessonBar, LessonRunner
from explorer.model_files import ModelFiles, dropped_model
from explorer.model_files import is_model_path as is_model_path  # where explorer.app looks for it
from explorer.panels.attention import AttentionPanel
from explorer.panels.data_view import DataPanel
from explorer.panels.decoding import DecodingPanel
from explorer.panels.experiment import ExperimentPanel
from explorer.panels.interpret import WhyPanel
from explorer.panels.lanes import LanesPanel
from explorer.panels.model_info import ModelPanel
from explorer.panels.model_map import ModelMapPanel, ModelPart
from explorer.panels.positional import PositionalPanel
from explorer.panels.training import TrainingPanel
from explorer.presenter import Presenter
from explorer.recent_files import RecentFiles
from explorer.run_arrival import RunArrival, Step, panel_steps
from explorer.status_row import StatusRow
from explorer.widgets.message_bar import MessageBar
from explorer.window_layout import default_layout
from explorer.window_menus import WindowMenus
from explorer.window_quiet import WindowQuiet
from explorer.window_status import WindowStatus
from explorer.worker import Engine
from model.core.config import ModelConfig
from resources import resource_path

Panel = (
    TrainingPanel
    | DecodingPanel
    | AttentionPanel
    | PositionalPanel
    | ModelPanel
    | DataPanel
    | ModelMapPanel
    | WhyPanel
    | LanesPanel
    | ExperimentPanel
)
ATTENTION_OF_PART = {
    "encoder_self_attention": "encoder",
    "decoder_self_attention": "decoder_self",
    "cross_attention": "cross",
}
DEFAULT_SIZE = (1500, 920)  # the window on a screen that has room for it
SIDE_BY_SIDE_WIDTH = 1200  # narrower screens show the decoding panel and the attention map as tabs
PANELS = (
    ("training", N_("Training")),
    ("decoding", N_("Decoding")),
    ("attention", N_("Attention")),
    ("positional", N_("Positional encoding")),
    ("model", N_("Model")),
    ("data", N_("Data")),
    ("map", N_("Model map")),
    ("why", N_("Why?")),
    ("lanes", N_("Lanes")),
    ("experiment", N_("Experiment")),
)


def default_data_dir() -> Path:
    return Path(
        QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
        or Path.home() / ".transformer-explorer"
    )


def on_screen(dock: QDockWidget) -> bool:
    """Whether a dock is shown and not a tab behind another."""
    return dock.isVisible() and not dock.visibleRegion().isEmpty()


class MainWindow(QMainWindow):
    """The panels in docks, the menus and the status row; what the menus do is in the modules named above."""

    PANELS = PANELS

    def __init__(
        self,
        engine: Engine | None = None,
        settings: QSettings | None = None,
        data_dir: Path | None = None,
        device: str = "auto",
        open_path: str | None = None,
        start_default: bool = True,
        follow_path: str | None = None,
        follow_probe: str = "",
    ) -> None:
        super().__init__()
        self.setObjectName("main_window")
        self.settings = settings or QSettings()
        self.data_dir = Path(data_dir) if data_dir else default_data_dir()
        self.engine = engine or Engine(device)
        self.client = EngineClient(self.engine)
        # a new model's arrival at the panels (a window not shown yet: nothing waits for it)
        self.arrival = RunArrival(self, lambda key: not self.isVisible() or on_screen(self.docks[key]))
        self.arrival.answers_after(self.engine)  # before any panel connects to the engine
        self._create_panels()
        self.engine.window_quiet = WindowQuiet(self, self._drawing)
        self.training.live_plots.held = lambda: bool(self.arrival.waiting)  # the panels' turns first
        self._create_docks()
        self.presenter = Presenter(self)
        self.lesson_bar = LessonBar()
        self._create_top_bar()
        self.lessons = self.presenter.lesson = LessonRunner(self, self.lesson_bar)
        self.first_launch = FirstLaunch(self.client, self.settings, self.message_bar, start_default)
        self.first_launch.use_panels(
            self.training, self.model_panel, self.decoding, self.attention, self.train_from_scratch
        )
        self.autosave = Autosave(self.data_dir, self.client, self.message_bar)
        self.first_launch.busy = lambda: self.autosave.restoring is not None
        self._build_menus()
        self._build_status_bar()
        self.files = ModelFiles(
            self, self.client, self.window_status, self.recent, self.first_launch, self.training, self._bring_forward
        )
        self._connect_engine()
        self._connect_panels()
        language.changed.connect(self.retranslate)
        self._restore_window(training_first=not start_default and not open_path)
        self.retranslate()
        self._begin(open_path, start_default)
        if follow_path:
            QTimer.singleShot(0, lambda: self.files.follow_run(follow_path, follow_probe))

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
        self.why = WhyPanel()
        self.lanes = LanesPanel()
        self.experiment = ExperimentPanel()
        shown = (self.training, self.decoding, self.attention, self.positional, self.model_panel, self.data_panel)
        later = (self.model_map, self.why, self.lanes, self.experiment)
        self.panels: dict[str, Panel] = dict(zip((key for key, _ in PANELS), (*shown, *later)))

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
            # a panel brought to the front shows the newest model at once, before it draws what it looked at
            dock.visibilityChanged.connect(self.arrival.shown)
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
        top_layout.addWidget(self.lesson_bar)
        top_layout.addWidget(self.message_bar)
        self.setMenuWidget(top)

    def _connect_engine(self) -> None:
        """The answers that concern the whole window; panels connect their own (see EngineClient)."""
        self.window_status.attach(self.engine)
        self.window_status.title_changed.connect(self._update_title)
        self.window_status.path_shown.connect(self.recent.remember)
        self.files.attach()
        e = self.engine
        e.status_changed.connect(self._on_status)
        e.run_described.connect(self._on_run)
        e.data_described.connect(self.data_panel.on_data)
        e.engine_failed.connect(self._on_failed)

    def _connect_panels(self) -> None:
        self.training.scratch_requested.connect(self.train_from_scratch)
        self.training.attach(self.client, self.files.when_discarded)
        self.training.acted.connect(self.first_launch.person_takes_over)
        self.training.acted.connect(lambda: self._bring_forward("training"))
        self.decoding.attach(self.client)
        self.decoding.sentence_asked.connect(self.first_launch.welcome_done)
        self.attention.attach(self.client, self.decoding)
        self.attention.snapshot_selected.connect(self.training.set_probe_marker)
        self.why.attach(self.client, self.decoding)
        self.lanes.attach(self.client, self.decoding)
        self.experiment.attach(self.client)
        self.experiment.run_asked.connect(self.files.run_experiment)
        self.model_map.part_chosen.connect(self._on_part_chosen)

    def _on_part_chosen(self, part: ModelPart) -> None:
        """A part of the model map opens the view that shows it: an attention sublayer → that layer in the
        attention map; the positional encoding → the PE lab; the output layer and softmax → the candidates."""
        kind = ATTENTION_OF_PART.get(part.kind)
        if kind is not None:
            shown = self.attention.view()
            layer = shown.layer if part.layer is None else part.layer + 1
            self.attention.show_view(replace(shown, kind=kind, layer=layer))
            self.attention.show_tab("map")
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
        if on_screen(dock):
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
        self.base_font = QApplication.font()  # the type outside presenter mode
        theme = self.settings.value("theme")
        self.set_theme(str(theme) if theme in THEMES else "light")
        self.setAcceptDrops(True)
        self.setWindowIcon(QIcon(str(resource_path("icons/transformer-explorer.svg"))))

    def _begin(self, open_path: str | None, start_default: bool) -> None:
        self.engine.start()
        self.autosave.offer(self.files.when_discarded, self.first_launch.person_takes_over)
        # Load once the event loop runs: loading on the engine thread while the window is still being built
        # would compete with it for the GIL and delay the window.
        if open_path:
            QTimer.singleShot(0, lambda: self.first_launch.open_at_start(open_path))
        elif start_default:  # its views say that it is being read, instead of showing empty axes
            views = (self.decoding, self.attention, self.positional, self.model_map)
            self.first_launch.cover(views, self.status_corner.say_loading)
            QTimer.singleShot(0, self.first_launch.open_default_model)

    def train_from_scratch(self) -> None:
        """A fresh model with the Training panel's settings, training at once."""
        self.new_model(start=True)

    # -- drag and drop -----------------------------------------------------------------------------
    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if dropped_model(event):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        path = dropped_model(event)
        if path:
            event.acceptProposedAction()
            self.open_checkpoint(path)

    # -- layout -------------------------------------------------------------------------------------
    def _default_layout(self) -> None:
        """The panels as they first come (:func:`explorer.window_layout.default_layout`)."""
        default_layout(self, self.docks, self._screen_size()[0] >= SIDE_BY_SIDE_WIDTH)

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
        for a in self.menus.language_group.actions():
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

    def reset_layout(self) -> None:
        self.restoreState(self._default_state)
        for dock in self.docks.values():
            dock.show()

    # -- menus and status bar ----------------------------------------------------------------------
    def _build_menus(self) -> None:
        self.menus = WindowMenus(self, self.menu_bar)
        self.menu_actions: dict[str, QAction] = self.menus.actions
        self.file_menu = self.menus.file_menu
        self.recent: RecentFiles = RecentFiles(
            self.settings, self.menus.recent_menu, self.open_checkpoint, self.data_dir
        )
        self.recent.rebuild()

    def _build_status_bar(self) -> None:
        """The notes and the status at the right of the menu bar (see :class:`StatusRow`, :class:`WindowStatus`)."""
        row = self.status_corner = StatusRow()  # kept: the menu bar does not own its corner widget
        self.window_status = WindowStatus(row, self.message_bar, self)
        self.note_label, self.device_label, self.state_label = row.note_label, row.device_label, row.state_label
        self.step_label, self.loss_label, self.speed_label = row.step_label, row.loss_label, row.speed_label
        self.menu_bar.setCornerWidget(row, Qt.Corner.TopRightCorner)

    def note(self, text: str, ms: int = 0, tip: str = "") -> None:
        """A passing note beside the status (``ms`` = 0: until the next one); ``tip``: its tooltip."""
        self.status_corner.note(text, ms, tip)

    def _follow_family(self, cfg: ModelConfig) -> None:
        family = cfg.family  # what the Decoding panel is for it: its dock's title and its explanation
        self._decoding_title = family.labels["decoding_dock"]
        self.docks["decoding"].setWindowTitle(tr(self._decoding_title))
        self.help_boxes["decoding"].set_topic(family.help_keys["decoding"], "")
        for key in ("training", "map"):  # each family's own explanation, with its experts' and T5's paragraphs
            self.help_boxes[key].set_topic(family_topic(key, cfg), "")

    def retranslate(self) -> None:
        titles = {**dict(self.PANELS), "decoding": getattr(self, "_decoding_title", N_("Decoding"))}
        for key, dock in self.docks.items():
            dock.setWindowTitle(tr(titles[key]))
            self.panels[key].retranslate()
            self.help_boxes[key].retranslate()
        self.presenter.bar.retranslate()
        self.lessons.retranslate()
        self.menus.retranslate()
        self._update_title()
        self.window_status.show()

    @property
    def status(self) -> EngineStatus:
        """The engine's status, as last heard."""
        return self.window_status.status

    def _update_title(self) -> None:
        bundled_run = self.files.bundled_run
        if self.status.path:
            name = Path(self.status.path).name
        elif bundled_run is not None and self.status.run_id == bundled_run:
            name = tr("the bundled model (English → Chinese, teaching grammar)")
        else:
            name = tr("unsaved model")
        self.setWindowTitle(f"{'• ' if self.status.dirty else ''}{name} — Transformer Explorer")

    # -- engine events --------------------------------------------------------------------------------
    def _on_status(self, status: EngineStatus) -> None:
        self.positional.training = status.state == TRAINING
        self.first_launch.on_state(status.state)

    def _on_run(self, info: RunInfo) -> None:
        """A model is open: every panel hears of it, in this order (those behind another tab a turn later each,
        see explorer.run_arrival)."""
        automatic = self.first_launch.is_automatic(info)
        asked_bundled = self.files.on_run(info, automatic)
        self._update_title()
        self._follow_family(info.model_config)
        # a late automatic load never overwrites settings the person has been editing meanwhile
        fill_form = not (automatic and self.training.form.edited)
        steps: list[tuple[str, Step]] = [
            ("training", lambda: self.training.on_run(info, fill_form=fill_form)),
            *(step for key, _ in PANELS if key != "training" for step in panel_steps(key, self.panels[key], info)),
        ]
        self.arrival.hand(steps, then=lambda: self._after_panels(info, automatic, asked_bundled))

    def _after_panels(self, info: RunInfo, automatic: bool, asked_bundled: bool) -> None:
        self.lessons.on_run(info)  # after every panel: the slide's scene is set on the new model
        self.autosave.arrived(info)
        if automatic:
            self.first_launch.arrived(info)
        elif asked_bundled:
            self.first_launch.show_sample(info)

    def _drawing(self) -> bool:  # panels waiting for a new model, plots, probe snapshots (see explorer.window_quiet)
        probes = self.attention.over_training.absorbing()
        return self.isVisible() and bool(self.arrival.waiting or self.training.drawing() or probes)

    def _on_failed(self, request_id: int, message: str) -> None:
        message = self.first_launch.failed(request_id, message)
        self.autosave.failed(request_id)
        self.decoding.on_failed()
        self.show_message(message, "error")

    def show_message(self, text: str, level: str = "info", actions=None) -> None:
        self.message_bar.show_message(text, level, actions)

    # -- the File menu's commands (explorer.model_files) -----------------------------------------------------
    def new_model(self, start: bool = False) -> None:
        self.files.new_model(start)

    def open_checkpoint(self, path: str | None = None, confirm: bool = True) -> None:
        self.files.open_checkpoint(path, confirm)

    def open_model_folder(self, path: str | None = None) -> None:
        self.files.open_model_folder(path)

    def follow_run(self, path: str | None = None) -> None:
        self.files.follow_run(path)

    def save(self) -> None:
        self.files.save()

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
        if self.presenter.on:  # the layout and the font of the window outside presenter mode are kept
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
