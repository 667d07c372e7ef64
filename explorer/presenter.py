"""Presenter mode: full screen, one view at a time in large type, driven by a clicker's keys; and scenes.

A clicker sends PageDown / PageUp (some send → / ←, or Space): they step the view on screen forward and
back — the decoding (views 1–3 and 7) or the Q·K explainer's query (view 6). Home starts the decoding over,
1–9 choose the view, P plays the decoding by itself, + and − step its speed through
:data:`explorer.panels.decoding_state.SPEEDS`, Esc leaves (auto-play stops with it). A scene
is the view with its sentence, decoding mode and attention layer/head, saved under a name and
recalled during a lecture; scenes persist in the settings.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from functools import partial
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, Qt, Signal
from PySide6.QtGui import QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMenu,
    QMenuBar,
    QPushButton,
    QWidget,
)

from explorer.appearance import set_presenter_font
from explorer.i18n import N_, tr
from explorer.panels.attention_view import AttentionView
from explorer.panels.decoding_state import SPEEDS, DecodingViewState
from explorer.widgets import named

if TYPE_CHECKING:
    from explorer.first_launch import FirstLaunch
    from explorer.panels.attention import AttentionPanel
    from explorer.panels.decoding import DecodingPanel
    from explorer.panels.experiment import ExperimentPanel
    from explorer.panels.interpret import WhyPanel
    from explorer.panels.lanes import LanesPanel
    from explorer.panels.training import TrainingPanel


@dataclass(frozen=True)
class View:
    key: str
    title: str  # untranslated
    dock: str  # the panel that shows it
    focus: str | None = None  # the part of that panel it enlarges


VIEWS = (
    View("decoding", N_("Decoding"), "decoding", "candidates"),
    View("tree", N_("Beam tree"), "decoding", "tree"),
    View("attention", N_("Attention map"), "attention", "map"),
    View("positional", N_("Positional encoding"), "positional"),
    View("training", N_("Training curves"), "training"),
    View("explainer", N_("Q·K explainer"), "attention", "explainer"),
    View("why", N_("Why?"), "why"),
    View("lanes", N_("Lanes"), "lanes"),
    View("experiment", N_("Experiment"), "experiment"),
)
VIEW_KEYS = tuple(v.key for v in VIEWS)
STEP_KEYS = ("PgDown", "Right", "Space")
BACK_KEYS = ("PgUp", "Left")
PAD = 16  # px a push button needs beside its text (its frame and margins)


@dataclass(frozen=True)
class Scene:
    """A saved arrangement of the presentation: which view, which sentence, how it is decoded and shown."""

    name: str
    view: str
    sentence: str = ""
    mode: str = "greedy"  # greedy | beam | sample (a decoder-only model)
    beam_size: int = 4
    length_penalty: float = 0.6
    temperature: float = 1.0  # sampling (mode "sample"): temperature, top-k (0: off), top-p (1: off), seed (-1: random)
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    attention_kind: str = "cross"
    layer: int = 1
    head: int = 1
    average: bool = True

    def attention_view(self, shown: AttentionView) -> AttentionView:
        """The attention map of the scene: its kind, layer, head and averaging over what is ``shown`` now."""
        return replace(shown, kind=self.attention_kind, layer=self.layer, head=self.head, average=self.average)

    def decoding_view(self, shown: DecodingViewState) -> DecodingViewState:
        """The decoding panel of the scene: its sentence (if it has one) and settings over what is ``shown`` now."""
        return replace(
            shown,
            sentence=self.sentence or shown.sentence,
            mode=self.mode,
            beam_size=self.beam_size,
            length_penalty=self.length_penalty,
            temperature=self.temperature,
            top_k=self.top_k,
            top_p=self.top_p,
            seed=self.seed,
        )

    @classmethod
    def from_plain(cls, plain: dict) -> Scene | None:
        """A scene read back from the settings; None if it is not one (an older or edited file)."""
        names = {f.name for f in fields(cls)}
        if not isinstance(plain, dict) or not {"name", "view"} <= plain.keys() or plain["view"] not in VIEW_KEYS:
            return None
        try:
            return cls(**{k: v for k, v in plain.items() if k in names})
        except TypeError:
            return None


class Scenes:
    """Named scenes, kept in the settings in the order they were saved."""

    KEY = "presenter/scenes"

    def __init__(self, settings: QSettings) -> None:
        self.settings = settings

    def all(self) -> list[Scene]:
        try:
            plain = json.loads(str(self.settings.value(self.KEY, "[]")))
        except ValueError:
            return []
        scenes = [Scene.from_plain(p) for p in plain] if isinstance(plain, list) else []
        return [s for s in scenes if s is not None]

    def names(self) -> list[str]:
        return [s.name for s in self.all()]

    def get(self, name: str) -> Scene | None:
        return next((s for s in self.all() if s.name == name), None)

    def put(self, scene: Scene) -> None:
        """Saves ``scene``, replacing the one of the same name in its place."""
        scenes = self.all()
        names = [s.name for s in scenes]
        if scene.name in names:
            scenes[names.index(scene.name)] = scene
        else:
            scenes.append(scene)
        self._write(scenes)

    def remove(self, name: str) -> None:
        self._write([s for s in self.all() if s.name != name])

    def _write(self, scenes: list[Scene]) -> None:
        self.settings.setValue(self.KEY, json.dumps([asdict(s) for s in scenes], ensure_ascii=False))


class PresenterBar(QWidget):
    """The strip above the view while presenting: the views, the scenes, auto-play and the way out."""

    view_chosen = Signal(str)
    scene_chosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("presenter_bar")
        self.buttons: dict[str, QPushButton] = {}
        layout = self.row = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 2)
        for view in VIEWS:
            button = named(QPushButton(), f"presenter_view_{view.key}")
            button.setCheckable(True)
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keys stay the presenter's
            button.clicked.connect(partial(self.view_chosen.emit, view.key))
            self.buttons[view.key] = button
            layout.addWidget(button)
        layout.addStretch(1)
        self.play_state = named(QLabel(), "presenter_play_state")  # auto-play's speed, ▶ while it plays
        self.scene_label = QLabel()
        self.scenes = named(QComboBox(), "presenter_scene_combo")
        self.scenes.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.scenes.activated.connect(lambda i: self.scene_chosen.emit(self.scenes.itemData(i) or ""))
        self.keys = QLabel()
        for w in (self.play_state, self.scene_label, self.scenes, self.keys):
            layout.addWidget(w)
        self.retranslate()

    def _fit(self) -> None:
        """Every view's name where the bar has room for them all; else the views not on screen by their number
        alone (their names in their tips): nothing is cut, also on a 1024-px projector in large type."""
        names = {view.key: f"{number} {tr(view.title)}" for number, view in enumerate(VIEWS, 1)}
        layout = self.row
        margins = layout.contentsMargins()
        others = [w for w in (self.play_state, self.scene_label, self.scenes, self.keys) if not w.isHidden()]
        needed = (
            margins.left()
            + margins.right()
            + layout.spacing() * (len(self.buttons) + len(others))
            + sum(self.fontMetrics().horizontalAdvance(name) + PAD for name in names.values())
            + sum(w.minimumSizeHint().width() for w in others)
        )
        compact = needed > self.width()
        for number, view in enumerate(VIEWS, 1):
            button = self.buttons[view.key]
            text = str(number) if compact and not button.isChecked() else names[view.key]
            button.setText(text)
            button.setToolTip(tr(view.title))
            button.setMinimumWidth(button.fontMetrics().horizontalAdvance(text) + PAD)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # presenter mode's larger type: other widths
            self._fit()

    def show_play(self, playing: bool, speed: float) -> None:
        """Auto-play's speed (steps a second), with ▶ while it plays."""
        self.play_state.setText(("▶ " if playing else "") + tr("{n} steps/s").format(n=f"{speed:g}"))
        self._fit()

    def retranslate(self) -> None:
        self._fit()
        self.scene_label.setText(tr("Scene"))
        self.keys.setText(tr("Esc leaves"))
        self.keys.setToolTip(
            tr(
                "PgDn, → or Space: step · PgUp or ←: back · Home: start over · 1–9: views · "
                "P: auto-play · + −: its speed · Esc: leave presenter mode"
            )
        )
        if self.scenes.count():
            self.scenes.setItemText(0, tr("(choose a scene)"))

    def set_scenes(self, names: list[str]) -> None:
        self.scenes.clear()
        self.scenes.addItem(tr("(choose a scene)"), "")
        for name in names:
            self.scenes.addItem(name, name)
        self.scenes.setEnabled(bool(names))

    def set_view(self, key: str) -> None:
        for k, button in self.buttons.items():
            button.setChecked(k == key)
        self._fit()  # the view on screen is named in full


