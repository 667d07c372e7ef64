"""The labelled heatmap (explorer/widgets/heatmap.py)."""

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.widgets.heatmap import Heatmap  # noqa: E402


def _count_calls(monkeypatch, obj, name: str) -> list[int]:
    calls = [0]
    original = getattr(obj, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(obj, name, counted)
    return calls


def test_new_weights_for_the_same_sentence_change_only_the_image(qtbot, monkeypatch):
    """A probe during training redraws the same sentence with new weights about once a second: the axes'
    labels, the hatching and the layout stay as they are (setting them again made every probe a whole
    repaint of the panel), while the image, the values read on hover and the colour levels follow."""
    heatmap = Heatmap("probe_heatmap", "map")
    qtbot.addWidget(heatmap)
    heatmap.resize(500, 400)
    heatmap.show()
    rows, cols = ["<bos>", "a", "b"], ["x", "y", "z", "<eos>"]
    mask = np.zeros((3, 4), dtype=bool)
    mask[0, 3] = True
    rng = np.random.default_rng(0)
    heatmap.set_data(rng.random((3, 4)), rows, cols, mask)
    bottom = _count_calls(monkeypatch, heatmap.plot.getAxis("bottom"), "setTicks")
    left = _count_calls(monkeypatch, heatmap.plot.getAxis("left"), "setTicks")
    hatching = _count_calls(monkeypatch, heatmap.overlay, "setImage")

    newer = rng.random((3, 4))
    heatmap.set_data(newer, rows, cols, mask.copy(), highlight_row=1, levels=(0.0, 0.5))
    assert (bottom[0], left[0], hatching[0]) == (0, 0, 0)
    np.testing.assert_array_equal(heatmap.values, newer)
    np.testing.assert_allclose(heatmap.image.image, newer)
    assert heatmap.colorbar.levels() == (0.0, 0.5)
    assert heatmap.row_box.isVisible()  # the highlighted row follows too

    heatmap.set_data(rng.random((3, 4)), rows, ["x", "y", "w", "<eos>"], mask)  # another sentence: relabelled
    assert bottom[0] == 1 and left[0] == 1
    drawn = hatching[0]
    heatmap.set_data(rng.random((3, 4)), rows, ["x", "y", "w", "<eos>"], ~mask)  # other masked cells
    assert hatching[0] == drawn + 1
    assert heatmap.hatched()[0, 0] and not heatmap.hatched()[0, 3]


def test_a_long_texts_grid_keeps_every_peak_and_its_place():
    """12 × 12 maps of 512 tokens are brought down to the pixels a small map gets: a block becomes its largest
    weight, so a head that looks at one token still shows it, in the right map and at the right place."""
    from explorer.widgets.heatmap import GRID_MAP_SIDE, mosaic_of

    maps = np.full((2, 3, 300, 300), 0.001, dtype=np.float32)
    maps[1, 2, 299, 150] = 1.0  # the last query of layer 2, head 3 looks at key 150 alone
    masked = ~np.tril(np.ones((300, 300), dtype=bool))  # causal: above the diagonal hidden
    made = mosaic_of(maps, masked)
    mosaic, hidden, (L, H, q, k), gap = made.image, made.hidden, made.shape, made.gap
    f = -(-300 // GRID_MAP_SIDE)  # 4 cells a side become one
    assert (L, H, q, k) == (2, 3, 75, 75) and f == 4
    assert mosaic.shape == (2 * 75 + gap, 3 * 75 + 2 * gap)
    assert mosaic[1 * (75 + gap) + 299 // f, 2 * (75 + gap) + 150 // f] == 1.0
    assert np.nanmax(mosaic) == 1.0 and np.count_nonzero(mosaic == 1.0) == 1
    # a block is hidden only if all its cells are: the diagonal blocks keep their visible half
    assert not hidden[0, 0] and hidden[0, 1] and not hidden[74, 74]
    assert np.isnan(mosaic[75, 0])  # the gap between the layers


def test_a_long_texts_grid_is_drawn_when_ready_and_only_the_newest(qtbot):
    from explorer.widgets.heatmap import HeatmapGrid, mosaic_of

    grid = HeatmapGrid("grid")
    qtbot.addWidget(grid)
    first = np.full((2, 2, 200, 200), 0.2, dtype=np.float32)
    newest = np.full((2, 2, 200, 200), 0.7, dtype=np.float32)
    grid.set_data(first)
    grid.set_data(newest)  # asked for before the first is ready: the first must never be drawn over it
    qtbot.waitUntil(lambda: not grid.pending, timeout=10000)
    qtbot.wait(200)  # the first's answer, if late, comes and is dropped
    drawn = grid.image.image
    assert drawn.shape == mosaic_of(newest, None).image.shape
    assert np.nanmax(drawn) == pytest.approx(0.7) and np.nanmin(drawn) == pytest.approx(0.7)
    assert grid.maps is newest or np.array_equal(grid.maps, newest)  # exported (NPY) whole, not brought down


def test_a_long_texts_masked_cells_are_plain_grey_and_a_short_ones_hatched(qtbot):
    """The hatching's level of detail: a few large cells get fine lines, a 512-token map (less than a screen pixel
    a cell) plain light grey, one overlay pixel a cell instead of 16 — and every masked cell is still covered."""
    from explorer.widgets.heatmap import HATCH, MAP_HATCH_PIXELS, hatch_overlay, hatch_side

    assert hatch_side(5, 5) == 4 * HATCH and hatch_side(100, 100) == HATCH and hatch_side(512, 512) == 1
    small = hatch_overlay(np.array([[False, True]]), HATCH)
    assert len({tuple(p) for p in small[:, HATCH:].reshape(-1, 4)}) == 2  # grey with darker lines
    assert not small[:, :HATCH, 3].any()  # the cell not masked stays transparent
    heatmap = Heatmap("long", "map")
    qtbot.addWidget(heatmap)
    n = 513
    causal = ~np.tril(np.ones((n, n), dtype=bool))
    heatmap.set_data(np.tril(np.full((n, n), 1.0 / n)), ["t"] * n, ["t"] * n, causal)
    overlay = heatmap.overlay.image
    assert overlay.shape[:2] == (n, n) and overlay.shape[0] * overlay.shape[1] <= MAP_HATCH_PIXELS
    np.testing.assert_array_equal(heatmap.hatched(), causal)


def test_a_long_texts_map_zooms_its_labels_follow_the_cells_in_view_and_a_double_click_shows_it_whole(qtbot):
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    n = 512
    labels = [f"w{i}" for i in range(n)]
    heatmap = Heatmap("zoom", "map", zoomable=True)
    qtbot.addWidget(heatmap)
    heatmap.resize(640, 560)
    heatmap.show()
    qtbot.waitExposed(heatmap)
    values = np.tril(np.random.default_rng(0).random((n, n)))
    heatmap.set_data(values, labels, labels, ~np.tril(np.ones((n, n), dtype=bool)))
    bottom, left, box = heatmap.plot.getAxis("bottom"), heatmap.plot.getAxis("left"), heatmap.plot.getViewBox()
    assert len(bottom._tickLevels[0]) < n // 8  # the whole map: thinned

    viewport = heatmap.view.viewport()
    centre = QPointF(viewport.width() / 2, viewport.height() / 2)
    wheel = QWheelEvent(
        centre, QPointF(viewport.mapToGlobal(centre.toPoint())), QPoint(), QPoint(0, 120 * 8),
        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False,
    )  # fmt: skip
    QApplication.sendEvent(viewport, wheel)
    (x0, x1), _ = box.viewRange()
    assert x1 - x0 < n / 2  # the wheel zoomed in

    box.setRange(xRange=(100, 120), yRange=(300, 320), padding=0)
    cols = [v for v, _ in bottom._tickLevels[0]]
    rows = [v for v, _ in left._tickLevels[0]]
    assert len(cols) >= 10 and all(99 <= v <= 121 for v in cols)  # the labels of the cells in view, filled in
    assert rows and all(299 <= v <= 321 for v in rows)
    assert [t.strip() for v, t in bottom._tickLevels[0]] == [labels[int(v)] for v in cols]
    heatmap.set_data(values * 0.5, labels, labels, ~np.tril(np.ones((n, n), dtype=bool)))  # another head
    assert box.viewRange()[0] == [100, 120]  # keeps the zoom
    qtbot.mouseDClick(viewport, Qt.MouseButton.LeftButton, pos=centre.toPoint())  # (QTest leaves out the last
    qtbot.mouseRelease(viewport, Qt.MouseButton.LeftButton, pos=centre.toPoint(), delay=10)  # release, pyqtgraph's cue)
    (x0, x1), (y0, y1) = box.viewRange()
    assert (x0, x1, y0, y1) == (0, n, 0, n) and len(bottom._tickLevels[0]) < n // 8


def test_scrolling_through_a_zoomable_maps_heads_titles_it_once_the_scrolling_pauses(qtbot):
    """A title's new text re-lays out the whole window (~10 ms a head): scrolling through the heads of one text,
    the title follows once the scrolling pauses; a new text, or a single change, is titled at once."""
    heatmap = Heatmap("heads", "map", zoomable=True)
    qtbot.addWidget(heatmap)
    labels = ["a", "b", "c"]
    heatmap.set_data(np.eye(3), labels, labels)
    heatmap.set_title("head 1")
    assert heatmap.title.text() == "head 1"
    heatmap.set_data(np.eye(3) * 0.5, labels, labels)  # another head of the same text, right after
    heatmap.set_title("head 2")
    heatmap.set_data(np.eye(3) * 0.25, labels, labels)
    heatmap.set_title("head 3")
    assert heatmap.title.text() == "head 1"  # scrolling: not yet
    qtbot.waitUntil(lambda: heatmap.title.text() == "head 3", timeout=2000)  # paused: the last one
    heatmap.set_data(np.eye(4), [*labels, "d"], [*labels, "d"])  # another text: at once
    heatmap.set_title("another text")
    assert heatmap.title.text() == "another text"
    fixed = Heatmap("fixed", "map")  # a map that does not zoom: always at once
    qtbot.addWidget(fixed)
    for n in (1, 2):
        fixed.set_data(np.eye(3) * n, labels, labels)
        fixed.set_title(f"head {n}")
    assert fixed.title.text() == "head 2"


def count_paints(heatmap) -> list[int]:
    """Counts the paints of the map's view (its own paint events, whatever asks for them)."""
    from PySide6.QtCore import QEvent, QObject

    count = [0]

    class Counter(QObject):
        def eventFilter(self, watched, event):  # noqa: N802
            if event.type() == QEvent.Type.Paint:
                count[0] += 1
            return False

    heatmap._paint_counter = Counter(heatmap)  # (kept alive with the map)
    heatmap.view.viewport().installEventFilter(heatmap._paint_counter)
    return count


def test_a_new_sentences_map_is_laid_out_before_it_is_painted_and_painted_once(qtbot):
    """A probe's first snapshot, or another sentence: pyqtgraph measured the row labels as it painted them, laid
    the map out again after that first paint and placed the image at the start of the next, 3–4 paints (12–14 ms)
    in one turn of the event loop while a followed run's checkpoint was read. Now the labels' room is measured and
    the map laid out before it is painted: one paint, with every row label whole."""
    from tests.scenarios.test_layout_sizes import drawn_tick_labels

    heatmap = Heatmap("probe_heatmap", "map")
    qtbot.addWidget(heatmap)
    heatmap.resize(660, 540)
    heatmap.show()
    qtbot.waitExposed(heatmap)
    rng = np.random.default_rng(0)
    heatmap.set_data(rng.random((3, 3)), ["▁Hello", "▁world", "</s>"], ["你好", "世界", "</s>"])
    qtbot.wait(100)
    paints = count_paints(heatmap)
    rows = ["▁The", "▁weather", "▁is", "▁remarkably", "▁nice", "</s>"]
    heatmap.set_data(rng.random((6, 5)), rows, ["今天", "天气", "很好", "。", "</s>"])
    qtbot.wait(150)
    assert paints[0] == 1
    left = heatmap.plot.getAxis("left")
    drawn = drawn_tick_labels(left)
    assert sorted(t for _, t in drawn) == sorted(rows)
    assert all(rect.left() >= 0 for rect, _ in drawn), "a row label cut at the left"
    assert left.width() - max(rect.width() for rect, _ in drawn) < 12  # and no wider than they need


def test_row_labels_are_measured_again_in_presenter_modes_type(qtbot):
    """The row labels' room is measured when the map is drawn; presenter mode's larger type measures it again,
    with the map's new size (its title and labels grow), or the labels would be cut at the left."""
    from PySide6.QtWidgets import QApplication

    from explorer.appearance import set_presenter_font
    from tests.scenarios.test_layout_sizes import drawn_tick_labels

    heatmap = Heatmap("probe_heatmap", "map")
    qtbot.addWidget(heatmap)
    heatmap.resize(660, 540)
    heatmap.show()
    rows = ["▁The", "▁weather", "▁is", "▁remarkably", "</s>"]
    heatmap.set_data(np.eye(5), rows, ["a", "b", "c", "d", "</s>"])
    qtbot.wait(50)
    left = heatmap.plot.getAxis("left")
    before = left.width()
    base = QApplication.font()
    try:
        set_presenter_font(heatmap, True, base)
        qtbot.wait(100)
        assert left.width() > before * 1.2
        drawn = drawn_tick_labels(left)
        assert sorted(t for _, t in drawn) == sorted(rows)
        assert all(rect.left() >= 0 for rect, _ in drawn), "a row label cut at the left"
    finally:
        set_presenter_font(heatmap, False, base)
    qtbot.wait(100)
    assert abs(left.width() - before) < 2
