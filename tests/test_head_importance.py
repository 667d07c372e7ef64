"""The Head importance tab (explorer/panels/head_importance.py) with a real engine and a small trained copy model:
the map shows the engine's Δloss, Cancel stops the sweep and the map says how far it got, the caption says when the
weights have moved on, a click on a cell switches that head off, and the numbers export as CSV."""

import csv
import threading

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from explorer.answers import ImportanceReady, SweepProgress  # noqa: E402
from explorer.commands import Step  # noqa: E402
from tests.ablation_window import click_at, open_window, train_copy  # noqa: E402


@pytest.fixture(scope="module")
def trained_copy(tmp_path_factory, copy_session_factory):
    return train_copy(copy_session_factory, tmp_path_factory.mktemp("importance"))


@pytest.fixture
def copy_window(make_window, qtbot, trained_copy):
    return open_window(make_window, qtbot, trained_copy)


def measured(qtbot, window, sentences: int = 20) -> ImportanceReady:
    page = window.attention.heads_off.importance
    window.attention.show_tab("importance")
    got: list[ImportanceReady] = []
    window.engine.importance_ready.connect(got.append)
    page.sentences.setValue(sentences)
    qtbot.mouseClick(page.measure_button, Qt.MouseButton.LeftButton)
    assert page.running and not page.measure_button.isEnabled()
    qtbot.waitUntil(lambda: bool(got) and not page.running, timeout=30000)
    return got[-1]


def test_the_map_shows_the_engines_delta_loss_for_each_kind(copy_window, qtbot, tmp_path):
    window = copy_window
    page = window.attention.heads_off.importance
    reply = measured(qtbot, window)
    found = reply.importance
    assert found.complete and found.sentences == 20
    kinds = [page.kind.itemData(i) for i in range(page.kind.count())]
    assert kinds == ["encoder", "decoder", "cross"]
    for i, kind in enumerate(kinds):
        page.kind.setCurrentIndex(i)
        np.testing.assert_array_equal(page.shown(), found.delta_loss[kind])
        low, high = page.map.levels
        assert low == -high and high == pytest.approx(np.abs(found.delta_loss[kind]).max())  # centred on 0
    assert page.progress.text() == "head 24 of 24"
    caption = page.caption.text()
    assert f"loss {found.base['loss']:.4f}" in caption and "20 held-out sentences" in caption
    assert "measured at step 80" in caption and "now at step" not in caption
    page.export(tmp_path / "importance.csv")
    rows = list(csv.DictReader((tmp_path / "importance.csv").open(encoding="utf-8")))
    assert len(rows) == 24
    cross = [r for r in rows if r["kind"] == "cross" and r["layer"] == "2" and r["head"] == "3"][0]
    assert float(cross["delta_loss"]) == pytest.approx(found.delta_loss["cross"][1, 2])
    assert float(cross["delta_accuracy"]) == pytest.approx(found.delta_accuracy["cross"][1, 2])
    page.export(tmp_path / "importance.png")
    assert (tmp_path / "importance.png").stat().st_size > 1000

    window.engine.submit(Step(n=2))  # the weights move on: the map says it is of older ones
    qtbot.waitUntil(lambda: "measured at step 80 — now at step 82" in page.caption.text(), timeout=30000)


def test_cancel_stops_the_sweep_and_the_map_says_how_far_it_got(copy_window, qtbot):
    window = copy_window
    page = window.attention.heads_off.importance
    gate = threading.Event()

    def hold(progress: SweepProgress) -> None:  # on the engine thread: wait at head 3 until Cancel is pressed
        if progress.done == 3:
            gate.wait(20)

    window.engine.sweep_progressed.connect(hold, Qt.ConnectionType.DirectConnection)
    got: list[ImportanceReady] = []
    window.engine.importance_ready.connect(got.append)
    window.attention.show_tab("importance")
    qtbot.mouseClick(page.measure_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.reached == 3, timeout=30000)
    assert page.progress.text() == "head 3 of 24" and page.cancel_button.isEnabled()
    qtbot.mouseClick(page.cancel_button, Qt.MouseButton.LeftButton)
    gate.set()
    qtbot.waitUntil(lambda: bool(got) and not page.running, timeout=30000)
    found = got[-1].importance
    assert not found.complete
    measured_heads = sum(int(np.isfinite(m).sum()) for m in found.delta_loss.values())
    assert measured_heads == 3
    page.kind.setCurrentIndex(page.kind.findData("encoder"))
    assert int(np.isfinite(page.shown()).sum()) == 3 and np.isnan(page.shown()).sum() == 5
    assert "cancelled after 3 of 24 heads" in page.caption.text()
    assert page.measure_button.isEnabled() and not page.cancel_button.isEnabled()


def test_a_click_on_a_cell_switches_that_head_off(copy_window, qtbot):
    window = copy_window
    a, page = window.attention, window.attention.heads_off.importance
    measured(qtbot, window)
    page.kind.setCurrentIndex(page.kind.findData("decoder"))
    click_at(qtbot, page.map.view, page.map.image, 2.5, 1.5)  # layer 2, head 3
    qtbot.waitUntil(lambda: a.heads_off.confirmed.heads == (("decoder", 1, 2),), timeout=20000)
    np.testing.assert_array_equal(page.map.outlined, [[1, 2]])  # outlined as switched off
    assert a.heads_off.count.text() == "1 head off"
    click_at(qtbot, page.map.view, page.map.image, 2.5, 1.5)  # again: on again
    qtbot.waitUntil(lambda: a.heads_off.confirmed.heads == (), timeout=20000)
    assert len(page.map.outlined) == 0