class SlideStepper(Protocol):
    """What presenter mode uses of a lesson (:class:`explorer.lessons.runner.LessonRunner`)."""

    @property
    def running(self) -> bool: ...
    def next(self) -> None: ...
    def back(self) -> None: ...


class PresentedWindow(Protocol):
    """What presenter mode uses of the main window (:class:`explorer.main_window.MainWindow`)."""

    settings: QSettings  # where the scenes are kept
    training: TrainingPanel
    decoding: DecodingPanel
    attention: AttentionPanel
    why: WhyPanel
    lanes: LanesPanel
    experiment: ExperimentPanel
    docks: dict[str, QDockWidget]  # by panel key
    menu_bar: QMenuBar
    first_launch: FirstLaunch
    base_font: QFont  # the type outside presenter mode

    def note(self, text: str, ms: int = 0, tip: str = "") -> None: ...
    def window(self) -> QWidget: ...  # Qt's: the window itself, as the parent of shortcuts and dialogs
    # QMainWindow's own: the layout and geometry kept while presenting, full screen
    def saveState(self, /, version: int | None = ...) -> QByteArray: ...
    def restoreState(self, state: QByteArray, /, version: int | None = ...) -> bool: ...
    def saveGeometry(self, /) -> QByteArray: ...
    def restoreGeometry(self, geometry: QByteArray, /) -> bool: ...
    def windowState(self, /) -> Qt.WindowState: ...
    def setWindowState(self, state: Qt.WindowState, /) -> None: ...
    def showFullScreen(self, /) -> None: ...


