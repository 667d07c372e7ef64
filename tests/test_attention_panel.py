"""explorer/panels/attention.py: the Attention panel. Here its over-training tab's head functions
(explorer/panels/attention_functions.py), beside the entropy plot: the curves are the snapshots' scores of the function
and layer chosen, only the functions of the kind shown are offered, the step shown is marked, and nothing is drawn
while the tab is hidden."""

import dataclasses

import numpy as np
import pytest

pytest.importorskip("pytestqt")


@pytest.fixture(scope="module")
def probes():
    """Snapshots of one copy model's probe at steps 0, 15, 30 and 45, as the engine makes them, and its run."""
    from explorer.answers import ProbeSnapshot
    from explorer.engine_base import attention_entropy, run_info_of
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.interpret.head_functions import head_functions
    from model.session import Session
    from model.training.trainer import train_config_for

    data = DataSpec(task="copy", n_train=2000, n_valid=50, n_test=50, length=6, min_length=2, alphabet=8)
    session = Session.create(data, "tiny", train_config_for("tiny", eval_every=0), TokenizerSpec("word"), device="cpu")
    snapshots = []
    for _ in range(4):
        inspection = session.inspect("1 2 3 4 5", "1 2 3 4 5")
        entropy = {k: attention_entropy(getattr(inspection, k)) for k in ("encoder", "decoder_self", "cross")}
        functions = head_functions(inspection)
        snapshots.append(ProbeSnapshot(1, session.step, "1 2 3 4 5", "1 2 3 4 5", inspection, entropy, functions))
        session.train_steps(15)
    return run_info_of(session, 1), snapshots


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


def curves(panel) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    plot = panel.over_training.functions.plot
    return {h: plot.data(1, f"head{h}") for h in range(4) if (1, f"head{h}") in plot.series}


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


def test_the_head_functions_are_drawn_only_when_their_tab_is_open(qtbot, probes):
    from explorer.panels.attention import AttentionPanel

    info, snapshots = probes
    p = AttentionPanel()
    qtbot.addWidget(p)
    p.on_run(info)
    p.show_tab("map")
    for s in snapshots:
        p.on_probe(s)
    p.over_training._absorb()
    assert curves(p) == {}
    p.show_tab("over_training")
    assert len(curves(p)) == 4
