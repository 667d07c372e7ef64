"""The File menu's commands: a new model, open a checkpoint or a Hugging Face model folder, follow a run, the bundled
model again, save and save as — each asking first when unsaved work would be lost — and what their answers mean.

Route: a command goes through :meth:`explorer.engine_client.EngineClient.send` (``NewModel``, ``Start``, ``Load``,
``Follow``, ``Save``); the engine answers on ``run_described`` (the model is open: :meth:`ModelFiles.on_run` says
whether it is the bundled one), ``saved`` (:meth:`ModelFiles._on_saved` runs what was waiting for the save) and
``engine_failed``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QFileDialog, QWidget

from explorer import dialogs
from explorer.answers import RunInfo
from explorer.commands import Follow, Load, NewModel, RunExperiment, Save, Start
from explorer.engine_client import EngineClient
from explorer.first_launch import SCRATCH, FirstLaunch
from explorer.i18n import N_, tr
from explorer.recent_files import RecentFiles
from explorer.widgets.message_bar import MessageBar
from explorer.window_status import WindowStatus
from model.io.follow import RunFolderError, check_run_folder
from resources import default_model

if TYPE_CHECKING:
    from explorer.get_model import GetModelDialog
    from explorer.panels.training import TrainingPanel

CHECKPOINT_FILTER = N_("Transformer Explorer checkpoints (*.ckpt);;All files (*)")


def is_model_path(path: str) -> bool:
    """What the window opens as a model: a checkpoint (.ckpt), or a folder (a Hugging Face model's: Marian
    opus-mt, GPT-2, BERT; the engine says what is wrong with one that is not)."""
    return path.lower().endswith(".ckpt") or Path(path).is_dir()


def dropped_model(event: QDropEvent | QDragEnterEvent) -> str | None:
    """The first checkpoint (.ckpt) or folder (a Hugging Face model's, the engine checks) dropped."""
    for url in event.mimeData().urls():
        if url.isLocalFile() and is_model_path(url.toLocalFile()):
            return url.toLocalFile()
    return None


class ModelFiles(QObject):
    """The commands that replace or save the model, for the window ``window`` (the parent of their dialogs)."""

    def __init__(
        self,
        window: QWidget,
        client: EngineClient,
        status: WindowStatus,
        recent: RecentFiles,
        first_launch: FirstLaunch,
        training: TrainingPanel,
        bring_forward: Callable[[str], None],
    ) -> None:
        super().__init__(window)
        self.window, self.client, self.status, self.recent = window, client, status, recent
        self.first_launch, self.training, self.bring_forward = first_launch, training, bring_forward
        self.message_bar: MessageBar = status.message_bar
        self.bundled_run: int | None = None  # the run that is the bundled model, while it is open
        self._bundled_requests: set[int] = set()  # loads of the bundled model asked for from the menu
        self._after_save: dict[int, Callable[[], object]] = {}  # what waits for a save: by its request
        self.get_model_dialog: GetModelDialog | None = None
        first_launch.get_model = self.get_model

    def attach(self) -> None:
        self.client.engine.saved.connect(self._on_saved)
        self.client.engine.engine_failed.connect(self._on_failed)

    def when_discarded(self, then: Callable[[], object], question: str, always_ask: bool = False) -> None:
        """Run ``then`` once the current model may be replaced: ask first when work would be lost."""
        if self.status.status.dirty:
            choice = dialogs.ask(
                self.window,
                tr("Unsaved work"),
                question + "\n\n" + tr("Save it first?"),
                (dialogs.SAVE, dialogs.DISCARD, dialogs.CANCEL),
            )
            if choice == dialogs.SAVE:
                self.save(then=then)
            elif choice == dialogs.DISCARD:
                then()
        elif always_ask:
            asked = dialogs.ask(self.window, tr("Replace the model?"), question, (dialogs.YES, dialogs.CANCEL))
            if asked == dialogs.YES:
                then()
        else:
            then()

    # -- replacing the model ---------------------------------------------------------------------------------
    def new_model(self, start: bool = False) -> None:
        """A fresh model from the Training panel's settings (training at once with ``start``)."""
        self.first_launch.person_takes_over()
        self.bring_forward("training")
        try:
            spec = self.training.form.spec()
        except ValueError as exc:
            self.message_bar.show_message(str(exc), "error")
            return
        replaces_bundled = self.bundled_run is not None and self.status.status.run_id == self.bundled_run

        def replace() -> None:
            self.client.send(NewModel(spec))
            if start:
                self.client.send(Start())
            if replaces_bundled and not self.status.status.dirty:  # one click, and one click back
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
        self.when_discarded(replace, tr(question))

    def open_checkpoint(self, path: str | None = None, confirm: bool = True) -> None:
        """Open a checkpoint, or a Hugging Face model folder (see :meth:`open_model_folder`)."""
        if path is None:
            path, _ = QFileDialog.getOpenFileName(
                self.window, tr("Open checkpoint"), self.recent.last_folder(), tr(CHECKPOINT_FILTER)
            )
            if not path:
                return
        self.first_launch.person_takes_over()
        target = str(path)

        def load() -> None:
            self.status.opening(self.client.send(Load(target)), Path(target).name)

        if confirm:
            question = (
                N_("Opening a model folder replaces the current model.")
                if Path(target).is_dir()
                else N_("Opening a checkpoint replaces the current model.")
            )
            self.when_discarded(load, tr(question))
        else:
            load()

    def open_model_folder(self, path: str | None = None) -> None:
        """A model folder downloaded from the Hugging Face Hub (a Marian opus-mt translator, GPT-2, BERT), read
        into this program's engine: every panel works on it, and the Training panel fine-tunes it."""
        if path is None:
            path = QFileDialog.getExistingDirectory(
                self.window, tr("Open a Hugging Face model folder"), self.recent.last_folder()
            )
            if not path:
                return
        self.open_checkpoint(path)

    def get_model(self) -> GetModelDialog:
        """File → Get a model: a model from the Hugging Face Hub, fetched while the window goes on working, then
        opened as a model folder (asking first if unsaved work would be lost)."""
        from explorer.get_model import GetModelDialog

        if self.get_model_dialog is None:
            self.get_model_dialog = GetModelDialog(lambda folder: self.open_model_folder(folder), self.window)
        else:
            self.get_model_dialog.show_cache()
        self.get_model_dialog.show()
        self.get_model_dialog.raise_()
        return self.get_model_dialog

    def follow_run(self, path: str | None = None, probe: str = "") -> None:
        """Show a training run another process writes into a folder: its curves live, its newest checkpoint as
        the model, its probe snapshots (or, for a run that writes none, ``probe``'s attention at each checkpoint).
        Nothing is written into the folder."""
        if path is None:
            path = QFileDialog.getExistingDirectory(self.window, tr("Follow a training run"), self.recent.last_folder())
            if not path:
                return
        try:
            check_run_folder(path)
        except RunFolderError as exc:
            self.message_bar.show_message(str(exc), "error")
            return
        self.first_launch.person_takes_over()
        folder = str(path)
        self.when_discarded(
            lambda: self.client.send(Follow(folder, probe)), tr("Following a run replaces the current model.")
        )

    def run_experiment(self, name: str, steps: int | None = None) -> None:
        """Train the bundled experiment ``name`` beside its baseline in this window, for ``steps`` updates (None:
        the experiment's own); the Experiment panel shows both. Asks first if unsaved work would be replaced."""
        self.first_launch.person_takes_over()
        self.bring_forward("experiment")
        self.when_discarded(
            lambda: self.client.send(RunExperiment(name, steps=steps)),
            tr("Running an experiment replaces the current model."),
        )

    def open_bundled(self) -> None:
        """The bundled, trained model again (asking first if unsaved work would be replaced)."""
        bundled = default_model()
        if bundled is None:
            self.message_bar.show_message(tr("The bundled model is missing from this installation."), "error")
            return
        self.first_launch.person_takes_over()

        def load() -> None:
            self._bundled_requests.add(self.client.send(Load(str(bundled), kind="bundled")))

        self.when_discarded(load, tr("Opening the bundled model replaces the current model."))

    def on_run(self, info: RunInfo, automatic: bool) -> bool:
        """A model is open (``automatic``: the one the first launch asked for). → whether it is the bundled model
        asked for from the File menu."""
        asked = info.origin in self._bundled_requests
        self._bundled_requests.discard(info.origin)
        if automatic or asked:
            self.bundled_run = info.run_id
        elif info.run_id != self.bundled_run:
            self.bundled_run = None
        return asked

    # -- saving -------------------------------------------------------------------------------------------------
    def save(self, then: Callable[[], object] | None = None) -> None:
        """Save to the file the model came from; a model opened from a folder is saved as a checkpoint (Save as)."""
        path = self.status.status.path
        if path and not Path(path).is_dir():
            self._save_to(path, then)
        else:
            self.save_as(then=then)

    def save_as(self, then: Callable[[], object] | None = None) -> None:
        opened = Path(self.status.status.path) if self.status.status.path else None
        if opened is not None and opened.is_dir():  # a model folder: a checkpoint beside it, named after it
            suggested = str(opened.parent / f"{opened.name}.ckpt")
        else:
            suggested = str(Path(self.recent.last_folder()) / "model.ckpt")
        path, _ = QFileDialog.getSaveFileName(self.window, tr("Save checkpoint"), suggested, tr(CHECKPOINT_FILTER))
        if not path:
            return
        self._save_to(path if Path(path).suffix else path + ".ckpt", then)

    def _save_to(self, path: str, then: Callable[[], object] | None) -> None:
        request_id = self.client.send(Save(path))
        if then:
            self._after_save[request_id] = then

    def _on_saved(self, request_id: int, path: str) -> None:
        self.status.row.note(tr("Saved") + f" {Path(path).name}", 5000)
        self.recent.remember(path)
        then = self._after_save.pop(request_id, None)
        if then is not None:
            then()

    def _on_failed(self, request_id: int, _message: str) -> None:
        self._after_save.pop(request_id, None)
