"""What the program does on its own at start-up, and how it yields to what the person does.

At launch the window opens the command line's checkpoint, or the bundled trained model, shows the
welcome bar and translates a sample sentence with its cross-attention on screen. Every part of that
plan is dropped once the person acts (trains, opens, restores, makes a model): a late automatic
load never replaces their model (the engine also skips a load marked ``if_no_model`` once a model
exists), and nothing of the bundled model's demonstration lands on theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QSettings, Qt
from PySide6.QtWidgets import QLabel, QWidget

from explorer.commands import Load, NewModel
from explorer.i18n import N_, tr
from explorer.samples import SAMPLES
from resources import default_model

if TYPE_CHECKING:
    from explorer.answers import RunInfo
    from explorer.engine_client import EngineClient
    from explorer.panels.attention import AttentionPanel
    from explorer.panels.decoding import DecodingPanel
    from explorer.panels.model_info import ModelPanel
    from explorer.panels.training import TrainingPanel
    from explorer.widgets.message_bar import MessageBar


LOADING = N_("Loading the bundled model…")
SCRATCH = "scratch"  # the message bar's kind for "a new model is training from scratch"


class LoadingCover(QLabel):
    """Over a view while the bundled model is read: says so, where the view would show empty axes and frames."""

    def __init__(self, view: QWidget) -> None:
        super().__init__(view)
        self.view = view
        self.setObjectName("loading_cover")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setAutoFillBackground(True)  # the theme's window colour: nothing of the empty view shows through
        font = self.font()
        font.setPointSizeF(1.3 * font.pointSizeF())
        self.setFont(font)
        view.installEventFilter(self)
        self.hide()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 — Qt's name
        if watched is self.view and event.type() == QEvent.Type.Resize:
            self.setGeometry(self.view.rect())
        return False

    def cover(self, on: bool) -> None:
        if on:
            self.setText(tr(LOADING))
            self.setGeometry(self.view.rect())
            self.raise_()
        self.setVisible(on)


def welcome_text() -> str:
    return tr(
        "Welcome! This model has already learned English → Chinese from the project's teaching grammar. "
        "Type a sentence in the Decoding panel and step through its translation, or train one yourself."
    )


class FirstLaunch:
    def __init__(self, client: EngineClient, settings: QSettings, bar: MessageBar, start_default: bool) -> None:
        self.client, self.settings, self.bar = client, settings, bar
        self.start_default = start_default  # open the bundled model when nothing else is asked for
        self.auto_load: int | None = None  # the bundled model's load, until it arrives or the person acts
        self.startup_open: int | None = None  # the command line's checkpoint: if it fails, the bundled model
        self.person_acted = False
        self.busy: Callable[[], bool] = lambda: False  # e.g. an autosave being restored
        self.covers: list[LoadingCover] = []  # over the views while the bundled model is read
        self.say_loading: Callable[[bool], None] = lambda on: None  # the status row's note of it
        self._training = False  # the engine trains (its last state)
        self.get_model: Callable[[], object] = lambda: None  # File → Get a model

    def use_panels(
        self,
        training: TrainingPanel,
        model: ModelPanel,
        decoding: DecodingPanel,
        attention: AttentionPanel,
        train_from_scratch: Callable[[], None],
    ) -> None:
        self.training, self.model, self.decoding, self.attention = training, model, decoding, attention
        self.train_from_scratch = train_from_scratch

    def cover(self, views: Sequence[QWidget], say_loading: Callable[[bool], None]) -> None:
        """Until the bundled model is open, ``views`` say that it is being read (instead of empty axes) and
        ``say_loading`` notes it in the status row; from now, as the program is about to open it."""
        self.covers = [LoadingCover(v) for v in views]
        self.say_loading = say_loading
        self._loading(True)

    def _loading(self, on: bool) -> None:
        self.model.set_loading(on)
        for c in self.covers:
            c.cover(on)
        self.say_loading(on)

    def open_at_start(self, path: str) -> None:
        if not self.person_acted:
            self.startup_open = self.client.send(Load(str(path)))

    def open_default_model(self) -> None:
        """Start with the bundled, trained model (a fresh one if it is missing), showing a sentence.
        Nothing happens once the person has acted: their model or their run is never replaced."""
        if self.busy() or self.person_acted:
            self._loading(False)
            return
        bundled = default_model()
        if bundled is None:
            self._loading(False)
            self.client.send(NewModel(self.training.form.spec(), if_no_model=True))
            return
        self.auto_load = self.client.send(Load(str(bundled), kind="bundled", if_no_model=True))
        self._loading(True)
        # now, not when the model arrives: the bar moves every panel down, and that re-layout and repaint
        # (~30 + 30 ms on two cores) would come just as the first answers are drawn
        self.welcome()

    def person_takes_over(self) -> None:
        """The person acted: the start-up's own plans are dropped."""
        self.person_acted = True
        self.auto_load = None
        self._loading(False)
        if self.bar.showing and self.bar.kind == "welcome":
            self.bar.hide()  # it speaks of the bundled model, which is no longer coming

    def on_state(self, state: str) -> None:
        """The engine's state, however it was reached (a button, a key, the welcome's own button): once training
        runs, the welcome has done its work; once it stops (paused, stopped), "a new model is training from
        scratch" is no longer true, and its bar gives its height back to the views."""
        if state == "training":
            self.welcome_done()
        elif self._training and self.bar.showing and self.bar.kind == SCRATCH:
            self.bar.hide()
        self._training = state == "training"

    def welcome_done(self) -> None:
        """The person decodes a sentence of their own, as the welcome suggests: the bar has done its work
        and gives its height back to the views."""
        if self.bar.showing and self.bar.kind == "welcome":
            self.bar.hide()

    def welcome(self) -> None:
        if self.settings.value("welcomed", False, type=bool) or self.bar.showing:
            return
        self.settings.setValue("welcomed", True)
        actions = [(tr("Train from scratch"), self.train_from_scratch), (tr("Get a real model…"), self.get_model)]
        self.bar.show_message(welcome_text(), "info", actions, kind="welcome")

    def is_automatic(self, info: RunInfo) -> bool:
        """The run is the bundled model this plan asked for (the person's edits to the form stay)."""
        return info.origin != 0 and info.origin == self.auto_load

    def arrived(self, info: RunInfo) -> None:
        """The bundled model is open: its sample sentence ready to step, its cross-attention shown."""
        self.auto_load = None
        self._loading(False)
        self.show_sample(info)
        self.welcome()

    def show_sample(self, info: RunInfo) -> None:
        """The task's sample sentence at its first decoding step, with the last layer's cross-attention."""
        sentence = SAMPLES.get(info.data.task or "")
        if sentence is not None:
            self.attention.follow_cross_attention(info.model_config.n_decoder_layers)
            self.decoding.play_sample(sentence)

    def failed(self, request_id: int, message: str) -> str:
        """A request of this plan failed: the bundled model instead of a command line's file that cannot
        be opened (never no model at all). Returns the message to show."""
        if request_id == self.auto_load:
            self._loading(False)
        if request_id == self.startup_open:
            self.startup_open = None
            if self.training.current is None and not self.person_acted and self.start_default:
                if default_model() is not None:
                    message += "\n" + tr("The bundled model is open instead.")
                self.open_default_model()
        return message
