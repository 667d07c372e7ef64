"""A live training-curve plot: growable buffers, TensorBoard-style smoothing, run overlays, export.

Data arrive in batches (:meth:`MetricPlot.append`) and are only copied into
the curves when :meth:`MetricPlot.redraw` runs — the panel calls it from a
25 Hz timer — so the cost of drawing does not grow with the step rate.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QGraphicsItem, QWidget

from explorer.i18n import tr
from explorer.widgets.export import render_scene, titled_view
from explorer.widgets.legend import LegendAbove

# Points kept per curve: far more than a plot has pixels across. Beyond it a curve is thinned to half,
# keeping each bin's lowest and highest value, so spikes stay visible and the work per frame stays bounded.
MAX_POINTS = 8192
RUN_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]


class StepAxis(pg.AxisItem):
    """The step axis: its labelled ticks never crowd. pyqtgraph spaces the labelled ticks by the axis's length
    alone (about ln(pixels) of them) and always draws them: a 150-px axis up to 10,000 steps wrote
    "2000400060008000". Here the labelled spacing widens (1, 2, 2.5, 5 × 10ⁿ) until every label has room."""

    GAP = 1.3  # room per label: its width and 30% more

    def tickSpacing(self, minVal, maxVal, size):  # noqa: N802, N803 — pyqtgraph's names
        levels = super().tickSpacing(minVal, maxVal, size)
        span = abs(maxVal - minVal)
        if not levels or span == 0 or size <= 0:
            return levels
        major, offset = levels[0]
        metrics = QFontMetrics(self.style["tickFont"] or self.font())
        widest = max(metrics.horizontalAdvance(t) for t in self.tickStrings([minVal, maxVal], 1.0, major))
        while span / major * widest * self.GAP > size + widest:  # (half a label may stand past each end)
            major = _next_nice(major)
        return [(major, offset), *(level for level in levels if level[0] < major)]


def _next_nice(x: float) -> float:
    """The next of 1, 2, 2.5, 5 × 10ⁿ above ``x``."""
    unit = 10 ** np.floor(np.log10(x))
    return float(next((m * unit for m in (2.0, 2.5, 5.0, 10.0) if m * unit > x * (1 + 1e-9)), 10 * unit))


class Buffer:
    """A growable pair of float arrays (amortised O(1) appends)."""

    def __init__(self) -> None:
        self._x = np.empty(256)
        self._y = np.empty(256)
        self.n = 0

    def extend(self, x: np.ndarray, y: np.ndarray) -> None:
        need = self.n + len(x)
        if need > len(self._x):
            size = max(need, 2 * len(self._x))
            self._x = np.resize(self._x, size)
            self._y = np.resize(self._y, size)
        self._x[self.n : need] = x
        self._y[self.n : need] = y
        self.n = need

    def thin(self) -> None:
        """Halve the points: of every 4 consecutive ones keep the lowest and the highest, in order
        (the last few, which do not fill a group, stay as they are)."""
        n4 = self.n // 4 * 4
        if n4 == 0:
            return
        y = self._y[:n4].reshape(-1, 4)
        finite = np.isfinite(y)
        lo = np.where(finite, y, np.inf).argmin(axis=1)
        hi = np.where(finite, y, -np.inf).argmax(axis=1)
        first, second = np.minimum(lo, hi), np.maximum(lo, hi)
        keep = (np.arange(0, n4, 4)[:, None] + np.stack([first, second], axis=1)).ravel()
        keep = np.concatenate([keep, np.arange(n4, self.n)])
        m = len(keep)
        self._x[:m], self._y[:m] = self._x[keep], self._y[keep]
        self.n = m

    @property
    def x(self) -> np.ndarray:
        return self._x[: self.n]

    @property
    def y(self) -> np.ndarray:
        return self._y[: self.n]


def ema(y: np.ndarray, weight: float, state: tuple[float, int] = (0.0, 0)) -> tuple[np.ndarray, tuple[float, int]]:
    """TensorBoard's smoothing: debiased exponential moving average with ``weight`` in [0, 1).

    Continues from ``state`` (last biased value, count) so new points can be
    smoothed without redoing the old ones. Non-finite values pass through.
    """
    out = np.empty_like(y)
    last, count = state
    for i, v in enumerate(y):
        if not np.isfinite(v):
            out[i] = v
            continue
        last = last * weight + (1 - weight) * v
        count += 1
        out[i] = last / (1 - weight**count) if weight > 0 else v
    return out, (last, count)


def nice_ceiling(x: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that is at least ``x`` (> 0)."""
    power = 10.0 ** np.floor(np.log10(x))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * power >= x * (1 - 1e-12):
            return m * power
    return 10.0 * power


