"""Positional-encoding lab: the paper's sinusoids, their matrix and similarities, the shift matrix M_k,
and the model's own positions (a learned table, RoPE's rotations, or T5's relative-position buckets).

The sinusoid formulas, RoPE's angles and T5's buckets are computed here (with the engine's functions in
model.core.positional, from the model's configuration); a learned table comes from the engine as a snapshot.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.answers import PositionalReady, PositionalTables, RunInfo
from explorer.commands import Positional
from explorer.engine_client import EngineClient
from explorer.engine_loading import engine_loaded
from explorer.i18n import N_, tr
from explorer.panels.router import sentences
from explorer.widgets import named
from explorer.widgets.export import render_scene, titled_view, write_numbers
from explorer.widgets.heatmap import DIVERGING_MAP, Heatmap
from explorer.widgets.legend import LegendAbove
from explorer.widgets.metric_plot import RUN_COLOURS

# The similarity tab divides PE(p)·PE(q) by d/2, its value at p = q (each (sin, cos) pair adds
# sin² + cos² = 1), so the diagonal reads 1; the title says so.
SIMILARITY_TITLE = N_("Similarity PE(p)·PE(q) / (d_model/2): depends only on p − q (1 at p = q)")


def last_bucket_start(bidirectional: bool, n_buckets: int, far: int) -> int:
    """The smallest distance that T5's last bucket (of a side) holds: every farther one shares it."""
    import torch

    from model.families.t5 import t5_buckets

    distance = torch.arange(far + 1)
    bucket = t5_buckets(-distance, bidirectional, n_buckets, far)  # keys before the query: both kinds have them
    return int(distance[bucket == bucket.max()].min())


class LinePlot(QWidget):
    """A plain line plot with export (picture or numbers)."""

    def __init__(self, object_name: str, title: str, x_label: str, y_label: str, parent=None):
        super().__init__(parent)
        self.setObjectName(object_name)
        self._title_source = title
        self._axis_labels = (x_label, y_label)
        self.series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.plot = pg.PlotWidget()
        self.plot.setBackground(None)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.legend_above = LegendAbove(self.plot)  # the legend above the curves, never over them
        self.legend = self.legend_above.legend
        self.title, _ = titled_view(self, self.plot, object_name, self.export, ("PNG", "SVG", "CSV", "NPY"))
        self.retranslate()

    def retranslate(self) -> None:
        self.title.setText(tr(self._title_source))
        self.plot.setLabel("bottom", tr(self._axis_labels[0]))
        self.plot.setLabel("left", tr(self._axis_labels[1]))

    def set_series(self, series: list[tuple[str, np.ndarray, np.ndarray, dict]]) -> None:
        self.plot.clear()
        self.legend.clear()
        self.series = {}
        for i, (name, x, y, style) in enumerate(series):
            pen = pg.mkPen(
                style.get("colour", RUN_COLOURS[i % len(RUN_COLOURS)]),
                width=style.get("width", 1.6),
                style=style.get("line", Qt.PenStyle.SolidLine),
            )
            kw = dict(pen=pen, name=name)
            if style.get("symbol"):
                colour = style.get("colour")
                kw.update(
                    symbol=style["symbol"],
                    symbolSize=style.get("size", 6),
                    pen=None,
                    symbolBrush=None if style.get("hollow") else colour,
                    symbolPen=colour,
                )
            self.plot.plot(x, y, **kw)
            self.series[name] = (np.asarray(x), np.asarray(y))

    def export(self, path: str | Path) -> None:
        path = Path(path)
        if path.suffix.lower() in (".csv", ".npy"):
            names = list(self.series)
            if not names:
                raise ValueError(tr("Nothing to export yet."))
            columns = [self.series[names[0]][0]] + [self.series[n][1] for n in names]
            write_numbers(path, np.stack(columns, axis=1), None, ["x", *names])
        else:
            item = self.plot.getPlotItem()
            render_scene(item.scene(), item.sceneBoundingRect(), path, self.title.text())


