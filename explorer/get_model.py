"""File → Get a model: a real model from the Hugging Face Hub, one click away.

A short list of models that open in this engine (and any other Hub id typed), fetched by
:func:`model.hf.download.download` on a thread of its own (the engine keeps training) into ``huggingface_hub``'s
cache, with progress, speed, time left and Cancel; then the folder opens as if chosen with *Open model folder*.
The models already in the cache are listed and open at once, also without network.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from explorer.i18n import N_, tr
from explorer.status_row import how_long
from explorer.widgets import named
from explorer.widgets.wrapped_label import WrappedLabel
from model.hf.download import CachedModel, DownloadCancelled, DownloadError, DownloadProgress


@dataclass(frozen=True)
class Offered:
    repo_id: str
    what: str  # N_ text
    megabytes: int  # about how much is fetched: config, tokenizer and weights


OFFERED = (
    Offered("Helsinki-NLP/opus-mt-en-zh", N_("Translation, English → Chinese (Marian: 6 + 6 layers, d 512)"), 310),
    Offered("Helsinki-NLP/opus-mt-zh-en", N_("Translation, Chinese → English (Marian: 6 + 6 layers, d 512)"), 310),
    Offered("openai-community/gpt2", N_("GPT-2: continues a text (12 layers, 124 M parameters)"), 550),
    Offered("distilbert/distilgpt2", N_("DistilGPT-2: a smaller GPT-2 (6 layers)"), 355),
    Offered("google-bert/bert-base-chinese", N_("BERT, Chinese: fills in a masked character (12 layers)"), 410),
    Offered("google-bert/bert-base-uncased", N_("BERT, English: fills in a masked word (12 layers)"), 440),
)
INTRO = N_(
    "Models that open in this program, fetched from the Hugging Face Hub into its cache (the one transformers "
    "uses): only the files this program reads. Any other Marian, GPT-2 or BERT model can be typed by its id."
)
FETCH = N_("Get and open")
CACHED_TITLE = N_("Already in the cache (open without network):")


def megabytes(n: float) -> str:
    return tr("{n} MB").format(n=f"{n / 1e6:,.1f}")


def progress_text(p: DownloadProgress) -> str:
    """ "12.3 MB of 310.0 MB · 4.1 MB/s · 1 min left" in the interface language."""
    parts = [tr("{done} of {total}").format(done=megabytes(p.done), total=megabytes(p.total))]
    if p.rate > 0:
        parts.append(tr("{rate}/s").format(rate=megabytes(p.rate)))
    if p.seconds_left is not None:
        parts.append(tr("{t} left").format(t=how_long(p.seconds_left)))
    return " · ".join(parts)


class DownloadJob(QObject):
    """One download on a thread of its own; its answers arrive on the window's thread as signals."""

    progressed = Signal(DownloadProgress)
    fetched = Signal(str)  # the folder
    failed = Signal(str, bool)  # the message, whether the person cancelled

    def __init__(self, repo_id: str, get: Callable[..., object] | None = None) -> None:
        super().__init__()
        self.repo_id, self.cancel = repo_id, threading.Event()
        self._get = get
        self.worker = threading.Thread(target=self._run, name="download", daemon=True)

    def start(self) -> None:
        self.worker.start()

    def _run(self) -> None:
        from model.hf.download import download

        get = self._get or download
        try:
            folder = get(self.repo_id, progress=self.progressed.emit, cancel=self.cancel)
        except DownloadCancelled:
            self.failed.emit(tr("Cancelled. The files already fetched stay in the cache."), True)
        except DownloadError as exc:
            self.failed.emit(str(exc), False)
        except Exception as exc:  # noqa: BLE001  (a download must never take the window down)
            self.failed.emit(f"{self.repo_id} could not be fetched: {exc}", False)
        else:
            self.fetched.emit(str(folder))