def nice_bounds(lo: float, hi: float) -> tuple[float, float]:
    """A view of ``lo``..``hi`` with a margin, its ends on a grid of a round step (a quarter of the
    span, rounded up to 1, 2 or 5 × 10^k). The snapped ends leave room, so a curve that keeps
    creeping down (a loss) changes the view, and makes the axes re-render, only now and then."""
    span = max(hi - lo, 1e-9)
    step = nice_ceiling(span / 4)
    return float(np.floor((lo - 0.05 * span) / step) * step), float(np.ceil((hi + 0.05 * span) / step) * step)


@dataclass
class Series:
    """One named line of one run: raw buffer, smoothed copy, and the curves showing them."""

    name: str
    run_id: int
    buffer: Buffer = field(default_factory=Buffer)
    smooth: Buffer = field(default_factory=Buffer)
    smooth_state: tuple[float, int] = (0.0, 0)
    smoothed_upto: int = 0
    raw_curve: pg.PlotDataItem | None = None
    curve: pg.PlotDataItem | None = None
    dirty: bool = True


class MetricPlot(QWidget):
    """A titled plot of one or more metrics against the training step, for several runs."""

    def __init__(
        self,
        title: str,
        object_name: str,
        y_label: str = "",
        smoothable: bool = True,
        y_domain: tuple[float, float] | None = None,
        parent=None,
    ):
        super().__init__(parent)
        self.y_domain = y_domain  # the values' whole scale, e.g. (0, 1) for an accuracy
        self.setObjectName(object_name)
        self._title_source = title
        self.smoothable = smoothable
        self.weight = 0.6 if smoothable else 0.0
        self.series: dict[tuple[int, str], Series] = {}
        self.styles: dict[str, dict] = {}
        self.visible_runs: set[int] = set()
        self.current_run = 0
        self.run_names: dict[int, str] = {}  # runs said by name in the legend (an experiment's two runs)

        self.plot = pg.PlotWidget(axisItems={"bottom": StepAxis("bottom")})
        self.plot.setBackground(None)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self._y_label = y_label
        item = self.plot.getPlotItem()
        item.setDownsampling(auto=True, mode="peak")
        item.setClipToView(True)
        # ranges that grow in steps (see _follow)
        item.vb.disableAutoRange()
        self.follow = True  # keep the data in view; off once the person zooms or pans
        self._range: tuple[float, float, float, float] | None = None
        item.vb.sigRangeChangedManually.connect(self._on_manual_range)
        item.autoBtn.clicked.connect(self._on_auto_button)
        for name in ("left", "bottom"):  # blit the axes from a pixmap; re-rendered only when they change
            item.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            item.getAxis(name).enableAutoSIPrefix(False)  # plain numbers, not "(x0.001)"
        self.legend_above = LegendAbove(self.plot)  # the legend above the curves, never over them
        self.legend = self.legend_above.legend
        self._legend_entries: tuple[tuple[int, str, str], ...] = ()  # (run, series, text) the legend lists
        self.title, self.export_button = titled_view(
            self, self.plot, object_name.removesuffix("_plot"), self.export, ("PNG", "SVG", "CSV")
        )
        self.retranslate()

    def retranslate(self) -> None:
        self.title.setText(tr(self._title_source))
        self.plot.setLabel("bottom", tr("step"))
        if self._y_label:
            self.plot.setLabel("left", tr(self._y_label))
        self._sync_legend()  # legend entries follow the language

    def set_title(self, title: str, y_label: str, y_domain: tuple[float, float] | None) -> None:
        """Another title, value axis and scale (e.g. the evaluation plot of another model family)."""
        if (title, y_label, y_domain) == (self._title_source, self._y_label, self.y_domain):
            return
        self._title_source, self._y_label, self.y_domain = title, y_label, y_domain
        self._range = None  # the new scale applies at the next redraw
        for s in self.series.values():
            s.dirty = True
        self.retranslate()

    # -- data ----------------------------------------------------------------------------------
    def define(
        self,
        name: str,
        label: str,
        colour_shift: int = 0,
        dashed: bool = False,
        symbol: str | None = None,
        colour: str | None = None,
        number: int | None = None,
    ):
        """Declare a series: its legend label and how it is drawn. Its colour is the run's (shifted by
        ``colour_shift``) unless ``colour`` fixes one; a label with ``{n}`` is given ``number``."""
        self.styles[name] = dict(
            label=label, shift=colour_shift, dashed=dashed, symbol=symbol, colour=colour, number=number
        )

    def append(self, run_id: int, name: str, x: np.ndarray, y: np.ndarray) -> None:
        if len(x) == 0:
            return
        s = self.series.get((run_id, name))
        if s is None:
            s = self.series[(run_id, name)] = Series(name, run_id)
        s.buffer.extend(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
        s.dirty = True

    def replace(self, run_id: int, name: str, x: np.ndarray, y: np.ndarray) -> None:
        """New data for a series; its curve (and legend entry) stays."""
        s = self.series.get((run_id, name))
        if s is not None:
            s.buffer, s.smooth, s.smooth_state, s.smoothed_upto = Buffer(), Buffer(), (0.0, 0), 0
            s.dirty = True
        self.append(run_id, name, x, y)

    def remove(self, run_id: int, name: str | None = None) -> None:
        for key in [k for k in self.series if k[0] == run_id and (name is None or k[1] == name)]:
            s = self.series.pop(key)
            for curve in (s.curve, s.raw_curve):
                if curve is not None:
                    self.plot.removeItem(curve)
        self._sync_legend()

    def data(self, run_id: int, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The raw (unsmoothed) data of a series."""
        s = self.series.get((run_id, name))
        return (s.buffer.x.copy(), s.buffer.y.copy()) if s else (np.empty(0), np.empty(0))

    def shown(self, run_id: int, name: str) -> tuple[np.ndarray, np.ndarray]:
        """What the curve currently draws (smoothed, if smoothing is on)."""
        s = self.series.get((run_id, name))
        if s is None or s.curve is None:
            return np.empty(0), np.empty(0)
        x, y = s.curve.getData()
        return (np.empty(0), np.empty(0)) if x is None else (np.asarray(x), np.asarray(y))

    # -- view ----------------------------------------------------------------------------------
    def set_smoothing(self, weight: float) -> None:
        if not self.smoothable or weight == self.weight:
            return
        self.weight = weight
        for s in self.series.values():
            s.smooth, s.smooth_state, s.smoothed_upto, s.dirty = Buffer(), (0.0, 0), 0, True

    def set_log(self, on: bool) -> None:
        self.plot.setLogMode(x=False, y=on)
        self._range = None

    def _on_manual_range(self, *_) -> None:
        self.follow = False

    def _on_auto_button(self) -> None:
        self.follow, self._range = True, None
        self.plot.getPlotItem().vb.disableAutoRange()
        self._follow()

    def _follow(self) -> None:
        """Keep all shown data in view, changing the range only in coarse steps: a range change makes
        pyqtgraph re-render the axes (3–10 ms a plot on Xvfb), so ends are round numbers with room to
        grow (x to the next 1, 2, 5 × 10^k)."""
        if not self.follow:
            return
        log = self.plot.getPlotItem().ctrl.logYCheck.isChecked()
        old = self._range
        xs: list[float] = []
        ys: list[float] = []
        for s in self.series.values():
            if s.run_id in self.visible_runs and s.buffer.n:
                xs.append(s.buffer.x.max())
                y = s.buffer.y
                y = y[np.isfinite(y) & (y > 0)] if log else y[np.isfinite(y)]
                if len(y):
                    ys.extend((y.min(), y.max()))
        if not xs or not ys:
            if old is None:  # nothing of the chosen runs yet: an empty view, not the last runs' ranges
                self._range = (0.0, 10.0, *self._y_view(0.0, 1.0, False))
                self.plot.getPlotItem().vb.setRange(xRange=(0, 10), yRange=self._range[2:], padding=0)
            return
        x_hi = max(xs)
        lo, hi = (np.log10(min(ys)), np.log10(max(ys))) if log else (min(ys), max(ys))
        span = max(hi - lo, 1e-9 if not log else 1e-3)
        grow_x = old is None or x_hi > old[1]
        outside = old is None or lo < old[2] or hi > old[3]
        slack = old is not None and (old[3] - old[2]) > 3 * span  # the data now use a small part of the view
        if not (grow_x or outside or slack):
            return
        x_top = old[1] if old is not None and not grow_x else nice_ceiling(max(10.0, x_hi * 1.05))
        y_lo, y_hi = (old[2], old[3]) if old is not None and not (outside or slack) else self._y_view(lo, hi, log)
        if (0.0, x_top, y_lo, y_hi) == old:  # e.g. a flat curve in a view that starts at zero
            return
        self._range = (0.0, x_top, y_lo, y_hi)
        self.plot.getPlotItem().vb.setRange(xRange=(0, x_top), yRange=(y_lo, y_hi), padding=0)

    def _y_view(self, lo: float, hi: float, log: bool) -> tuple[float, float]:
        if log:
            return nice_bounds(lo, hi)
        if self.y_domain is not None and self.y_domain[0] <= lo and hi <= self.y_domain[1]:
            d0, d1 = self.y_domain  # a share or a percentage: the whole scale, never re-ranged
            return d0, d1 + 0.02 * (d1 - d0)
        if lo >= 0:  # a loss, a norm, a rate: from zero, the top grows as 1, 2, 5 × 10^k
            return 0.0, nice_ceiling(hi * 1.05)
        return nice_bounds(lo, hi)

    def set_runs(self, current: int, visible: set[int], names: Mapping[int, str] | None = None) -> None:
        """Show the runs ``visible`` (and ``current``, whose legend entries go without a run number; a run
        ``names`` names, such as an experiment's baseline, is said by that name instead of its number)."""
        names = dict(names or {})
        runs = set(visible) | {current}
        if (current, runs) != (self.current_run, self.visible_runs):
            self.follow = True  # other runs chosen: fit them, even after a zoom into the last ones
        # the same runs again (a followed run's newer checkpoint): nothing to redraw; six plots redrawn at once
        # made the window 30-40 ms late
        same = (current, runs, names) == (self.current_run, self.visible_runs, self.run_names)
        self.current_run, self.visible_runs, self.run_names = current, runs, names
        self._range = None  # fit the chosen runs at the next redraw
        for s in self.series.values():
            s.dirty = s.dirty or not same

    @property
    def stale(self) -> bool:
        """Data arrived (or the view changed) since the last redraw."""
        return any(s.dirty for s in self.series.values())

    def redraw(self, gradually: bool = False) -> None:
        """Draw the series with new points. ``gradually`` (the plots' timer): a call makes one new series' curves
        and legend entry, and the points are drawn by a later call, once every new series has its curves (a new
        run's curves, each with its faint raw curve and its legend entry, took 10–15 ms together; one curve with its
        points and the repaint of the axes they re-range, 10–13 ms)."""
        new = next((s for s in self.series.values() if s.dirty and s.curve is None), None) if gradually else None
        if new is not None:
            self._make_curves(new).setVisible(new.run_id in self.visible_runs)  # (empty until then)
            self._sync_legend()
            return
        for s in self.series.values():
            if not s.dirty:
                continue
            s.dirty = False
            show = s.run_id in self.visible_runs
            curve = s.curve if s.curve is not None else self._make_curves(s)
            curve.setVisible(show)
            if s.raw_curve is not None:
                s.raw_curve.setVisible(show and self.weight > 0)
            if not show:
                continue
            smoothed = self.smoothable and self.weight > 0 and self.styles.get(s.name, {}).get("symbol") is None
            if smoothed:
                x, y = s.buffer.x, s.buffer.y
                new_y, s.smooth_state = ema(y[s.smoothed_upto :], self.weight, s.smooth_state)
                s.smooth.extend(x[s.smoothed_upto :], new_y)
                s.smoothed_upto = len(y)
            if s.buffer.n > MAX_POINTS:
                s.buffer.thin()
                if smoothed:
                    s.smooth.thin()
                    s.smoothed_upto = s.buffer.n
            if smoothed:
                assert s.raw_curve is not None  # made for every smoothed series
                curve.setData(s.smooth.x, s.smooth.y)
                s.raw_curve.setData(s.buffer.x, s.buffer.y)
            else:
                curve.setData(s.buffer.x, s.buffer.y)
                if s.raw_curve is not None:
                    s.raw_curve.setData([], [])
        self._sync_legend()
        self._follow()

    def _sync_legend(self) -> None:
        """The legend lists exactly the series shown, one entry each, the current run's first (hidden runs'
        curves stay in the plot, but their entries go: pyqtgraph would list them with a crossed-out icon)."""
        order = {name: i for i, name in enumerate(self.styles)}
        shown = sorted(
            (s for s in self.series.values() if s.curve is not None and s.run_id in self.visible_runs),
            key=lambda s: (s.run_id != self.current_run, s.run_id, order.get(s.name, len(order)), s.name),
        )
        entries = tuple((s.run_id, s.name, self._legend_text(s)) for s in shown)
        if entries == self._legend_entries:
            return
        kept = len(self._legend_entries) if entries[: len(self._legend_entries)] == self._legend_entries else 0
        self._legend_entries = entries
        if not kept:  # entries gone, reordered or renamed: the legend anew
            self.legend.clear()
        for s, (_, _, text) in list(zip(shown, entries))[kept:]:  # (else only the new ones, after the others)
            self.legend.addItem(s.curve, text)

    def _legend_text(self, s: Series) -> str:
        style = self.styles.get(s.name, {})
        label = tr(style.get("label", s.name))
        if style.get("number") is not None:
            label = label.format(n=style["number"])
        if s.run_id == self.current_run:
            return label
        return f"{label} ({self.run_names.get(s.run_id) or tr('run') + ' ' + str(s.run_id)})"

    def _make_curves(self, s: Series) -> pg.PlotDataItem:
        """Make the series' curve (and its faint raw curve when smoothable); returns the curve."""
        style = self.styles.get(s.name, dict(label=s.name, shift=0, dashed=False, symbol=None))
        colour = pg.mkColor(style.get("colour") or RUN_COLOURS[(s.run_id - 1 + style["shift"]) % len(RUN_COLOURS)])
        current = s.run_id == self.current_run
        # one-pixel lines: a wider pen makes Qt stroke every segment, which cost ~40 ms per repaint of a long
        # curve against ~4 ms (measured on Xvfb); earlier runs are told apart by their colour and fainter line
        if not current:
            colour.setAlpha(170)
        pen = pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine if style["dashed"] else Qt.PenStyle.SolidLine)
        kw: dict = dict(pen=pen)  # no name: the legend is kept by _sync_legend
        if style["symbol"]:
            kw.update(symbol=style["symbol"], symbolSize=6, symbolBrush=colour, symbolPen=colour)
        s.curve = self.plot.plot([], [], **kw)
        if self.smoothable and not style["symbol"]:
            faint = pg.mkColor(colour)
            faint.setAlpha(60)
            s.raw_curve = self.plot.plot([], [], pen=pg.mkPen(faint, width=1))
            s.raw_curve.setZValue(-1)
        return s.curve

    # -- export --------------------------------------------------------------------------------
    def export(self, path: str | Path) -> None:
        """Write the plot as PNG or SVG, or its raw numbers as CSV, by the file's extension."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".csv":
            with path.open("w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["run", "series", "step", "value"])
                for (run, name), s in sorted(self.series.items()):
                    for x, y in zip(s.buffer.x, s.buffer.y):
                        w.writerow([run, name, int(x) if float(x).is_integer() else x, repr(float(y))])
            return
        if suffix not in (".png", ".svg"):
            raise ValueError(f"cannot export to {suffix or 'a file without extension'}: use .png, .svg or .csv")
        item = self.plot.getPlotItem()
        render_scene(item.scene(), item.sceneBoundingRect(), path, self.title.text())
