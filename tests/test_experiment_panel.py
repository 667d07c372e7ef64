"""An experiment run from the window (explorer/panels/experiment.py): one click in the Experiments menu trains the
variant beside its baseline; the Training panel draws both runs' curves, each equal to its run's own history; the
Experiment panel shows, at the step where training paused, each run's figure, the probe sentence's attention in each
(equal to what each model gives for it) and the same held-out sentences' outputs; "Look inside" shows the baseline
in every other panel while both curves stay; the prediction reads in Chinese too. On values made by hand: the rows'
entropy, a map of one head or the heads averaged, whether the prediction held, and the outputs equal to the reference
marked."""

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer import commands as cmd  # noqa: E402
from explorer.i18n import language  # noqa: E402


@pytest.fixture
def window(make_window):
    w = make_window()
    w.show()
    yield w
    language.set("en")


def run_and_pause(qtbot, window, name: str, steps: int):
    window.menus.actions[f"experiment_{name}"].trigger()  # one click
    qtbot.waitUntil(lambda: window.experiment.experiment is not None, timeout=60000)
    window.client.send(cmd.PauseAt(step=steps))
    qtbot.waitUntil(lambda: window.window_status.status.state == "paused", timeout=120000)
    step = window.window_status.status.step
    qtbot.waitUntil(lambda: window.experiment.compared is not None and window.experiment.compared.step == step)
    return window.engine._pair, step  # the engine is paused: its sessions are not touched now


def test_one_click_trains_both_runs_and_shows_them_side_by_side(qtbot, window):
    pair, step = run_and_pause(qtbot, window, "no_scaling", 8)
    panel, e = window.experiment, window.experiment.experiment
    baseline_id, variant_id = e.run_ids
    # the curves: two runs, both ticked, each its own history
    training = window.training
    assert {baseline_id, variant_id} <= training.run_list.ticked()
    loss = training.live_plots.plots["loss_plot"]
    for run_id, session in ((baseline_id, pair.baseline), (variant_id, pair.changed)):
        x, y = loss.data(run_id, "train")
        np.testing.assert_allclose(y, session.history.train["loss"], rtol=1e-6)
        assert x[-1] == step == session.step
    window.docks["training"].raise_()  # (plots redraw while on screen)
    qtbot.waitUntil(lambda: any(t == "train (baseline)" for _, _, t in loss._legend_entries), timeout=5000)
    labels = [training.run_list.item(i).text() for i in range(training.run_list.count())]
    assert any("baseline ·" in t for t in labels) and any("variant: No √d_k scaling" in t for t in labels)
    # side by side at the same step: the probe's attention in each model, the same layer and head
    probe = window.engine._probe
    panel.kind.setCurrentIndex(panel.kind.findData("encoder"))
    panel.layer.setValue(1)
    panel.head.setValue(1)
    for heatmap, session in zip(panel.maps, (pair.baseline, pair.changed)):
        want = session.inspect(probe["source"], probe["target"]).encoder[0, 0]
        np.testing.assert_allclose(heatmap.values, want, rtol=1e-5, atol=1e-6)
        assert f"step {step}" in heatmap.title.text()
    assert not np.allclose(panel.maps[0].values, panel.maps[1].values)
    # the figure of each, and the same sentences' outputs
    assert f"{pair.measure('baseline'):.3g}" in panel.figures.text()
    assert f"{pair.measure('variant'):.3g}" in panel.figures.text()
    shown = [[panel.outputs.item(r, c).text().removesuffix(" ✓") for c in range(4)] for r in range(4)]
    assert shown == [[o.source, o.reference, o.baseline or "—", o.variant or "—"] for o in pair.outputs(4)]


