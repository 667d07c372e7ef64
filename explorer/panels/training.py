"""Training panel: what to train, with which settings, and live curves of how it goes.

Route: every button sends its command (``Start``, ``Step``, ``Pause``, ``Resume``, ``Stop``,
``PauseAt``; ``NewModel`` and ``ChangeTraining`` when the settings need them) through the engine
client (:meth:`TrainingPanel.attach`; ``Engine._dispatch`` in explorer/worker.py, then ``Session``).
When that would replace the current model the window's ``confirm_replace``, given to ``attach``,
asks about unsaved work first. Answers: the engine's ``status_changed`` and ``metrics_logged``
(connected in ``attach``) and ``run_described`` (through the main window, which decides whether the
form is refilled).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QTextLayout, QTextOption
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QSlider,
    QSplitter,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from explorer.commands import ChangeData, ChangeTraining, Command, NewModel, Pause, PauseAt, Resume, Start, Step, Stop
from explorer.engine_client import EngineClient
from explorer.i18n import N_, tr
from explorer.panels.settings_form import (
    SettingsForm,
    float_spin,
    int_spin,
    needs_new_model,
    only_the_data_differs,
)
from explorer.widgets import named
from explorer.widgets.metric_plot import MetricPlot
from explorer.worker import (
    ERROR,
    PAUSED,
    TRAINING,
    EngineStatus,
    Evaluation,
    MetricsBatch,
    NewModelSpec,
    RunInfo,
    StepColumns,
)
from model.data import DataError

MAX_RUNS = 12  # runs kept in the run list for overlays
ConfirmReplace = Callable[[Callable[[], object], str, bool], None]


def row_of(*widgets: QWidget) -> QHBoxLayout:
    """The widgets side by side, from the left."""
    row = QHBoxLayout()
    for w in widgets:
        row.addWidget(w)
    row.addStretch(1)
    return row


REVEAL_MS = 40  # between the plots painted for the first time
PLOT_MIN_HEIGHT = 120  # px: title, axes and a readable curve (three rows fit beside the controls on a laptop)


# The evaluation plot of each family: its title, value axis and scale (None: from zero, growing as needed).
QUALITY_TITLES: dict[str, tuple[str, str, tuple[float, float] | None]] = {
    "encoder_decoder": (N_("Exact match and BLEU (valid)"), "%", (0.0, 100.0)),
    "decoder_only": (N_("Perplexity (valid)"), N_("perplexity"), None),
    "encoder_only": (N_("Masked-token accuracy (valid)"), "%", (0.0, 100.0)),
}
NSP_TITLE = N_("Masked-token and next-sentence accuracy (valid)")
# the scores of Evaluation the evaluation plot draws, each with its factor (shares as percentages)
QUALITY_SERIES = (
    ("exact_match", 100.0),
    ("bleu", 1.0),
    ("perplexity", 1.0),
    ("mlm_accuracy", 100.0),
    ("nsp_accuracy", 100.0),
)
EXPERT_COLOURS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
]


LOSS_TITLE, LOSS_AXIS = N_("Loss"), N_("cross-entropy")
MOE_LOSS_TITLE = N_("Loss (balance loss: 1 = even)")  # with experts: the balance loss, its layers' mean, beside it
EXPERT_LOAD_HELP = N_(
    "E1, E2, …: each expert's share of the tokens the routers sent, at each update (averaged over the layers). "
    "Dashed: 1/N, every expert's share when the load is balanced. With the balance loss at 0 a few experts "
    "often end up with most of the tokens."
)


def expert_colour(i: int) -> str:
    """The colour of expert ``i`` (0-based): ten distinct ones, then hues round the circle."""
    return EXPERT_COLOURS[i] if i < len(EXPERT_COLOURS) else pg.intColor(i, hues=23).name()


class PlotArea(QScrollArea):
    """The plots' grid: the whole height when its rows fit at a readable height, else scrolling (a
    Mixture-of-Experts model has a seventh plot: on a laptop its last row is a scroll away, rather than every
    plot squeezed). The grid is sized here: a scroll area that sizes it itself would give it its size hint
    (the plots' titles wrap, so it asks its height for the width: some 500 px a plot)."""

    def __init__(self, grid: QWidget) -> None:
        super().__init__()
        self.needed = 0  # px the rows need at their smallest readable height
        self.setWidget(grid)
        self.setWidgetResizable(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def set_needed_height(self, needed: int) -> None:
        self.needed = needed
        self._fit()

    def resizeEvent(self, event) -> None:  # noqa: N802 — Qt's name
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        height = self.height()
        scrolls = self.needed > height
        width = self.width() - (self.verticalScrollBar().sizeHint().width() if scrolls else 0)
        inner = self.widget()
        if inner is not None:
            inner.resize(width, max(height, self.needed))


class SettingsArea(QScrollArea):
    """The settings form's column: as wide as the form needs for every label and value to be read whole (its
    longest choice in the language shown), scrolling up and down only."""

    def __init__(self, form: QWidget) -> None:
        super().__init__()
        self.setWidget(form)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def _needed_width(self) -> int:
        """The form's least width (where a label and its field do not fit side by side, the label goes above;
        nothing is cut), the vertical scroll bar and the frame."""
        form = self.widget()
        inner = form.minimumSizeHint().width() if form is not None else 0
        return inner + self.verticalScrollBar().sizeHint().width() + 2 * self.frameWidth()

    def sizeHint(self) -> QSize:  # noqa: N802 — Qt's name
        return QSize(self._needed_width(), super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(self._needed_width(), super().minimumSizeHint().height())

    def eventFilter(self, watched, event) -> bool:  # noqa: N802
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()  # another language or family: other widths
        return super().eventFilter(watched, event)


def laid_out_height(text: str, font: QFont, width: int) -> float:
    """The height of ``text`` wrapped into ``width`` pixels, line by line as it is drawn (a line with Chinese
    characters takes the taller line height of the font they come from)."""
    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    layout.beginLayout()
    height = 0.0
    while (line := layout.createLine()).isValid():
        line.setLineWidth(width)
        height += line.height()
    layout.endLayout()
    return height


class WrappedRuns(QStyledItemDelegate):
    """The run list's rows as tall as their wrapped text (the list's own estimate counts lines of the Latin
    font's height, and a second line in Chinese would be cut to "…")."""

    def sizeHint(self, option: QStyleOptionViewItem, index) -> QSize:  # noqa: N802 — Qt's name
        hint = super().sizeHint(option, index)
        view = option.widget
        if view is None or not isinstance(view, QListWidget):
            return hint
        item = QStyleOptionViewItem(option)
        self.initStyleOption(item, index)
        item.rect = QRect(0, 0, view.viewport().width(), hint.height())
        text = view.style().subElementRect(QStyle.SubElement.SE_ItemViewItemText, item, view)
        margin = view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1
        needed = laid_out_height(item.text, item.font, text.width() - 2 * margin)
        return QSize(hint.width(), max(hint.height(), math.ceil(needed) + 4))


def scratch_tip(training: bool, valid: bool) -> str:
    """What *Train from scratch* does, or why it is greyed."""
    if training:
        return tr("Pause or stop the training first: Train from scratch replaces the model being trained")
    if not valid:
        return tr("The settings on the left cannot work yet: see the message under them")
    return tr("A fresh model with the settings on the left, training at once")


class TrainingPanel(QWidget):
    """Settings, Start/Pause/Stop/Reset/Step, the run list and the live plots (six, and the experts' load
    for a Mixture-of-Experts model)."""

    # the main window answers these (it owns the engine and the dialogs)
    scratch_requested = Signal()  # a fresh model with these settings, training at once
    acted = Signal()  # the person pressed a control (the program's own start-up plans yield to it)

    PLOTS = (
        ("loss_plot", LOSS_TITLE, LOSS_AXIS),
        ("accuracy_plot", N_("Token accuracy"), N_("accuracy")),
        ("quality_plot", N_("Exact match and BLEU (valid)"), "%"),
        ("lr_plot", N_("Learning rate"), N_("lr")),
        ("grad_plot", N_("Gradient norm"), "‖g‖"),
        ("speed_plot", N_("Tokens per second"), N_("tokens/s")),
        ("expert_load_plot", N_("Experts' load: share of tokens"), N_("share")),
    )
    # drawn only where they apply (the others always): the experts' load for a Mixture-of-Experts model
    OPTIONAL_PLOTS = ("expert_load_plot",)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.client: EngineClient | None = None  # set by attach; without it the panel sends nothing
        self.confirm_replace: ConfirmReplace = lambda then, question, always_ask: then()
        self.setObjectName("training_panel")
        self.status = EngineStatus("idle", 0, 0, False, None, "")
        self.runs: dict[int, RunInfo] = {}
        self.current: RunInfo | None = None
        self.form = SettingsForm()
        self.form.validity_changed.connect(self._on_validity)
        # the family and the experts are chosen in the form; the panel names them for its users
        self.arch_combo = self.form.arch_combo
        self.experts_spin = self.form.experts_spin
        self.experts_top_k_spin = self.form.experts_top_k_spin
        self._optional_shown: set[str] = set()  # of OPTIONAL_PLOTS, those shown (the current run has them)
        controls = self._create_controls()
        self._create_plots()
        self._lay_out(controls)
        # Curves are redrawn from buffers on a timer, never per step: each tick of this timer
        # redraws one plot with new data, so with all six changing each updates about 6 times a second.
        self.timer = QTimer(self)
        self.timer.setInterval(25)
        self.timer.timeout.connect(self._tick)
        self.timer.start()
        self._ticks = 0
        self._on_screen = True
        self._painted = False  # the plots have been on screen once (see _reveal_gradually)
        self._unrevealed: list[MetricPlot] = []
        self._reveal_timer = QTimer(self, singleShot=True, interval=REVEAL_MS)  # dies with the panel
        self._reveal_timer.timeout.connect(self._reveal_next)
        self.retranslate()
        self._update_buttons()

    def _create_controls(self) -> list[QHBoxLayout]:
        """The buttons, Step N, the auto-pause and the plots' smoothing: rows of the right-hand side."""
        buttons = self._create_buttons()
        steps_row = row_of(self.step_button, self.step_n_button, self.step_n)
        # presenting: stop by itself at a chosen step, or once the loss is low enough
        self.pause_at_label = QLabel()
        self.pause_at_step = int_spin(0, 10_000_000, 100)
        self.pause_at_step.setObjectName("train_pause_at_step")
        self.pause_at_loss = float_spin(0.0, 100.0, 0.1, 3)
        self.pause_at_loss.setObjectName("train_pause_at_loss")
        self.pause_at_or = QLabel()
        for w in (self.pause_at_step, self.pause_at_loss):
            w.valueChanged.connect(self._on_pause_at)
        self.smooth_label = QLabel()
        self.smooth_slider = named(QSlider(Qt.Orientation.Horizontal), "smoothing_slider")
        self.smooth_slider.setRange(0, 99)
        self.smooth_slider.setValue(60)
        self.smooth_slider.setMaximumWidth(160)
        self.smooth_value = QLabel("0.60")
        self.log_check = named(QCheckBox(), "log_scale_check")
        self.smooth_slider.valueChanged.connect(self._on_smoothing)
        self.log_check.toggled.connect(self._on_log)
        view_row = row_of(self.smooth_label, self.smooth_slider, self.smooth_value, self.log_check)
        pause_row = row_of(self.pause_at_label, self.pause_at_step, self.pause_at_or, self.pause_at_loss)
        return [buttons, steps_row, view_row, pause_row]

    def _create_buttons(self) -> QHBoxLayout:
        self.start_button = named(QPushButton(), "train_start_button")
        self.pause_button = named(QPushButton(), "train_pause_button")
        self.stop_button = named(QPushButton(), "train_stop_button")
        self.reset_button = named(QPushButton(), "train_reset_button")
        self.step_button = named(QPushButton(), "train_step_button")
        self.step_n_button = named(QPushButton(), "train_step_n_button")
        self.scratch_button = named(QPushButton(), "train_from_scratch_button")
        self.scratch_button.clicked.connect(self.scratch_requested)
        self.step_n = int_spin(1, 1000000, 10)
        self.step_n.setValue(100)
        self.start_button.clicked.connect(lambda: self._on_start("start"))
        self.step_button.clicked.connect(lambda: self._on_start("step", 1))
        self.step_n_button.clicked.connect(lambda: self._on_start("step", self.step_n.value()))
        self.pause_button.clicked.connect(self._on_pause)
        self.stop_button.clicked.connect(lambda: self._send(Stop()))
        self.reset_button.clicked.connect(self._on_reset)
        return row_of(self.start_button, self.pause_button, self.stop_button, self.reset_button)

    def _create_plots(self) -> None:
        self.run_list = named(QListWidget(), "run_list")
        # each run's description whole: wrapped onto a second line rather than cut (a narrow column on a laptop)
        self.run_list.setWordWrap(True)
        self.run_list.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.run_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.run_list.setItemDelegate(WrappedRuns(self.run_list))
        self.run_list.setMaximumHeight(4 * self.run_list.fontMetrics().lineSpacing() + 8)
        self.run_list.itemChanged.connect(self._on_run_toggled)
        self.runs_label = QLabel()
        self.runs_label.setWordWrap(True)
        self.plots: dict[str, MetricPlot] = {}
        grid = self._plot_grid_widget = QWidget()  # every plot's parent, shown or not (themes find them there)
        self.plot_grid = QGridLayout(grid)
        self.plot_grid.setContentsMargins(0, 0, 0, 0)
        self._arranged: tuple[int, tuple[str, ...]] | None = None
        for name, title, ylabel in self.PLOTS:
            domain = {"accuracy_plot": (0.0, 1.0), "quality_plot": (0.0, 100.0), "expert_load_plot": (0.0, 1.0)}
            self.plots[name] = MetricPlot(
                title, name, ylabel, smoothable=name not in ("lr_plot",), y_domain=domain.get(name), parent=grid
            )
        self.expert_load_plot = self.plots["expert_load_plot"]
        self._arrange_plots(3)
        self._define_series()
        self.step_marker = pg.InfiniteLine(angle=90, pen=pg.mkPen("#888", style=Qt.PenStyle.DotLine))
        self.plots["lr_plot"].plot.addItem(self.step_marker)
        # the step of the attention snapshot being looked at (Attention panel's timeline)
        self.probe_marker = pg.InfiniteLine(angle=90, pen=pg.mkPen("#ff7f0e", width=1.5))
        self.probe_marker.hide()
        self.plots["loss_plot"].plot.addItem(self.probe_marker)

    def _define_series(self) -> None:
        """The lines of each plot: legend label and how each is drawn (the experts' are made as they come)."""
        p = self.plots
        p["loss_plot"].define("train", N_("train"))
        p["loss_plot"].define("valid", N_("valid"), dashed=True, symbol="o")
        # Mixture-of-Experts models only: the mean over the MoE layers, so 1 at balance whatever the depth (the
        # title says so; a longer legend entry runs off a 1366-pixel-wide window's plot)
        p["loss_plot"].define("aux", N_("mean balance loss"), colour_shift=4)
        p["accuracy_plot"].define("train", N_("train"))
        p["quality_plot"].define("exact_match", N_("exact match %"), symbol="o")
        p["quality_plot"].define("bleu", "BLEU", dashed=True, symbol="t")
        p["quality_plot"].define("perplexity", N_("perplexity"), symbol="o")
        p["quality_plot"].define("mlm_accuracy", N_("masked tokens right %"), symbol="o")
        p["quality_plot"].define("nsp_accuracy", N_("next sentence right %"), dashed=True, symbol="t")
        p["lr_plot"].define("schedule", N_("schedule"), dashed=True)
        p["lr_plot"].define("lr", N_("used"))
        p["grad_plot"].define("train", N_("before clipping"))
        p["speed_plot"].define("train", N_("target tokens/s"))
        p["expert_load_plot"].define("balanced", "1/N", dashed=True, colour="#9e9e9e")

    def _lay_out(self, control_rows: list[QHBoxLayout]) -> None:
        """The settings form on the left (scrolling), the controls and the plots on the right."""
        right = named(QWidget(), "training_controls")
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(4, 0, 0, 0)
        right_layout.addLayout(control_rows[0])  # Start, Pause, Stop, Reset
        self.run_controls = QWidget()  # the other rows and the run list: presenter mode gives them to the plots
        controls = QVBoxLayout(self.run_controls)
        controls.setContentsMargins(0, 0, 0, 0)
        for row in control_rows[1:]:
            controls.addLayout(row)
        runs_row = QHBoxLayout()
        runs_row.addWidget(self.runs_label, 1)
        runs_row.addWidget(self.scratch_button)  # a new run, from the settings on the left
        controls.addLayout(runs_row)
        controls.addWidget(self.run_list)
        right_layout.addWidget(self.run_controls)
        right_layout.addWidget(self._plot_area(), 1)
        scroll = self.settings_area = SettingsArea(self.form)
        self.form.installEventFilter(scroll)
        splitter = QSplitter()
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(scroll)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(splitter)

    def _plot_area(self) -> PlotArea:
        self.plot_scroll = named(PlotArea(self._plot_grid_widget), "training_plots")
        self._arranged = None  # arranged again, with the area told the rows' height
        self._arrange_plots(self._columns_for(self.width()))
        return self.plot_scroll

    def retranslate(self) -> None:
        self.start_button.setText(tr("Start"))
        self.stop_button.setText(tr("Stop"))
        self.reset_button.setText(tr("Reset"))
        self.step_button.setText(tr("Step 1"))
        self.scratch_button.setText(tr("Train from scratch"))
        self.step_n_button.setText(tr("Step N"))
        self.step_n.setToolTip(tr("N: how many updates Step N does"))
        self.smooth_label.setText(tr("Smoothing"))
        self.pause_at_label.setText(tr("Pause at step"))
        self.pause_at_or.setText(tr("or at loss ≤"))
        self.pause_at_step.setSpecialValueText(tr("off"))
        self.pause_at_loss.setSpecialValueText(tr("off"))
        self.log_check.setText(tr("Log scale"))
        self.runs_label.setText(tr("Runs (tick earlier runs to compare them with the current one)"))
        self.start_button.setToolTip(tr("Train until paused or stopped (a new model if the settings need one)"))
        self.reset_button.setToolTip(
            tr("Start over with fresh weights and the settings on the left; this run stays in the list")
        )
        self.form.retranslate()
        for plot in self.plots.values():
            plot.retranslate()
        self.expert_load_plot.setToolTip(tr(EXPERT_LOAD_HELP))
        self._label_runs()
        self._update_buttons()

    # -- commands --------------------------------------------------------------------------------
    def _on_start(self, kind: str, n: int = 0) -> None:
        if kind == "start" and self.status.state in (PAUSED, ERROR):
            self._send(Resume())
            return
        try:
            spec = self.form.spec()
        except (ValueError, DataError) as exc:
            self.form.error_label.setText(str(exc))
            self.form.error_label.show()
            return
        self._train(spec, n if kind == "step" else 0)

    def _train(self, spec: NewModelSpec, steps: int) -> None:
        """Start (``steps`` 0) or train ``steps`` updates, with a new model when the settings need one."""
        self.acted.emit()
        info = self.current

        def go() -> None:
            self._send(Step(n=steps) if steps else Start())

        def build_and_go() -> None:
            self._send(NewModel(spec))
            go()

        if info is not None and info.model_origin is not None and only_the_data_differs(spec, info):
            self._send(ChangeData(spec.data))  # an opened model learns the new data with its own vocabulary
        elif info is None or needs_new_model(spec, info):
            if info is not None and info.model_origin is not None:
                question = tr(
                    "These settings need a new model: the opened model {name} will be replaced by one "
                    "with fresh weights."
                ).format(name=info.model_origin.name)
                self.confirm_replace(build_and_go, question, True)
            elif info is not None and self.status.step > 0:
                question = tr("These settings need a new model. The current model (step {step}) will be replaced.")
                self.confirm_replace(build_and_go, question.format(step=self.status.step), True)
            else:
                build_and_go()
            return
        if spec.train != info.train_config:
            self._send(ChangeTraining(spec.train))
        go()

    def _on_pause(self) -> None:
        self._send(Resume() if self.status.state in (PAUSED, ERROR) else Pause())

    def _on_reset(self) -> None:
        try:
            spec = self.form.spec()
        except (ValueError, DataError) as exc:
            self.form.error_label.setText(str(exc))
            return
        self.acted.emit()
        question = tr("Reset starts a new model with fresh weights. The current model (step {step}) will be replaced.")
        opened = self.current is not None and self.current.model_origin is not None  # never lost without asking
        self.confirm_replace(
            lambda: self._send(NewModel(spec)), question.format(step=self.status.step), self.status.step > 0 or opened
        )

    def _on_pause_at(self) -> None:
        step, loss = self.pause_at_step.value(), self.pause_at_loss.value()
        self._send(PauseAt(step=step or None, loss=loss or None))

    def set_presenting(self, on: bool) -> None:
        """Presenter mode: the settings form, the rows of controls below Start · Pause · Stop · Reset and the run list
        are hidden: the plots get the panel."""
        self.settings_area.setVisible(not on)
        self.run_controls.setVisible(not on)

    def _on_validity(self, ok: bool) -> None:
        self._valid = ok
        self._update_buttons()

    def _update_buttons(self) -> None:
        state = self.status.state
        valid = getattr(self, "_valid", True)
        training = state == TRAINING
        self.start_button.setEnabled(valid and not training)
        self.step_button.setEnabled(valid and not training)
        self.step_n_button.setEnabled(valid and not training)
        self.pause_button.setEnabled(state in (TRAINING, PAUSED, ERROR))
        self.pause_button.setText(tr("Resume") if state in (PAUSED, ERROR) else tr("Pause"))
        self.stop_button.setEnabled(state in (TRAINING, PAUSED, ERROR))
        self.reset_button.setEnabled(valid and self.current is not None)
        self.scratch_button.setEnabled(valid and not training)
        self.scratch_button.setToolTip(scratch_tip(training, valid))  # greyed: says why

    # -- the route to the engine -------------------------------------------------------------------
    def attach(self, client: EngineClient, confirm_replace: ConfirmReplace) -> None:
        """Send through ``client``; ``confirm_replace(then, question, always_ask)`` runs ``then`` once the
        current model may be replaced (the window asks about unsaved work first)."""
        self.client, self.confirm_replace = client, confirm_replace
        client.engine.status_changed.connect(self.on_status)
        client.engine.metrics_logged.connect(self.on_metrics)

    def _send(self, command: Command) -> None:
        self.acted.emit()
        if self.client is not None:
            self.client.send(command)

    # -- engine events ------------------------------------------------------------------------------
    def on_status(self, status: EngineStatus) -> None:
        self.status = status
        if status.state != TRAINING:  # while training it moves with the learning-rate plot's redraws
            self.step_marker.setValue(status.step)
        self._update_buttons()

    def on_run(self, info: RunInfo, fill_form: bool = True) -> None:
        """A new run, or new settings of the current one; ``fill_form=False`` keeps the person's edits."""
        new = info.run_id not in self.runs
        self.runs[info.run_id] = info
        self.current = info
        if fill_form:
            self.form.show_run(info)
        self._show_family(info)
        lr = self.plots["lr_plot"]
        lr.replace(info.run_id, "schedule", np.arange(1, len(info.schedule) + 1), info.schedule)
        if new or self._rolled_back(info):
            for plot in self.plots.values():
                for name in [k[1] for k in plot.series if k[0] == info.run_id and k[1] != "schedule"]:
                    plot.remove(info.run_id, name)
            h = info.history_steps
            if len(h):
                self._add_steps(info.run_id, h)
            self._add_evals(info.run_id, info.history_evals)
        if new:
            item = QListWidgetItem()
            item.setData(Qt.ItemDataRole.UserRole, info.run_id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            self.run_list.blockSignals(True)
            for i in range(self.run_list.count()):  # earlier runs: unticked, not bold
                other = self.run_list.item(i)
                f = other.font()
                f.setBold(False)
                other.setFont(f)
                other.setCheckState(Qt.CheckState.Unchecked)
            self.run_list.insertItem(0, item)
            self._forget_old_runs()
            self.run_list.blockSignals(False)
        self._label_runs()
        for i in range(self.run_list.count()):
            item = self.run_list.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == info.run_id:
                f = item.font()
                f.setBold(True)
                item.setFont(f)
        self._on_run_toggled()
        self._update_buttons()

    def _show_family(self, info: RunInfo) -> None:
        """The plots of the current run's family: its evaluation scores, and the experts' load when it has
        experts (the other runs' curves stay, for comparison)."""
        m = info.model_config
        title, y_label, domain = QUALITY_TITLES[m.arch]
        if m.arch == "encoder_only" and info.train_config.nsp:
            title = NSP_TITLE
        self.plots["quality_plot"].set_title(title, y_label, domain)
        speed = N_("tokens/s") if m.single_stream else N_("target tokens/s")  # single-stream: every token is one
        self.plots["speed_plot"].define("train", speed)
        self._optional_shown = {"expert_load_plot"} if m.moe else set()
        self.plots["loss_plot"].set_title(MOE_LOSS_TITLE if m.moe else LOSS_TITLE, LOSS_AXIS, None)
        self._arrange_plots(self._columns_for(self.width()))

    def _rolled_back(self, info: RunInfo) -> bool:
        """True when the run's history ends before what the plots show (training went back to good weights)."""
        shown, _ = self.plots["loss_plot"].data(info.run_id, "train")
        kept = info.history_steps.step
        return len(shown) > 0 and (len(kept) == 0 or shown[-1] > kept[-1])

    def _forget_old_runs(self) -> None:
        """Keep the list (and the curves kept for overlays) bounded: beyond MAX_RUNS the oldest
        unticked runs go. A run whose curves matter is ticked, or saved in its checkpoint."""
        for i in range(self.run_list.count() - 1, 0, -1):
            if self.run_list.count() <= MAX_RUNS:
                return
            item = self.run_list.item(i)
            if item.checkState() == Qt.CheckState.Checked:
                continue
            rid = item.data(Qt.ItemDataRole.UserRole)
            self.run_list.takeItem(i)
            self.runs.pop(rid, None)
            for plot in self.plots.values():
                plot.remove(rid)

    def set_probe_marker(self, step: int) -> None:
        self.probe_marker.setVisible(step >= 0)
        if step >= 0:
            self.probe_marker.setValue(step)

    def _label_runs(self) -> None:
        for i in range(self.run_list.count()):
            item = self.run_list.item(i)
            rid = item.data(Qt.ItemDataRole.UserRole)
            item.setText(f"{tr('Run')} {rid}: {self.runs[rid].label}")

    def on_metrics(self, batch: MetricsBatch) -> None:
        if len(batch.steps):
            self._add_steps(batch.run_id, batch.steps)
        self._add_evals(batch.run_id, batch.evals)

    def _add_steps(self, run: int, cols: StepColumns) -> None:
        x = cols.step
        p = self.plots
        p["loss_plot"].append(run, "train", x, cols.loss)
        p["accuracy_plot"].append(run, "train", x, cols.token_accuracy)
        p["lr_plot"].append(run, "lr", x, cols.lr)
        p["grad_plot"].append(run, "train", x, cols.grad_norm)
        p["speed_plot"].append(run, "train", x, cols.tokens_per_s)
        if cols.expert_load.shape[1]:  # a Mixture-of-Experts model
            self._add_expert_load(run, cols)

    def _add_expert_load(self, run: int, cols: StepColumns) -> None:
        """Each expert's share of the token assignments at each update (one line each), the share each would
        have if the router balanced them perfectly (1/N), and the balancing loss beside the loss."""
        x, load = cols.step, cols.expert_load  # [n], [n, N]
        n_experts = load.shape[1]
        plot = self.expert_load_plot
        for i in range(n_experts):
            name = f"expert_{i + 1}"
            if name not in plot.styles:
                plot.define(name, N_("E{n}"), colour=expert_colour(i), number=i + 1)
            plot.append(run, name, x, load[:, i])
        plot.append(run, "balanced", x, np.full(len(x), 1.0 / n_experts))
        self.plots["loss_plot"].append(run, "aux", x, cols.aux_loss)

    def _add_evals(self, run: int, evals: Sequence[Evaluation]) -> None:
        """The valid loss, and the scores the run's family has (those it has not are NaN, and not drawn)."""
        valid = [e for e in evals if e.split == "valid"]
        if not valid:
            return
        x = np.array([e.step for e in valid], dtype=float)
        self.plots["loss_plot"].append(run, "valid", x, np.array([e.loss for e in valid]))
        for name, factor in QUALITY_SERIES:
            y = factor * np.array([getattr(e, name) for e in valid], dtype=float)
            kept = np.isfinite(y)
            if kept.any():
                self.plots["quality_plot"].append(run, name, x[kept], y[kept])

    # -- view --------------------------------------------------------------------------------------
    def _on_run_toggled(self, *_: Any) -> None:
        visible = set()
        for i in range(self.run_list.count()):
            item = self.run_list.item(i)
            if item.checkState() == Qt.CheckState.Checked:
                visible.add(item.data(Qt.ItemDataRole.UserRole))
        current = self.current.run_id if self.current else 0
        for plot in self.plots.values():
            plot.set_runs(current, visible)
        self.expert_load_plot.set_runs(current, {current})  # one run's experts at a time: N lines already

    def _on_smoothing(self, value: int) -> None:
        self.smooth_value.setText(f"{value / 100:.2f}")
        for plot in self.plots.values():
            plot.set_smoothing(value / 100)

    def _on_log(self, on: bool) -> None:
        for name in ("loss_plot", "lr_plot", "grad_plot"):
            self.plots[name].set_log(on)

    def _arrange_plots(self, columns: int) -> None:
        """The plots that apply, ``columns`` a row; each optional plot (the experts' load) a whole row of its own
        under the first, wide enough for N lines and their legend in one row. The last plot of a row that is
        not full takes the rest of it."""
        names = tuple(n for n in self.plots if n not in self.OPTIONAL_PLOTS or n in self._optional_shown)
        if (columns, names) == self._arranged:
            return
        self._arranged = (columns, names)
        for plot in self.plots.values():
            self.plot_grid.removeWidget(plot)
        always = [n for n in names if n not in self.OPTIONAL_PLOTS]
        rows = [always[i : i + columns] for i in range(0, len(always), columns)]
        rows[1:1] = [[n] for n in names if n in self.OPTIONAL_PLOTS]
        for r, row in enumerate(rows):
            for c, name in enumerate(row):
                span = columns - c if c == len(row) - 1 else 1
                self.plot_grid.addWidget(self.plots[name], r, c, 1, span)
        for name in self.OPTIONAL_PLOTS:
            self.plots[name].setVisible(name in names)
        if hasattr(self, "plot_scroll"):
            needed = len(rows) * PLOT_MIN_HEIGHT + (len(rows) - 1) * self.plot_grid.verticalSpacing()
            self.plot_scroll.set_needed_height(needed)

    @staticmethod
    def _columns_for(width: int) -> int:
        return 2 if width < 1150 else 3

    def resizeEvent(self, event) -> None:  # noqa: N802 — narrow panels get two columns of plots
        super().resizeEvent(event)
        self._arrange_plots(self._columns_for(self.width()))

    def set_on_screen(self, on: bool) -> None:
        """Told by the dock: behind another tab the plots keep their data but are not redrawn."""
        self._on_screen = on
        if on and not self._painted:
            self._painted = True
            self._reveal_gradually()
        if on:
            self.redraw()

    def _reveal_gradually(self, shown: int = 1) -> None:
        """The first time the panel comes on screen its plots are painted one at a time, a frame apart: the
        first paint of all six in one turn of the event loop (pyqtgraph lays out and draws every axis's
        text, then again once the axis has widened to its labels) made the window wait 120–220 ms."""
        self._unrevealed = list(self.plots.values())[shown:]
        for plot in self._unrevealed:
            plot.setUpdatesEnabled(False)
        self._reveal_timer.start()

    def _reveal_next(self) -> None:
        if self._unrevealed:
            self._unrevealed.pop(0).setUpdatesEnabled(True)
        if self._unrevealed:
            self._reveal_timer.start()

    def _tick(self) -> None:
        """Redraw the next plot that has new data: one plot per tick keeps each frame's painting short
        (several plots in one frame made the window late by 20–30 ms), and however fast training runs,
        the window's work stays that of one plot per tick."""
        if not self._on_screen:
            return
        plots = list(self.plots.values())
        for i in range(len(plots)):
            plot = plots[(self._ticks + i) % len(plots)]
            if plot.stale:
                plot.redraw()
                if plot is self.plots["lr_plot"]:
                    self.step_marker.setValue(self.status.step)
                self._ticks += i + 1
                return

    def redraw(self) -> None:
        """Redraw every plot now (exports and tests)."""
        for plot in self.plots.values():
            plot.redraw()
