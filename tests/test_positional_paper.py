"""The paper's sinusoids in the positional-encoding lab (explorer/panels/positional_paper.py): the curves of the
dimensions chosen, the PE matrix as the paper's formula gives it, the similarity of two positions that depends only on
their offset, and the shift by k as one linear map M_k."""

import math

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.panels.positional_paper import PaperViews  # noqa: E402
from model.core.positional import sinusoidal_table  # noqa: E402


@pytest.fixture
def paper(qtbot):
    views = PaperViews()
    for view in views.views():
        qtbot.addWidget(view)
    return views


def test_the_shift_tab_shows_pe_of_pos_plus_k_as_m_k_times_pe_of_pos(qtbot, english):
    paper = PaperViews()
    for view in paper.views():
        qtbot.addWidget(view)
    paper.draw(16, 30, [0, 5], 3, 7)
    target, moved = (paper.shift_plot.series[name][1] for name in ("PE(pos + k)", "M_k · PE(pos)"))
    assert moved == pytest.approx(sinusoidal_table(11, 16).numpy()[10], abs=1e-6)
    assert moved == pytest.approx(target, abs=1e-6)
    assert list(paper.curves.series) == ["dim 0", "dim 5"]
    assert paper.shift_matrix.values.shape == (16, 16) and "M_k shown" not in paper.shift_note.text()
    paper.draw(40, 30, [0], -9, 5)  # no PE(pos + k) before position 0; M_k's first 16 rows shown
    assert list(paper.shift_plot.series) == ["M_k · PE(pos)"] and paper.shift_matrix.values.shape == (16, 16)
    assert "M_k shown for the first 16 dimensions" in paper.shift_note.text()


def test_the_matrix_and_the_curves_are_the_papers_formula(paper, english):
    d, n = 8, 12
    paper.draw(d, n, [1, 6], 2, 3)
    pe = paper.matrix.values
    assert pe.shape == (n, d)
    for pos in (0, 5, 11):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-6)
    assert list(paper.curves.series) == ["dim 1", "dim 6"]
    x, y = paper.curves.series["dim 6"]
    assert list(x) == list(range(n)) and y == pytest.approx(pe[:, 6])


def test_the_similarity_is_1_on_the_diagonal_and_depends_only_on_the_offset(paper):
    d, n = 16, 20
    paper.draw(d, n, [0], 1, 0)
    sim = paper.similarity.values
    assert np.diag(sim) == pytest.approx(np.ones(n))  # each (sin, cos) pair adds sin² + cos² = 1; divided by d/2
    for offset in (1, 4, 9):
        along = np.diag(sim, offset)
        assert along == pytest.approx(np.full(len(along), along[0]), abs=1e-6)  # the same all along
        assert np.diag(sim, -offset) == pytest.approx(along)  # symmetric
    assert sim[0, 3] == pytest.approx(sum(math.cos(3 / 10000 ** (2 * i / d)) for i in range(d // 2)) / (d / 2))


def test_the_shift_is_applied_at_a_position_inside_the_table(paper, english):
    paper.draw(16, 30, [0], 3, 99)  # position 99 is past the table's 30: its last position, 29
    moved = paper.shift_plot.series["M_k · PE(pos)"][1]
    assert moved == pytest.approx(sinusoidal_table(33, 16).numpy()[32], abs=1e-6)
    assert "PE(29+3)" in paper.shift_note.text()
