"""The views of the decoding panel's stepping page, whichever family decodes: the sentence box with its tokens, and
the step's views — the output line, the notes on the input, the next-token candidates, the step's cross-attention,
the beam tree and the n-best list — with presenter mode's focus on one of them.

What a family shows its own way (a translator's reference and cross-attention; a decoder-only model's prompt, its
draws and the candidates it cut) is asked of the page's :class:`FamilyMode`: :mod:`explorer.panels.decoding_translation`
and :mod:`explorer.panels.decoding_generation`. The busy state while a step computes is
:mod:`explorer.panels.decoding_progress`; the page that steps is :mod:`explorer.panels.decoding_page`.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import NamedTuple, Protocol

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.i18n import N_, tr
from explorer.widgets import named
from explorer.widgets.beam_tree import BeamTreeView
from explorer.widgets.candidates import CandidateBars
from explorer.widgets.export import render_widget, titled_view, write_rows
from explorer.widgets.heatmap import Heatmap
from explorer.widgets.token_strip import TokenStrip, shown_piece
from explorer.widgets.word_completer import WordCompleter
from model.io.snapshots import DecodeSettings, DecodeStep, DecodeView

AT_STEP_0 = N_("Step 0: nothing written yet — press Step ▶ for the first token's candidates")
CROSS_TITLE = N_("This step's cross-attention")
CROSS_AT_STEP_0 = N_("Step 0: press Step ▶ to see where the first token looks")
CHART_HEIGHT = 233  # the candidates' title and a chart 200 px high with ten readable labels
PREFIX_SHOWN = 8  # pieces of the prefix named in the candidates' title
LARGE = 1.5  # the output line's type over the interface's (and, in presenter mode, the sentence's and the step's)


def large_font() -> QFont:
    """The interface's font, ``LARGE`` times its size."""
    font = QFont(QApplication.font())
    font.setPointSizeF(font.pointSizeF() * LARGE)
    return font


def prompt_help() -> str:
    """What a decoder-only model's prompt is (the tip of the prompt's label, and of the box for such a model)."""
    return tr(
        "The beginning of a text. The model continues it one token at a time, each chosen from its "
        "probabilities for the next token: the most probable (Greedy), drawn at random (Sample), or "
        "the best continuations kept side by side (Beam search)."
    )


class InputTexts(NamedTuple):
    """A family's words for the sentence box and the n-best list (translated)."""

    placeholder: str  # in the empty box
    tooltip: str  # the box's tip ("": none)
    start: str  # the button that decodes the sentence
    sample: str  # the button that takes a random sentence
    output: str  # the n-best list's first column
    nbest: str  # the n-best list's title


class FamilyMode(Protocol):
    """What a family's decoding shows its own way."""

    prompted: bool  # the sentence is a prompt to continue: its label, and Sample mode with its settings
    cross_attention: bool  # the step's cross-attention is shown beside the candidates

    def input_texts(self) -> InputTexts: ...

    def sample_tip(self) -> str:
        """The random-sentence button's tip."""
        ...

    def max_len_tip(self) -> str:
        """The maximum length's tip, with ``{n}`` for the model's length limit."""
        ...

    def sentence_of(self, source: str) -> str:
        """What of a corpus sentence goes in the box."""
        ...

    def output_line(self, view: DecodeView, text: str) -> tuple[str, str]:
        """The output line's title, and ``text`` (the output so far) as it shows it, escaped HTML."""
        ...

    def reference(self, view: DecodeView) -> str | None:
        """The corpus's translation to compare with, if there is one to show."""
        ...

    def cut_note(self) -> str:
        """What is said of an input cut to the model's length, with ``{total}``, ``{kept}`` and ``{cut}``."""
        ...

    def prefix(self, view: DecodeView, pieces: list[str]) -> list[str]:
        """What the model reads before a candidate: the pieces written so far (and what else it reads)."""
        ...

    def axis(self, step: DecodeStep | None, settings: DecodeSettings) -> str:
        """What the candidates' bars measure (at ``step``, None: no step shown)."""
        ...

    def draw_note(
        self, step: DecodeStep, settings: DecodeSettings, drawn: int | None, piece: Callable[[int], str]
    ) -> str:
        """The note under the candidates: how a sampled step's token was drawn ("": nothing to say)."""
        ...


