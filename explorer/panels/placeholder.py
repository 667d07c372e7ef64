"""Panels whose views are not built yet say what they will show — they never show invented data."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from explorer.i18n import tr

PLANNED = {
    "decoding": "Step-through decoding will be here: type a sentence, then step greedy or beam search one token "
    "at a time, with the candidates' probabilities, the beam tree and each step's cross-attention.",
    "attention": "Per-head attention heatmaps will be here: encoder self-attention, masked decoder self-attention "
    "and cross-attention for every layer and head, and how they changed while the model trained.",
    "positional": "The positional-encoding lab will be here: the sinusoid curves, the encoding matrix, position "
    "similarity, the shift matrix M_k, learned tables and RoPE rotations.",
}


class PlaceholderPanel(QWidget):
    def __init__(self, key: str, parent=None):
        super().__init__(parent)
        self.key = key
        self.setObjectName(f"{key}_panel")
        self.label = QLabel(objectName=f"{key}_placeholder")
        self.label.setWordWrap(True)
        self.label.setAlignment(Qt.AlignCenter)
        self.label.setStyleSheet("color: #666; padding: 24px")
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        self.retranslate()

    def retranslate(self) -> None:
        self.label.setText(tr(PLANNED[self.key]) + "\n\n" + tr("(Not built yet.)"))
