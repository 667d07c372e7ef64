"""A long text in the attention views: a 512-token text read by a GPT-2 folder of GPT-2 small's 12 layers × 12
heads (a narrow one, so that the test is quick) gives every head's full map, and the window's views take it —
the all-heads grid brought down to the pixels it gets without losing a peak, the one-head map with column labels
that thin out instead of overprinting."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("pytestqt")

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
