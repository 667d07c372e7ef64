"""The Lanes panel (explorer/panels/lanes.py) with a real engine and a tiny trained copy model: the Decoding panel's
sentence decoded greedy, beam and sampling side by side; every row is what the engine's LanesDriver gives for the
same settings at the same step; Step moves every lane; a lane that parts from the greedy one shows its tokens from
there in orange."""

import pytest

pytest.importorskip("pytestqt")

from explorer import commands as cmd  # noqa: E402
from explorer.answers import EngineStatus, RunInfo  # noqa: E402
from explorer.engine_client import EngineClient  # noqa: E402
from explorer.panels.decoding import DecodingPanel  # noqa: E402
from explorer.panels.lanes import PARTED, LanesPanel  # noqa: E402
from explorer.worker import Engine  # noqa: E402
from model.decoding.lanes import LanesDriver, standard_lanes  # noqa: E402

SENTENCE = "1 2 3 4"


def _copy_spec():
    """A tiny copy-task model to train for a few steps."""
    from explorer.commands import NewModelSpec
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.training.trainer import train_config_for

    data = DataSpec(task="copy", n_train=300, n_valid=20, n_test=20, length=6, min_length=3, alphabet=6)
    return NewModelSpec(data, "tiny", {}, train_config_for("tiny", eval_every=0, batch_size=16), TokenizerSpec("word"))


@pytest.fixture
def panels(qtbot):
    engine = Engine("cpu", threads=1)
    got: list[object] = []
    engine.run_described.connect(got.append)
    engine.status_changed.connect(got.append)
    client = EngineClient(engine)
    decoding, lanes = DecodingPanel(), LanesPanel()
    for w in (decoding, lanes):
        qtbot.addWidget(w)
        w.resize(800, 500)
        w.show()
    decoding.attach(client)
    lanes.attach(client, decoding)
    engine.start()
    engine.submit(cmd.NewModel(_copy_spec()))
    engine.submit(cmd.Step(n=40))
    qtbot.waitUntil(
        lambda: any(isinstance(s, EngineStatus) and s.step == 40 and s.state == "paused" for s in got), timeout=60000
    )
    info = [r for r in got if isinstance(r, RunInfo)][-1]
    decoding.on_run(info)
    lanes.on_run(info)
    try:
        yield engine, decoding, lanes
    finally:
        engine.shutdown(None, timeout_ms=30000)


def wait(qtbot, lanes):
    qtbot.waitUntil(lambda: lanes.waiting is None and lanes.view is not None, timeout=20000)


def test_each_row_is_the_engines_lane_at_every_step(qtbot, panels):
    engine, decoding, lanes = panels
    lanes.press("step")  # nothing started yet: nothing asked
    assert lanes.waiting is None and "Decode in lanes" in lanes.state.text()
    decoding.input.setText(SENTENCE)
    decoding.start()  # the lanes take the sentence the Decoding panel shows
    qtbot.waitUntil(lambda: decoding.view is not None and decoding.view.settings.text == SENTENCE, timeout=20000)
    lanes.beam.setValue(3)
    lanes.temperature.setValue(2.5)
    lanes.seeds.setValue(3)
    lanes.start_button.click()
    wait(qtbot, lanes)
    assert lanes.table.rowCount() == 5 and lanes.view.position == 0 and lanes.view.text == SENTENCE
    reference = LanesDriver(engine.session)  # the engine is paused: its model is the panel's
    want = reference.start(standard_lanes(SENTENCE, 3, 2.5, (1, 2, 3)))
    for _ in range(4):
        lanes.buttons["step"].click()
        qtbot.waitUntil(lambda: lanes.waiting is None, timeout=20000)
        want = reference.act("step")
        assert lanes.view.position == want.position
        rows = lanes.texts()
        for r, (row, lane) in enumerate(zip(rows, want.lanes)):
            assert row[1] == (" ".join(lanes.piece(t) for t in lane.view.focus_tokens) or "—")
            assert row[2] == f"{lane.log_prob:.2f}"
            assert row[3] == ("—" if lane.parted_at is None else f"token {lane.parted_at + 1}")
            coloured = PARTED in lanes.table.cellWidget(r, 1).text()
            assert coloured == (lane.parted_at is not None and lane.parted_at < len(lane.view.focus_tokens))
    assert [r[0].rstrip(" ✓") for r in rows] == [
        "greedy",
        "beam 3",
        "sampling T 2.5, seed 1",
        "sampling T 2.5, seed 2",
        "sampling T 2.5, seed 3",
    ]
    assert any(lane.parted_at is not None for lane in want.lanes[2:])  # hot sampling parts from greedy
    lanes.buttons["run"].click()
    qtbot.waitUntil(lambda: lanes.waiting is None and lanes.view.at_end, timeout=20000)
    assert all(r[0].endswith("✓") for r in lanes.texts()) and "finished" in lanes.state.text()
    lanes.buttons["back"].click()
    qtbot.waitUntil(lambda: lanes.waiting is None and not lanes.view.at_end, timeout=20000)


def test_without_a_sentence_the_panel_says_what_to_do(qtbot, panels):
    _, decoding, lanes = panels
    decoding.input.setText("")
    lanes.start_button.click()
    assert lanes.waiting is None and "Decoding panel" in lanes.state.text()


def tree_kept(tree, level: int) -> list[tuple[str, int, float]]:
    """The kept (live or finished) nodes the tree draws at ``level``, sorted."""
    return sorted((n.status, n.token, n.log_prob) for n in tree.nodes if n.level == level and n.status != "pruned")


def test_the_tree_is_the_beam_lanes_at_every_step(qtbot, panels):
    engine, decoding, lanes = panels
    assert lanes.tree_box.isHidden()  # nothing decoded: no tree
    decoding.input.setText(SENTENCE)
    decoding.start()
    qtbot.waitUntil(lambda: decoding.view is not None and decoding.view.settings.text == SENTENCE, timeout=20000)
    lanes.start(beam=3)
    wait(qtbot, lanes)
    reference = LanesDriver(engine.session)
    want = reference.start(standard_lanes(SENTENCE, 3, lanes.temperature.value(), (1, 2)))
    assert lanes.tree_box.isVisibleTo(lanes) and "beam 3" in lanes.tree_title.text()
    for action in ("step",) * 4 + ("back",):
        lanes.press(action)
        qtbot.waitUntil(lambda: lanes.waiting is None and not lanes.tree.pending, timeout=20000)
        want = reference.act(action)
        beam = want.lanes[1].view  # the beam lane: its steps, as the engine's own driver decodes them
        assert beam.settings.beam_size == 3 and lanes.view.position == want.position
        assert len(lanes.tree.columns) == len(beam.steps) + 1  # the start, then a column per step at the cursor
        for level, step in enumerate(beam.steps, 1):
            got, kept = tree_kept(lanes.tree, level), sorted((c.status, c.token, c.log_prob) for c in step.kept)
            assert [g[:2] for g in got] == [k[:2] for k in kept]
            # the engine's thread may compute with fewer threads than this one: the same sums up to rounding
            assert [g[2] for g in got] == pytest.approx([k[2] for k in kept], abs=1e-5)
            assert lanes.tree.columns[level].n_pruned == len(step.pruned)
    lanes.on_run(lanes.info)  # a new model: no lanes, no tree
    assert lanes.tree_box.isHidden() and len(lanes.tree.columns) == 1
