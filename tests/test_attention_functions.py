"""The head functions of the Attention panel's over-training tab (explorer/panels/attention_functions.py): the
curves are the snapshots' scores of the function and layer chosen (a NaN score has no point), only the functions of
the kind shown are offered, the step shown is marked, and a function without a value anywhere says why."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.panels.attention_functions import FUNCTION_NAMES, UNDEFINED, HeadFunctionPlot  # noqa: E402
from model.interpret.head_functions import functions_of  # noqa: E402
from tests.attention_probes import curves, probe_snapshots  # noqa: E402


@pytest.fixture(scope="module")
def probes():
    """Snapshots of one copy model's probe at steps 0, 15, 30 and 45, as the engine makes them, and its run."""
    return probe_snapshots()


@pytest.fixture
def panel(qtbot, probes):
    from explorer.panels.attention import AttentionPanel

    info, snapshots = probes
    p = AttentionPanel()
    qtbot.addWidget(p)
    p.resize(1200, 700)
    p.show()
    p.on_run(info)
    for s in snapshots:
        p.on_probe(s)
    p.over_training._absorb()
    return p


def offered(panel) -> list[str]:
    combo = panel.over_training.functions.function
    return [combo.itemData(i) for i in range(combo.count())]


def test_the_curves_are_the_snapshots_scores_of_the_function_and_layer_chosen(panel, probes):
    _, snapshots = probes
    steps = [s.step for s in snapshots]
    panel.show_view(dataclasses.replace(panel.view(), source="probe", kind="cross", layer=2))
    panel.show_tab("over_training")
    functions = panel.over_training.functions
    assert offered(panel) == ["alignment", "first_token", "eos"]
    for function_id in ("alignment", "eos"):
        functions.choose(function_id)
        drawn = curves(panel)
        assert sorted(drawn) == [0, 1, 2, 3]
        for h, (x, y) in drawn.items():
            assert x.tolist() == steps
            assert y == pytest.approx([s.functions["cross"][function_id][1, h] for s in snapshots])
    # another kind: its own functions, the one chosen kept where it applies
    functions.choose("first_token")
    panel.show_view(dataclasses.replace(panel.view(), kind="encoder", layer=1))
    assert offered(panel) == ["previous_token", "first_token", "eos"] and functions.chosen() == "first_token"
    for h, (_, y) in curves(panel).items():
        assert y == pytest.approx([s.functions["encoder"]["first_token"][0, h] for s in snapshots])
    assert functions.marker.isVisible() and functions.marker.value() == steps[-1]  # the snapshot shown


def test_induction_without_a_repeated_token_says_so_and_draws_nothing(panel, probes):
    panel.show_view(dataclasses.replace(panel.view(), source="probe", kind="decoder_self", layer=1))
    panel.show_tab("over_training")
    functions = panel.over_training.functions
    functions.choose("induction")
    assert functions.chosen() == "induction"
    assert curves(panel) == {} and functions.note.isVisible()
    assert "No repeated token in the probe" in functions.note.text()
    functions.choose("previous_token")
    assert len(curves(panel)) == 4 and not functions.note.isVisible()


# -- the plot alone, with scores made by hand ----------------------------------------------------------------------
@pytest.fixture
def plot(qtbot):
    p = HeadFunctionPlot()
    qtbot.addWidget(p)
    return p


def snapshot(step: int, kind: str, function_id: str, scores) -> SimpleNamespace:
    """A probe snapshot as the plot reads it: its step and its scores ``[layers, heads]``."""
    return SimpleNamespace(step=step, functions={kind: {function_id: np.asarray(scores, dtype=float)}})


def drawn(plot) -> dict[int, tuple[list[float], list[float]]]:
    return {
        int(name.removeprefix("head")): tuple(a.tolist() for a in plot.plot.data(run, name))
        for run, name in plot.plot.series
    }


def test_the_functions_of_each_kind_are_offered_by_their_names(plot, english):
    for kind in ("encoder", "decoder_self", "cross"):
        plot.draw([], kind, 0)
        ids = [plot.function.itemData(i) for i in range(plot.function.count())]
        assert ids == [f.id for f in functions_of(kind)]
        assert [plot.function.itemText(i) for i in range(plot.function.count())] == [FUNCTION_NAMES[i] for i in ids]
    plot.draw([], "decoder_self", 0)
    assert plot.function.findText("diagonal alignment") < 0  # not a function of decoder self-attention


def test_each_heads_curve_is_its_score_at_each_snapshot_without_the_undefined_ones(plot):
    layer0, layer1 = [0.1, 0.2], [0.3, 0.4]
    snapshots = [
        snapshot(0, "cross", "alignment", [layer0, layer1]),
        snapshot(10, "cross", "alignment", [[0.5, 0.6], [np.nan, 0.7]]),
        snapshot(20, "cross", "alignment", [[0.8, 0.9], [0.85, 0.95]]),
    ]
    plot.draw(snapshots, "cross", 1)
    assert plot.chosen() == "alignment"
    assert drawn(plot) == {0: ([0.0, 20.0], [0.3, 0.85]), 1: ([0.0, 10.0, 20.0], [0.4, 0.7, 0.95])}
    assert plot.note.isHidden()
    plot.draw(snapshots, "cross", 5)  # past the model's layers: its last
    assert drawn(plot)[1] == ([0.0, 10.0, 20.0], [0.4, 0.7, 0.95])
    plot.draw(snapshots, "cross", 0)
    assert drawn(plot) == {0: ([0.0, 10.0, 20.0], [0.1, 0.5, 0.8]), 1: ([0.0, 10.0, 20.0], [0.2, 0.6, 0.9])}


def test_a_function_without_a_value_anywhere_says_why(plot, english):
    nan = [[np.nan, np.nan]]
    plot.draw([snapshot(0, "decoder_self", "previous_token", [[0.5, 0.5]])], "decoder_self", 0)
    plot.choose("induction")
    plot.draw([snapshot(0, "decoder_self", "induction", nan)], "decoder_self", 0)
    assert drawn(plot) == {} and not plot.note.isHidden() and plot.note.text() == UNDEFINED["induction"]
    plot.choose("first_token")
    plot.draw([snapshot(0, "decoder_self", "first_token", nan)], "decoder_self", 0)
    assert plot.note.text() == "Not defined for this probe."
    plot.clear()
    assert plot.note.isHidden() and drawn(plot) == {}


def test_the_step_shown_is_marked(plot):
    plot.mark_step(30)
    assert plot.marker.isVisible() and plot.marker.value() == 30
    plot.mark_step(-1)
    assert not plot.marker.isVisible()
