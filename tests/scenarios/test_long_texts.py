"""A long text in the attention views: a 512-token text read by a GPT-2 folder of GPT-2 small's 12 layers × 12
heads (a narrow one, so that the test is quick) gives every head's full map, and the window's views take it —
the all-heads grid brought down to the pixels it gets without losing a peak, the one-head map with column labels
that thin out instead of overprinting. In the whole window (a 2 × 2-head folder), a 512-token prompt typed into
the Decoding panel: the Attention panel's map of the head chosen, labels apart, hover, the prompt's chips a few
lines high; the Why? panel's attribution with its labels apart, its progress, the chips' tint, the logit lens."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, QPointF  # noqa: E402

from explorer.widgets.heatmap import GRID_MAP_SIDE, Heatmap, HeatmapGrid  # noqa: E402
from model.session import Session  # noqa: E402
from tests.hf_folders import gpt2_folder, grammar_lines  # noqa: E402

TOKENS = 512


@pytest.fixture(scope="module")
def long_text(tmp_path_factory):
    folder = gpt2_folder(tmp_path_factory.mktemp("long"), shape=(12, 12, 48, 1024))
    session = Session.load(folder, device="cpu")
    words = " ".join(grammar_lines("en", 400)).split()
    n = next(i for i in range(len(words)) if len(session.src_tok.encode(" ".join(words[:i])).ids) >= TOKENS - 1)
    return session, " ".join(words[:n])


def test_every_head_of_a_512_token_text_is_computed_whole(long_text):
    session, text = long_text
    inspection = session.inspect(text, tgt_text=".")
    maps = inspection.decoder_self
    T = maps.shape[-1]
    assert maps.shape[:2] == (12, 12) and TOKENS <= T <= TOKENS + 4
    assert np.allclose(maps.sum(-1), 1.0, atol=1e-4)  # each row a distribution
    assert not maps[..., ~np.tril(np.ones((T, T), dtype=bool))].any()  # causal: nothing after a position


def test_the_views_take_it(long_text, qtbot):
    session, text = long_text
    inspection = session.inspect(text, tgt_text=".")
    maps, tokens = inspection.decoder_self, inspection.tgt_tokens
    grid = HeatmapGrid("grid")
    qtbot.addWidget(grid)
    grid.set_data(maps)
    qtbot.waitUntil(lambda: not grid.pending, timeout=30000)
    side = -(-maps.shape[-1] // -(-maps.shape[-1] // GRID_MAP_SIDE))
    assert grid._shape == (12, 12, side, side) and side <= GRID_MAP_SIDE
    # the grid's strongest weight is the strongest of all the maps (a peak is never averaged away)
    assert np.nanmax(grid.image.image) == pytest.approx(maps.max())
    one = Heatmap("one", "map")
    qtbot.addWidget(one)
    one.resize(640, 560)
    one.show()
    qtbot.wait(50)  # laid out: the labels are placed in the width the map gets
    labels = tokens[: maps.shape[-1]]
    one.set_data(maps[11, 11], labels, labels)
    shown = one.plot.getAxis("bottom")._tickLevels[0]
    assert 1 < len(shown) < len(labels) // 4  # the labels thin out: no overprinting
    assert one.values.shape == (maps.shape[-1], maps.shape[-1])  # every cell there, for hover and export


# -- the whole window: a 512-token prompt typed into the Decoding panel of a GPT-2 folder -------------------------
@pytest.fixture(scope="module")
def small_folder(tmp_path_factory):
    """A GPT-2 folder of 2 layers x 2 heads (quick), with room for 1024 positions, and a 511-token prompt for it."""
    from tokenizers import Tokenizer

    folder = gpt2_folder(tmp_path_factory.mktemp("long-window"), shape=(2, 2, 32, 1024))
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    words = " ".join(grammar_lines("en", 400)).split()
    n = next(i for i in range(len(words)) if len(tok.encode(" ".join(words[:i])).ids) >= TOKENS - 1)
    return folder, " ".join(words[:n])


def _generated(qtbot, make_window, folder, text):
    """The window at 1366 x 698 with the folder, the prompt typed and Generate pressed, a step taken: the
    Attention panel raised, its map shown."""
    window = make_window(open_path=str(folder))
    window.show()
    window.resize(1366, 768 - 70)
    d, a = window.decoding, window.attention
    qtbot.waitUntil(lambda: d.info is not None and d.info.model_origin is not None, timeout=60000)
    qtbot.wait(100)
    window.setProperty("height_before", window.height())  # (the window fits the offscreen screen as it opens)
    d.input.setText(text)
    d.translate_button.click()
    qtbot.waitUntil(lambda: d.view is not None and not d.waiting, timeout=60000)
    d.step_button.click()
    qtbot.waitUntil(lambda: not d.waiting and d.view.position == 1, timeout=60000)
    qtbot.waitUntil(lambda: a.current()[0] is d.view.inspection, timeout=10000)
    window.docks["attention"].raise_()  # (the offscreen screen is narrow: the panels are tabs)
    qtbot.wait(100)  # laid out
    return window


def _labels_apart(axis, span: float, n: int, font) -> list[tuple[float, str]]:
    """The axis's labels, checked not to overprint: on each line (a label's leading line breaks say which), each
    one's text ends before the next begins. ``span`` pixels for ``n`` cells."""
    from PySide6.QtGui import QFontMetrics

    from explorer.widgets.heatmap import LABEL_GAP

    fm = QFontMetrics(font)
    ticks = axis._tickLevels[0]
    by_line: dict[int, list[tuple[float, float]]] = {}
    for value, text in ticks:
        x, width = value / n * span, fm.horizontalAdvance(text.lstrip("\n"))
        by_line.setdefault(text.count("\n"), []).append((x - width / 2, x + width / 2))
    for extents in by_line.values():
        for (_, right), (left, _) in zip(sorted(extents), sorted(extents)[1:]):
            assert left - right >= LABEL_GAP - 1, (right, left)
    return ticks


