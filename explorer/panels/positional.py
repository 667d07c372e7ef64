"""Positional-encoding lab: the paper's sinusoids, their matrix and similarities, the shift matrix M_k,
and the model's own positions (a learned table, RoPE's rotations, or T5's relative-position buckets).

The panel holds its pieces: the settings (:mod:`explorer.panels.positional_controls`), the paper's sinusoids
(:mod:`explorer.panels.positional_paper`) and the model's own positions (:mod:`explorer.panels.positional_model`,
with T5's buckets in :mod:`explorer.panels.positional_t5`). The sinusoid formulas, RoPE's angles and T5's buckets
are computed there (with the engine's functions in model.core.positional, from the model's configuration); a
learned table comes from the engine as a snapshot.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from explorer.answers import PositionalReady, RunInfo
from explorer.commands import Positional
from explorer.engine_client import EngineClient
from explorer.engine_loading import engine_loaded
from explorer.i18n import N_, tr
from explorer.panels.positional_controls import LabControls
from explorer.panels.positional_model import ModelViews
from explorer.panels.positional_paper import PaperViews
from explorer.widgets import named
from model.io.snapshots import PositionalTables

TAB_NAMES = (N_("Curves"), N_("Matrix"), N_("Similarity"), N_("Shift by k"), N_("This model"))


class PositionalPanel(QWidget):
    """The sinusoids of the paper, and the current model's own positional encoding.

    Route: :meth:`attach` → ``client.ask(Positional())`` (:mod:`explorer.engine_client`) →
    ``Engine._positional`` → ``Session.positional_tables``; the answer arrives on the engine's
    ``positional_ready`` signal (:meth:`_on_tables_ready`). A learned table changes while the model
    trains: it is asked for again every 2 s while training and on screen.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("positional_panel")
        self.client: EngineClient | None = None
        self.training = False  # the engine is training (the learned table changes)
        self.refresh_timer = QTimer(self, interval=2000)
        self.refresh_timer.timeout.connect(self._refresh)
        self.info: RunInfo | None = None
        self.model_tables: PositionalTables | None = None
        self._stale = True  # drawn once on screen
        self._on_screen = True  # False while the dock is a tab behind another (see set_on_screen)
        self._create_controls()
        self._create_views()
        self._lay_out()
        self.retranslate()

    def _create_controls(self) -> None:
        self.controls = LabControls(self.redraw)
        c = self.controls  # (the names the window, the presenter and tests use)
        self.d_model, self.positions, self.dims, self.shift, self.pos_spin = (
            c.d_model,
            c.positions,
            c.dims,
            c.shift,
            c.pos_spin,
        )

    def _create_views(self) -> None:
        self.paper = PaperViews()
        p = self.paper
        self.curves, self.matrix, self.similarity = p.curves, p.matrix, p.similarity
        self.shift_plot, self.shift_matrix, self.shift_note = p.shift_plot, p.shift_matrix, p.shift_note
        self.model_views = ModelViews()
        m = self.model_views
        self.model_note, self.learned, self.rope_angles, self.rope_scores = (
            m.model_note,
            m.learned,
            m.rope_angles,
            m.rope_scores,
        )
        self.t5_plot, self.t5_matrix, self.t5_bias = m.t5.t5_plot, m.t5.t5_matrix, m.t5.t5_bias

    def _lay_out(self) -> None:
        controls = self.controls.lay_out()
        self.labels = self.controls.labels
        self.tabs = named(QTabWidget(), "pe_tabs")
        self.tabs.addTab(self.curves, "")
        self.tabs.addTab(self.matrix, "")
        self.tabs.addTab(self.similarity, "")
        self.tabs.addTab(self.paper.shift_page(), "")
        self.tabs.addTab(self.model_views.page(), "")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(controls)
        layout.addWidget(self.tabs, 1)

    def retranslate(self) -> None:
        self.controls.retranslate()
        for i, text in enumerate(TAB_NAMES):
            self.tabs.setTabText(i, tr(text))
        for w in (*self.paper.views(), *self.model_views.views()):
            w.retranslate()
        self.redraw()

    def on_run(self, info: RunInfo) -> None:
        self.info = info
        self.controls.follow_model(info.model_config.d_model)
        self.model_tables = None
        if self.client is not None:
            self.client.ask(Positional())
        self.redraw()

    def attach(self, client: EngineClient) -> None:
        self.client = client
        client.engine.positional_ready.connect(self._on_tables_ready)
        self.refresh_timer.start()

    def _on_tables_ready(self, reply: PositionalReady) -> None:
        if self.client is not None and self.client.fresh(Positional, reply.request_id):
            self.on_tables(reply.tables)

    def on_tables(self, tables: PositionalTables) -> None:
        self.model_tables = tables
        self._draw_model()

    def _refresh(self) -> None:
        learned = self.info is not None and self.info.model_config.positional in ("learned", "t5_relative")
        if self.training and learned and self.isVisible() and self.client is not None:
            self.client.ask(Positional())

    def chosen_dims(self) -> list[int]:
        return self.controls.chosen_dims()

    # -- drawing ------------------------------------------------------------------------------------
    def showEvent(self, event) -> None:  # noqa: N802 — drawn when first looked at, not at start-up
        super().showEvent(event)
        QTimer.singleShot(0, self._redraw_if_stale)  # after the dock has said whether it is on screen

    def set_on_screen(self, on: bool) -> None:
        """Told by the dock: a tab behind another one is 'visible' to Qt but not on screen."""
        self._on_screen = on
        self._redraw_if_stale()

    def _redraw_if_stale(self) -> None:
        if self._stale:
            self.redraw()

    def redraw(self) -> None:
        if not (self.isVisible() and self._on_screen):
            self._stale = True
            return
        if not engine_loaded():  # the tables are the engine's own: drawn once it has loaded PyTorch
            self._stale = True
            QTimer.singleShot(100, self._redraw_if_stale)
            return
        self._stale = False
        c = self.controls
        self.paper.draw(c.even_width(), c.positions.value(), c.chosen_dims(), c.shift.value(), c.pos_spin.value())
        self._draw_model()

    def _draw_model(self) -> None:
        self.model_views.draw(self.info, self.model_tables, self.positions.value())