class Presenter(QObject):
    """Presenter mode of a main window: enter, choose views, step, scenes, leave."""

    changed = Signal(bool)  # presenting or not

    def __init__(self, window: PresentedWindow) -> None:
        super().__init__(window.window())
        self.window = window
        self.scenes = Scenes(window.settings)
        self.on = False
        self.view = VIEWS[0].key
        self._saved: tuple[QByteArray, QByteArray, Qt.WindowState] | None = None
        self.lesson: SlideStepper | None = None  # a lesson running: the clicker steps its slides
        self.bar = PresenterBar()
        self.bar.hide()
        self.bar.view_chosen.connect(self.show_view)
        self.bar.scene_chosen.connect(self.apply_scene)
        window.decoding.play_changed.connect(self._show_play)
        self._show_play()
        self.shortcuts = self._create_shortcuts()

    def _show_play(self) -> None:
        shown = self.window.decoding.view_state()
        self.bar.show_play(shown.playing, shown.speed)

    def _create_shortcuts(self) -> list[QShortcut]:
        actions: list[tuple[str, Callable[[], object]]] = [(k, self.step) for k in STEP_KEYS]
        actions += [(k, self.back) for k in BACK_KEYS]
        actions += [("Home", self.reset), ("Esc", lambda: self.set_on(False)), ("P", self.toggle_play)]
        actions += [("+", partial(self.change_speed, 1)), ("=", partial(self.change_speed, 1))]
        actions += [("-", partial(self.change_speed, -1))]
        actions += [(str(n), partial(self.show_view, v.key)) for n, v in enumerate(VIEWS, 1)]
        shortcuts = []
        for key, slot in actions:
            shortcut = QShortcut(QKeySequence(key), self.window.window())
            shortcut.activated.connect(slot)
            shortcut.setEnabled(False)
            shortcuts.append(shortcut)
        return shortcuts

    # -- entering and leaving ---------------------------------------------------------------------------
    def set_on(self, on: bool) -> None:
        if on == self.on:
            return
        self.on = on
        w = self.window
        if on:
            self._saved = (w.saveState(), w.saveGeometry(), w.windowState())
            self.bar.set_scenes(self.scenes.names())
            self.bar.show()
            w.menu_bar.hide()
            w.first_launch.welcome_done()  # the welcome speaks to a person at a desk, not to a class
            w.showFullScreen()
            self.show_view(self.view)  # the other docks hidden before the type grows
            self._arrange_window(True)
        else:
            self._arrange_window(False)  # the desktop's type before the docks come back (see _leave)
            self._leave()
        for shortcut in self.shortcuts:
            shortcut.setEnabled(on)
        self.changed.emit(on)

    def _arrange_window(self, on: bool) -> None:
        """The window's type (large while presenting) and its panels' editing rows (the View menu checks its
        own item)."""
        w = self.window
        set_presenter_font(w.window(), on, w.base_font)
        w.training.set_presenting(on)
        w.decoding.set_presenting(on)  # after the font: its large type is a size of the new one
        w.attention.set_presenting(on)
        w.why.set_presenting(on)
        w.lanes.set_presenting(on)
        w.experiment.set_presenting(on)

    def _leave(self) -> None:
        """The bars, docks, geometry and layout as they were. The type is already the desktop's: docks brought back
        while still in presenter type ask for their large minimum widths, side by side more than a 1366-pixel screen
        (1413 px), and the window grows to that and stays wider than the screen once the type is small again."""
        w = self.window
        self.bar.hide()
        w.menu_bar.show()
        w.decoding.set_focus(None)
        for dock in w.docks.values():
            dock.setTitleBarWidget(None)  # type: ignore[arg-type]  # None gives back the standard title
        if self._saved is not None:
            state, geometry, window_state = self._saved
            w.setWindowState(window_state)
            w.restoreGeometry(geometry)
            w.restoreState(state)
            self._saved = None

    # -- views -----------------------------------------------------------------------------------------
    def show_view(self, key: str) -> None:
        """One view fills the screen: its panel alone, the part that shows it enlarged."""
        view = next(v for v in VIEWS if v.key == key)
        self.view = key
        w = self.window
        if not self.on:
            return
        for name, dock in w.docks.items():
            if name == view.dock:
                dock.setFloating(False)
                dock.setTitleBarWidget(QWidget())  # no title bar: the bar above names the view
                dock.show()
                dock.raise_()
            else:
                dock.hide()
        w.decoding.set_focus(view.focus if view.dock == "decoding" else None)
        if view.dock == "attention":
            w.attention.show_tab("explainer" if view.focus == "explainer" else "map")
        if key == "explainer":
            w.attention.explain_head_shown()  # a head at once: the clicker walks its queries
        if key == "lanes" and w.lanes.view is None and w.lanes.waiting is None:
            w.lanes.start()  # the decoding's sentence in lanes at once: the clicker steps them
        self.bar.set_view(key)

    # -- the clicker -------------------------------------------------------------------------------------
    def step(self) -> None:
        if self.lesson is not None and self.lesson.running:  # a lesson: the clicker goes slide by slide
            self.lesson.next()
        elif self.view == "explainer":  # (nothing explained on entering, a sentence since: the head is explained)
            self.window.attention.step_explainer(1)
        elif self.view == "lanes":
            self.window.lanes.press("step")
        elif self.view in ("decoding", "tree", "attention", "why"):
            self.window.decoding.press("step")

    def back(self) -> None:
        if self.lesson is not None and self.lesson.running:
            self.lesson.back()
        elif self.view == "explainer":
            self.window.attention.step_explainer(-1)
        elif self.view == "lanes":
            self.window.lanes.press("back")
        elif self.view in ("decoding", "tree", "attention", "why"):
            self.window.decoding.press("back")

    def reset(self) -> None:
        if self.view == "lanes":
            self.window.lanes.press("reset")
        elif self.view in ("decoding", "tree", "attention", "why"):
            self.window.decoding.press("reset")

    def toggle_play(self) -> None:
        shown = self.window.decoding.view_state()
        self.window.decoding.show_view_state(replace(shown, playing=not shown.playing))

    def change_speed(self, direction: int) -> None:
        """The next speed of auto-play up (``direction`` 1) or down (−1): one notch of SPEEDS."""
        shown = self.window.decoding.view_state()
        notch = min(max(SPEEDS.index(shown.speed) + direction, 0), len(SPEEDS) - 1)
        self.window.decoding.show_view_state(replace(shown, speed=SPEEDS[notch]))

    # -- scenes --------------------------------------------------------------------------------------------
    def current_scene(self, name: str) -> Scene:
        d, a = self.window.decoding.view_state(), self.window.attention.view()
        return Scene(
            name=name,
            view=self.view,
            sentence=d.sentence,
            mode=d.mode,
            beam_size=d.beam_size,
            length_penalty=d.length_penalty,
            temperature=d.temperature,
            top_k=d.top_k,
            top_p=d.top_p,
            seed=d.seed,
            attention_kind=a.kind,
            layer=a.layer,
            head=a.head,
            average=a.average,
        )

    def fill_scenes_menu(self, menu: QMenu) -> None:
        """The View menu's Scenes: save the current scene, recall a saved one (entering presenter mode), delete one."""
        menu.clear()
        save = menu.addAction(tr("Save the current scene…"), self.ask_scene_name)
        save.setObjectName("action_save_scene")
        names = self.scenes.names()
        if names:
            menu.addSeparator()
        for name in names:
            menu.addAction(name, partial(self.recall_scene, name))
        if names:
            delete = menu.addMenu(tr("Delete a scene"))
            for name in names:
                delete.addAction(name, partial(self.delete_scene, name))

    def ask_scene_name(self) -> None:
        name, ok = QInputDialog.getText(
            self.window.window(),
            tr("Save the current scene"),
            tr("Name of the scene (the view, sentence, decoding mode and attention layer/head are kept):"),
        )
        if ok and name.strip():
            self.save_scene(name.strip())
            self.window.note(tr("Scene “{name}” saved").format(name=name.strip()), 4000)

    def recall_scene(self, name: str) -> None:
        self.apply_scene(name)
        self.set_on(True)

    def save_scene(self, name: str) -> None:
        self.scenes.put(self.current_scene(name))
        self.bar.set_scenes(self.scenes.names())

    def delete_scene(self, name: str) -> None:
        self.scenes.remove(name)
        self.bar.set_scenes(self.scenes.names())

    def apply_scene(self, name: str) -> None:
        """Arrange the window as the scene was saved, and decode its sentence from the start."""
        scene = self.scenes.get(name)
        if scene is not None:
            self.apply(scene)

    def apply(self, scene: Scene) -> None:
        """Arrange the window as ``scene`` says (a saved scene, a lesson's slide), decoding its sentence from the
        start."""
        d, a = self.window.decoding, self.window.attention
        d.show_view_state(scene.decoding_view(d.view_state()))
        a.show_view(scene.attention_view(a.view()))
        if scene.sentence:
            d.start()
            if scene.view == "lanes":
                self.window.lanes.start(scene.beam_size, scene.temperature)
        self.view = scene.view
        if self.on:
            self.show_view(scene.view)