class PositionalPanel(QWidget):
    """The sinusoids of the paper, and the current model's own positional encoding.

    Route: :meth:`attach` → ``client.ask(Positional())`` (:mod:`explorer.engine_client`) →
    ``Engine._positional`` → ``Session.positional_tables``; the answer arrives on the engine's
    ``positional_ready`` signal (:meth:`_on_tables_ready`). A learned table changes while the model
    trains: it is asked for again every 2 s while training and on screen.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("positional_panel")
        self.client: EngineClient | None = None
        self.training = False  # the engine is training (the learned table changes)
        self.refresh_timer = QTimer(self, interval=2000)
        self.refresh_timer.timeout.connect(self._refresh)
        self.info: RunInfo | None = None
        self.model_tables: PositionalTables | None = None
        self._stale = True  # drawn once on screen
        self._on_screen = True  # False while the dock is a tab behind another (see set_on_screen)
        self._create_controls()
        self._create_views()
        self._lay_out()
        self.retranslate()

    def _create_controls(self) -> None:
        self.d_model = named(QSpinBox(), "pe_dim_spin")
        self.d_model.setRange(2, 4096)
        self.d_model.setSingleStep(2)
        self.d_model.setValue(128)
        self.positions = named(QSpinBox(), "pe_len_spin")
        self.positions.setRange(2, 4096)
        self.positions.setValue(100)
        self.dims = named(QLineEdit("4 5 6 7"), "pe_dims_input")
        self.shift = named(QSpinBox(), "pe_shift_spin")
        self.shift.setRange(-1000, 1000)
        self.shift.setValue(5)
        self.pos_spin = named(QSpinBox(), "pe_pos_spin")
        self.pos_spin.setRange(0, 4095)
        self.pos_spin.setValue(10)
        for w in (self.d_model, self.positions, self.shift, self.pos_spin):
            w.valueChanged.connect(self.redraw)
        self.dims.editingFinished.connect(self.redraw)

    def _create_views(self) -> None:
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
        self.t5_plot = LinePlot(
            "pe_t5_buckets", N_("T5: the bucket of each offset key − query"), N_("offset key − query"), N_("bucket")
        )
        self.t5_matrix = Heatmap(
            "pe_t5_matrix",
            N_("T5: the bucket of each query and key position"),
            (0.0, 1.0),
            row_name=N_("query position"),
            col_name=N_("key position"),
        )
        self.t5_bias = LinePlot(
            "pe_t5_bias",
            N_("T5: each head's learned bias, per offset key − query"),
            N_("offset key − query"),
            N_("bias"),
        )

    def _lay_out(self) -> None:
        self.labels = {k: QLabel() for k in ("d", "n", "dims", "k", "pos")}
        controls = QVBoxLayout()
        for keys in (("d", "n", "dims"), ("k", "pos")):
            row = QHBoxLayout()
            for key in keys:
                row.addWidget(self.labels[key])
                row.addWidget(
                    {"d": self.d_model, "n": self.positions, "dims": self.dims, "k": self.shift, "pos": self.pos_spin}[
                        key
                    ]
                )
            row.addStretch(1)
            controls.addLayout(row)
        self.tabs = named(QTabWidget(), "pe_tabs")
        self.tabs.addTab(self.curves, "")
        self.tabs.addTab(self.matrix, "")
        self.tabs.addTab(self.similarity, "")
        shift_page = QWidget()
        sp = QGridLayout(shift_page)
        sp.addWidget(self.shift_note, 0, 0, 1, 2)
        sp.addWidget(self.shift_plot, 1, 0)
        sp.addWidget(self.shift_matrix, 1, 1)
        self.tabs.addTab(shift_page, "")
        model_page = QWidget()
        mp = QGridLayout(model_page)
        mp.addWidget(self.model_note, 0, 0, 1, 2)
        mp.addWidget(self.learned, 1, 0, 1, 2)
        mp.addWidget(self.rope_angles, 2, 0)
        mp.addWidget(self.rope_scores, 2, 1)
        mp.addWidget(self.t5_plot, 3, 0)
        mp.addWidget(self.t5_matrix, 3, 1)
        mp.addWidget(self.t5_bias, 4, 0, 1, 2)
        self.tabs.addTab(model_page, "")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(controls)
        layout.addWidget(self.tabs, 1)

    def retranslate(self) -> None:
        names = {"d": "d_model", "n": N_("positions"), "dims": N_("dimensions"), "k": N_("shift k"), "pos": "pos"}
        for key, label in self.labels.items():
            label.setText(tr(names[key]))
        for i, text in enumerate((N_("Curves"), N_("Matrix"), N_("Similarity"), N_("Shift by k"), N_("This model"))):
            self.tabs.setTabText(i, tr(text))
        for w in (
            self.curves,
            self.matrix,
            self.similarity,
            self.shift_plot,
            self.shift_matrix,
            self.learned,
            self.rope_angles,
            self.rope_scores,
            self.t5_plot,
            self.t5_matrix,
            self.t5_bias,
        ):
            w.retranslate()
        self.redraw()

    def on_run(self, info: RunInfo) -> None:
        self.info = info
        d = info.model_config.d_model + info.model_config.d_model % 2
        self.d_model.blockSignals(True)
        self.d_model.setValue(d)
        self.d_model.blockSignals(False)
        # fast to slow: dimension 0 turns once per 2π positions, d/2 about once per 600
        self.dims.setText(" ".join(str(i - i % 2) for i in (0, d // 8, d // 4, d // 2)))
        self.model_tables = None
        if self.client is not None:
            self.client.ask(Positional())
        self.redraw()

    def attach(self, client: EngineClient) -> None:
        self.client = client
        client.engine.positional_ready.connect(self._on_tables_ready)
        self.refresh_timer.start()

    def _on_tables_ready(self, reply: PositionalReady) -> None:
        if self.client is not None and self.client.fresh(Positional, reply.request_id):
            self.on_tables(reply.tables)

    def on_tables(self, tables: PositionalTables) -> None:
        self.model_tables = tables
        self._draw_model()

    def _refresh(self) -> None:
        learned = self.info is not None and self.info.model_config.positional in ("learned", "t5_relative")
        if self.training and learned and self.isVisible() and self.client is not None:
            self.client.ask(Positional())

    def chosen_dims(self) -> list[int]:
        d = self.d_model.value()
        out = []
        for part in self.dims.text().replace(",", " ").split():
            if part.isdigit() and int(part) < d:
                out.append(int(part))
        return out[:8] or [0, 1]

    # -- drawing ------------------------------------------------------------------------------------
    def showEvent(self, event) -> None:  # noqa: N802 — drawn when first looked at, not at start-up
        super().showEvent(event)
        QTimer.singleShot(0, self._redraw_if_stale)  # after the dock has said whether it is on screen

    def set_on_screen(self, on: bool) -> None:
        """Told by the dock: a tab behind another one is 'visible' to Qt but not on screen."""
        self._on_screen = on
        self._redraw_if_stale()

    def _redraw_if_stale(self) -> None:
        if self._stale:
            self.redraw()

    def redraw(self) -> None:
        if not (self.isVisible() and self._on_screen):
            self._stale = True
            return
        if not engine_loaded():  # the tables are the engine's own: drawn once it has loaded PyTorch
            self._stale = True
            QTimer.singleShot(100, self._redraw_if_stale)
            return
        self._stale = False
        from model.core.positional import relative_shift_matrix, sinusoidal_table

        d = self.d_model.value() + self.d_model.value() % 2  # sin/cos pairs need an even width
        n = self.positions.value()
        pe = sinusoidal_table(n, d).numpy().astype(np.float64)
        pos = np.arange(n)
        # "dim", not the paper's i: dimension 2i holds a sine and 2i + 1 a cosine of the pair i
        self.curves.set_series([(tr("dim {n}").format(n=i), pos, pe[:, i], {}) for i in self.chosen_dims()])
        self.matrix.set_data(pe, [str(p) for p in range(n)], [str(i) for i in range(d)])
        sim = pe @ pe.T / (d / 2)  # each pair contributes sin² + cos² = 1 at p = q
        self.similarity.set_data(sim, [str(p) for p in range(n)], [str(p) for p in range(n)], levels=(sim.min(), 1.0))
        k, p = self.shift.value(), min(self.pos_spin.value(), n - 1)
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
            tr(
                "For every position, shifting by k is the same linear map M_k: a rotation by the angle k·ω_i of "
                "each (sin, cos) pair (ω_i = 1/10000^(2i/d_model)). The paper hypothesised that this lets a model "
                "learn to attend by relative position."
            )
            + f"  max |PE({p}+{k}) − M_k·PE({p})| = {error:.2e}"
            + ("" if show == d else f"  ({tr('M_k shown for the first')} {show} {tr('dimensions')})")
        )
        self._draw_model()

    def _draw_model(self) -> None:
        info = self.info
        kind = info.model_config.positional if info else None
        self.learned.setVisible(kind == "learned")
        for w in (self.rope_angles, self.rope_scores):
            w.setVisible(kind == "rope")
        for w in (self.t5_plot, self.t5_matrix, self.t5_bias):
            w.setVisible(kind == "t5_relative")
        if info is None:
            self.model_note.setText(tr("No model loaded."))
        elif kind == "sinusoidal":
            self._draw_sinusoidal(info)
        elif kind == "learned":
            self._draw_learned(info)
        elif kind == "rope":
            self._draw_rope(info)
        elif kind == "t5_relative":
            self._draw_t5(info)
        else:  # a kind this lab does not know yet: say so rather than show another kind's pictures
            self.model_note.setText(tr("This lab has no picture of this model's positions ({kind}).").format(kind=kind))

    def _draw_sinusoidal(self, info: RunInfo) -> None:
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
            table = sinusoidal_table(self.positions.value(), m.d_model, "split").numpy()
            self.learned.setVisible(True)
            self.learned.set_data(
                table, [str(i) for i in range(len(table))], [str(i) for i in range(m.d_model)], levels=(-1.0, 1.0)
            )
            self.learned.set_title(tr("This model's positional encoding: sines first, then cosines"))
        if not m.scale_embedding:
            note += " " + tr("Its embeddings are added as they are, not scaled by √d_model.")
        self.model_note.setText(note)

    def _draw_learned(self, info: RunInfo) -> None:
        self.model_note.setText(
            tr(
                "This model learns one vector per position; its table changes while it "
                "trains. Compare it with the sinusoids."
            )
        )
        tables = self.model_tables
        if tables is not None and tables.target is not None:
            table = tables.target[: self.positions.value()]
            self.learned.set_data(table, [str(i) for i in range(len(table))], [str(i) for i in range(table.shape[1])])
            title = (
                tr("The model's learned position table")
                if info.model_config.single_stream  # one stream, one table
                else tr("The model's learned position table (target side)")
            )
            self.learned.set_title(f"{title} — {tr('step {n}').format(n=tables.step)}")

    def _draw_rope(self, info: RunInfo) -> None:
        head = info.model_config.d_model // info.model_config.n_heads
        n = self.positions.value()
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

    def _draw_t5(self, info: RunInfo) -> None:
        """T5's buckets (model.families.t5.t5_buckets) from the configuration: per offset, and per query and key
        (the encoder's, both ways; a decoder-only model's, looking back, with the later keys hatched)."""
        import torch

        from model.families.t5 import t5_buckets

        m = info.model_config
        n_buckets, far = m.t5_buckets, m.t5_max_distance
        span = far + far // 4  # a little beyond the farthest bucket: all farther offsets share it
        offsets = torch.arange(-span, span + 1)
        series = []
        if m.arch != "decoder_only":  # the encoder's bias: keys before and after the query
            both = t5_buckets(offsets, True, n_buckets, far).numpy()
            series.append((tr("encoder (both ways)"), offsets.numpy(), both, {"colour": "#1f77b4"}))
        if m.arch != "encoder_only":  # the decoder's: only keys at or before the query
            back = offsets[offsets <= 0]
            causal = t5_buckets(back, False, n_buckets, far).numpy()
            series.append((tr("decoder (looks back)"), back.numpy(), causal, {"colour": "#d62728"}))
        self.t5_plot.set_series(series)
        n = min(self.positions.value(), 48)
        pos = torch.arange(n)
        bidirectional = m.arch != "decoder_only"
        grid = t5_buckets(pos[None, :] - pos[:, None], bidirectional, n_buckets, far).numpy().astype(float)
        later = None if bidirectional else np.triu(np.ones((n, n), dtype=bool), 1)  # the causal mask hides them
        labels = [str(p) for p in range(n)]
        self.t5_matrix.set_data(grid, labels, labels, later, levels=(0.0, float(n_buckets - 1)))
        self._draw_t5_bias(m, offsets)
        self.model_note.setText(self._t5_note(m.arch, n_buckets, far))

    def _draw_t5_bias(self, m, offsets) -> None:
        """Each head's learned bias per offset (the table looked up by bucket), of the model's weights now: the
        decoder's for a decoder-only model (looking back), else the encoder's (both ways)."""
        from model.families.t5 import t5_buckets

        tables = self.model_tables
        table = None if tables is None else (tables.t5_decoder if m.arch == "decoder_only" else tables.t5_encoder)
        if table is None:  # the weights have not arrived yet
            self.t5_bias.set_series([])
            return
        both = m.arch != "decoder_only"
        shown = offsets if both else offsets[offsets <= 0]
        rows = table[t5_buckets(shown, both, m.t5_buckets, m.t5_max_distance).numpy()]  # [offsets, heads]
        x = shown.numpy()
        self.t5_bias.set_series([(f"{tr('head')} {h + 1}", x, rows[:, h], {}) for h in range(rows.shape[1])])
        assert tables is not None
        title = tr("T5: each head's learned bias, per offset key − query")
        self.t5_bias.title.setText(f"{title} — {tr('step {n}').format(n=tables.step)}")

    @staticmethod
    def _t5_note(arch: str, n_buckets: int, far: int) -> str:
        # offsets with a bucket of their own: half of each direction's half (the encoder's), half of all (the
        # decoder's); offset 0 counts as "before", so the encoder has one exact offset fewer after the query
        before, back = n_buckets // 4, n_buckets // 2
        note = tr(
            "This model adds nothing to its embeddings: each self-attention adds a learned number per head to its "
            "scores, chosen by the bucket of the offset key − query (T5's relative position bias; cross-attention "
            "gets none). Small offsets have a bucket each; larger ones share buckets whose width grows "
            "logarithmically, on a scale set by the distance {far}. One table of {n} buckets × heads per stack, "
            "shared by its layers."
        ).format(far=far, n=n_buckets)
        encoder = tr(
            "The encoder's buckets are split between keys before and after the query: {b} exact offsets before the "
            "query (0 included), {a} after; each side's last bucket holds every distance from {s} on."
        ).format(b=before, a=before - 1, s=last_bucket_start(True, n_buckets, far))
        decoder = tr(
            "The decoder's all look back: {d} exact offsets (0 included); the last bucket holds every distance from "
            "{s} on."
        ).format(d=back, s=last_bucket_start(False, n_buckets, far))
        return sentences(note, encoder if arch != "decoder_only" else "", decoder if arch != "encoder_only" else "")
