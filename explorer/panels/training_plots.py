"""The training panel's live plots: loss, accuracy, the family's evaluation scores, learning rate, gradient
norm, speed, the experts' load for a Mixture-of-Experts model, and a followed run's own scalars
(explorer/panels/training_scalars.py).

Data arrive in batches (:meth:`TrainingPlots.add_steps`, :meth:`TrainingPlots.add_evals`) and are drawn by a
timer, one plot per tick (see :meth:`TrainingPlots._tick`): the window's work stays that of one plot per
frame however fast training runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QFrame, QGridLayout, QScrollArea, QWidget

from explorer.answers import Evaluation, RunInfo, ScalarsLogged
from explorer.i18n import N_, tr
from explorer.panels.training_scalars import SCALARS_PLOT, ScalarsPlot
from explorer.widgets import named
from explorer.widgets.metric_plot import MetricPlot
from explorer.widgets.staggered import Staggered
from model.families.registry import MOE
from model.io.snapshots import StepColumns

REVEAL_MS = 40  # between the plots painted for the first time, or laid out again after the grid changed
PLOT_MIN_HEIGHT = 120  # px: title, axes and a readable curve (three rows fit beside the controls on a laptop)
TICK_MS = 25  # one plot with new data redrawn per tick

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
EXPERT_LOAD_HELP = N_(
    "E1, E2, …: each expert's share of the tokens the routers sent, at each update (averaged over the layers). "
    "Dashed: 1/N, every expert's share when the load is balanced. With the balance loss at 0 a few experts "
    "often end up with most of the tokens."
)
PLOTS = (  # object name, title, value axis
    ("loss_plot", LOSS_TITLE, LOSS_AXIS),
    ("accuracy_plot", N_("Token accuracy"), N_("accuracy")),
    ("quality_plot", N_("Exact match and BLEU (valid)"), "%"),
    ("lr_plot", N_("Learning rate"), N_("lr")),
    ("grad_plot", N_("Gradient norm"), "‖g‖"),
    ("speed_plot", N_("Tokens per second"), N_("tokens/s")),
    ("expert_load_plot", N_("Experts' load: share of tokens"), N_("share")),
)
# drawn only where they apply (the others always): the experts' load for a Mixture-of-Experts model, the scalars
# of a followed run that logged some
OPTIONAL_PLOTS = ("expert_load_plot", SCALARS_PLOT)
Y_DOMAINS = {"accuracy_plot": (0.0, 1.0), "quality_plot": (0.0, 100.0), "expert_load_plot": (0.0, 1.0)}


def expert_colour(i: int) -> str:
    """The colour of expert ``i`` (0-based): ten distinct ones, then hues round the circle."""
    return EXPERT_COLOURS[i] if i < len(EXPERT_COLOURS) else pg.intColor(i, hues=23).name()


def columns_for(width: int) -> int:
    """Plots a row in a panel ``width`` pixels wide: narrow panels get two columns."""
    return 2 if width < 1150 else 3


def plot_rows(names: Sequence[str], columns: int) -> list[list[str]]:
    """The plots ``names`` in rows of ``columns``, each optional plot a row of its own under the first."""
    always = [n for n in names if n not in OPTIONAL_PLOTS]
    rows = [always[i : i + columns] for i in range(0, len(always), columns)]
    rows[1:1] = [[n] for n in names if n in OPTIONAL_PLOTS]
    return rows


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


class TrainingPlots(QObject):
    """The plots, their grid and its scroll area, the step and probe markers, and the redraw timer.

    Curves are redrawn from buffers on a timer, never per step: each tick redraws one plot with new data, so
    with all six changing each updates about 6 times a second. Behind another tab nothing is redrawn.
    """

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.plots: dict[str, MetricPlot] = {}
        self.grid_widget = QWidget()  # every plot's parent, shown or not (themes find them there)
        self.grid = QGridLayout(self.grid_widget)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.area: PlotArea | None = None  # made by make_area, once the panel lays itself out
        self._arranged: tuple[int, tuple[str, ...]] | None = None
        self._optional_shown: set[str] = set()  # of OPTIONAL_PLOTS, those shown (the current run has them)
        self.step = 0  # the engine's step: the step marker moves to it with the learning-rate plot's redraws
        for name, title, ylabel in PLOTS:
            self.plots[name] = MetricPlot(
                title, name, ylabel, smoothable=name != "lr_plot", y_domain=Y_DOMAINS.get(name), parent=self.grid_widget
            )
        self.expert_load_plot = self.plots["expert_load_plot"]
        self.scalars = ScalarsPlot(parent=self.grid_widget)  # not in self.plots: it draws tags, not runs' metrics
        self.staggered = Staggered(self, REVEAL_MS)  # the plots resized one per frame when the grid changes
        self.arrange(3)
        self._define_series()
        self._create_markers()
        self.timer = QTimer(self)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.timer.start()
        self._ticks = 0
        self._on_screen = True
        self._probe_step: int | None = None  # the probe marker's step, placed at the next tick
        # whether the window has other drawing in hand first (panels taking in a new model): the plots wait for it,
        # as a plot's redraw in the same turn as a panel's made the window 15-20 ms late
        self.held: Callable[[], bool] = lambda: False
        self._painted = False  # the plots have been on screen once (see _reveal_gradually)
        self._unrevealed: list[MetricPlot] = []
        self._reveal_timer = QTimer(self, singleShot=True, interval=REVEAL_MS)
        self._reveal_timer.timeout.connect(self._reveal_next)

    def _create_markers(self) -> None:
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

    def make_area(self, columns: int) -> PlotArea:
        """The scroll area holding the grid, its rows arranged ``columns`` a row."""
        self.area = named(PlotArea(self.grid_widget), "training_plots")
        self._arranged = None  # arranged again, with the area told the rows' height
        self.arrange(columns)
        return self.area

    def retranslate(self) -> None:
        for plot in self.plots.values():
            plot.retranslate()
        self.expert_load_plot.setToolTip(tr(EXPERT_LOAD_HELP))
        self.scalars.retranslate()

    # -- what the plots show -----------------------------------------------------------------------
    def show_family(self, info: RunInfo, columns: int) -> None:
        """The plots of the current run's family: its evaluation scores, and the experts' load when it has
        experts (the other runs' curves stay, for comparison)."""
        m = info.model_config
        labels = m.family.labels  # the evaluation plot's title and value axis (model.families.registry)
        title = labels["quality_plot"]
        if info.train_config.nsp:
            title = labels.get("quality_plot:nsp", title)
        self.plots["quality_plot"].set_title(title, labels["quality_axis"], m.family.quality_range)
        speed = N_("tokens/s") if m.single_stream else N_("target tokens/s")  # single-stream: every token is one
        self.plots["speed_plot"].define("train", speed)
        self._optional_shown = {"expert_load_plot"} if m.moe else set()
        loss_title = MOE.labels["loss_plot"] if m.moe else LOSS_TITLE  # with experts: the balance loss beside it
        self.plots["loss_plot"].set_title(loss_title, LOSS_AXIS, None)
        self.arrange(columns)

    def show_history(self, info: RunInfo, again: bool) -> None:
        """The run's learning-rate schedule; with ``again`` (a new run, or one rolled back) its curves redrawn
        from the history it describes."""
        lr = self.plots["lr_plot"]
        lr.replace(info.run_id, "schedule", np.arange(1, len(info.schedule) + 1), info.schedule)
        if not again:
            return
        for plot in self.plots.values():
            for name in [k[1] for k in plot.series if k[0] == info.run_id and k[1] != "schedule"]:
                plot.remove(info.run_id, name)
        if len(info.history_steps):
            self.add_steps(info.run_id, info.history_steps)
        self.add_evals(info.run_id, info.history_evals)

    def rolled_back(self, info: RunInfo) -> bool:
        """True when the run's history ends before what the plots show (training went back to good weights)."""
        shown, _ = self.plots["loss_plot"].data(info.run_id, "train")
        kept = info.history_steps.step
        return len(shown) > 0 and (len(kept) == 0 or shown[-1] > kept[-1])

    def forget(self, run: int) -> None:
        """Every curve of ``run`` (it left the run list)."""
        for plot in self.plots.values():
            plot.remove(run)

    def add_steps(self, run: int, cols: StepColumns) -> None:
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

    def add_evals(self, run: int, evals: Sequence[Evaluation]) -> None:
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

    def add_scalars(self, batch: ScalarsLogged) -> None:
        """A followed run's own scalars: their plot shown while it has points."""
        self.scalars.take(batch)
        self._rearrange()

    def follow_folder(self, folder: str) -> None:
        """The window follows ``folder`` ("": none any more): another folder's scalars go."""
        self.scalars.follow_folder(folder)
        self._rearrange()

    def new_run(self) -> None:
        """A run new to the plots became the current one: the scalars of a run no longer followed go."""
        self.scalars.new_run()
        self._rearrange()

    def _rearrange(self) -> None:
        if self._arranged is not None:
            self.arrange(self._arranged[0])

    # -- how they show it --------------------------------------------------------------------------
    def set_runs(self, current: int, visible: set[int], names: Mapping[int, str] | None = None) -> None:
        """Draw the runs ``visible``, ``current`` in bold (the runs ``names`` names said by name); the experts'
        load only of ``current``."""
        for plot in self.plots.values():
            plot.set_runs(current, visible, names)
        self.expert_load_plot.set_runs(current, {current})  # one run's experts at a time: N lines already

    def set_smoothing(self, weight: float) -> None:
        for plot in self.plots.values():
            plot.set_smoothing(weight)
        self.scalars.set_smoothing(weight)

    def set_log(self, on: bool) -> None:
        for name in ("loss_plot", "lr_plot", "grad_plot"):
            self.plots[name].set_log(on)
        self.scalars.set_log(on)

    def set_step(self, step: int, training: bool) -> None:
        """The engine's step; while training the marker moves with the learning-rate plot's redraws."""
        self.step = step
        if not training:
            self.step_marker.setValue(step)

    def set_probe_marker(self, step: int) -> None:
        """Mark the step of the attention snapshot looked at (-1: none, hidden at once). On screen the marker moves
        at the plots' next tick, a repaint of its own: moved in the same turn as the Attention panel's heatmap (a
        new probe snapshot), the two repaints made the window wait 20-35 ms."""
        if step >= 0 and self._on_screen:
            self._probe_step = step
            return
        self._probe_step = None
        self._place_probe_marker(step)

    def _place_probe_marker(self, step: int) -> None:
        self.probe_marker.setVisible(step >= 0)
        if step >= 0:
            self.probe_marker.setValue(step)

    def _place_waiting_marker(self) -> bool:
        """Place the probe marker if it waits for a tick; whether it did."""
        step, self._probe_step = self._probe_step, None
        if step is not None:
            self._place_probe_marker(step)
        return step is not None

    def arrange(self, columns: int) -> None:
        """The plots that apply, ``columns`` a row; each optional plot (the experts' load, the scalars) a whole row
        of its own under the first, wide enough for N lines and their legend in one row. The last plot of a row that
        is not full takes the rest of it."""
        widgets: dict[str, QWidget] = {**self.plots, SCALARS_PLOT: self.scalars}
        shown = self._optional_shown | ({SCALARS_PLOT} if self.scalars.has_points else set())
        names = tuple(n for n in widgets if n not in OPTIONAL_PLOTS or n in shown)
        if (columns, names) == self._arranged:
            return
        if self._arranged is not None and self.grid_widget.isVisible():  # on screen: resized a frame apart
            self.staggered.hold(self.scalars.plot if n == SCALARS_PLOT else self.plots[n].plot for n in names)
        self._arranged = (columns, names)
        for widget in widgets.values():
            self.grid.removeWidget(widget)
        rows = plot_rows(names, columns)
        for r, row in enumerate(rows):
            for c, name in enumerate(row):
                span = columns - c if c == len(row) - 1 else 1
                self.grid.addWidget(widgets[name], r, c, 1, span)
        for name in OPTIONAL_PLOTS:
            widgets[name].setVisible(name in names)
        if self.area is not None:
            needed = len(rows) * PLOT_MIN_HEIGHT + (len(rows) - 1) * self.grid.verticalSpacing()
            self.area.set_needed_height(needed)
        self.staggered.release()

    # -- redrawing ---------------------------------------------------------------------------------
    def set_on_screen(self, on: bool) -> None:
        """Behind another tab the plots keep their data but are not redrawn."""
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

    def drawing(self) -> bool:
        """Whether plots wait to be laid out, painted or redrawn (on screen)."""
        plots: list[MetricPlot | ScalarsPlot] = [*self.plots.values(), self.scalars]
        stale = any(plot.stale for plot in plots)
        waiting = stale or self._probe_step is not None
        return bool(self.staggered.held or self._unrevealed) or (self._on_screen and waiting)

    def _tick(self) -> None:
        """Redraw the next plot that has new data: one plot per tick keeps each frame's painting short
        (several plots in one frame made the window late by 20–30 ms), and however fast training runs,
        the window's work stays that of one plot per tick."""
        if not self._on_screen or self.held():
            return
        if self._place_waiting_marker():
            return
        plots: list[MetricPlot | ScalarsPlot] = [*self.plots.values(), self.scalars]
        for i in range(len(plots)):
            plot = plots[(self._ticks + i) % len(plots)]
            if plot.stale:
                plot.redraw(gradually=True)
                if plot is self.plots["lr_plot"]:
                    self.step_marker.setValue(self.step)
                self._ticks += i + 1
                return

    def redraw(self) -> None:
        """Redraw every plot now (exports and tests)."""
        self._place_waiting_marker()
        for plot in self.plots.values():
            plot.redraw()
        self.scalars.redraw()