def test_the_window_shows_a_512_token_prompts_map_head_by_head_with_labels_apart(qtbot, make_window, small_folder):
    from explorer.widgets.token_strip import MAX_LINES

    folder, text = small_folder
    window = _generated(qtbot, make_window, folder, text)
    d, a = window.decoding, window.attention
    maps = d.view.inspection.decoder_self
    T = maps.shape[-1]
    assert T >= TOKENS
    for layer, head in ((1, 1), (1, 2), (2, 2)):  # the chosen head's whole map, as the engine computed it
        a.layer.setValue(layer)
        a.head.setValue(head)
        np.testing.assert_allclose(a.heatmap.values, maps[layer - 1, head - 1])
    plot = a.heatmap.plot
    cols = _labels_apart(plot.getAxis("bottom"), plot.getViewBox().width(), T, a.heatmap.view.font())
    assert 1 < len(cols) < T // 4  # thinned out
    rows = plot.getAxis("left")._tickLevels[0]
    line = a.heatmap.fontMetrics().height()
    assert 1 < len(rows) <= plot.getViewBox().height() / line  # a row label a line at most
    # the prompt's chips take a few lines, its end shown: the window keeps the height it was given
    chips = d.chips
    assert chips.lines() > MAX_LINES and chips.height() <= chips.heightForWidth(chips.width())
    assert window.height() == window.property("height_before")
    assert chips.chip_at(chips.rect().bottomLeft() + QPoint(3, -5)) is not None
    # hover names the cell under the pointer, any of the 512 x 512
    r, c = T - 1, 3
    scene_pos = a.heatmap.image.mapToScene(QPointF(c + 0.5, r + 0.5))
    a.heatmap.view.scene().sigMouseMoved.emit(scene_pos)
    assert f"{r + 1} " in a.heatmap.hover_label.text() and f"{maps[1, 1, r, c]:.4f}" in a.heatmap.hover_label.text()


def test_the_why_panel_explains_a_512_token_prompt_with_labels_apart_and_says_how_far(
    qtbot, make_window, small_folder, monkeypatch
):
    from explorer.panels.interpret_state import WhyView
    from model.interpret import attribution

    folder, text = small_folder
    window = _generated(qtbot, make_window, folder, text)
    why = window.why
    said: list[str] = []
    monkeypatch.setattr(why, "say", lambda words: said.append(words) or type(why).say(why, words))
    monkeypatch.setattr(attribution, "points_per_pass", lambda model, readout: 1)  # a long text's batches
    why.show_view(WhyView("attribution", "integrated_gradients", 3, None, True))
    window.docks["why"].raise_()
    qtbot.waitUntil(lambda: why.attribution is not None, timeout=60000)
    assert "Computing… 1 of 3 points of the path" in said and "Computing… 2 of 3 points of the path" in said
    a = why.attribution
    assert a.scores.shape == (1, len(a.source_tokens)) and len(a.source_tokens) >= TOKENS - 1
    m = why.map
    n = m.values.shape[1]
    cols = _labels_apart(m.plot.getAxis("bottom"), m.plot.getViewBox().width(), n, m.view.font())
    assert 1 < len(cols) < n // 4
    np.testing.assert_allclose(window.decoding.chips.weights[-3:], a.scores[0, -3:], rtol=1e-5)  # the tint
    why.show_view(WhyView("lens", "integrated_gradients", 3, None, True))
    qtbot.waitUntil(lambda: why.lens.table.rowCount() == 2, timeout=30000)  # a row per layer, whatever the length
