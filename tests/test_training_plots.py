"""The training panel's live plots (explorer/panels/training_plots.py): one plot redrawn per tick and none behind
another tab, the plots arranged by family (the experts' load a row of its own), the evaluations' scores as the family
has them, each expert's share of the tokens, the step and probe markers, and when a run was rolled back."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.answers import Evaluation  # noqa: E402
from explorer.panels.training_plots import EXPERT_COLOURS, TrainingPlots, expert_colour  # noqa: E402
from model.core.config import ModelConfig  # noqa: E402
from model.families.registry import MOE  # noqa: E402
from model.training.config import TrainConfig  # noqa: E402
from tests.training_batches import steps_batch  # noqa: E402


@pytest.fixture
def panel(qtbot):
    from explorer.panels.training import TrainingPanel

    p = TrainingPanel()
    qtbot.addWidget(p)
    return p


@pytest.fixture
def plots(qtbot):
    from PySide6.QtWidgets import QWidget

    host = QWidget()
    qtbot.addWidget(host)
    return TrainingPlots(host)


# -- redrawing -----------------------------------------------------------------------------------------------------
def test_each_tick_redraws_one_plot_with_new_data_in_turn_and_none_behind_another_tab(panel, monkeypatch):
    plots = panel.live_plots
    plots.add_steps(1, steps_batch(1, 1, 50).steps)
    plots.redraw()  # the run's curves made (a new run's come one per tick, see test_metric_plot)
    plots.add_steps(1, steps_batch(1, 51, 50).steps)
    redrawn: list[str] = []
    for name, plot in plots.plots.items():
        original = plot.redraw
        monkeypatch.setattr(
            plot, "redraw", lambda name=name, original=original, **kw: (redrawn.append(name), original(**kw))
        )
    changed = [name for name, plot in plots.plots.items() if plot.stale]
    assert set(changed) == {"loss_plot", "accuracy_plot", "lr_plot", "grad_plot", "speed_plot"}
    plots.set_step(50, training=True)  # training: the step marker waits for the learning-rate plot's redraw
    assert panel.step_marker.value() != 50
    for ticks in range(1, len(changed) + 1):
        plots._tick()
        assert len(redrawn) == ticks  # never two plots in one tick
        if redrawn[-1] == "lr_plot":
            assert panel.step_marker.value() == 50
    assert redrawn == changed  # in the plots' order, each once
    plots._tick()
    assert len(redrawn) == len(changed)  # nothing new: nothing redrawn
    plots.add_steps(1, steps_batch(1, 51, 5).steps)
    panel.set_on_screen(False)
    plots._tick()
    assert len(redrawn) == len(changed)  # behind another tab: the data wait
    assert all(plots.plots[name].stale for name in changed)


# -- arranged by family --------------------------------------------------------------------------------------------
def test_the_experts_load_takes_a_row_of_its_own_under_the_first():
    from explorer.panels.training_plots import columns_for, plot_rows

    names = ("loss_plot", "accuracy_plot", "quality_plot", "lr_plot", "grad_plot", "speed_plot")
    assert plot_rows(names, 3) == [list(names[:3]), list(names[3:])]
    assert plot_rows((*names, "expert_load_plot"), 2) == [
        ["loss_plot", "accuracy_plot"],
        ["expert_load_plot"],
        ["quality_plot", "lr_plot"],
        ["grad_plot", "speed_plot"],
    ]
    assert (columns_for(1149), columns_for(1150)) == (2, 3)


# -- what the plots show -----------------------------------------------------------------------------------------
def test_the_evaluations_draw_the_valid_loss_and_the_scores_the_family_has(plots):
    plots.add_evals(1, (Evaluation(100, "test", 9.0, exact_match=1.0),))  # no valid evaluation: nothing
    assert not any(p.series for p in plots.plots.values())
    evals = (
        Evaluation(100, "valid", 2.0, exact_match=0.25, bleu=12.0),
        Evaluation(200, "valid", 1.5, exact_match=0.5, bleu=30.0),
        Evaluation(200, "test", 9.0, exact_match=1.0, bleu=99.0),  # the test split is not drawn
    )
    plots.add_evals(1, evals)
    quality = plots.plots["quality_plot"]
    assert [a.tolist() for a in plots.plots["loss_plot"].data(1, "valid")] == [[100, 200], [2.0, 1.5]]
    assert [a.tolist() for a in quality.data(1, "exact_match")] == [[100, 200], [25.0, 50.0]]  # a share, in %
    assert [a.tolist() for a in quality.data(1, "bleu")] == [[100, 200], [12.0, 30.0]]
    assert {name for run, name in quality.series} == {"exact_match", "bleu"}  # no perplexity: all NaN
    plots.add_evals(2, (Evaluation(300, "valid", 1.0, perplexity=4.0), Evaluation(400, "valid", 0.9)))
    assert [a.tolist() for a in quality.data(2, "perplexity")] == [[300], [4.0]]  # the NaN point left out


def test_a_mixture_of_experts_run_draws_each_experts_share_and_the_balance(plots):
    dense = steps_batch(1, 1, 4).steps
    plots.add_steps(1, dense)
    assert not plots.expert_load_plot.series and (1, "aux") not in plots.plots["loss_plot"].series
    load = np.array([[0.5, 0.25, 0.25], [0.4, 0.4, 0.2], [0.6, 0.2, 0.2], [0.2, 0.2, 0.6]])
    moe = dataclasses.replace(steps_batch(2, 1, 4).steps, expert_load=load, aux_loss=np.full(4, 1.25))
    plots.add_steps(2, moe)
    experts = plots.expert_load_plot
    for i in range(3):
        x, y = experts.data(2, f"expert_{i + 1}")
        assert x.tolist() == [1, 2, 3, 4] and y.tolist() == load[:, i].tolist()
        assert experts.styles[f"expert_{i + 1}"]["colour"] == EXPERT_COLOURS[i]
    assert experts.data(2, "balanced")[1] == pytest.approx([1 / 3] * 4)
    assert plots.plots["loss_plot"].data(2, "aux")[1].tolist() == [1.25] * 4


def test_experts_beyond_the_tenth_get_colours_of_their_own():
    assert [expert_colour(i) for i in range(len(EXPERT_COLOURS))] == EXPERT_COLOURS
    assert len({expert_colour(i) for i in range(24)}) == 24


def _run(**model):
    cfg = ModelConfig.preset("tiny", src_vocab_size=30, tgt_vocab_size=30, **model)
    return SimpleNamespace(model_config=cfg, train_config=TrainConfig())


def _place(plots, name):
    return plots.grid.getItemPosition(plots.grid.indexOf(plots.plots[name]))


def test_each_family_gets_its_plots_and_a_moe_model_its_experts_row(plots, english):
    plots.show_family(_run(), columns=3)
    assert plots.expert_load_plot.isHidden()
    assert _place(plots, "quality_plot") == (0, 2, 1, 1) and _place(plots, "speed_plot") == (1, 2, 1, 1)
    assert plots.plots["speed_plot"].styles["train"]["label"] == "target tokens/s"
    plots.show_family(_run(n_experts=4), columns=3)
    assert not plots.expert_load_plot.isHidden()
    assert _place(plots, "expert_load_plot") == (1, 0, 1, 3)  # the whole second row
    assert _place(plots, "lr_plot") == (2, 0, 1, 1)
    assert plots.plots["loss_plot"].title.text() == MOE.labels["loss_plot"]
    plots.show_family(_run(arch="decoder_only"), columns=2)
    assert plots.expert_load_plot.isHidden() and _place(plots, "accuracy_plot") == (0, 1, 1, 1)
    assert plots.plots["speed_plot"].styles["train"]["label"] == "tokens/s"  # one stream: every token counts


def test_a_run_was_rolled_back_when_its_history_ends_before_its_curves(plots):
    plots.add_steps(1, steps_batch(1, 1, 30).steps)
    assert plots.rolled_back(SimpleNamespace(run_id=1, history_steps=steps_batch(1, 1, 20).steps))
    assert plots.rolled_back(SimpleNamespace(run_id=1, history_steps=steps_batch(1, 1, 0).steps))
    assert not plots.rolled_back(SimpleNamespace(run_id=1, history_steps=steps_batch(1, 1, 30).steps))
    assert not plots.rolled_back(SimpleNamespace(run_id=2, history_steps=steps_batch(2, 1, 0).steps))  # none shown


# -- how they show it ----------------------------------------------------------------------------------------------
def test_the_log_scale_is_for_the_loss_the_rate_and_the_gradient(plots):
    plots.set_log(True)
    logged = {name for name, p in plots.plots.items() if p.plot.getPlotItem().ctrl.logYCheck.isChecked()}
    assert logged == {"loss_plot", "lr_plot", "grad_plot"}


def test_the_markers_show_the_step_and_the_probe_snapshot(plots):
    plots.set_step(40, training=False)  # paused: the marker moves at once
    assert plots.step_marker.value() == 40 and plots.step == 40
    plots.set_on_screen(False)  # behind another tab the probe marker is placed at once
    plots.set_probe_marker(15)
    assert plots.probe_marker.isVisible() and plots.probe_marker.value() == 15
    plots.set_probe_marker(-1)
    assert not plots.probe_marker.isVisible()


def test_on_screen_the_probe_marker_moves_at_the_next_tick_alone_and_hides_at_once(panel):
    """A new probe snapshot redraws the Attention panel's heatmap; the loss plot's marker moves a tick later, in a
    repaint of its own, and the window counts it as drawing still to do until then."""
    plots = panel.live_plots
    plots.add_steps(1, steps_batch(1, 1, 50).steps)
    plots.set_probe_marker(30)
    assert not plots.probe_marker.isVisible() and plots.drawing()
    plots._tick()
    assert plots.probe_marker.isVisible() and plots.probe_marker.value() == 30
    assert all(p.stale for p in plots.plots.values() if p.series)  # that tick was the marker's alone
    plots.set_probe_marker(40)
    plots.set_probe_marker(-1)  # a snapshot of no run: hidden now, the move dropped
    assert not plots.probe_marker.isVisible()
    plots._tick()
    assert not plots.probe_marker.isVisible()
    plots.set_probe_marker(45)
    plots.redraw()  # an export: everything placed now
    assert plots.probe_marker.value() == 45 and not plots.drawing()


def test_the_plots_redraw_nothing_while_held(panel):
    plots = panel.live_plots
    plots.add_steps(1, steps_batch(1, 1, 50).steps)
    plots.set_probe_marker(30)
    held = [True]
    plots.held = lambda: held[0]
    plots._tick()
    assert plots.plots["loss_plot"].stale and not plots.probe_marker.isVisible()
    held[0] = False
    plots._tick()
    assert plots.probe_marker.isVisible()
