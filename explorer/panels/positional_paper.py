"""The paper's sinusoids in the positional-encoding lab (:mod:`explorer.panels.positional`): their curves, their
matrix, the similarity of two positions' vectors, and the shift by k as one linear map M_k.

Computed with the engine's functions (model.core.positional) from the lab's settings; nothing here depends on the
model loaded.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

from explorer.i18n import N_, tr
from explorer.panels.positional_plots import LinePlot
from explorer.widgets import named
from explorer.widgets.heatmap import DIVERGING_MAP, Heatmap

# The similarity tab divides PE(p)·PE(q) by d/2, its value at p = q (each (sin, cos) pair adds
# sin² + cos² = 1), so the diagonal reads 1; the title says so.
SIMILARITY_TITLE = N_("Similarity PE(p)·PE(q) / (d_model/2): depends only on p − q (1 at p = q)")
SHIFT_TEXT = N_(
    "For every position, shifting by k is the same linear map M_k: a rotation by the angle k·ω_i of "
    "each (sin, cos) pair (ω_i = 1/10000^(2i/d_model)). The paper hypothesised that this lets a model "
    "learn to attend by relative position."
)


class PaperViews:
    """The sinusoids' tabs: curves, matrix, similarity, and the shift page (its note, PE(pos + k) beside
    M_k · PE(pos), and M_k)."""

    def __init__(self) -> None:
        self.curves = LinePlot("pe_plot", N_("Sinusoids: PE(pos, dim) for chosen dimensions"), N_("position"), "PE")
        self.matrix = Heatmap(
            "pe_matrix_heatmap",
            N_("The PE matrix (positions × dimensions)"),
            (-1.0, 1.0),
            DIVERGING_MAP,
            N_("position"),
            N_("dimension"),
        )
        self.similarity = Heatmap(
            "pe_similarity_heatmap", SIMILARITY_TITLE, (0.0, 1.0), row_name=N_("position"), col_name=N_("position")
        )
        self.shift_plot = LinePlot("pe_shift_plot", N_("PE(pos + k) and M_k · PE(pos)"), N_("dimension"), N_("value"))
        self.shift_matrix = Heatmap(
            "pe_shift_matrix",
            N_("M_k: a rotation of each (sin, cos) pair"),
            (-1.0, 1.0),
            DIVERGING_MAP,
            N_("row"),
            N_("column"),
        )
        self.shift_note = named(QLabel(), "pe_shift_note")
        self.shift_note.setWordWrap(True)

    def shift_page(self) -> QWidget:
        """The shift tab: the note above, the vectors and the matrix side by side."""
        page = QWidget()
        grid = QGridLayout(page)
        grid.addWidget(self.shift_note, 0, 0, 1, 2)
        grid.addWidget(self.shift_plot, 1, 0)
        grid.addWidget(self.shift_matrix, 1, 1)
        return page

    def views(self) -> tuple[LinePlot | Heatmap, ...]:
        return (self.curves, self.matrix, self.similarity, self.shift_plot, self.shift_matrix)

    def draw(self, d: int, n: int, dims: list[int], k: int, pos: int) -> None:
        """The first ``n`` positions of a ``d``-wide table (``d`` even), the curves of ``dims``, and the shift by
        ``k`` applied at ``pos``."""
        from model.core.positional import sinusoidal_table

        pe = sinusoidal_table(n, d).numpy().astype(np.float64)
        positions = np.arange(n)
        # "dim", not the paper's i: dimension 2i holds a sine and 2i + 1 a cosine of the pair i
        self.curves.set_series([(tr("dim {n}").format(n=i), positions, pe[:, i], {}) for i in dims])
        self.matrix.set_data(pe, [str(p) for p in range(n)], [str(i) for i in range(d)])
        sim = pe @ pe.T / (d / 2)  # each pair contributes sin² + cos² = 1 at p = q
        self.similarity.set_data(sim, [str(p) for p in range(n)], [str(p) for p in range(n)], levels=(sim.min(), 1.0))
        self._draw_shift(d, k, min(pos, n - 1))

    def _draw_shift(self, d: int, k: int, p: int) -> None:
        """PE(p + k) beside M_k · PE(p) (the same vector), M_k's first 16 rows and columns, and their difference."""
        from model.core.positional import relative_shift_matrix, sinusoidal_table

        m = relative_shift_matrix(k, d).numpy()
        long = sinusoidal_table(p + abs(k) + 1, d).numpy().astype(np.float64)
        target = long[p + k] if p + k >= 0 else None
        moved = m @ long[p]
        dims = np.arange(d)
        series = [("M_k · PE(pos)", dims, moved, {"colour": "#d62728", "symbol": "o", "size": 4})]
        if target is not None:
            series.insert(
                0, ("PE(pos + k)", dims, target, {"colour": "#1f77b4", "symbol": "o", "size": 10, "hollow": True})
            )
        self.shift_plot.set_series(series)
        show = min(d, 16)
        self.shift_matrix.set_data(m[:show, :show], [str(i) for i in range(show)], [str(i) for i in range(show)])
        error = np.abs(moved - target).max() if target is not None else float("nan")
        self.shift_note.setText(
            tr(SHIFT_TEXT)
            + f"  max |PE({p}+{k}) − M_k·PE({p})| = {error:.2e}"
            + ("" if show == d else f"  ({tr('M_k shown for the first')} {show} {tr('dimensions')})")
        )
