"""The rows above the Attention panel's map that choose what it shows: the sentence (source), the kind of attention,
the layer and the head, how heads and colours are drawn, and a source/target pair typed here.

Their state is an :class:`explorer.panels.attention_view.AttentionView`: :meth:`AttentionChoices.view` reads it,
:meth:`AttentionChoices.show_view` sets all of it at once and the map is drawn once (``changed``). The kinds and
the names of the rows follow the model's family (:meth:`AttentionChoices.set_family`).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from explorer.help import HelpBox
from explorer.i18n import N_, tr
from explorer.panels.attention_parts import kinds_of
from explorer.panels.attention_view import AttentionView
from explorer.widgets import named
from model.families.registry import ENCODER_DECODER, FamilySpec

# the map's sources; a family names one its own way in its spec's labels ("source:<key>": the decoding panel of a
# family that does not decode, an encoder-only model's, fills masks; a sentence typed here for a single-stream
# family is a prompt and its continuation, or one text)
SOURCES = (
    ("decoding", N_("Following the decoding panel")),
    ("pair", N_("A source/target pair (teacher forcing)")),
    ("probe", N_("The probe sentence over training")),
)
# the typed pair's two fields and the second one's placeholder, as the paper's model names them (a family's spec may
# name them otherwise: "pair:source", "pair:target", "pair:placeholder")
PAIR_FIELDS = {
    "pair:source": N_("Source"),
    "pair:target": N_("Target"),
    "pair:placeholder": N_("empty: the model's own translation"),
}
ROW_NAMES = {"show": N_("Show"), "kind": N_("Kind"), "layer": N_("Layer"), "head": N_("Head")}


class AttentionChoices(QObject):
    """The choosing widgets of the Attention panel (laid out by :meth:`lay_out`), and their state as a value."""

    changed = Signal()  # a choice changed: the map is drawn again
    pair_asked = Signal()  # Show (or Return in a field) with a pair typed

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.family = ENCODER_DECODER  # the family whose kinds of attention are offered (set_family)
        self.layer_counts: tuple[int, int] | None = None  # the model's encoder and decoder layers (set_model)
        self.source = named(QComboBox(), "attention_source_combo")
        for key, _ in SOURCES:
            self.source.addItem("", key)
        self.kind = named(QComboBox(), "attention_kind_combo")
        for key, _ in kinds_of(self.family):
            self.kind.addItem("", key)
        self.family_help = HelpBox(self.family.help_keys["family"], label=self.family.labels["attention"])
        for combo in (self.source, self.kind):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            combo.setMinimumWidth(150)
        self.layer = named(QSpinBox(), "attention_layer_spin")
        self.head = named(QSpinBox(), "attention_head_spin")
        self.layer.setRange(1, 1)
        self.head.setRange(1, 1)
        self.average = named(QCheckBox(), "attention_average_check")
        self.all_heads = named(QCheckBox(), "attention_all_heads_check")
        self.stretch = named(QCheckBox(), "attention_stretch_check")
        self.pair_src = named(QLineEdit(), "attention_src_input")
        self.pair_tgt = named(QLineEdit(), "attention_tgt_input")
        self.pair_button = named(QPushButton(), "attention_show_button")
        self.row_labels = {k: QLabel() for k in ("show", "kind", "layer", "head", "src", "tgt")}
        self._connect()

    def _connect(self) -> None:
        self.source.currentIndexChanged.connect(self.changed)
        self.kind.currentIndexChanged.connect(self._on_kind)
        for spin in (self.layer, self.head):
            spin.valueChanged.connect(self.changed)
        for check in (self.average, self.all_heads, self.stretch):
            check.toggled.connect(self.changed)
        self.pair_button.clicked.connect(self._on_pair)
        self.pair_src.returnPressed.connect(self._on_pair)
        self.pair_tgt.returnPressed.connect(self._on_pair)

    def lay_out(self, controls: QVBoxLayout) -> None:
        """The source and kind row, the layer and head row, and the pair's row (shown for a typed pair)."""
        show_row = QHBoxLayout()
        pick = QHBoxLayout()
        for row, key, w in (
            (show_row, "show", self.source),
            (show_row, "kind", self.kind),
            (pick, "layer", self.layer),
            (pick, "head", self.head),
        ):
            row.addWidget(self.row_labels[key])
            row.addWidget(w)
        for check in (self.average, self.all_heads, self.stretch):
            pick.addWidget(check)
        show_row.addStretch(1)
        pick.addStretch(1)
        pick.addWidget(self.family_help)  # the row with room to spare: its name shows on a laptop screen
        pick.setSpacing(4)  # the panel fits beside the decoding panel on a 1024-px screen
        self.pair_row = QWidget()
        pair = QHBoxLayout(self.pair_row)
        for key, line in (("src", self.pair_src), ("tgt", self.pair_tgt)):
            pair.addWidget(self.row_labels[key])
            pair.addWidget(line, 1)
        pair.addWidget(self.pair_button)
        controls.addLayout(show_row)
        controls.addLayout(pick)
        controls.addWidget(self.pair_row)

    def retranslate(self) -> None:
        labels = self.family.labels
        for i, (key, text) in enumerate(SOURCES):
            self.source.setItemText(i, tr(labels.get(f"source:{key}", text)))
        for i, (_, text) in enumerate(kinds_of(self.family)):
            self.kind.setItemText(i, tr(text))
        src, tgt, placeholder = (labels.get(key, text) for key, text in PAIR_FIELDS.items())
        names = {**ROW_NAMES, "src": src, "tgt": tgt}
        for key, label in self.row_labels.items():
            label.setText(tr(names[key]) if names[key] else "")
        self.average.setText(tr("Average over heads"))
        self.all_heads.setText(tr("All heads"))
        self.stretch.setText(tr("Stretch colours"))
        self.stretch.setToolTip(tr("Colour scale from 0 to the largest weight shown, instead of 0 to 1"))
        self.pair_tgt.setPlaceholderText(tr(placeholder) if placeholder else "")
        self.pair_button.setText(tr("Show"))
        self.family_help.retranslate()

    def set_family(self, family: FamilySpec) -> None:
        """Offer the kinds of attention of ``family``; the kind shown stays when the family has it (the caller
        retranslates). A family with a decoder is shown a pair (what the decoder reads after the source: a
        translation, or a continuation), an encoder-only one a text."""
        self.family = family
        current = self.kind.currentData()
        self.kind.blockSignals(True)
        self.kind.clear()
        for key, _ in kinds_of(family):
            self.kind.addItem("", key)
        self.kind.setCurrentIndex(max(0, self.kind.findData(current)))
        self.kind.blockSignals(False)
        self.pair_tgt.setVisible("decoder" in family.stacks)
        self.row_labels["tgt"].setVisible("decoder" in family.stacks)
        self.family_help.set_topic(family.help_keys["family"], family.labels["attention"])

    def set_model(self, n_encoder_layers: int, n_decoder_layers: int, n_heads: int) -> None:
        """The layers and heads a model has (the layer box's range then follows the kind shown: fit_layers)."""
        self.layer_counts = (n_encoder_layers, n_decoder_layers)
        self.layer.setMaximum(max(n_encoder_layers, n_decoder_layers))
        self.head.setMaximum(n_heads)

    def fit_layers(self) -> None:
        """The layer box counts the layers of the stack the kind shown is in."""
        if self.layer_counts is not None:
            encoder, decoder = self.layer_counts
            layers = encoder if self.kind.currentData() == "encoder" else decoder
            if layers != self.layer.maximum():  # the same maximum again re-lays out the window (each redraw)
                self.layer.setMaximum(layers)

    def enable(self, maps: bool) -> None:
        """The kind, layer, head and colour choices are the maps' (``maps``: the map's tab or another that draws
        maps; the Router tab has a layer choice of its own)."""
        for w in (self.kind, self.layer, self.all_heads, self.stretch):
            w.setEnabled(maps)
        self.average.setEnabled(maps and not self.all_heads.isChecked())  # the grid shows every head
        self.head.setEnabled(maps and not self.average.isChecked() and not self.all_heads.isChecked())

    def _on_kind(self, index: int) -> None:
        if index < 0 and self.kind.count():  # asked for a kind this family lacks: its first kind instead
            self.kind.setCurrentIndex(0)
            return
        self.changed.emit()

    def _on_pair(self) -> None:
        if self.pair_src.text().strip():
            self.pair_asked.emit()

    # -- the state as a value --------------------------------------------------------------------------------
    def view(self) -> AttentionView:
        return AttentionView(
            source=str(self.source.currentData()),
            kind=str(self.kind.currentData()),
            layer=self.layer.value(),
            head=self.head.value(),
            average=self.average.isChecked(),
            all_heads=self.all_heads.isChecked(),
            stretch=self.stretch.isChecked(),
        )

    def show_view(self, view: AttentionView) -> None:
        """Every choice as ``view`` says, then one ``changed`` (nothing when it is shown already). A kind the family
        lacks shows its first kind; a layer or head past the model's shows its last."""
        if view == self.view():
            return
        widgets = (self.source, self.kind, self.layer, self.head, self.average, self.all_heads, self.stretch)
        for w in widgets:
            w.blockSignals(True)
        if self.source.findData(view.source) >= 0:
            self.source.setCurrentIndex(self.source.findData(view.source))
        self.kind.setCurrentIndex(max(0, self.kind.findData(view.kind)))
        self.fit_layers()  # the range of the kind's stack before its layer is set
        self.layer.setValue(view.layer)
        self.head.setValue(view.head)
        self.average.setChecked(view.average)
        self.all_heads.setChecked(view.all_heads)
        self.stretch.setChecked(view.stretch)
        for w in widgets:
            w.blockSignals(False)
        self.changed.emit()
