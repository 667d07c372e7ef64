"""A followed run's own scalars in the training panel: its TensorBoard tags, a Trainer's evaluation metrics, the
numbers a RunWriter loop logs, each drawn as a curve under its own tag against the step.

Route: the engine's ``scalars_logged`` (:class:`explorer.answers.ScalarsLogged`: the new points of each tag) → the
training panel's ``on_scalars`` → :meth:`ScalarsPlot.take`, which appends them to :class:`LoggedScalars` (no Qt:
whose scalars they are, each tag's points in arrays that double when full, the tags chosen). The training plots'
timer redraws the chosen tags' curves (:meth:`ScalarsPlot.redraw`), never per batch. The plot is shown only while it
has points: the panel of a person training in the window looks as before.

What drops the points: scalars of another folder; ``reset`` (the run's log rewritten: that folder's points first);
following another folder; a new run once the window no longer follows theirs (as the other plots, whose earlier run
is unticked then). Stopping following keeps them in view.
"""

from __future__ import annotations

import csv
import html
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QGraphicsItem, QHBoxLayout, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from explorer.answers import ScalarsLogged
from explorer.i18n import N_, tr
from explorer.widgets import named
from explorer.widgets.export import render_scene, titled_view
from explorer.widgets.legend import LegendAbove
from explorer.widgets.metric_plot import RUN_COLOURS, StepAxis, ema, nice_bounds, nice_ceiling

SCALARS_PLOT = "scalars_plot"  # its name among the training plots (and its object name)
FIRST_CAPACITY = 256  # points a tag's arrays hold before they first double
# a tag with fewer points (an evaluation every few hundred steps) is drawn point by point and never smoothed, as the
# valid loss and the evaluation scores are: a moving average over a dozen points would lag behind the last ones
DENSE_POINTS = 50
TITLE, TITLE_OF = N_("Logged scalars"), N_("Scalars logged by {name}")
FILTER_HELP = N_(
    "Shows the tags that contain these letters (a | b: either). Enter draws exactly the tags shown: type loss and "
    "press Enter to compare train/loss with eval/loss."
)
# a tag's last part that says how the run went along, not how well it learns: not drawn until chosen
BOOKKEEPING = re.compile(r"epoch|step|global_step|.*runtime|.*per_second|total_flos|time", re.IGNORECASE)


def tag_colour(i: int) -> str:
    """The colour of the ``i``-th tag (0-based) the run logged: a tag keeps its colour while the run is shown."""
    return RUN_COLOURS[i] if i < len(RUN_COLOURS) else pg.intColor(i, hues=17).name()


def default_tags(tags: Sequence[str]) -> list[str]:
    """The tags drawn before the person chooses: every loss (a train and an eval loss compared on one plot), else
    the first tag that is not bookkeeping (the epoch, a runtime, samples per second), else the first."""
    losses = [t for t in tags if "loss" in t.lower()]
    if losses:
        return losses
    learning = [t for t in tags if not BOOKKEEPING.fullmatch(re.split(r"[/.]", t)[-1])]
    return (learning or list(tags))[:1]


def matching(tags: Iterable[str], text: str) -> list[str]:
    """The tags containing ``text`` (ignoring case; "a | b": either), all of them for an empty ``text``."""
    words = [w.strip().lower() for w in text.split("|") if w.strip()]
    return [t for t in tags if not words or any(w in t.lower() for w in words)]


def same_folder(a: str, b: str) -> bool:
    """Whether two spellings of a folder name the same one ("runs/x" and "/home/me/runs/x/")."""
    return bool(a) and bool(b) and os.path.abspath(os.path.normpath(a)) == os.path.abspath(os.path.normpath(b))