class SentenceBox:
    """The sentence (a decoder-only model's prompt) with its buttons, the words offered as it is typed, and the
    tokens the model read of it."""

    def __init__(self) -> None:
        self.prompt_label = named(QLabel(), "decode_prompt_label")  # a decoder-only model's sentence is its prompt
        self.prompt_label.hide()
        self.input = named(QLineEdit(), "decode_input")
        self.translate_button = named(QPushButton(), "decode_start_button")
        self.sample_button = named(QPushButton(), "decode_sample_button")
        self.completer = WordCompleter(self.input)  # the model's source words, for the word being typed
        self.chips = named(TokenStrip(), "decode_source_tokens")
        self.filling = False  # the panel, not the person, is editing the box
        self.row = QHBoxLayout()  # the box and its buttons (the chips go under it)
        self.row.addWidget(self.prompt_label)
        self.row.addWidget(self.input, 1)
        self.row.addWidget(self.translate_button)
        self.row.addWidget(self.sample_button)

    def name(self, texts: InputTexts) -> None:
        self.prompt_label.setText(tr("Prompt"))
        self.prompt_label.setToolTip(prompt_help())
        self.input.setToolTip(texts.tooltip)
        self.input.setPlaceholderText(texts.placeholder)
        self.translate_button.setText(texts.start)
        self.sample_button.setText(texts.sample)

    def replace_input(self, text: str) -> None:
        """``text`` in the box as one edit, which Ctrl+Z undoes (setText would forget what was there)."""
        self.filling = True
        try:
            self.input.selectAll()
            self.input.insert(text)  # replaces the selection; "" deletes it
        finally:
            self.filling = False
        self.completer.list.hide()


