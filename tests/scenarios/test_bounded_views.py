"""The window's work and memory do not grow with the step rate or the length of a run (the training panel's
run list, bounded too: tests/test_training_panel.py)."""

import dataclasses
import os
import sys

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.widgets.metric_plot import MAX_POINTS, Buffer, MetricPlot, nice_bounds, nice_ceiling  # noqa: E402


def test_thinning_keeps_each_groups_extremes_in_order():
    b = Buffer()
    y = np.array([5.0, 1.0, 9.0, 3.0, 2.0, 2.5, 8.0, 7.0, 4.0, 6.0])
    b.extend(np.arange(len(y), dtype=float), y)
    b.thin()
    # groups [5 1 9 3] and [2 2.5 8 7]: their lowest and highest, in the order they came; the tail stays
    assert list(b.y) == [1.0, 9.0, 2.0, 8.0, 4.0, 6.0]
    assert list(b.x) == [1.0, 2.0, 4.0, 6.0, 8.0, 9.0]


def test_a_long_fast_run_keeps_a_bounded_curve_with_its_spikes(qtbot):
    plot = MetricPlot("Loss", "loss_plot", "loss")
    qtbot.addWidget(plot)
    plot.define("train", "train")
    plot.set_runs(1, {1})
    rng = np.random.default_rng(0)
    n, spike_at = 200_000, 123_457
    y = 2.0 + 0.1 * rng.standard_normal(n)
    y[spike_at] = 40.0  # one gradient blow-up in a long run
    for start in range(0, n, 2_000):  # batches as the engine sends them, a redraw after each
        x = np.arange(start + 1, start + 2_001, dtype=float)
        plot.append(1, "train", x, y[start : start + 2_000])
        plot.redraw()
    s = plot.series[(1, "train")]
    assert s.buffer.n <= MAX_POINTS and s.smooth.n == s.buffer.n
    raw_x, raw_y = s.buffer.x, s.buffer.y  # what the faint curve is given
    assert len(raw_x) <= MAX_POINTS and raw_y.max() == 40.0 and raw_x[raw_y.argmax()] == spike_at + 1
    assert raw_y.min() == y.min()
    assert np.all(np.diff(raw_x) > 0) and raw_x[-1] == n  # in order, up to the newest step


def test_round_view_ends():
    assert [nice_ceiling(v) for v in (0.7, 1.0, 1.05, 3.6, 10.0, 1.2e-4, 51.0)] == [1, 1, 2, 5, 10, 2e-4, 100]
    lo, hi = nice_bounds(0.55, 3.4)  # the step is 1 (a quarter of the span, rounded up)
    assert (lo, hi) == (0.0, 4.0)


def _view_changes_over_a_run(qtbot, monkeypatch, name, y_domain, values):
    plot = MetricPlot("Plot", name, y_domain=y_domain)
    qtbot.addWidget(plot)
    plot.define("train", "train")
    plot.set_runs(1, {1})
    vb = plot.plot.getPlotItem().vb
    ranges = []
    set_range = vb.setRange
    monkeypatch.setattr(vb, "setRange", lambda **kw: (ranges.append(kw), set_range(**kw)))
    for start in range(0, len(values), 4):  # the engine's batches at ~25 redraws a second
        plot.append(1, "train", np.arange(start + 1, start + 5, dtype=float), values[start : start + 4])
        plot.redraw()
        (x0, x1), (y0, y1) = vb.viewRange()
        shown = values[: start + 4]
        assert x1 >= start + 4 and y0 <= shown.min() and shown.max() <= y1  # every point in view, always
    return ranges


def test_a_falling_loss_and_a_rising_accuracy_re_range_their_plots_only_now_and_then(qtbot, monkeypatch):
    """Each change of view re-renders the plot's axes (3–10 ms on Xvfb): while the tiny preset trains,
    the loss plot used to change its view about once a second, for every new low."""
    rng = np.random.default_rng(1)
    steps = np.arange(3000)
    loss = 0.6 + 2.8 * np.exp(-steps / 300) + 0.05 * rng.standard_normal(3000)
    # the step axis alone needs 9 views for 3,000 steps: 10, 20, 50, …, 5000 (the old rule needed 40 in all)
    assert len(_view_changes_over_a_run(qtbot, monkeypatch, "loss_plot", None, loss)) <= 10
    accuracy = np.clip(1 - 0.9 * np.exp(-steps / 300) + 0.01 * rng.standard_normal(3000), 0, 1)
    ranges = _view_changes_over_a_run(qtbot, monkeypatch, "accuracy_plot", (0.0, 1.0), accuracy)
    assert len(ranges) <= 10 and all(r["yRange"] == ranges[0]["yRange"] for r in ranges)  # the whole 0–1 scale


def _snapshots(session, n: int):
    from explorer.answers import ProbeSnapshot
    from explorer.engine_base import attention_entropy

    inspection = session.inspect("a b c", "a b c")
    entropy = {k: attention_entropy(getattr(inspection, k)) for k in ("encoder", "decoder_self", "cross")}
    return [
        ProbeSnapshot(1, 50 * (i + 1), "a b c", "a b c", dataclasses.replace(inspection, step=50 * (i + 1)), entropy)
        for i in range(n)
    ]


def test_probe_snapshots_arriving_fast_are_drawn_a_few_times_a_second(qtbot, copy_session_factory, monkeypatch):
    from explorer.panels.attention import AttentionPanel
    from explorer.panels.attention_parts import ABSORB_MS

    panel = AttentionPanel()
    qtbot.addWidget(panel)
    draws = []
    monkeypatch.setattr(panel, "refresh", lambda: draws.append(len(panel.over_training.snapshots)))
    snapshots = _snapshots(copy_session_factory(), 1_000)
    for s in snapshots[:300]:  # hundreds of steps a second, a probe every 50: many within one interval
        panel.on_probe(s)
    assert draws == [] and panel.over_training.snapshots == []  # nothing drawn per snapshot
    qtbot.wait(ABSORB_MS + 200)
    assert draws == [300]  # one redraw for all of them
    for s in snapshots[300:]:
        panel.on_probe(s)
    qtbot.wait(ABSORB_MS + 200)
    assert len(draws) == 2
    assert (
        len(panel.over_training.snapshots) <= panel.over_training.MAX_SNAPSHOTS
        and panel.over_training.snapshots[-1].step == snapshots[-1].step
    )
    steps = [s.step for s in panel.over_training.snapshots]
    assert steps == sorted(steps) and steps[0] == snapshots[0].step  # thinned evenly, first and last kept


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priority is Linux's")
def test_the_engine_thread_keeps_the_ordinary_priority_and_hands_the_gil_back_quickly(qtbot, monkeypatch):
    """A lowered priority let one busy program elsewhere starve training (and, holding the GIL while it waited
    for a core, the window too): the engine thread runs at the window's priority."""
    import explorer.worker as worker

    seen = {}
    favour = worker.favour_the_window

    def recording():
        favour()
        seen["engine"] = os.getpriority(os.PRIO_PROCESS, 0)  # on Linux: the calling thread's own nice
        seen["interval"] = sys.getswitchinterval()

    monkeypatch.setattr(worker, "favour_the_window", recording)
    before = sys.getswitchinterval()
    engine = worker.Engine("cpu", threads=1)
    engine.start()
    try:
        qtbot.waitUntil(lambda: "engine" in seen, timeout=20000)
    finally:
        engine.shutdown(None, timeout_ms=20000)
        sys.setswitchinterval(before)
    window = os.getpriority(os.PRIO_PROCESS, 0)
    assert seen["engine"] == window
    assert seen["interval"] == pytest.approx(0.001)