class TagPoints:
    """One tag's steps and values in arrays that double when full: appending n points in any number of batches
    copies O(n) numbers in all (a run may log 100,000 points a tag over hours). ``grown`` counts the
    reallocations; ``lo`` and ``hi`` are the finite values' extent, ``lo_positive`` the smallest above 0."""

    def __init__(self, capacity: int = FIRST_CAPACITY) -> None:
        self._steps = np.empty(capacity)  # float64, as pyqtgraph draws them (steps exact up to 2**53)
        self._values = np.empty(capacity)
        self.n = 0
        self.grown = 0
        self.version = 0  # changes with every change of the points (a redraw compares it)
        self.cuts = 0  # times points were taken back (smoothing starts again then)
        self.lo = self.hi = self.lo_positive = math.nan

    @property
    def steps(self) -> np.ndarray:
        return self._steps[: self.n]

    @property
    def values(self) -> np.ndarray:
        return self._values[: self.n]

    @property
    def capacity(self) -> int:
        return len(self._steps)

    def extend(self, steps: np.ndarray, values: np.ndarray) -> None:
        """Append the points; a batch starting at or before the last step replaces the points from there on (a run
        resumed from an earlier checkpoint logs those steps again)."""
        steps, values = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
        if len(steps) == 0:
            return
        if self.n and steps[0] <= self._steps[self.n - 1]:
            self.cut(int(np.searchsorted(self.steps, steps[0], side="left")))
        need = self.n + len(steps)
        if need > self.capacity:
            size = max(need, 2 * self.capacity)
            self._steps, self._values = _moved(self._steps, self.n, size), _moved(self._values, self.n, size)
            self.grown += 1
        self._steps[self.n : need], self._values[self.n : need] = steps, values
        self.n = need
        self.version += 1
        self._widen(values)

    def cut(self, n: int) -> None:
        """Keep the first ``n`` points."""
        self.n = min(n, self.n)
        self.version, self.cuts = self.version + 1, self.cuts + 1
        self.lo = self.hi = self.lo_positive = math.nan
        self._widen(self.values)

    def _widen(self, values: np.ndarray) -> None:
        finite = values[np.isfinite(values)]
        if len(finite):
            self.lo, self.hi = float(np.fmin(self.lo, finite.min())), float(np.fmax(self.hi, finite.max()))
        positive = finite[finite > 0]
        if len(positive):
            self.lo_positive = float(np.fmin(self.lo_positive, positive.min()))


def _step_text(step: float) -> str:
    return str(int(step)) if float(step).is_integer() else repr(float(step))


def _moved(old: np.ndarray, n: int, size: int) -> np.ndarray:
    new = np.empty(size, dtype=old.dtype)
    new[:n] = old[:n]
    return new


class LoggedScalars:
    """What the scalars plot shows, without Qt: whose scalars (``folder``), each tag's points in the order the tags
    came, and the tags chosen (the loss tags until the person chooses; then new tags come unchosen)."""

    def __init__(self) -> None:
        self.folder = ""  # the followed folder the points come from
        self.points: dict[str, TagPoints] = {}
        self.chosen: set[str] = set()
        self.chosen_by_person = False
        self.let_go = False  # the window stopped following their run: the next new run replaces them

    @property
    def tags(self) -> list[str]:
        return list(self.points)

    @property
    def has_points(self) -> bool:
        return any(p.n for p in self.points.values())

    def take(self, batch: ScalarsLogged) -> None:
        """New points (another folder's: what was shown goes; ``reset``: this folder's points go first)."""
        if batch.folder != self.folder and not same_folder(batch.folder, self.folder):
            self.drop()
            self.folder = batch.folder
        elif batch.reset:
            self.points = {}  # (the tags chosen stay chosen: the rewritten log has them again)
        self.let_go = False
        for tag, steps, values in zip(batch.tags, batch.steps, batch.values):
            self.points.setdefault(tag, TagPoints()).extend(steps, values)
        if not self.chosen_by_person:
            self.chosen = set(default_tags(self.tags))

    def drop(self) -> None:
        self.folder, self.points, self.chosen, self.chosen_by_person, self.let_go = "", {}, set(), False, False

    def follow(self, folder: str) -> bool:
        """The window follows ``folder`` ("": none any more); → whether the points went (another run followed)."""
        if not folder:
            self.let_go = self.has_points
            return False
        if self.points and not same_folder(folder, self.folder):
            self.drop()
            return True
        return False

    def new_run(self) -> bool:
        """Another run is shown; → whether the points went (their run is no longer followed)."""
        if self.let_go:
            self.drop()
            return True
        return False

    def choose(self, tags: Iterable[str]) -> None:
        """The person's choice: exactly ``tags`` drawn."""
        self.chosen = set(tags) & set(self.points)
        self.chosen_by_person = True


