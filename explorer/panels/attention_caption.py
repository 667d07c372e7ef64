"""The line under the Attention panel's map: what its rows and columns are for the model's family, which sentence
and which weights drew it, and an Update button when the model has trained on since.

A map is computed once, with the weights of the moment (``Inspection.step``); training goes on without redrawing
it (a forward pass per step would slow training down). :class:`MapCaption` says so plainly — "the model is now at
step N" — and its button asks the panel that made the map to make it again (``update_asked``). The texts are plain
functions of the family's spec (the paper's words, or those its labels give), so that a test reads them without a
window.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from explorer.i18n import N_, tr
from explorer.widgets import named
from model.families.registry import FamilySpec

# what the rows and columns of each kind of map are in the paper's model (a family's spec may say it otherwise:
# "rows:<kind>")
ROWS = {
    "encoder": N_(
        "Rows: source positions (queries); columns: source positions (keys). Each row shows how one "
        "source token spreads its attention over the whole source, and sums to 1. Encoder rows "
        "predict nothing: they build the representation the decoder reads."
    ),
    "decoder_self": N_(
        "Rows: target positions, labelled “read → predicts”; columns: the target tokens read "
        "(keys); each row sums to 1. Hatched cells are masked: a position may not look at "
        "later ones."
    ),
    "cross": N_(
        "Rows: target positions, labelled “read → predicts”; columns: source positions (the "
        "encoder's output); each row sums to 1."
    ),
}
# what to do for a map of each source to appear (a family's spec may say it otherwise: "hint:<source>")
HINTS = {
    "decoding": N_("Decode a sentence in the Decoding panel; its attention appears here, step by step."),
    "pair": N_("Type a source sentence (and, if you like, a target) and press Show."),
    "probe": N_("The probe sentence's attention is recorded while the model trains."),
}
# the notes a family may word its own way ("note:greedy", "note:previous_sentence")
GREEDY_NOTE = N_("target: the model's own greedy translation")
PREVIOUS_NOTE = N_("previous sentence: the one typed now is decoded at Decode or Step ▶")


def rows_caption(kind: str, family: FamilySpec) -> str:
    """What the rows and columns of a ``kind`` map are, for ``family``."""
    return tr(family.labels.get(f"rows:{kind}", ROWS[kind]))


def empty_hint(mode: str, family: FamilySpec) -> str:
    """What to do for a map to appear, by the source chosen (``mode``) and the family."""
    return tr(family.labels.get(f"hint:{mode}", HINTS[mode]))


@dataclass(frozen=True)
class MapPlace:
    """Where the decoding panel is, for a map of its sentence."""

    decoding_open: bool = False  # decoding still going: the last decoder row has no prediction yet
    decoded: int = 0  # tokens chosen up to the decoding panel's current step
    previous_sentence: bool = False  # another sentence is typed in the decoding panel, not decoded yet


def map_notes(kind: str, mode: str, family: FamilySpec, place: MapPlace, teacher_forced: bool) -> list[str]:
    """The notes in brackets after the rows' caption: which row is outlined, whose target the map reads, and
    whether the decoding panel's sentence shown is the previous one."""
    notes = []
    decoder_rows = mode == "decoding" and kind != "encoder"
    if decoder_rows and place.decoding_open and not place.decoded:
        notes.append(tr("step 0: nothing written yet — press Step ▶ in the Decoding panel"))
    elif decoder_rows and place.decoded:
        notes.append(tr("the outlined row predicted the token chosen at the decoding panel's current step"))
    elif mode != "decoding" and not teacher_forced:
        notes.append(tr(family.labels.get("note:greedy", GREEDY_NOTE)))
    if mode == "decoding" and place.previous_sentence:
        notes.append(tr(family.labels.get("note:previous_sentence", PREVIOUS_NOTE)))
    return notes


class MapCaption(QWidget):
    """The caption under the map, with the Update button of a map drawn with older weights."""

    update_asked = Signal()  # the person wants the map drawn again with the model's current weights

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = named(QLabel(), "attention_caption")
        self.label.setWordWrap(True)
        self.update_button = named(QPushButton(), "attention_update_button")
        self.update_button.hide()
        self.update_button.clicked.connect(self.update_asked)
        self._width = -1  # the label's width its height was kept at (see _keep_height)
        self.label.installEventFilter(self)
        self.row = QHBoxLayout(self)
        self.row.setContentsMargins(0, 0, 0, 0)
        self.row.addWidget(self.label, 1)
        self.row.addWidget(self.update_button)
        self.retranslate()

    def retranslate(self) -> None:
        self.update_button.setText(tr("Update"))
        self.update_button.setToolTip(tr("Draw the map again with the model's current weights"))

    def _keep_height(self) -> None:
        """The caption keeps its tallest height at this width, two lines at least: a caption one line longer than
        the last (the first probe snapshot's, after the hint) shrank the map, which pyqtgraph then laid out and
        painted twice more (the window waited 20-30 ms), and the map jumped under the reader's eyes."""
        width = self.label.width()
        if width != self._width:  # another width: the room of what is said now
            self._width = width
            self.label.setMinimumHeight(2 * self.label.fontMetrics().lineSpacing())
        # (Qt's height for a width is never less than the minimum set; -1 for a label without text)
        self.label.setMinimumHeight(max(self.label.minimumHeight(), self.label.heightForWidth(width)))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.label and event.type() == QEvent.Type.Resize:
            self._keep_height()
        return False

    def show_caption(self, rows: str, notes: list[str], shown_step: int | None = None, now: int | None = None) -> None:
        """``rows`` and, in brackets, ``notes``; a map drawn at training step ``shown_step`` while the model is at
        step ``now`` says so first, and offers Update (None: a map that is meant to show its own step)."""
        older = shown_step is not None and now is not None and shown_step != now
        if shown_step is not None:
            said = tr("training step {n}").format(n=shown_step)
            if older:
                said += " — " + tr("the model is now at step {now}: press Update to redraw the map").format(now=now)
            notes = [said, *notes]
        self.label.setText(f"{rows}  ({' · '.join(notes)})" if notes else rows)
        self.update_button.setVisible(older)
        self._settle()

    def show_hint(self, text: str) -> None:
        self.label.setText(text)
        self.update_button.hide()
        self._settle()

    def _settle(self) -> None:
        """The caption's height kept, and its own layout done now: what holds it learns its new height at once
        (the map above is laid out with it before it is painted, explorer.widgets.heatmap), not a posted event
        for each widget up the chain, each after the map's paint."""
        self._keep_height()
        self.row.activate()
