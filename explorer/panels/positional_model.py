"""The "This model" tab of the positional-encoding lab (:mod:`explorer.panels.positional`): the current model's
own positions, by the kind its configuration names — the paper's fixed sinusoids (or Marian's layout of them), a
learned table, RoPE's rotations, or T5's relative-position buckets (:mod:`explorer.panels.positional_t5`); a model
without positions (an experiment's) gets a note of what that means and no picture.

RoPE's angles and the sinusoids are computed here from the configuration (with model.core.positional); a learned
table and T5's bias come from the engine as a snapshot (:class:`~model.io.snapshots.PositionalTables`).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

from explorer.answers import RunInfo
from explorer.i18n import N_, tr
from explorer.panels.positional_plots import LinePlot
from explorer.panels.positional_t5 import T5Views
from explorer.widgets import named
from explorer.widgets.heatmap import DIVERGING_MAP, Heatmap
from model.io.snapshots import PositionalTables

NO_POSITIONS = N_(
    "This model has no positional encoding: nothing is added to its embeddings and nothing in its attention "
    "depends on where a token is. An encoder without positions reads its input as a set: shuffle the tokens and "
    "its outputs are shuffled with them. (A decoder with a causal mask still learns something of order from it: "
    "later positions see more tokens.) The other tabs show the sinusoids the paper adds."
)


class ModelViews:
    """The model's note, its position table (learned, or Marian's sinusoids), RoPE's angles and scores, and T5's
    buckets; only the views of the model's kind are shown."""

    def __init__(self) -> None:
        self.model_note = named(QLabel(), "pe_model_note")
        self.model_note.setWordWrap(True)
        self.learned = Heatmap(
            "pe_learned_heatmap",
            N_("The model's learned position table (target side)"),
            (-0.5, 0.5),
            DIVERGING_MAP,
            N_("position"),
            N_("dimension"),
        )
        self.rope_angles = Heatmap(
            "pe_rope_angles",
            N_("RoPE: rotation angle (radians, mod 2π) per position and pair"),
            (0.0, 2 * np.pi),
            row_name=N_("position"),
            col_name=N_("pair"),
        )
        self.rope_scores = LinePlot(
            "pe_rope_scores", N_("RoPE: score of q = k = 1 against the offset n − m"), N_("offset n − m"), "q·k"
        )
        self.t5 = T5Views()

    def page(self) -> QWidget:
        """The tab: the note on top, then the table, RoPE's two views side by side, T5's buckets and bias."""
        page = QWidget()
        grid = QGridLayout(page)
        grid.addWidget(self.model_note, 0, 0, 1, 2)
        grid.addWidget(self.learned, 1, 0, 1, 2)
        grid.addWidget(self.rope_angles, 2, 0)
        grid.addWidget(self.rope_scores, 2, 1)
        grid.addWidget(self.t5.t5_plot, 3, 0)
        grid.addWidget(self.t5.t5_matrix, 3, 1)
        grid.addWidget(self.t5.t5_bias, 4, 0, 1, 2)
        return page

    def views(self) -> tuple[LinePlot | Heatmap, ...]:
        return (self.learned, self.rope_angles, self.rope_scores, *self.t5.views())

    def draw(self, info: RunInfo | None, tables: PositionalTables | None, n_positions: int) -> None:
        """The views of ``info``'s kind of positions, over its first ``n_positions`` (``tables``: the engine's
        snapshot of its learned ones, None until it arrives)."""
        kind = info.model_config.positional if info else None
        self.learned.setVisible(kind == "learned")
        for w in (self.rope_angles, self.rope_scores):
            w.setVisible(kind == "rope")
        for w in self.t5.views():
            w.setVisible(kind == "t5_relative")
        if info is None:
            self.model_note.setText(tr("No model loaded."))
        elif kind == "sinusoidal":
            self._draw_sinusoidal(info, n_positions)
        elif kind == "learned":
            self._draw_learned(info, tables, n_positions)
        elif kind == "rope":
            self._draw_rope(info, n_positions)
        elif kind == "t5_relative":
            self.model_note.setText(self.t5.draw(info.model_config, tables, n_positions))
        elif kind == "none":  # nothing to draw: say what its absence means
            self.model_note.setText(tr(NO_POSITIONS))
        else:  # a kind this lab does not know yet: say so rather than show another kind's pictures
            self.model_note.setText(tr("This lab has no picture of this model's positions ({kind}).").format(kind=kind))

    def _draw_sinusoidal(self, info: RunInfo, n_positions: int) -> None:
        """The paper's sinusoids; a model that lays them out as Marian does (sines first, then cosines) has its
        own table drawn, since the other tabs show the paper's interleaved order."""
        m = info.model_config
        if m.sinusoid_layout != "split":
            note = tr(
                "This model adds the paper's fixed sinusoids (the other tabs) to its "
                "embeddings, after scaling them by √d_model; nothing here is learned."
            )
        else:
            from model.core.positional import sinusoidal_table

            note = tr(
                "This model adds the paper's sinusoids laid out as Marian lays them out: the sines in the first "
                "half of the dimensions, the cosines in the second — the values of the other tabs, the "
                "dimensions in another order (below); nothing here is learned."
            )
            table = sinusoidal_table(n_positions, m.d_model, "split").numpy()
            self.learned.setVisible(True)
            self.learned.set_data(
                table, [str(i) for i in range(len(table))], [str(i) for i in range(m.d_model)], levels=(-1.0, 1.0)
            )
            self.learned.set_title(tr("This model's positional encoding: sines first, then cosines"))
        if not m.scale_embedding:
            note += " " + tr("Its embeddings are added as they are, not scaled by √d_model.")
        self.model_note.setText(note)

    def _draw_learned(self, info: RunInfo, tables: PositionalTables | None, n_positions: int) -> None:
        self.model_note.setText(
            tr(
                "This model learns one vector per position; its table changes while it "
                "trains. Compare it with the sinusoids."
            )
        )
        if tables is not None and tables.target is not None:
            table = tables.target[:n_positions]
            self.learned.set_data(table, [str(i) for i in range(len(table))], [str(i) for i in range(table.shape[1])])
            title = (
                tr("The model's learned position table")
                if info.model_config.single_stream  # one stream, one table
                else tr("The model's learned position table (target side)")
            )
            self.learned.set_title(f"{title} — {tr('step {n}').format(n=tables.step)}")

    def _draw_rope(self, info: RunInfo, n_positions: int) -> None:
        head = info.model_config.d_model // info.model_config.n_heads
        n = n_positions
        from model.core.positional import inverse_frequencies

        omega = inverse_frequencies(head).numpy()
        angles = np.mod(np.arange(n)[:, None] * omega[None, :], 2 * np.pi)
        self.rope_angles.set_data(angles, [str(p) for p in range(n)], [str(i) for i in range(len(omega))])
        offsets = np.arange(-n + 1, n)
        scores = 2 * np.cos(offsets[:, None] * omega[None, :]).sum(axis=1)  # q = k = 1: each pair adds 2 cos
        self.rope_scores.set_series([("q·k", offsets, scores, {})])
        self.model_note.setText(
            tr(
                "This model rotates each pair of query and key dimensions by position × ω_i "
                "(head size {h}); positions then enter q·k only through the offset n − m, while what q and k "
                "contain still matters."
            ).format(h=head)
        )