def test_looking_inside_the_baseline_keeps_both_curves(qtbot, window):
    pair, _ = run_and_pause(qtbot, window, "one_head", 4)
    baseline_id, variant_id = window.experiment.experiment.run_ids
    window.experiment.look.setCurrentIndex(window.experiment.look.findData("baseline"))
    window.experiment.look.activated.emit(1)
    qtbot.waitUntil(lambda: window.decoding.info is not None and window.decoding.info.run_id == baseline_id)
    assert window.training.current.run_id == baseline_id
    assert window.attention.info.model_config.n_heads == pair.baseline.model_cfg.n_heads != 1
    assert {baseline_id, variant_id} <= window.training.run_list.ticked()
    assert window.experiment.experiment.run == "baseline" and window.experiment.compared is not None


def test_the_prediction_reads_in_chinese(qtbot, window):
    window.experiment.choice.setCurrentIndex(window.experiment.choice.findData("no_positional"))
    language.set("zh")
    assert "预期结果及原因" in window.experiment.expect.text() and "位置信息" in window.experiment.expect.text()
    assert window.menus.actions["experiment_no_positional"].text() == "没有位置编码"
    assert "没有正在运行的实验" in window.experiment.figures.text()


def test_an_experiment_in_presenter_mode_is_large_and_fits_the_screen(make_window, qtbot, monkeypatch):
    from PySide6.QtWidgets import QApplication

    from explorer.appearance import PRESENTER_SCALE
    from tests.scenarios.test_presenter_screens import presenting, shown, texts_on_screen, view

    body = QApplication.font().pointSizeF() * PRESENTER_SCALE
    window = presenting(make_window, qtbot, monkeypatch)
    window.files.run_experiment("no_scaling")
    qtbot.waitUntil(lambda: window.experiment.experiment is not None, timeout=60000)
    window.client.send(cmd.PauseAt(step=4))
    qtbot.waitUntil(lambda: window.window_status.status.state == "paused", timeout=60000)
    view(window, qtbot, 9)
    panel = window.experiment
    qtbot.waitUntil(lambda: panel.compared is not None and panel.compared.step == window.window_status.status.step)
    assert window.presenter.view == "experiment" and not panel.controls.isVisible()
    small = [(what, round(pt, 1)) for what, pt in texts_on_screen(window, "experiment") if pt < body - 0.05]
    assert not small, (body, small)
    assert window.frameGeometry().width() <= 1366 and all(shown(m) for m in panel.maps) and shown(panel.outputs)
    assert "No √d_k scaling" in panel.look.currentText() and "step" in panel.maps[1].title.text()


# -- the panel's parts, on values made by hand ---------------------------------------------------------------------
def test_the_row_entropy_is_the_mean_entropy_in_bits_of_the_rows():
    from explorer.panels.experiment import row_entropy

    uniform = np.full((1, 2, 4), 0.25)  # every row spread over 4 positions: 2 bits
    one_hot = np.eye(4)[None]  # every row on one position: 0 bits
    assert row_entropy(uniform) == pytest.approx(2.0) and row_entropy(one_hot) == pytest.approx(0.0, abs=1e-6)
    assert row_entropy(np.array([[0.5, 0.5, 0, 0], [1, 0, 0, 0]])) == pytest.approx(0.5)  # (1 + 0) / 2
    assert np.isnan(row_entropy(np.zeros((0, 3))))


def _inspection():
    """Attention of 2 layers × 2 heads over a 3-token source and a 2-token target; head 1 one-hot, head 2 uniform."""
    from types import SimpleNamespace

    def maps(rows, cols):
        one_hot = np.eye(rows, cols)
        one_hot[:, 0] += 1 - one_hot.sum(1)  # a row past the columns looks at the first
        heads = np.stack([one_hot, np.full((rows, cols), 1 / cols)])
        return np.stack([heads, heads])

    return SimpleNamespace(
        src_tokens=["a", "b", "c"],
        tgt_tokens=["<bos>", "x"],
        encoder=maps(3, 3),
        decoder_self=maps(2, 2),
        cross=maps(2, 3),
    )


