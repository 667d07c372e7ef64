"""Switching heads off in the attention panel's all-heads grid (explorer/panels/attention_ablation.py): the clicks
send the whole set to the engine, the decoding shown is decoded again as the model with those heads off decodes it
(checked against the session's own translation under ``Session.ablated``), the crossed-out maps are the heads off,
and switching them on again brings the first decoding back."""

from dataclasses import replace

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from explorer.commands import SetAblation  # noqa: E402
from explorer.panels.ablation_state import AblationState, changed_positions  # noqa: E402
from tests.ablation_window import SENTENCE, click_at, decode_to_end, open_window, session_of, train_copy  # noqa: E402


@pytest.fixture(scope="module")
def trained_copy(tmp_path_factory, copy_session_factory):
    return train_copy(copy_session_factory, tmp_path_factory.mktemp("ablation"))


@pytest.fixture
def copy_window(make_window, qtbot, trained_copy):
    return open_window(make_window, qtbot, trained_copy)


def test_the_state_is_qt_free_and_toggles():
    import subprocess
    import sys

    code = "import sys, explorer.panels.ablation_state; sys.exit('PySide6' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
    state = AblationState().toggled(("cross", 1, 0)).toggled(("encoder", 0, 2))
    assert state.heads == (("cross", 1, 0), ("encoder", 0, 2))
    assert state.cells("cross") == {(1, 0)} and state.cells("decoder_self") == set()
    assert state.toggled(("cross", 1, 0)).heads == (("encoder", 0, 2),)
    assert changed_positions(("a", "b", "c"), ("a", "x", "c", "d")) == [1, 3]
    assert changed_positions(("我", "的", "朋", "友"), ("我", "们", "的", "朋", "友")) == [1]  # one put in: only it


def grid_centre(grid, layer: int, head: int) -> tuple[float, float]:
    _, _, q, k = grid._shape
    return head * (k + grid._gap) + k / 2, layer * (q + grid._gap) + q / 2


def test_clicking_heads_off_redecodes_as_the_engine_says_and_clicking_them_on_restores(copy_window, qtbot, monkeypatch):
    window = copy_window
    a, d = window.attention, window.decoding
    sent = []
    submit = window.engine.submit
    monkeypatch.setattr(window.engine, "submit", lambda c: (sent.append(c), submit(c))[1])
    decode_to_end(qtbot, window)
    first = d.view.focus_text
    a.show_view(replace(a.view(), source="decoding", kind="cross", all_heads=True))
    qtbot.mouseClick(a.heads_off.switch, Qt.MouseButton.LeftButton)
    assert a.heads_off.switch.isChecked()
    session = session_of(window)
    layers, heads = session.model_cfg.n_decoder_layers, session.model_cfg.n_heads
    every_cross = tuple(("cross", layer, h) for layer in range(layers) for h in range(heads))
    for _, layer, h in every_cross:  # each a real click on its map
        click_at(qtbot, a.grid.view, a.grid.image, *grid_centre(a.grid, layer, h))
    asked = [c for c in sent if isinstance(c, SetAblation)]
    assert len(asked) == len(every_cross)
    assert set(asked[-1].heads) == set(every_cross) and asked[-1].source == SENTENCE
    assert [len(c.heads) for c in asked] == list(range(1, len(every_cross) + 1))  # each the whole set so far
    assert a.view().all_heads  # a click switched a head off; it did not open the map alone
    qtbot.waitUntil(lambda: a.heads_off.confirmed.heads == tuple(sorted(every_cross)), timeout=20000)
    qtbot.waitUntil(lambda: not d.waiting and d.view.at_end, timeout=20000)

    with session.ablated(every_cross):
        want = session.translate(SENTENCE)
    assert d.view.focus_text == want.text != first  # without cross-attention the copy model cannot copy
    assert d.view.at_end  # the decoding shown had finished: the new one is shown finished too
    assert a.grid.crossed == a.grid.crossed_cells() == {(layer, h) for _, layer, h in every_cross}
    diff = a.heads_off.diff
    assert diff is not None and diff.changed and " ".join(diff.before) != " ".join(diff.after)
    shown = a.heads_off.diff_label.text()
    assert f"{len(every_cross)} heads off" in shown and "→" in shown and "#d62728" in shown  # changed tokens marked
    assert "→" in a.heads_off.probs_label.text()
    assert f"{len(every_cross)} heads off" in d.step_label.text()
    assert a.heads_off.count.text() == f"{len(every_cross)} heads off"

    one = every_cross[:1]  # all but one back on (a click each), then that one
    for _, layer, h in every_cross[1:]:
        a.grid.cell_clicked.emit(layer, h)
    qtbot.waitUntil(lambda: a.heads_off.confirmed.heads == one and not d.waiting, timeout=20000)
    assert a.grid.crossed_cells() == {(0, 0)}
    a.grid.cell_clicked.emit(0, 0)
    qtbot.waitUntil(lambda: a.heads_off.confirmed.heads == () and not d.waiting, timeout=20000)
    qtbot.waitUntil(lambda: d.view.at_end, timeout=20000)
    assert d.view.focus_text == first == session.translate(SENTENCE).text
    assert a.grid.crossed_cells() == set() and a.heads_off.count.text() == ""
    assert "heads off" not in d.step_label.text() and not a.heads_off.diff_label.isVisible()
    qtbot.mouseClick(a.heads_off.switch, Qt.MouseButton.LeftButton)  # off: a click opens the map alone again
    a.grid.cell_clicked.emit(1, 2)
    assert not a.view().all_heads and (a.view().layer, a.view().head) == (2, 3)


def test_mean_ablation_redecodes_to_the_same_step_and_all_heads_on(copy_window, qtbot):
    window = copy_window
    a, d = window.attention, window.decoding
    d.input.setText(SENTENCE)
    d.start()
    for _ in range(2):
        qtbot.waitUntil(lambda: d.view is not None and not d.waiting, timeout=20000)
        d.decoding_page.act("step", restart=False)
    qtbot.waitUntil(lambda: d.view.position == 2 and not d.waiting, timeout=20000)
    a.show_view(replace(a.view(), source="decoding", kind="encoder", all_heads=True))
    a.heads_off.switch.setChecked(True)
    a.heads_off.mode.setCurrentIndex(a.heads_off.mode.findData("mean"))
    a.grid.cell_clicked.emit(0, 1)
    a.grid.cell_clicked.emit(1, 3)
    qtbot.waitUntil(lambda: len(a.heads_off.confirmed.heads) == 2 and not d.waiting, timeout=20000)
    assert a.heads_off.confirmed == AblationState((("encoder", 0, 1), ("encoder", 1, 3)), "mean")
    session = session_of(window)
    with session.ablated(a.heads_off.confirmed.heads, "mean"):
        want = session.translate(SENTENCE)
    assert d.view.position == 2 and not d.view.at_end  # decoded again up to the step it was at
    assert d.view.focus_tokens[-2:] == tuple(want.tokens[:2])
    assert a.grid.crossed_cells() == {(0, 1), (1, 3)}
    a.show_view(replace(a.view(), kind="cross"))  # another kind's maps: none of them is off
    assert a.grid.crossed_cells() == set()
    qtbot.mouseClick(a.heads_off.all_on, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: a.heads_off.confirmed.heads == () and not d.waiting, timeout=20000)
    assert a.heads_off.confirmed.mode == "mean" and "heads off" not in d.step_label.text()