@dataclass
class TagCurve:
    """How one tag is drawn: its curve (a dense tag's smoothed when smoothing is on, a sparse one's point by
    point), the faint raw curve beneath a smoothed one, and the smoothed points computed so far."""

    curve: pg.PlotDataItem
    raw: pg.PlotDataItem
    dense: bool = False  # drawn as a line (smoothed), not point by point
    smooth: TagPoints = field(default_factory=TagPoints)
    smooth_state: tuple[float, int] = (0.0, 0)
    smoothed: int = 0  # points of the tag smoothed so far
    cuts: int = 0  # the tag's cuts when they were smoothed
    drawn: int = -1  # the tag's version when last drawn

    def start_over(self) -> None:
        """Smoothed and drawn again from the first point at the next redraw."""
        self.smooth, self.smooth_state, self.smoothed, self.cuts, self.drawn = TagPoints(), (0.0, 0), 0, 0, -1


class TagChooser(QWidget):
    """The tags as a list with tick boxes under a filter: tick the curves to draw, type to find a tag among forty,
    Enter to draw exactly the tags found (a family: train/loss and eval/loss)."""

    def __init__(self, state: LoggedScalars, changed: Callable[[], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state, self._changed = state, changed
        self.filter = named(QLineEdit(), "scalar_tag_filter")
        self.filter.setClearButtonEnabled(True)
        self.list = named(QListWidget(), "scalar_tags")
        self.list.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # "train/…/loss": both ends say which
        self.list.setUniformItemSizes(True)
        self.list.setMinimumHeight(1)  # the row's share of the plots' height (the list scrolls): never over the next
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.filter)
        layout.addWidget(self.list, 1)
        self.filter.textChanged.connect(self._on_filter)
        self.filter.returnPressed.connect(self._on_enter)
        self.list.itemChanged.connect(self._on_ticked)
        self._fit_width()

    def retranslate(self) -> None:
        self.filter.setPlaceholderText(tr("Filter tags"))
        self.filter.setToolTip(tr(FILTER_HELP))

    def show_tags(self) -> None:
        """The list as the state has it: every tag in order, ticked when chosen, hidden when the filter hides it."""
        tags = self.state.tags
        self.list.blockSignals(True)
        while self.list.count() > len(tags) or any(
            self.list.item(i).text() != t for i, t in enumerate(tags[: self.list.count()])
        ):
            self.list.takeItem(self.list.count() - 1)
        for tag in tags[self.list.count() :]:
            item = QListWidgetItem(tag)
            item.setToolTip(tag)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            self.list.addItem(item)
        found = set(matching(tags, self.filter.text()))
        for i, tag in enumerate(tags):
            item = self.list.item(i)
            item.setCheckState(Qt.CheckState.Checked if tag in self.state.chosen else Qt.CheckState.Unchecked)
            item.setHidden(tag not in found)
        self.list.blockSignals(False)

    def _on_filter(self, _text: str) -> None:
        self.show_tags()

    def _on_enter(self) -> None:
        found = matching(self.state.tags, self.filter.text())
        if found and self.filter.text().strip():  # (Enter in an empty filter would draw every tag)
            self.state.choose(found)
            self.show_tags()
            self._changed()

    def _on_ticked(self, _item: QListWidgetItem) -> None:
        items = (self.list.item(i) for i in range(self.list.count()))
        self.state.choose(item.text() for item in items if item.checkState() == Qt.CheckState.Checked)
        self._changed()

    def changeEvent(self, event) -> None:  # noqa: N802 — Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # presenter mode's larger type: a wider column
            self._fit_width()

    def _fit_width(self) -> None:
        self.setFixedWidth(self.fontMetrics().horizontalAdvance("train/learning_rate") + 36)


class ScalarsPlot(QWidget):
    """The followed run's scalars: one curve per chosen tag, named by its tag in the legend, x = step; the tags
    beside it (:class:`TagChooser`). Smoothing and the log scale follow the panel's controls."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(SCALARS_PLOT)
        self.state = LoggedScalars()
        self.curves: dict[str, TagCurve] = {}
        self.weight = 0.6  # the smoothing (the panel's slider)
        self.log = False
        self.follow = True  # keep the data in view; off once the person zooms or pans
        self._range: tuple[float, float, float, float] | None = None
        self._dirty = False  # the choice, smoothing or scale changed since the last redraw
        self._legend_tags: tuple[str, ...] = ()
        self._create_plot()
        self.chooser = TagChooser(self.state, self._on_chosen)
        body = QWidget()
        row = QHBoxLayout(body)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.plot, 1)
        row.addWidget(self.chooser)
        self.title, self.export_button = titled_view(self, body, "scalars", self.export, ("PNG", "SVG", "CSV"))
        self.retranslate()

    def _create_plot(self) -> None:
        """pyqtgraph's plot as the other training plots have it: peak downsampling, only the part in view drawn,
        ranges that change in coarse steps, the legend above the curves."""
        self.plot = pg.PlotWidget(axisItems={"bottom": StepAxis("bottom")})
        self.plot.setBackground(None)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        item = self.plot.getPlotItem()
        item.setDownsampling(auto=True, mode="peak")
        item.setClipToView(True)
        item.vb.disableAutoRange()
        item.vb.sigRangeChangedManually.connect(self._on_manual_range)
        item.autoBtn.clicked.connect(self._on_auto_button)
        for name in ("left", "bottom"):
            item.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            item.getAxis(name).enableAutoSIPrefix(False)
        self.legend_above = LegendAbove(self.plot)  # (kept: it lays the legend out as entries come and go)
        self.legend = self.legend_above.legend

    def retranslate(self) -> None:
        self._show_title()
        self.plot.setLabel("bottom", tr("step"))
        self.plot.setLabel("left", tr("value"))
        self.chooser.retranslate()

    def _show_title(self) -> None:
        """The title names the run's folder."""
        folder = self.state.folder
        self.title.setText(tr(TITLE_OF).format(name=Path(folder).name) if folder else tr(TITLE))

    # -- what it shows ---------------------------------------------------------------------------------------------
    @property
    def has_points(self) -> bool:
        return self.state.has_points

    def take(self, batch: ScalarsLogged) -> None:
        """New points of the followed run's tags (see :meth:`LoggedScalars.take`)."""
        folder = self.state.folder
        self.state.take(batch)
        if folder != self.state.folder:
            self._forget_curves()
        elif batch.reset:
            self._draw_anew()
        self._shown_again()

    def follow_folder(self, folder: str) -> None:
        """The window follows ``folder`` ("": none any more): another folder's scalars go."""
        if self.state.follow(folder):
            self._forget_curves()
            self._shown_again()

    def new_run(self) -> None:
        """Another run became the current one: scalars the window no longer follows go."""
        if self.state.new_run():
            self._forget_curves()
            self._shown_again()

    def _shown_again(self) -> None:
        self.chooser.show_tags()
        self._show_title()
        self._dirty = True

    def _on_chosen(self) -> None:
        self.follow, self._range, self._dirty = True, None, True  # other curves: fit them

    def _forget_curves(self) -> None:
        for drawn in self.curves.values():
            self.plot.removeItem(drawn.curve)
            self.plot.removeItem(drawn.raw)
        self.curves = {}
        self.follow, self._range = True, None

    def _draw_anew(self) -> None:
        """The folder's log was read anew (a followed run's first checkpoint sends it whole): the curves stay (taking
        them and their legend entries out and back took 30–80 ms of the window's time) and get all their points at
        the next redraw; a tag the log no longer has loses its curve."""
        for tag in [t for t in self.curves if t not in self.state.points]:
            drawn = self.curves.pop(tag)
            self.plot.removeItem(drawn.curve)
            self.plot.removeItem(drawn.raw)
        for drawn in self.curves.values():
            drawn.start_over()
        self.follow, self._range = True, None

    def shown(self, tag: str) -> tuple[np.ndarray, np.ndarray]:
        """The points the tag's curve was given (smoothed, when smoothing is on): the whole data set, not the part
        pyqtgraph keeps of it for the pixels in view."""
        drawn = self.curves.get(tag)
        x, y = drawn.curve.getOriginalDataset() if drawn is not None else (None, None)
        return (np.empty(0), np.empty(0)) if x is None or y is None else (np.array(x), np.array(y))

    def shown_raw(self, tag: str) -> tuple[np.ndarray, np.ndarray]:
        """The points of the faint raw curve under a smoothed one (empty without smoothing)."""
        drawn = self.curves.get(tag)
        x, y = drawn.raw.getOriginalDataset() if drawn is not None else (None, None)
        return (np.empty(0), np.empty(0)) if x is None or y is None else (np.array(x), np.array(y))

    # -- how -------------------------------------------------------------------------------------------------------
    def set_smoothing(self, weight: float) -> None:
        if weight != self.weight:
            self.weight, self._dirty = weight, True
            for drawn in self.curves.values():
                drawn.start_over()

    def set_log(self, on: bool) -> None:
        self.plot.setLogMode(x=False, y=on)
        self.log, self._range, self._dirty = on, None, True

    def _on_manual_range(self, *_) -> None:
        self.follow = False

    def _on_auto_button(self) -> None:
        self.follow, self._range = True, None
        self.plot.getPlotItem().vb.disableAutoRange()
        self._fit()

    @property
    def stale(self) -> bool:
        """Points arrived (or the choice or the view changed) since the last redraw."""
        return self._dirty or any(
            p.version != self.curves[t].drawn if t in self.curves else True
            for t, p in self.state.points.items()
            if t in self.state.chosen
        )

    def redraw(self, gradually: bool = False) -> None:
        """Give each chosen tag's curve its points (only those with new ones), hide the others, and keep them in
        view. ``gradually`` (the plots' timer): at most one new curve this time (see MetricPlot.redraw)."""
        self._dirty, made = False, False
        for i, (tag, points) in enumerate(self.state.points.items()):
            drawn = self.curves.get(tag)
            chosen = tag in self.state.chosen
            if drawn is None and (not chosen or (gradually and made)):
                continue
            if drawn is None:
                made = True
                drawn = self.curves[tag] = self._make_curves(tag_colour(i))
            drawn.curve.setVisible(chosen)
            drawn.raw.setVisible(chosen and self.weight > 0)  # (empty while the tag is sparse)
            if chosen and drawn.drawn != points.version:
                self._draw(drawn, points)
        self._sync_legend()
        self._fit()

    def _draw(self, drawn: TagCurve, points: TagPoints) -> None:
        if drawn.dense != (points.n >= DENSE_POINTS):
            drawn.dense = points.n >= DENSE_POINTS
            drawn.curve.setSymbol(None if drawn.dense else "o")
        if self.weight <= 0 or not drawn.dense:
            drawn.curve.setData(points.steps, points.values)
            drawn.raw.setData([], [])
        else:
            if points.cuts != drawn.cuts:  # points taken back (a resumed run): smoothed again from the start
                drawn.smooth, drawn.smooth_state, drawn.smoothed, drawn.cuts = TagPoints(), (0.0, 0), 0, points.cuts
            new, drawn.smooth_state = ema(points.values[drawn.smoothed :], self.weight, drawn.smooth_state)
            drawn.smooth.extend(points.steps[drawn.smoothed :], new)
            drawn.smoothed = points.n
            drawn.curve.setData(drawn.smooth.steps, drawn.smooth.values)
            drawn.raw.setData(points.steps, points.values)
        drawn.drawn = points.version

    def _make_curves(self, colour: str) -> TagCurve:
        pen = pg.mkPen(colour, width=1)  # one-pixel lines: see MetricPlot._make_curves
        faint = pg.mkColor(colour)
        faint.setAlpha(60)
        raw = self.plot.plot([], [], pen=pg.mkPen(faint, width=1), connect="finite")
        raw.setZValue(-1)
        dots = dict(symbol="o", symbolSize=5, symbolBrush=colour, symbolPen=colour)  # sparse until DENSE_POINTS
        return TagCurve(self.plot.plot([], [], pen=pen, connect="finite", **dots), raw)

    def _sync_legend(self) -> None:
        """The legend names the chosen tags' curves, in the order the run logged them."""
        tags = tuple(t for t in self.state.points if t in self.state.chosen and t in self.curves)
        if tags == self._legend_tags:
            return
        self._legend_tags = tags
        self.legend.clear()
        for tag in tags:
            self.legend.addItem(self.curves[tag].curve, html.escape(tag))  # a tag is the run's text, not markup

    def changeEvent(self, event) -> None:  # noqa: N802 — Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # presenter mode: labels made anew take the new type as their
            self._legend_tags = ()  # default (set_plot_font then sizes their text), not only their text's size
            self._sync_legend()

    def _fit(self) -> None:
        """Keep the chosen curves in view, the ends round numbers that change only now and then (a range change
        re-renders the axes: see MetricPlot._follow)."""
        if not self.follow:
            return
        shown = [p for t, p in self.state.points.items() if t in self.state.chosen and p.n]
        lows = [p.lo_positive if self.log else p.lo for p in shown]
        lows = [lo for lo in lows if math.isfinite(lo)]
        if not lows:
            return
        x_top = nice_ceiling(max(10.0, 1.05 * max(float(p.steps[-1]) for p in shown)))
        lo, hi = min(lows), max(p.hi for p in shown if math.isfinite(p.hi))
        if self.log:
            y = nice_bounds(math.log10(lo), math.log10(max(hi, lo)))
        else:
            y = (0.0, nice_ceiling(hi * 1.05) if hi > 0 else 1.0) if lo >= 0 else nice_bounds(lo, hi)
        old = self._range
        inside = old is not None and old[1] >= x_top and old[2] <= y[0] and y[1] <= old[3]
        if inside and old is not None and (old[3] - old[2]) <= 3 * (y[1] - y[0]):
            return
        self._range = (0.0, x_top, *y)
        self.plot.getPlotItem().vb.setRange(xRange=(0, x_top), yRange=y, padding=0)

    # -- export ----------------------------------------------------------------------------------------------------
    def export(self, path: str | Path) -> None:
        """The plot as PNG or SVG, or the chosen tags' points as CSV (tag, step, value), by the file's extension."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".csv":
            with path.open("w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["tag", "step", "value"])
                for tag, p in self.state.points.items():
                    if tag in self.state.chosen:
                        w.writerows([tag, _step_text(s), repr(float(v))] for s, v in zip(p.steps, p.values))
            return
        if suffix not in (".png", ".svg"):
            raise ValueError(f"cannot export to {suffix or 'a file without extension'}: use .png, .svg or .csv")
        item = self.plot.getPlotItem()
        render_scene(item.scene(), item.sceneBoundingRect(), path, self.title.text())