class GetModelDialog(QDialog):
    """The list, an id of one's own, the cache, and one download at a time with its progress and Cancel."""

    def __init__(self, open_folder: Callable[[str], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("get_model")
        self.open_folder = open_folder
        self.job: DownloadJob | None = None
        self.setWindowTitle(tr("Get a model"))
        layout = QVBoxLayout(self)
        intro = WrappedLabel()
        intro.setText(tr(INTRO))
        layout.addWidget(intro)
        self.offered = named(QListWidget(), "offered")
        for o in OFFERED:
            item = QListWidgetItem(f"{o.repo_id} — {tr(o.what)} ({tr('about {n} MB').format(n=o.megabytes)})")
            item.setData(Qt.ItemDataRole.UserRole, o.repo_id)
            self.offered.addItem(item)
        self.offered.setWordWrap(True)  # each model's line whole, at any width and in either language
        self.offered.currentItemChanged.connect(self._picked)
        self.offered.itemDoubleClicked.connect(lambda _item: self.fetch())
        layout.addWidget(self.offered)
        row = QHBoxLayout()
        row.addWidget(QLabel(tr("Model id:")))
        self.model_id = named(QLineEdit(), "model_id")
        self.model_id.setPlaceholderText("owner/name")
        self.model_id.returnPressed.connect(lambda: self.fetch())
        row.addWidget(self.model_id, 1)
        layout.addLayout(row)
        layout.addWidget(QLabel(tr(CACHED_TITLE)))
        self.cached = named(QListWidget(), "cached")
        self.cached.setMaximumHeight(self.cached.fontMetrics().height() * 6)
        self.cached.itemDoubleClicked.connect(lambda item: self._open(item.data(Qt.ItemDataRole.UserRole)))
        layout.addWidget(self.cached)
        self._add_progress_and_buttons(layout)
        self.resize(760, 500)
        self.show_cache()

    def _add_progress_and_buttons(self, layout: QVBoxLayout) -> None:
        self.bar = named(QProgressBar(), "progress")
        self.bar.setTextVisible(False)
        self.bar.setVisible(False)
        self.status = named(WrappedLabel(), "status")
        layout.addWidget(self.bar)
        layout.addWidget(self.status)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.fetch_button = named(QPushButton(tr(FETCH)), "fetch")
        self.fetch_button.setDefault(True)
        self.fetch_button.clicked.connect(lambda: self.fetch())
        self.cancel_button = named(QPushButton(tr("Cancel download")), "cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(lambda: self.cancel())
        close = QPushButton(tr("Close"))
        close.clicked.connect(lambda: self.close())
        for b in (self.fetch_button, self.cancel_button, close):
            buttons.addWidget(b)
        layout.addLayout(buttons)

    def show_cache(self) -> None:
        from model.hf.download import cached_models

        self.cached.clear()
        found: list[CachedModel] = cached_models()
        for m in found:
            item = QListWidgetItem(f"{m.repo_id} ({megabytes(m.size)})")
            item.setData(Qt.ItemDataRole.UserRole, str(m.folder))
            self.cached.addItem(item)
        if not found:
            self.cached.addItem(tr("none yet"))
            self.cached.item(0).setFlags(Qt.ItemFlag.NoItemFlags)

    def _picked(self, item: QListWidgetItem | None) -> None:
        if item is not None:
            self.model_id.setText(item.data(Qt.ItemDataRole.UserRole))

    def fetch(self, repo_id: str | None = None, get: Callable[..., object] | None = None) -> DownloadJob | None:
        """Start fetching ``repo_id`` (default: the id in the box); ``get`` replaces the downloader (tests)."""
        repo_id = (repo_id or self.model_id.text()).strip()
        if self.job is not None:
            return None
        if not repo_id:
            self.status.setText(tr("Choose a model in the list, or type its id (owner/name)."))
            return None
        self.model_id.setText(repo_id)
        self.job = DownloadJob(repo_id, get)
        self.job.progressed.connect(self._progressed)
        self.job.fetched.connect(self._fetched)
        self.job.failed.connect(self._failed)
        self._busy(True)
        self.status.setText(tr("Asking the Hub for {id}…").format(id=repo_id))
        self.job.start()
        return self.job

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel.set()
            self.status.setText(tr("Cancelling…"))

    def _busy(self, on: bool) -> None:
        self.bar.setVisible(on)
        if on:
            self.bar.setRange(0, 0)  # busy until the size is known
        self.fetch_button.setEnabled(not on)
        self.cancel_button.setEnabled(on)
        self.offered.setEnabled(not on)
        self.model_id.setEnabled(not on)

    def _progressed(self, p: DownloadProgress) -> None:
        if p.total > 0:
            self.bar.setRange(0, 1000)
            self.bar.setValue(round(1000 * min(p.done, p.total) / p.total))
        self.status.setText(f"{p.repo_id}: {p.file}\n{progress_text(p)}")

    def _fetched(self, folder: str) -> None:
        self.job = None
        self._busy(False)
        self.status.setText(tr("Fetched. Opening it…"))
        self._open(folder)

    def _failed(self, message: str, cancelled: bool) -> None:
        self.job = None
        self._busy(False)
        self.status.setText(message)
        self.show_cache()

    def _open(self, folder: str | None) -> None:
        if folder:
            self.close()
            self.open_folder(folder)

    def closeEvent(self, event) -> None:  # noqa: N802  (Qt's name)
        """Closing the dialog while fetching cancels the download (nothing half-fetched opens later)."""
        self.cancel()
        super().closeEvent(event)