class StepViews:
    """The output so far, the notes about the input, and the step's candidates, cross-attention, beam tree and
    n-best list; which of them are shown (greedy, beam search, presenter mode's focus)."""

    def __init__(self, root: QWidget, family_mode: FamilyMode) -> None:
        self.root = root  # the panel: views that appear while it shows another page are sized when it shows them
        self.family_mode = family_mode
        self.view: DecodeView | None = None  # the decoding step shown
        self.selected: tuple[int, int] | None = None  # (step, row) whose candidates are shown
        self.focus: str | None = None  # presenter mode: the part shown enlarged (see set_focus)
        self.pieces: tuple[str, ...] = ()  # the model's target pieces as the views write them (shown_piece)
        self.eos_id = 2  # the model's end of sentence
        self._share_pending = False  # the beam tree appeared while its page was hidden: its height is shared later
        self._create_labels()
        self._create_charts()
        self.body = self._lay_out_body()
        self.cross_layer.valueChanged.connect(lambda _: self.draw_cross())
        self.tree.node_clicked.connect(self._on_node)

    def _create_labels(self) -> None:
        self.output = named(QLabel(), "decode_output")
        self.output.setTextFormat(Qt.TextFormat.RichText)  # the model's text in it is escaped (_show_output)
        self.output.setWordWrap(True)
        self.output.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.output.setFont(large_font())
        self.sentence_label = named(QLabel(), "decode_sentence_label")  # presenter mode: the sentence, read-only
        self.sentence_label.setTextFormat(Qt.TextFormat.PlainText)
        self.sentence_label.setWordWrap(True)
        self.sentence_label.hide()
        self.reference = named(QLabel(), "decode_reference")
        self.reference.hide()  # shown when the sentence has a reference translation
        self.notice = named(QLabel(), "decode_notice")  # e.g. the input was cut to the model's length
        for label in (self.reference, self.notice):
            label.setTextFormat(Qt.TextFormat.PlainText)
        self.reference.setWordWrap(True)
        self.notice.setWordWrap(True)
        self.notice.setStyleSheet("color: #b26a00")
        self.notice.hide()

    def _create_charts(self) -> None:
        self.candidates = CandidateBars("candidates_plot")
        self.cross = Heatmap("step_cross_heatmap", CROSS_TITLE, row_name=N_("head"), col_name=N_("source"))
        self.cross_layer = named(QSpinBox(), "step_cross_layer_spin")
        self.cross_layer.setRange(1, 1)
        self.tree = BeamTreeView("beam_tree_view")
        self.nbest = named(QTableWidget(0, 4), "nbest_list")
        self.nbest.verticalHeader().hide()
        header = self.nbest.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)  # the scores always in view
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)  # the translation takes what is left
        self.nbest.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.nbest.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.nbest.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)

    def _lay_out_body(self) -> QSplitter:
        """Candidates beside the step's cross-attention; below them the beam tree and the n-best list."""
        cross_box = self.cross_box = QWidget()
        cross_layout = QVBoxLayout(cross_box)
        cross_layout.setContentsMargins(0, 0, 0, 0)
        layer_row = QHBoxLayout()
        self.layer_label = QLabel()
        layer_row.addWidget(self.layer_label)
        layer_row.addWidget(self.cross_layer)
        layer_row.addStretch(1)
        cross_layout.addLayout(layer_row)
        cross_layout.addWidget(self.cross, 1)
        self.beam_box, self.nbest_box = QWidget(), QWidget()
        formats = ("PNG", "SVG", "CSV")
        self.tree_title, _ = titled_view(self.beam_box, self.tree, "beam_tree", self.tree.export, formats)
        nbest = self.nbest_box, self.nbest, "n_best", self.export_nbest, formats
        self.nbest_title, self.nbest_export = titled_view(*nbest)
        self.beside = QStackedWidget()  # beside the candidates: the step's cross-attention, or the n-best list
        self.beside.addWidget(cross_box)
        self.beside.addWidget(self.nbest_box)
        middle = self.middle = QSplitter(Qt.Orientation.Horizontal)
        middle.addWidget(self.candidates)
        middle.addWidget(self.beside)
        middle.setSizes([500, 500])
        body = QSplitter(Qt.Orientation.Vertical)
        body.addWidget(middle)
        body.addWidget(self.beam_box)
        body.setHandleWidth(4)
        body.setStretchFactor(0, 0)
        body.setStretchFactor(1, 1)  # a taller window gives its height to the tree
        return body

    def retranslate(self) -> None:
        self.layer_label.setText(tr("Layer"))
        self.tree_title.setText(tr("Beam tree (★ length-normalised score)"))
        self.tree_title.setToolTip(tr("Blue: kept · grey: pruned · green: finished · orange: the best hypothesis"))
        self.candidates.retranslate()
        self.cross.retranslate()

    def name(self, texts: InputTexts) -> None:
        """The n-best list's words for the family: translations, or continuations."""
        self.nbest.setHorizontalHeaderLabels([texts.output, tr("Score"), tr("log P"), tr("Tokens")])
        self.nbest_title.setText(texts.nbest)

    def piece(self, token: int) -> str:
        """The target piece ``token`` as the views write it (a space as ␣, as the chips do)."""
        if token == self.eos_id:
            return "<eos>"
        return self.pieces[token] if 0 <= token < len(self.pieces) else f"#{token}"

    # -- a step, or nothing ------------------------------------------------------------------------------------
    def clear(self, sentence: str) -> None:
        """Nothing of the last sentence; ``sentence`` (the one in the box) in presenter mode's sentence line."""
        self.view, self.selected = None, None
        self.output.clear()
        self.reference.clear()
        self.reference.hide()
        self.say("")
        self.sentence_label.setText(sentence)
        self.tree.set_steps((), self.pieces, self.eos_id)
        self.nbest.setRowCount(0)
        self.show_candidates()
        self.draw_cross()

    def say(self, text: str) -> None:
        """A notice above the output ("": none)."""
        self.notice.setText(text)
        self.notice.setVisible(bool(text))

    def show(self, view: DecodeView, knows_words: bool) -> None:
        """A decoding step: the output, the notes on the input, the tree and n-best list (beam search), and the
        candidates and cross-attention of the last step (or of the node selected, if it is still shown)."""
        self.view = view
        beam = view.settings.beam_size > 1
        n_steps = len(view.steps)
        self._show_output(view)
        reference = self.family_mode.reference(view)
        self.reference.setText(f"{tr('Reference (from the corpus)')}: {reference}" if reference else "")
        self.reference.setVisible(bool(reference))  # no empty line taken from the views when there is none
        self._note_input(view, knows_words)
        self.sentence_label.setText(view.settings.text)
        self.apply_focus(beam)
        if beam:
            self.tree.set_steps(view.steps, self.pieces, self.eos_id)
            self._fill_nbest(view)
            if self.focus == "tree":
                self.fit_nbest()
        last = n_steps - 1
        if self.selected is None or self.selected[0] > last:
            self.selected = (last, 0) if n_steps else None
        self.show_candidates()
        self.draw_cross()

    def _show_output(self, view: DecodeView) -> None:
        """The output so far, exactly the model's text: escaped (a token such as <unk> is not markup), spaces kept."""
        done = view.at_end and bool(view.hypotheses)
        text = view.hypotheses[0][0] if done else view.focus_text
        title, shown = self.family_mode.output_line(view, text)
        self.output.setText(f"<span style='white-space:pre-wrap'>{html.escape(title)}: {shown}</span>")

    def _note_input(self, view: DecodeView, knows_words: bool) -> None:
        """What the model did to the input: words it does not know, and a cut to its length (a plain-text label).
        ``knows_words``: the model's words are offered as the person types."""
        notes = []
        unknown = list(dict.fromkeys(view.source_typed[i] for i in sorted(view.unknown) if i < len(view.source_typed)))
        if unknown:
            words = ", ".join(unknown[:8]) + (", …" if len(unknown) > 8 else "")
            one = tr("1 word is not in this model's vocabulary ({words}): it reads it as <unk>.")
            many = tr("{n} words are not in this model's vocabulary ({words}): it reads them as <unk>.")
            hint = (
                tr("Try words it knows — start typing for suggestions.") if knows_words else tr("Try words it knows.")
            )
            said = (one if len(unknown) == 1 else many).format(n=len(unknown), words=words)
            notes.append(said + ("" if said.endswith("。") else " ") + hint)  # no space after a Chinese full stop
        cut = view.source_length - view.source_read
        if cut > 0:
            notes.append(self.family_mode.cut_note().format(total=view.source_length, kept=view.source_read, cut=cut))
        self.say("\n".join(notes))

    # -- which views are shown -----------------------------------------------------------------------------------
    def set_focus(self, focus: str | None, beam: bool) -> None:
        """Presenter mode shows one part enlarged: ``"candidates"`` (the next-token chart and this step's
        cross-attention) or ``"tree"`` (the beam tree and the n-best list); None shows what the mode needs."""
        self.focus = focus
        self.apply_focus(beam)
        if focus == "tree":
            self.fit_nbest()

    def fit_nbest(self) -> None:
        """The tree's view (presenter mode): the n-best list above the tree only as tall as its rows — its header and
        one row while no hypothesis has finished —, at most a third; the tree gets the rest."""
        table = self.nbest
        rows = max(1, table.rowCount()) * table.verticalHeader().defaultSectionSize()
        head = max(self.nbest_title.sizeHint().height(), self.nbest_export.sizeHint().height())  # its title row
        needed = head + table.horizontalHeader().sizeHint().height() + rows + 2 * table.frameWidth()
        height = sum(self.body.sizes()) or self.body.height()
        top = min(needed, height // 3)
        self.body.setSizes([top, height - top])

    def apply_focus(self, beam: bool) -> None:
        """Greedy: the candidates beside the step's cross-attention. Beam search: the candidates beside the
        n-best list, the beam tree below them (the attention panel shows the cross-attention). A model without
        cross-attention (decoder-only): its candidates take the whole width."""
        tree = self.focus == "tree" or (beam and self.focus is None)
        appears = tree and self.beam_box.isHidden()
        self.beside.setCurrentIndex(1 if tree else 0)
        for page in (self.cross_box, self.nbest_box):  # the page not shown sets no height (a stack takes its largest)
            policy = QSizePolicy.Policy.Preferred if page is self.beside.currentWidget() else QSizePolicy.Policy.Ignored
            page.setSizePolicy(policy, policy)
        self.beside.setVisible(tree or self.family_mode.cross_attention)
        self.candidates.setVisible(self.focus != "tree")
        self.beam_box.setVisible(tree)
        # the tree's share of the height, when it appears (a drag then wins); appearing on a page not shown (an
        # encoder-only model's), when that page is shown again: the splitter's sizes are known only then
        self._share_pending = tree and self.focus is None and (appears or self._share_pending)
        if self._share_pending and self.candidates.isVisibleTo(self.root):
            self._share_height()
            self._share_pending = False

    def _share_height(self) -> None:
        """The candidates get what their chart needs (more on a tall screen), the beam tree the rest: it
        needs the room, a row per hypothesis kept."""
        height = sum(self.body.sizes())
        chart = max(CHART_HEIGHT, int(0.45 * height))
        self.body.setSizes([chart, max(height - chart, 0)])

    # -- the n-best list -------------------------------------------------------------------------------------------
    def export_nbest(self, path: str) -> None:
        if path.lower().endswith(".csv"):
            hyps = self.view.hypotheses if self.view else ()
            write_rows(
                path,
                ["rank", "translation", "score", "log_prob", "tokens"],
                [[i + 1, t, s, lp, len(ids)] for i, (t, s, lp, ids) in enumerate(hyps)],
            )
        else:
            render_widget(self.nbest, path)

    def _fill_nbest(self, view: DecodeView) -> None:
        self.nbest.setRowCount(len(view.hypotheses))
        for r, (text, score, log_prob, tokens) in enumerate(view.hypotheses):
            for c, value in enumerate((text or "∅", f"{score:.3f}", f"{log_prob:.3f}", str(len(tokens)))):
                item = QTableWidgetItem(value)
                if c:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.nbest.setItem(r, c, item)

    # -- the candidates and the cross-attention of a step ----------------------------------------------------------
    def _on_node(self, level: int, row: int) -> None:
        """A node was clicked: show the candidates of its prefix (they are computed at step ``level``)."""
        if self.view is None:
            return
        if level >= len(self.view.steps):
            self.candidates.set_title(tr("Not expanded yet: press Step to see its candidates"))
            self.candidates.set_data([], np.zeros(0), set())
            return
        self.selected = (level, row)
        self.show_candidates()
        self.draw_cross()

    def show_candidates(self) -> None:
        settings = self.view.settings if self.view is not None else DecodeSettings("")
        if self.view is None or self.selected is None:
            at_start = self.view is not None and not self.view.steps  # step 0: say what brings the candidates
            self.candidates.set_title(AT_STEP_0 if at_start else N_("Next-token candidates"))
            self.candidates.set_data([], np.zeros(0), set())
            self.candidates.set_axis_label(self.family_mode.axis(None, settings))
            self.candidates.set_note("")
            return
        step_index, row = self.selected
        step = self.view.steps[step_index]
        tokens = [int(t) for t in step.top_tokens[row]]
        kept = {(c.parent, c.token) for c in step.kept}
        chosen = {i for i, t in enumerate(tokens) if (row, t) in kept}
        pieces = self.family_mode.prefix(self.view, [self.piece(t) for t in step.prefixes[row]])
        # the last pieces: the title stays one line (the whole prefix is in the output line above)
        prefix = " ".join((["…"] if len(pieces) > PREFIX_SHOWN else []) + pieces[-PREFIX_SHOWN:]) or "<bos>"
        self.candidates.set_title(tr("Step {n}: after “{prefix}”").format(n=step_index + 1, prefix=prefix))
        cut = [] if step.cut is None else [i for i, removed in enumerate(step.cut[row]) if removed]
        # the token drawn: the one the step kept (a sampled step has one prefix and keeps one token)
        drawn = tokens.index(step.kept[0].token) if step.sampled and step.kept[0].token in tokens else None
        self.candidates.set_data([self.piece(t) for t in tokens], step.top_probs[row], chosen, cut, drawn)
        self.candidates.set_axis_label(self.family_mode.axis(step, settings))
        self.candidates.set_note(self.family_mode.draw_note(step, settings, drawn, self.piece))
        if settings.beam_size > 1:
            self.tree.select(step_index, row)

    def draw_cross(self) -> None:
        self.cross.set_title(CROSS_AT_STEP_0 if self.view is not None and not self.view.steps else CROSS_TITLE)
        if self.view is None or self.selected is None or not self.family_mode.cross_attention:
            self.cross.set_data(np.zeros((0, 0)), [], [])
            return
        step_index, row = self.selected
        cross = self.view.steps[step_index].cross_attention  # [n_live, layers, heads, S]
        if cross is None:  # a step recorded without its attention: nothing to draw
            self.cross.set_data(np.zeros((0, 0)), [], [])
            return
        weights = cross[row, self.cross_layer.value() - 1]  # [heads, S]
        heads = [f"{tr('head')} {h + 1}" for h in range(weights.shape[0])]
        self.cross.set_data(weights, heads, [shown_piece(t) for t in self.view.source_tokens])
