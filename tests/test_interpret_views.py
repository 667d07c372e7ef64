"""The Why panel's two views (explorer/panels/interpret_views.py), on values made by hand: the attribution matrix
(the source, an empty separator column and the output read before; a contrast named on the last row; a BERT's without
a prefix), its colours centred at 0 and its CSV without the separator; the logit-lens table of a step (each layer's
top guesses, the final answer's cells tinted, the layer from which it stays on top starred) and its CSV."""

import csv

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.panels.interpret_views import (  # noqa: E402
    ANSWER,
    SEPARATOR,
    AttributionMap,
    LensView,
    attribution_matrix,
    numbers_of,
)
from model.interpret.results import Attribution, LensTable  # noqa: E402

SCORES = np.array([[0.5, -0.25, 0.0], [0.1, 0.2, -1.5]])  # 2 output tokens × 3 source tokens
PREFIX = np.array([[0.3, 0.0], [0.4, 0.6]])  # × the 2 tokens read before: <bos>, then the first output


def translation(contrast=None) -> Attribution:
    return Attribution(
        "integrated_gradients",
        "a b",
        (" a", "b", "<eos>"),
        ("x", "y"),
        ("<bos>", "x"),
        SCORES,
        PREFIX,
        contrast=contrast,
    )


def bert() -> Attribution:
    return Attribution("gradient_x_input", "a <mask>", ("a", "<mask>", "c"), ("b", "d"), ("", ""), SCORES, PREFIX * 0)


def test_the_matrix_is_the_source_a_separator_and_the_output_read_before():
    values, rows, cols = attribution_matrix(translation())
    assert values.shape == (2, 6)
    assert np.array_equal(values[:, :3], SCORES) and np.array_equal(values[:, 4:], PREFIX)
    assert np.isnan(values[:, 3]).all()
    assert rows == ["x", "y"] and cols == ["␣a", "b", "<eos>", SEPARATOR, "<bos>", "x"]  # a space shown as ␣


def test_a_contrast_is_named_on_the_last_row():
    _, rows, _ = attribution_matrix(translation(contrast="z"))
    assert rows == ["x", "y ≠ z"]


def test_a_berts_matrix_has_no_prefix():
    values, rows, cols = attribution_matrix(bert())
    assert np.array_equal(values, SCORES) and cols == ["a", "<mask>", "c"] and rows == ["b", "d"]
    numbers, labels = numbers_of(bert())
    assert np.array_equal(numbers, SCORES) and labels == ["src:a", "src:<mask>", "src:c"]


def test_the_numbers_exported_are_the_scores_beside_the_prefix_scores():
    numbers, labels = numbers_of(translation())
    assert np.array_equal(numbers, np.hstack([SCORES, PREFIX]))
    assert labels == ["src: a", "src:b", "src:<eos>", "out:<bos>", "out:x"]


def test_the_map_centres_its_colours_at_0_and_exports_its_numbers(qtbot, tmp_path):
    heatmap = AttributionMap()
    qtbot.addWidget(heatmap)
    heatmap.draw(translation(), current=1)
    assert tuple(heatmap.levels) == pytest.approx((-1.5, 1.5))  # the largest |score| either way
    heatmap.export(tmp_path / "why.csv")
    with (tmp_path / "why.csv").open(encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["", "src: a", "src:b", "src:<eos>", "out:<bos>", "out:x"]
    assert [r[0] for r in rows[1:]] == ["x", "y"]
    assert np.array([[float(v) for v in r[1:]] for r in rows[1:]]) == pytest.approx(np.hstack([SCORES, PREFIX]))
    heatmap.draw(None)
    assert heatmap.values.size == 0 and heatmap.attribution is None


# -- the logit lens ----------------------------------------------------------------------------------------------
def lens() -> LensTable:
    """Two layers at two positions, their two top guesses: the output at position 1 ("c") on top from layer 2."""
    return LensTable(
        source="a b",
        positions=("<bos>", "b"),
        targets=("b", "c"),
        top_tokens=((("b", "a"), ("d", "c")), (("b", "c"), ("c", "d"))),
        top_probs=np.array([[[0.6, 0.2], [0.5, 0.3]], [[0.9, 0.05], [0.7, 0.2]]]),
        target_probs=np.array([[0.6, 0.3], [0.9, 0.7]]),
        first_layer=np.array([0, 1]),
    )


@pytest.fixture
def view(qtbot):
    v = LensView()
    qtbot.addWidget(v)
    return v


def test_the_lens_table_holds_each_layers_top_guesses_at_the_current_step(view, english):
    view.show_table(lens())  # the last position: the current step
    assert view.cells() == [["d  0.50", "c  0.30", "0.300"], ["c  0.70", "d  0.20", "0.700"]]
    heads = [view.table.horizontalHeaderItem(c).text() for c in range(3)]
    assert heads == ["guess 1", "guess 2", "P(“c”)"]
    assert [view.table.verticalHeaderItem(r).text() for r in range(2)] == ["Layer 1", "Layer 2 ★"]
    assert view.caption.text() == "After “b” the model says “c”: it is on top from layer 2 on (★)."
    tinted = [[view.table.item(r, c).background().color() == ANSWER for c in range(2)] for r in range(2)]
    assert tinted == [[False, True], [True, False]]  # the cells of the final answer, "c"
    view.show_table(lens(), 0)
    assert view.cells()[0] == ["b  0.60", "a  0.20", "0.600"]
    assert view.table.verticalHeaderItem(0).text() == "Layer 1 ★"


def test_no_lens_says_what_to_do(view, english):
    view.show_table(None)
    assert view.cells() == [] and view.caption.text().startswith("Step the decoding")


def test_the_lens_csv_is_the_table_of_the_step_shown(view, tmp_path):
    view.show_table(lens())
    view.export(tmp_path / "lens.csv")
    with (tmp_path / "lens.csv").open(encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["layer", "token1", "p1", "token2", "p2", "p_final"]
    assert rows[1][:2] == ["1", "d"] and rows[2][:2] == ["2", "c"]
    assert [float(rows[1][i]) for i in (2, 4, 5)] == pytest.approx([0.5, 0.3, 0.3])
    assert [float(rows[2][i]) for i in (2, 4, 5)] == pytest.approx([0.7, 0.2, 0.7])