def test_a_map_is_one_head_or_the_heads_averaged_with_its_rows_and_columns():
    from explorer.panels.experiment import AVERAGE, attention_of

    inspection = _inspection()
    values, bits, rows, cols = attention_of(inspection, "cross", 1, 1)
    assert np.array_equal(values, inspection.cross[1, 0]) and bits == pytest.approx(0.0, abs=1e-6)
    assert rows == ["<bos>", "x"] and cols == ["a", "b", "c"]
    values, bits, _, _ = attention_of(inspection, "encoder", 0, AVERAGE)
    assert np.allclose(values, (np.eye(3) + 1 / 3) / 2)
    assert bits == pytest.approx(np.log2(3) / 2)  # each head's own rows: 0 bits and log2 3 bits
    assert np.array_equal(attention_of(inspection, "encoder", 0, 5)[0], values)  # a head it lacks: averaged
    _, _, rows, cols = attention_of(inspection, "decoder_self", 0, 2)
    assert rows == cols == ["<bos>", "x"]
    assert attention_of(inspection, "cross", 2, 1) is None  # no third layer
    inspection.encoder = np.zeros((0, 0, 0, 0))  # a GPT: no encoder
    assert attention_of(inspection, "encoder", 0, 1) is None


@pytest.fixture
def panel(qtbot):
    from explorer.panels.experiment import ExperimentPanel

    p = ExperimentPanel()
    qtbot.addWidget(p)
    return p


def _run_of(run: str):
    """A run of the experiment "one_head" as the panel reads it (the variant: run 3, beside baseline 2)."""
    from types import SimpleNamespace

    from explorer.answers import ExperimentInfo
    from model.core.config import ModelConfig
    from model.experiments.variants import VARIANTS

    v = next(v for v in VARIANTS if v.name == "one_head")
    e = ExperimentInfo(
        v.name, v.title, v.title_zh, v.expect, v.expect_zh, v.measure, v.predicted, 100, run, run_ids=(2, 3)
    )
    return SimpleNamespace(experiment=e, model_config=ModelConfig.preset("tiny", src_vocab_size=9, tgt_vocab_size=9))


def _compared(measure, outputs=(), run_ids=(2, 3)):
    from explorer.answers import ExperimentCompared

    return ExperimentCompared(run_ids, 1200, measure, None, outputs)


def test_the_figures_say_whether_the_prediction_held(panel, english):
    assert panel.figures.text().startswith("No experiment is running")
    panel.on_run(_run_of("variant"))
    assert panel.figures.text().startswith("Training both runs")
    panel._on_compared(_compared((0.5, 0.25)))  # one head: a lower exact match, as predicted
    assert panel.figures.text() == (
        "At step 1,200, exact match on held-out sentences: baseline <b>0.5</b> · variant <b>0.25</b>. "
        "As predicted, so far."
    )
    panel._on_compared(_compared((0.25, 0.5)))
    assert panel.figures.text().endswith("variant <b>0.5</b>. Not as predicted (yet).")
    panel._on_compared(_compared((float("nan"), 1234.4)))
    assert panel.figures.text().endswith("baseline <b>—</b> · variant <b>1,234</b>.")  # no verdict without both
    panel._on_compared(_compared((0.9, 0.1), run_ids=(7, 8)))  # of another experiment: not shown
    assert panel.compared.run_ids == (2, 3)


def test_the_outputs_mark_the_answers_equal_to_the_reference(panel):
    from model.io.snapshots import Compared

    panel.on_run(_run_of("baseline"))
    panel._on_compared(_compared((0.5, 0.25), (Compared("1 2", "2 1", "2 1", ""), Compared("3", "3", "4", "3"))))
    cells = [[panel.outputs.item(r, c).text() for c in range(4)] for r in range(2)]
    assert cells == [["1 2", "2 1", "2 1 ✓", "—"], ["3", "3", "4", "3 ✓"]]
    assert panel.look.currentData() == "baseline" and panel.look.isEnabled()
    assert [m.values.size for m in panel.maps] == [0, 0]  # no probe: no maps
