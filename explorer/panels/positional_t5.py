"""T5's relative-position buckets in the positional-encoding lab (:mod:`explorer.panels.positional`): the bucket
of each offset, of each query and key position, each head's learned bias, and the note that says how many offsets
have a bucket of their own.

The buckets come from the engine's function (model.families.t5.t5_buckets) and the model's configuration; the
bias tables from the engine as a snapshot. Which stacks' buckets are drawn is the family's (its spec's stacks): the
encoder's look both ways, the decoder's look back.
"""

from __future__ import annotations

import numpy as np

from explorer.i18n import N_, tr
from explorer.panels.positional_plots import LinePlot
from explorer.panels.router import sentences
from explorer.widgets.heatmap import Heatmap
from model.core.config import ModelConfig
from model.families.registry import FamilySpec
from model.io.snapshots import PositionalTables

BIAS_TITLE = N_("T5: each head's learned bias, per offset key − query")


def last_bucket_start(bidirectional: bool, n_buckets: int, far: int) -> int:
    """The smallest distance that T5's last bucket (of a side) holds: every farther one shares it."""
    import torch

    from model.families.t5 import t5_buckets

    distance = torch.arange(far + 1)
    bucket = t5_buckets(-distance, bidirectional, n_buckets, far)  # keys before the query: both kinds have them
    return int(distance[bucket == bucket.max()].min())


def t5_note(spec: FamilySpec, n_buckets: int, far: int) -> str:
    """What T5's bias is, and how each of the family's stacks splits its buckets."""
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
        "The decoder's all look back: {d} exact offsets (0 included); the last bucket holds every distance from {s} on."
    ).format(d=back, s=last_bucket_start(False, n_buckets, far))
    return sentences(note, encoder if "encoder" in spec.stacks else "", decoder if "decoder" in spec.stacks else "")


class T5Views:
    """The bucket of each offset (a curve per stack), of each query and key (the first stack's: the encoder's,
    both ways; a decoder-only model's, looking back, with the later keys hatched), and each head's learned bias."""

    def __init__(self) -> None:
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
        self.t5_bias = LinePlot("pe_t5_bias", BIAS_TITLE, N_("offset key − query"), N_("bias"))

    def views(self) -> tuple[LinePlot | Heatmap, ...]:
        return (self.t5_plot, self.t5_matrix, self.t5_bias)

    def draw(self, m: ModelConfig, tables: PositionalTables | None, n_positions: int) -> str:
        """Draw the buckets of ``m`` (and its bias tables, once they arrive); → the note that explains them."""
        import torch

        from model.families.t5 import t5_buckets

        spec = m.family
        n_buckets, far = m.t5_buckets, m.t5_max_distance
        span = far + far // 4  # a little beyond the farthest bucket: all farther offsets share it
        offsets = torch.arange(-span, span + 1)
        series = []
        if "encoder" in spec.stacks:  # the encoder's bias: keys before and after the query
            both = t5_buckets(offsets, True, n_buckets, far).numpy()
            series.append((tr("encoder (both ways)"), offsets.numpy(), both, {"colour": "#1f77b4"}))
        if "decoder" in spec.stacks:  # the decoder's: only keys at or before the query
            back = offsets[offsets <= 0]
            causal = t5_buckets(back, False, n_buckets, far).numpy()
            series.append((tr("decoder (looks back)"), back.numpy(), causal, {"colour": "#d62728"}))
        self.t5_plot.set_series(series)
        n = min(n_positions, 48)
        pos = torch.arange(n)
        bidirectional = spec.stacks[0] == "encoder"  # the first stack's buckets: the encoder's look both ways
        grid = t5_buckets(pos[None, :] - pos[:, None], bidirectional, n_buckets, far).numpy().astype(float)
        later = None if bidirectional else np.triu(np.ones((n, n), dtype=bool), 1)  # the causal mask hides them
        labels = [str(p) for p in range(n)]
        self.t5_matrix.set_data(grid, labels, labels, later, levels=(0.0, float(n_buckets - 1)))
        self._draw_bias(m, tables, offsets)
        return t5_note(spec, n_buckets, far)

    def _draw_bias(self, m: ModelConfig, tables: PositionalTables | None, offsets) -> None:
        """Each head's learned bias per offset (the table looked up by bucket), of the model's weights now: the
        first stack's (the encoder's, both ways; a decoder-only model's decoder, looking back)."""
        from model.families.t5 import t5_buckets

        both = m.family.stacks[0] == "encoder"
        table = None if tables is None else (tables.t5_encoder if both else tables.t5_decoder)
        if tables is None or table is None:  # the weights have not arrived yet
            self.t5_bias.set_series([])
            return
        shown = offsets if both else offsets[offsets <= 0]
        rows = table[t5_buckets(shown, both, m.t5_buckets, m.t5_max_distance).numpy()]  # [offsets, heads]
        x = shown.numpy()
        self.t5_bias.set_series([(f"{tr('head')} {h + 1}", x, rows[:, h], {}) for h in range(rows.shape[1])])
        self.t5_bias.title.setText(f"{tr(BIAS_TITLE)} — {tr('step {n}').format(n=tables.step)}")
