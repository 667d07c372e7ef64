"""A followed run's own scalars in the training panel (explorer/panels/training_scalars.py): points sent in batches
drawn exactly (raw and smoothed), the tags chosen and unchosen (the list, the filter's Enter), what drops them (a
reset, another folder, another run followed, a new run once the window follows none) and what keeps them (stopping
following, the followed run's own checkpoint), hidden until a run logged some, 100,000 points a tag in O(n), the
export, the Chinese texts and presenter mode's type."""

import math

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from explorer.answers import FollowStatus, ScalarsLogged  # noqa: E402
from explorer.panels.training_scalars import (  # noqa: E402
    FIRST_CAPACITY,
    SCALARS_PLOT,
    TagPoints,
    default_tags,
    matching,
)
from tests.training_batches import steps_batch  # noqa: E402

FOLDER = "/runs/tb-run"


def scalars(points: dict[str, tuple], folder: str = FOLDER, reset: bool = False) -> ScalarsLogged:
    """A batch as the engine sends it: per tag its steps (int64) and values (float64)."""
    tags = tuple(points)
    steps = tuple(np.asarray(points[t][0], dtype=np.int64) for t in tags)
    values = tuple(np.asarray(points[t][1], dtype=np.float64) for t in tags)
    return ScalarsLogged(folder, reset, tags, steps, values)


