"""The training panel (explorer/panels/training.py): after a new run the plots show the ticked runs only, the run
list is kept bounded with every ticked run, a rolled-back run is redrawn from its history, the settings column is as
wide as its form, and the view state that presenter mode and scenes set. Its pieces have their own files:
test_training_plots.py, test_training_runs.py, test_training_controls.py and test_settings_form.py."""

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from explorer.widgets.metric_plot import nice_ceiling  # noqa: E402
from tests.training_batches import steps_batch  # noqa: E402


@pytest.fixture
def panel(qtbot):
    from explorer.panels.training import TrainingPanel

    p = TrainingPanel()
    qtbot.addWidget(p)
    return p


def evaluations_batch(run_id: int, steps):
    from explorer.answers import Evaluation, MetricsBatch

    evals = tuple(Evaluation(s, "valid", 1.0, 0.5, 20.0) for s in steps)
    return MetricsBatch(run_id, steps_batch(run_id, 1, 0).steps, evals)


# -- the panel after a second run ----------------------------------------------------------------------------
def _legend(plot) -> list[str]:
    return [label.text for _, label in plot.legend.items]


def _check_plots(panel, visible: set[int]) -> dict[str, list[str]]:
    """Every plot lists each shown series once (no hidden one) and its step axis fits the shown runs."""
    legends = {}
    for name, plot in panel.plots.items():
        shown = [s for s in plot.series.values() if s.run_id in visible]
        texts = _legend(plot)
        assert len(texts) == len(set(texts)) == len(shown), (name, texts)
        assert all(sample.item.isVisible() for sample, _ in plot.legend.items), name  # no crossed-out icon
        assert {sample.item for sample, _ in plot.legend.items} == {s.curve for s in shown}, name
        (x0, x1), _ = plot.plot.getPlotItem().vb.viewRange()
        top = max((s.buffer.x.max() for s in shown if s.buffer.n), default=0.0)
        assert (x0, x1) == pytest.approx((0.0, nice_ceiling(max(10.0, 1.05 * top)) if top else 10.0)), name
        legends[name] = texts
    return legends


def test_after_a_new_run_the_plots_show_the_ticked_runs_only(qtbot, copy_session_factory, english):
    from explorer.panels.training import TrainingPanel
    from explorer.worker import Engine

    panel = TrainingPanel()
    qtbot.addWidget(panel)
    session, engine = copy_session_factory(), Engine("cpu")
    engine._run_id = 1
    panel.on_run(engine._run_info(session))
    for first in range(1, 3001, 250):  # a long first run, drawn as it goes
        panel.on_metrics(steps_batch(1, first, 250))
        panel.redraw()
    panel.on_metrics(evaluations_batch(1, [1000, 2000, 3000]))
    panel.redraw()
    loss_view = panel.plots["loss_plot"].plot.getPlotItem().vb
    loss_view.sigRangeChangedManually.emit([True, True])  # the person zoomed into run 1's loss
    engine._run_id = 2
    panel.on_run(engine._run_info(session))  # a new model: run 1 is unticked
    panel.on_metrics(steps_batch(2, 1, 40))
    panel.redraw()
    legends = _check_plots(panel, {2})
    assert legends["loss_plot"] == ["train"] and legends["lr_plot"] == ["schedule", "used"]
    assert legends["quality_plot"] == []  # run 2 has no evaluation yet: nothing listed, and not run 1's range
    assert loss_view.viewRange()[0] == pytest.approx([0, 50])
    panel.run_list.item(1).setCheckState(Qt.CheckState.Checked)  # compare with run 1 again
    panel.redraw()
    legends = _check_plots(panel, {1, 2})
    assert legends["loss_plot"] == ["train", "train (run 1)", "valid (run 1)"]
    assert legends["quality_plot"] == ["exact match % (run 1)", "BLEU (run 1)"]
    assert loss_view.viewRange()[0] == pytest.approx([0, 5000])
    panel.run_list.item(1).setCheckState(Qt.CheckState.Unchecked)
    panel.redraw()
    _check_plots(panel, {2})


