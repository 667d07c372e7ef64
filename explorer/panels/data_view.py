"""Data panel: the current corpus, and sentences as the tokenizers split them.

Route: it asks for nothing. The engine describes a run's corpus once the first screen is done
(``Engine._describe_data`` in explorer/engine_base.py) and sends it on ``data_described``; the main
window hands the run itself (``run_described``) to every panel's ``on_run``.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from explorer.answers import RunData, RunInfo
from explorer.i18n import tr
from explorer.panels.model_info import tokenizer_text
from explorer.widgets import named
from explorer.widgets.token_strip import TokenStrip


class DataPanel(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("data_panel")
        self.info: RunInfo | None = None
        self.data: RunData | None = None
        self.summary = named(QLabel(), "data_summary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.grid_host = QWidget()
        self.grid = QGridLayout(self.grid_host)
        self.grid.setColumnStretch(0, 1)
        self.grid.setColumnStretch(1, 1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.grid_host)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(scroll, 1)
        self.strips: list[tuple[TokenStrip, TokenStrip]] = []
        self._on_screen = True  # False while the dock is a tab behind another
        self._samples_shown = False
        self.retranslate()

    def retranslate(self) -> None:
        if self.info is None:
            self.summary.setText(tr("No data yet."))
        else:
            self._summarise()

    def _summarise(self) -> None:
        info, c = self.info, self.data.corpus if self.data is not None else None
        assert info is not None  # described only once a model is open
        if c is None:  # described a moment after the model opens
            name = html.escape(info.data.task or Path(info.data.path or "").name)
            self.summary.setText(f"<b>{name}</b><br>{tr('Reading the data…')}")
            return
        if c.error is not None:
            name, error = html.escape(c.name), html.escape(c.error)  # a file's name and what went wrong
            self.summary.setText(f"<b>{name}</b><br><span style='color:#c62828'>{error}</span>")
            return
        text = (
            f"<b>{html.escape(c.name)}</b> — {html.escape(tr(c.description))}<br>"
            f"{tr('train')} {c.train:,} · {tr('valid')} {c.valid:,} · {tr('test')} {c.test:,} "
            f"{tr('pairs')}; {c.src_lang} → {c.tgt_lang}; {tr('tokenizer')}: {tokenizer_text(info)}"
        )
        if c.truncated:
            text += f"<br>{c.truncated} {tr('training pairs were longer than the model accepts and were cut')}"
        if c.report:
            text += f"<br><small>{html.escape(c.report)}</small>"  # may quote lines of the file
        text += f"<br><br>{tr('Training sentences as the tokenizers split them (source | target):')}"
        self.summary.setText(text)

    def on_run(self, info: RunInfo) -> None:
        if self.info is None or info.run_id != self.info.run_id:
            self.data = None
            self._show_samples(())
        self.info = info
        self._summarise()

    def on_data(self, data: RunData) -> None:
        if self.info is None or data.run_id != self.info.run_id:
            return  # about a run that has been replaced
        self.data = data
        self._summarise()
        self._samples_shown = False
        if self._on_screen:
            self._show_samples(data.samples)

    def set_on_screen(self, on: bool) -> None:
        """Told by the dock; the sentences are laid out once the panel is looked at."""
        self._on_screen = on
        if on and self.data is not None and not self._samples_shown:
            self._show_samples(self.data.samples)

    def _show_samples(self, samples) -> None:
        self._samples_shown = True
        while self.grid.count():
            item = self.grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:  # the grid holds only token strips; a spacer would have no widget
                widget.deleteLater()
        self.strips = []
        for row, (src, tgt) in enumerate(samples):
            a = TokenStrip(list(src.pieces), set(src.unknown))
            b = TokenStrip(list(tgt.pieces), set(tgt.unknown))
            self.grid.addWidget(a, row, 0)
            self.grid.addWidget(b, row, 1)
            self.strips.append((a, b))