def loss_points(first: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(first, first + n)
    return x, 4.0 * np.exp(-x / 200.0) + 0.3 + 0.05 * np.sin(x)


@pytest.fixture
def panel(qtbot, english):
    from explorer.panels.training import TrainingPanel

    p = TrainingPanel()
    qtbot.addWidget(p)
    p.resize(1000, 700)
    p.show()
    return p


def reference_ema(y: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's debiased moving average, written out."""
    out, last = [], 0.0
    for i, v in enumerate(y, 1):
        last = weight * last + (1 - weight) * v
        out.append(last / (1 - weight**i))
    return np.array(out)


def legend(plot) -> list[str]:
    return [label.text for _, label in plot.legend.items]


def ticked(plot) -> list[str]:
    items = [plot.chooser.list.item(i) for i in range(plot.chooser.list.count())]
    return [item.text() for item in items if item.checkState() == Qt.CheckState.Checked]


def tick(plot, tag: str, on: bool) -> None:
    items = plot.chooser.list.findItems(tag, Qt.MatchFlag.MatchExactly)
    items[0].setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)


# -- what is drawn ---------------------------------------------------------------------------------------------------
def test_points_sent_in_batches_are_drawn_exactly(panel):
    plot = panel.scalars_plot
    panel.smooth_slider.setValue(0)  # no smoothing: the curve is the points
    parts = [loss_points(1, 40), loss_points(41, 7), loss_points(48, 300)]
    for x, y in parts:
        panel.on_scalars(scalars({"train/loss": (x, y), "eval/bleu": (x[-1:], [float(x[-1]) / 10])}))
        panel.redraw()
    x_all, y_all = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    shown_x, shown_y = plot.shown("train/loss")
    assert np.array_equal(shown_x, x_all) and np.array_equal(shown_y, y_all)
    assert len(plot.shown_raw("train/loss")[0]) == 0  # no faint raw curve without smoothing
    tick(plot, "eval/bleu", True)
    panel.redraw()
    assert np.array_equal(plot.shown("eval/bleu")[1], [4.0, 4.7, 34.7])


def test_smoothed_the_curve_is_the_moving_average_over_the_raw_points(panel):
    plot = panel.scalars_plot
    panel.smooth_slider.setValue(80)
    x1, y1 = loss_points(1, 60)
    x2, y2 = loss_points(61, 30)
    panel.on_scalars(scalars({"loss": (x1, y1)}))
    panel.redraw()  # smoothed in two parts: the second continues the first
    panel.on_scalars(scalars({"loss": (x2, y2)}))
    panel.redraw()
    y = np.concatenate([y1, y2])
    assert np.array_equal(plot.shown_raw("loss")[1], y)
    assert np.allclose(plot.shown("loss")[1], reference_ema(y, 0.8))
    panel.on_scalars(scalars({"loss": (np.arange(55, 65), np.ones(10))}))  # resumed at step 55: smoothed anew
    panel.redraw()
    assert np.array_equal(plot.shown_raw("loss")[0], np.arange(1, 65))
    assert np.allclose(plot.shown("loss")[1], reference_ema(np.concatenate([y1[:54], np.ones(10)]), 0.8))


def test_a_sparse_tag_is_drawn_point_by_point_and_never_smoothed(panel):
    plot = panel.scalars_plot  # (smoothing at the panel's 0.6)
    x, y = np.arange(25, 25 * 12, 25), np.linspace(5.0, 80.0, 11)
    panel.on_scalars(scalars({"eval/chrF": (x, y)}))
    panel.redraw()
    assert np.array_equal(plot.shown("eval/chrF")[1], y) and len(plot.shown_raw("eval/chrF")[0]) == 0
    assert plot.curves["eval/chrF"].curve.opts["symbol"] == "o"
    more = np.arange(300, 300 + 5 * 40, 5)  # 51 points: a line, smoothed
    panel.on_scalars(scalars({"eval/chrF": (more, np.full(40, 80.0))}))
    panel.redraw()
    assert plot.curves["eval/chrF"].curve.opts["symbol"] is None
    assert np.allclose(plot.shown("eval/chrF")[1], reference_ema(np.concatenate([y, np.full(40, 80.0)]), 0.6))


def test_a_batch_from_an_earlier_step_replaces_the_points_from_there():
    points = TagPoints(4)
    points.extend(np.arange(1, 11), np.arange(1.0, 11.0))
    points.extend(np.array([6, 7]), np.array([60.0, 70.0]))  # resumed from step 5's checkpoint
    assert list(points.steps) == [1, 2, 3, 4, 5, 6, 7]
    assert list(points.values) == [1, 2, 3, 4, 5, 60, 70]
    assert (points.lo, points.hi) == (1.0, 70.0)
    points.extend(np.array([7, 8]), np.array([-2.0, math.nan]))  # the same step again: replaced
    assert list(points.steps) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert (points.lo, points.hi, points.lo_positive) == (-2.0, 60.0, 1.0)


def test_a_hundred_thousand_points_a_tag_go_in_with_the_arrays_doubling():
    one = TagPoints()
    x, y = np.arange(100_000), np.linspace(5.0, 1.0, 100_000)
    one.extend(x, y)  # one batch: one allocation of its size
    assert (one.grown, one.n) == (1, 100_000)
    many = TagPoints()
    for start in range(0, 100_000, 100):  # a thousand batches of a hundred
        many.extend(x[start : start + 100], y[start : start + 100])
    assert many.grown == math.ceil(math.log2(100_000 / FIRST_CAPACITY))  # doubling: 9, not 1000
    assert many.capacity == FIRST_CAPACITY * 2**many.grown
    assert np.array_equal(many.steps, x) and np.array_equal(many.values, y)
    assert (many.lo, many.hi) == (1.0, 5.0)


def test_a_big_batch_is_drawn_whole_and_pyqtgraph_draws_the_part_in_view(panel):
    plot = panel.scalars_plot
    panel.smooth_slider.setValue(0)
    x, y = np.arange(1, 100_001), 2.0 + np.cos(np.arange(100_000) / 5000)
    for start in range(0, 100_000, 25_000):
        panel.on_scalars(scalars({"train/loss": (x[start : start + 25_000], y[start : start + 25_000])}))
    panel.redraw()
    shown_x, shown_y = plot.shown("train/loss")
    assert np.array_equal(shown_x, x) and np.array_equal(shown_y, y)
    item = plot.plot.getPlotItem()
    assert item.ctrl.downsampleCheck.isChecked() and item.ctrl.clipToViewCheck.isChecked()
    drawn_x, _ = plot.curves["train/loss"].curve.getData()
    assert len(drawn_x) < 20_000  # the pixels' worth, not 100,000
    (x0, x1), (y0, y1) = item.vb.viewRange()
    assert (x0, x1) == pytest.approx((0, 200_000)) and y0 == 0 and y1 >= 3.0


# -- choosing tags ---------------------------------------------------------------------------------------------------
def test_the_losses_are_drawn_first_and_the_person_chooses_the_rest(panel, qtbot):
    plot = panel.scalars_plot
    steps = np.arange(0, 50, 10)
    tags = ["epoch", "train/loss", "train/learning_rate", "eval/loss", "eval/bleu", "eval_runtime"]
    panel.on_scalars(scalars({t: (steps, np.arange(5.0) + i) for i, t in enumerate(tags)}))
    panel.redraw()
    assert [plot.chooser.list.item(i).text() for i in range(plot.chooser.list.count())] == tags
    assert ticked(plot) == ["train/loss", "eval/loss"]
    assert legend(plot) == ["train/loss", "eval/loss"]
    tick(plot, "eval/bleu", True)
    tick(plot, "train/loss", False)
    panel.redraw()
    assert legend(plot) == ["eval/loss", "eval/bleu"]
    qtbot.wait(50)  # laid out: the legend above the curves, never over them
    above, data = plot.legend.sceneBoundingRect(), plot.plot.getViewBox().sceneBoundingRect()
    assert not above.intersects(data) and plot.plot.getPlotItem().sceneBoundingRect().contains(above)
    assert not plot.curves["train/loss"].curve.isVisible() and plot.curves["eval/bleu"].curve.isVisible()
    panel.on_scalars(scalars({"test/loss": (steps, np.ones(5))}))  # chosen by the person: new tags wait
    panel.redraw()
    assert legend(plot) == ["eval/loss", "eval/bleu"]
    plot.chooser.filter.setText("LOSS")
    hidden = [plot.chooser.list.item(i).isHidden() for i in range(plot.chooser.list.count())]
    assert hidden == [True, False, True, False, True, True, False]
    plot.chooser.filter.returnPressed.emit()  # Enter: exactly the tags found
    panel.redraw()
    assert legend(plot) == ["train/loss", "eval/loss", "test/loss"]
    plot.chooser.filter.setText("rate | bleu")
    plot.chooser.filter.returnPressed.emit()
    panel.redraw()
    assert legend(plot) == ["train/learning_rate", "eval/bleu"]
    plot.chooser.filter.clear()
    plot.chooser.filter.returnPressed.emit()  # Enter in an empty filter: not every tag at once
    panel.redraw()
    assert legend(plot) == ["train/learning_rate", "eval/bleu"]
    assert not any(plot.chooser.list.item(i).isHidden() for i in range(plot.chooser.list.count()))


def test_without_a_loss_the_first_tag_that_is_not_bookkeeping_is_drawn():
    assert default_tags(["epoch", "eval_runtime", "eval_samples_per_second", "eval_bleu", "eval_chrf"]) == ["eval_bleu"]
    assert default_tags(["charts/SPS", "charts/episodic_return"]) == ["charts/SPS"]
    assert default_tags(["epoch", "train/global_step"]) == ["epoch"]
    assert default_tags(["Loss/train", "Loss/valid", "acc"]) == ["Loss/train", "Loss/valid"]
    assert matching(["a/loss", "b/acc", "lr"], " ACC | lr ") == ["b/acc", "lr"]


# -- what drops them and what keeps them -----------------------------------------------------------------------------
def test_a_reset_and_another_folder_drop_what_was_drawn(panel):
    plot = panel.scalars_plot
    panel.smooth_slider.setValue(0)
    panel.on_scalars(scalars({"train/loss": loss_points(1, 100), "eval/loss": loss_points(10, 5)}))
    tick(plot, "eval/loss", False)
    panel.on_scalars(scalars({"train/loss": ([1, 2], [9.0, 8.0])}, reset=True))  # the log rewritten
    panel.redraw()
    assert plot.state.tags == ["train/loss"]
    assert list(plot.shown("train/loss")[1]) == [9.0, 8.0]
    panel.on_scalars(scalars({"eval/loss": ([3], [7.0])}))
    panel.redraw()
    assert legend(plot) == ["train/loss"]  # the person's choice outlived the reset
    assert plot.title.text() == "Scalars logged by tb-run"
    panel.on_scalars(scalars({"charts/reward": ([5, 6], [-1.0, 2.0])}, folder="/runs/other"))
    panel.redraw()
    assert plot.state.tags == ["charts/reward"] and list(plot.curves) == ["charts/reward"]
    assert legend(plot) == ["charts/reward"]
    assert list(plot.shown("charts/reward")[1]) == [-1.0, 2.0]
    assert plot.title.text() == "Scalars logged by other"
    assert plot.chooser.list.count() == 1


def test_a_log_read_anew_keeps_its_curves_and_smooths_them_from_its_first_point(panel):
    """A followed Trainer run's first checkpoint sends the whole log again (reset): the curves are not taken out
    and put back (30–80 ms of the window's time), yet they show only the log as read anew, smoothed from its start."""
    plot = panel.scalars_plot
    panel.smooth_slider.setValue(80)
    panel.on_scalars(scalars({"train/loss": loss_points(1, 100), "eval/bleu": loss_points(1, 100)}))
    tick(plot, "eval/bleu", True)
    panel.redraw()
    kept, gone = plot.curves["train/loss"].curve, plot.curves["eval/bleu"].curve
    x, y = loss_points(1, 70)
    panel.on_scalars(scalars({"train/loss": (x, 2 * y)}, reset=True))  # read anew: eval/bleu is not in it
    panel.redraw()
    assert plot.curves["train/loss"].curve is kept and "eval/bleu" not in plot.curves
    assert gone not in plot.plot.getPlotItem().listDataItems() and legend(plot) == ["train/loss"]
    assert np.array_equal(plot.shown_raw("train/loss")[1], 2 * y)
    assert np.allclose(plot.shown("train/loss")[1], reference_ema(2 * y, 0.8))


def test_hidden_until_a_followed_run_logs_scalars(panel, qtbot):
    plot = panel.scalars_plot
    grid = panel.live_plots.grid
    panel.on_metrics(steps_batch(1, 1, 20))
    panel.redraw()
    assert not plot.isVisible() and grid.indexOf(plot) == -1  # a run trained in the window: as before
    panel.on_scalars(scalars({"train/loss": loss_points(1, 10)}))
    assert plot.isVisible()
    row, _, _, span = grid.getItemPosition(grid.indexOf(plot))
    assert (row, span) == (1, 2)  # a whole row under the loss and accuracy
    panel.on_scalars(scalars({}, reset=True))
    assert not plot.isVisible()


def test_stopping_following_keeps_them_until_another_run_replaces_them(panel, qtbot, copy_session_factory):
    from explorer.worker import Engine

    plot = panel.scalars_plot
    session, engine = copy_session_factory(), Engine("cpu")
    engine._run_id = 1
    followed = engine._run_info(session)
    panel.on_scalars(scalars({"train/loss": loss_points(1, 10)}))  # before its checkpoint was read
    panel.on_run(followed)  # its checkpoint: a new run, still followed
    panel.on_follow(FollowStatus(FOLDER, 10))
    assert plot.isVisible()
    panel.on_follow(FollowStatus(""))  # the window stops following
    panel.on_run(followed)  # the same run again: kept
    assert plot.isVisible() and plot.state.tags == ["train/loss"]
    engine._run_id = 2
    panel.on_run(engine._run_info(session))  # another model: gone, as the earlier run's curves are unticked
    assert not plot.isVisible() and plot.state.tags == []
    panel.on_scalars(scalars({"train/loss": loss_points(1, 10)}))
    panel.on_follow(FollowStatus("/runs/another-run"))  # another run followed: gone at once
    assert not plot.isVisible()


def test_the_training_panel_listens_to_the_engines_scalars_and_follow_signals(panel):
    from explorer.engine_client import EngineClient
    from explorer.worker import Engine

    engine = Engine("cpu")
    panel.attach(EngineClient(engine), lambda then, question, always: then())
    engine.scalars_logged.emit(scalars({"eval_bleu": ([100, 200], [3.0, 11.5])}))
    engine.follow_changed.emit(FollowStatus("/runs/another-run"))
    assert panel.scalars_plot.state.tags == []


# -- what it exports and says -----------------------------------------------------------------------------------------
def test_the_export_writes_the_chosen_tags_points(panel, tmp_path):
    plot = panel.scalars_plot
    panel.on_scalars(scalars({"train/loss": ([1, 2], [0.5, 0.25]), "lr": ([1, 2], [1e-3, 2e-3])}))
    panel.redraw()
    plot.export(tmp_path / "s.csv")
    assert (tmp_path / "s.csv").read_text().splitlines() == ["tag,step,value", "train/loss,1,0.5", "train/loss,2,0.25"]
    plot.export(tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 1000
    with pytest.raises(ValueError):
        plot.export(tmp_path / "s.txt")


def test_every_text_has_chinese(qtbot, monkeypatch):
    """Each string the plot passes through tr() — its title with the folder, axes, the filter and its help — has a
    Chinese entry; the tags are the run's own words and stay as they are."""
    import re

    import explorer.i18n as i18n
    from explorer.panels.training import TrainingPanel

    asked: set[str] = set()

    class Recording(dict):
        def get(self, key, default=None):
            asked.add(key)
            return super().get(key, default)

    monkeypatch.setattr(i18n, "ZH", Recording(i18n.ZH))
    monkeypatch.setattr(i18n.language, "code", "zh")
    panel = TrainingPanel()
    qtbot.addWidget(panel)
    plot = panel.scalars_plot
    plot.retranslate()  # (no folder yet: the plain title)
    panel.on_scalars(scalars({"train/loss": loss_points(1, 10), "eval_bleu": ([5], [2.0])}))
    panel.redraw()
    panel.retranslate()
    english = sorted(s for s in asked - set(i18n.ZH) if re.search(r"[A-Za-z]{2,}", s))
    assert english == []
    assert {"Logged scalars", "Scalars logged by {name}", "Filter tags"} <= asked
    assert plot.title.text() == "tb-run 记录的标量"
    assert legend(plot) == ["train/loss"]


def test_presenter_mode_makes_every_text_of_the_plot_large(panel, qtbot):
    from PySide6.QtWidgets import QApplication, QLabel, QLineEdit, QListWidget

    from explorer.appearance import PRESENTER_SCALE, set_presenter_font
    from tests.scenarios.test_presenter_screens import graphics_texts

    plot = panel.scalars_plot
    panel.on_scalars(scalars({"train/loss": loss_points(1, 50), "eval/loss": loss_points(5, 5), "epoch": ([1], [0])}))
    panel.redraw()
    base = QApplication.font()
    width = plot.chooser.width()
    try:
        set_presenter_font(panel, True, base)
        panel.set_presenting(True)
        qtbot.wait(50)
        body = base.pointSizeF() * PRESENTER_SCALE
        texts = list(graphics_texts(plot.plot))
        assert {what for what, _ in texts} >= {"ticks of left axis", "ticks of bottom axis", "text 'train/loss'"}
        widgets = [plot.title, plot.chooser.filter, plot.chooser.list]
        assert {type(w) for w in widgets} == {QLabel, QLineEdit, QListWidget}
        texts += [(w.objectName() or type(w).__name__, w.font().pointSizeF()) for w in widgets]
        texts += [(item.text(), item.font().pointSizeF()) for item in map(plot.chooser.list.item, range(3))]
        small = [(what, pt) for what, pt in texts if pt < body - 0.05]
        assert not small, (body, small)
        assert plot.chooser.width() > width  # a wider column for the larger type
    finally:
        set_presenter_font(panel, False, base)
    assert plot.chooser.width() == width


def test_it_is_one_of_the_optional_plots_named_as_the_panel_knows_it(panel):
    assert SCALARS_PLOT in panel.OPTIONAL_PLOTS
    assert panel.scalars_plot.objectName() == SCALARS_PLOT


def test_the_plots_timer_makes_the_chosen_tags_curves_one_at_a_time(panel):
    """A run that logs many tags at once gets its curves one per tick of the plots' timer (each curve with its raw
    curve and legend entry took 2–3 ms): the plot stays stale until every chosen tag is drawn, with its points."""
    plot = panel.scalars_plot
    panel.smooth_slider.setValue(0)
    steps = np.arange(0, 50, 10)
    tags = ["train/loss", "eval/loss", "eval/bleu"]
    panel.on_scalars(scalars({t: (steps, np.arange(5.0) + i) for i, t in enumerate(tags)}))
    tick(plot, "eval/bleu", True)
    made = []
    while plot.stale:
        plot.redraw(gradually=True)
        made.append(sorted(plot.curves))
    assert made == [["train/loss"], ["eval/loss", "train/loss"], ["eval/bleu", "eval/loss", "train/loss"]]
    assert legend(plot) == tags
    for i, t in enumerate(tags):
        assert np.array_equal(plot.shown(t)[1], np.arange(5.0) + i)