# -- the run list and the curves it keeps ---------------------------------------------------------------------
def test_the_run_list_keeps_a_bounded_number_of_runs_and_every_ticked_one(qtbot, copy_session_factory):
    from PySide6.QtCore import Qt

    from explorer.panels.training import MAX_RUNS, TrainingPanel
    from explorer.worker import Engine

    panel = TrainingPanel()
    qtbot.addWidget(panel)
    session = copy_session_factory()
    engine = Engine("cpu")
    infos = []
    for run_id in range(1, 31):
        engine._run_id = run_id
        infos.append(engine._run_info(session))
    panel.on_run(infos[0])
    panel.run_list.item(0).setCheckState(Qt.Checked)
    for info in infos[1:]:
        panel.on_run(info)
    kept = {panel.run_list.item(i).data(Qt.UserRole) for i in range(panel.run_list.count())}
    assert len(kept) == MAX_RUNS and 30 in kept and set(panel.runs) == kept
    assert all(s.run_id in kept for p in panel.plots.values() for s in p.series.values())


def test_a_rolled_back_run_redraws_its_curves_from_the_kept_history(qtbot, copy_session_factory):
    from explorer.answers import MetricsBatch
    from explorer.panels.training import TrainingPanel
    from explorer.worker import Engine
    from model.io.snapshots import StepColumns

    panel = TrainingPanel()
    qtbot.addWidget(panel)
    session = copy_session_factory()
    engine = Engine("cpu")
    engine._run_id = 1
    session.train_steps(20)
    kept = engine._run_info(session)  # what the engine describes after going back to step 20
    panel.on_run(kept)
    later = [r.to_dict() for r in session.train_steps(10)]
    panel.on_metrics(MetricsBatch(1, StepColumns.of(later), ()))
    assert panel.plots["loss_plot"].data(1, "train")[0][-1] == 30
    panel.on_run(kept)
    x, y = panel.plots["loss_plot"].data(1, "train")
    assert list(x) == list(kept.history_steps.step) and x[-1] == 20
    assert list(y) == list(kept.history_steps.loss)
    assert panel.plots["lr_plot"].data(1, "schedule")[0].size  # the schedule drawn ahead stays


def test_a_followed_runs_newer_weights_keep_the_persons_edits_and_new_settings_fill_the_form(
    qtbot, copy_session_factory
):
    """A followed run's next checkpoint (the same run, newer weights, the same settings) leaves the settings form as
    the person has been editing it; a description with other settings fills the form with them."""
    from dataclasses import replace

    from explorer.panels.training import TrainingPanel
    from explorer.worker import Engine

    panel = TrainingPanel()
    qtbot.addWidget(panel)
    session = copy_session_factory()
    engine = Engine("cpu")
    engine._run_id = 1
    info = engine._run_info(session)
    panel.on_run(info)
    batch = panel.form.train_widgets["batch_size"]
    assert batch.value() == info.train_config.batch_size
    batch.setValue(info.train_config.batch_size + 7)  # the person's edit
    assert panel.form.edited
    panel.on_run(replace(info, weights_step=info.weights_step + 500))
    assert batch.value() == info.train_config.batch_size + 7 and panel.form.edited
    other = replace(info, train_config=replace(info.train_config, batch_size=info.train_config.batch_size + 1))
    panel.on_run(other)
    assert batch.value() == other.train_config.batch_size and not panel.form.edited


# -- the settings column -----------------------------------------------------------------------------------------
def test_the_settings_column_is_as_wide_as_its_form_needs(panel):
    area = panel.settings_area
    needed = panel.form.minimumSizeHint().width() + area.verticalScrollBar().sizeHint().width()
    assert area.sizeHint().width() >= needed and area.minimumSizeHint().width() >= needed
    assert area.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff


# -- the view state ----------------------------------------------------------------------------------------------
def test_the_view_state_sets_the_panel_and_follows_the_person(panel):
    from explorer.panels.training_state import TrainingViewState

    panel.show()
    panel.set_state(TrainingViewState(presenting=True, smoothing=0.25, log_scale=True))
    assert panel.smooth_slider.value() == 25 and panel.log_check.isChecked()
    assert panel.settings_area.isHidden() and panel.run_controls.isHidden()
    assert all(p.weight == 0.25 for p in panel.plots.values() if p.smoothable)
    assert panel.plots["loss_plot"].plot.getPlotItem().ctrl.logYCheck.isChecked()
    panel.smooth_slider.setValue(90)  # the person moves the slider
    panel.set_presenting(False)
    assert panel.state == TrainingViewState(presenting=False, smoothing=0.9, log_scale=True)
    with pytest.raises(ValueError):
        TrainingViewState(smoothing=1.0)
