"""The positional-encoding lab's settings (:mod:`explorer.panels.positional`): d_model, how many positions, the
dimensions whose curves are drawn, the shift k and the position it is applied at."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QSpinBox, QVBoxLayout

from explorer.i18n import N_, tr
from explorer.widgets import named

# each setting's label, in the order of the two rows
NAMES = {"d": "d_model", "n": N_("positions"), "dims": N_("dimensions"), "k": N_("shift k"), "pos": "pos"}
ROWS = (("d", "n", "dims"), ("k", "pos"))


class LabControls:
    """The settings of the paper's sinusoids; each change calls ``on_change``."""

    def __init__(self, on_change: Callable[[], None]) -> None:
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
            w.valueChanged.connect(on_change)
        self.dims.editingFinished.connect(on_change)
        self.labels: dict[str, QLabel] = {}

    def lay_out(self) -> QVBoxLayout:
        """Two rows of labelled settings, each pushed to the left."""
        self.labels = {k: QLabel() for k in NAMES}
        fields = {"d": self.d_model, "n": self.positions, "dims": self.dims, "k": self.shift, "pos": self.pos_spin}
        controls = QVBoxLayout()
        for keys in ROWS:
            row = QHBoxLayout()
            for key in keys:
                row.addWidget(self.labels[key])
                row.addWidget(fields[key])
            row.addStretch(1)
            controls.addLayout(row)
        return controls

    def retranslate(self) -> None:
        for key, label in self.labels.items():
            label.setText(tr(NAMES[key]))

    def even_width(self) -> int:
        """d_model as the sinusoids take it: sin/cos pairs need an even width."""
        return self.d_model.value() + self.d_model.value() % 2

    def chosen_dims(self) -> list[int]:
        """The dimensions typed (below d_model; at most 8), or 0 and 1 when none is."""
        d = self.d_model.value()
        out = []
        for part in self.dims.text().replace(",", " ").split():
            if part.isdigit() and int(part) < d:
                out.append(int(part))
        return out[:8] or [0, 1]

    def follow_model(self, d_model: int) -> None:
        """A model's width, and dimensions from fast to slow: dimension 0 turns once per 2π positions, d/2 about
        once per 600."""
        d = d_model + d_model % 2
        self.d_model.blockSignals(True)
        self.d_model.setValue(d)
        self.d_model.blockSignals(False)
        self.dims.setText(" ".join(str(i - i % 2) for i in (0, d // 8, d // 4, d // 2)))
