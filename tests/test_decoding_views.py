"""The views of a decoding step (explorer/panels/decoding_views.py): the output exactly as the model wrote it, the
notes on what the model did to the input, the candidates of the node selected, the n-best list, and which views a
mode shows."""

import csv
import dataclasses

import numpy as np
import pytest
import torch

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QWidget  # noqa: E402

from explorer.panels.decoding_translation import TranslationMode  # noqa: E402
from explorer.panels.decoding_views import AT_STEP_0, StepViews  # noqa: E402
from explorer.widgets.beam_tree import node_tooltip  # noqa: E402
from explorer.widgets.token_strip import shown_piece  # noqa: E402
from model.data.tokenization import UNK_ID  # noqa: E402
from model.decoding.stepping import DecodeDriver  # noqa: E402
from model.io.snapshots import DecodeSettings, DecodeView  # noqa: E402
from tests.decoding_panels import TRICKY, decode_to_end, panel_for, rendered, run_info, visible  # noqa: E402


@pytest.fixture(scope="module")
def session(copy_session_factory):
    return copy_session_factory()  # untrained: what it writes does not matter, only that it is shown as written


def test_an_unk_the_model_writes_is_on_screen(qtbot, session):
    bias = session.model.generator.bias
    with torch.no_grad():
        saved = bias[UNK_ID].item()
        bias[UNK_ID] += 1e4  # the model now writes <unk> at every step
    try:
        _, view = decode_to_end(session, DecodeSettings("3 1 4", max_len=3))
    finally:
        with torch.no_grad():
            bias[UNK_ID] = saved
    written = session.tgt_tok.decode(view.hypotheses[0][3])
    assert written.count("<unk>") == 3  # the engine's own text, independently of the panel
    panel = panel_for(qtbot, session)
    panel.show_view(view)
    assert visible(panel.output) == f"Translation: {written}"
    panel.decoding_page.views.selected = (2, 0)
    panel.decoding_page.views.show_candidates()
    assert visible(panel.candidates.title).endswith("“<unk> <unk>”")


def test_markup_in_model_text_and_input_is_shown_literally(qtbot, session):
    pieces = list(run_info(session).tgt_pieces)
    _, view = decode_to_end(session, DecodeSettings("3 1 4", beam_size=2, max_len=4))
    for step in view.steps:  # every token the search considered is named by tricky text
        for c in step.kept + step.pruned:
            pieces[c.token] = TRICKY
    view = dataclasses.replace(
        view,
        reference=TRICKY,
        source_tokens=("<b>", "&amp;", "<unk>", "<eos>"),
        hypotheses=tuple((TRICKY, *h[1:]) for h in view.hypotheses),
    )
    panel = panel_for(qtbot, session, tuple(pieces))
    panel.mode.setCurrentIndex(panel.mode.findData("beam"))
    panel.show_view(view)
    assert visible(panel.output) == f"Translation: {TRICKY}"
    assert visible(panel.reference) == f"Reference (from the corpus): {TRICKY}"
    assert rendered(panel.chips.toolTip()) == "[<b>] [&amp;] [<unk>] [<eos>]"
    assert panel.nbest.item(0, 0).text() == TRICKY
    panel.decoding_page.views._on_node(1, 0)
    assert visible(panel.candidates.title).endswith(f"“{shown_piece(TRICKY)}”")  # its spaces as the chips write them
    qtbot.waitUntil(lambda: not panel.tree.pending)
    node = next(n for n in panel.tree.nodes if n.level == 1 and n.token != session.model_cfg.eos_id)
    assert node.piece == shown_piece(TRICKY)
    assert rendered(node_tooltip(node)).startswith(shown_piece(TRICKY) + "  ")
    panel.show_view(dataclasses.replace(view, at_end=False, focus_text="a  &lt;  b"))  # spaces kept too
    assert visible(panel.output) == "Output so far: a  &lt;  b"


def test_a_cut_input_is_announced_with_its_numbers(qtbot, session):
    words = 2500
    text = " ".join(["1"] * words)  # a 5,000-character sentence
    kept = session.model_cfg.max_len - 1  # the encoder reads max_len positions, the last is EOS
    assert kept < words
    driver = DecodeDriver(session)
    view = driver.start(DecodeSettings(text))
    assert (view.source_length, view.source_read) == (words, kept)
    panel = panel_for(qtbot, session)
    panel.show_view(view)
    assert not panel.notice.isHidden()
    assert visible(panel.notice) == (
        f"The input has {words} tokens but the model reads at most {kept}: "
        f"only the first {kept} were translated, the other {words - kept} were ignored."
    )
    panel.show_view(driver.start(DecodeSettings("1 2 3")))
    assert panel.notice.isHidden()


# -- the views alone, on views written by hand -----------------------------------------------------------------
def hand_view(**changes) -> DecodeView:
    """“the cat sat” before its first step, “cat” unknown to the model (it reads <unk>)."""
    view = DecodeView(
        decode_id=1,
        settings=DecodeSettings("the cat sat"),
        source_tokens=("the", "<unk>", "sat", "<eos>"),
        unknown=frozenset({1}),
        source_length=3,
        source_read=3,
        reference=None,
        position=0,
        at_end=False,
        steps=(),
        hypotheses=(),
        focus_tokens=(),
        focus_text="",
        inspection=None,
        weights_step=0,
        source_typed=("the", "cat", "sat", "<eos>"),
    )
    return dataclasses.replace(view, **changes)


@pytest.fixture
def views(qtbot):
    root = QWidget()
    qtbot.addWidget(root)
    views = StepViews(root, TranslationMode())
    qtbot.addWidget(views.body)
    views.pieces, views.eos_id = ("<pad>", "<bos>", "<eos>", "a", "␣b"), 2
    views.retranslate()
    return views


def test_words_the_model_does_not_know_are_named_once_each(views):
    views.show(hand_view(), knows_words=False)
    assert views.notice.text() == (
        "1 word is not in this model's vocabulary (cat): it reads it as <unk>. Try words it knows."
    )
    typed = tuple(f"w{i}" for i in range(9)) + ("w0", "<eos>")  # nine words, the first twice
    many = hand_view(source_tokens=("<unk>",) * 10 + ("<eos>",), unknown=frozenset(range(10)), source_typed=typed)
    views.show(many, knows_words=True)
    assert views.notice.text() == (
        "9 words are not in this model's vocabulary (w0, w1, w2, w3, w4, w5, w6, w7, …): it reads them as <unk>. "
        "Try words it knows — start typing for suggestions."
    )
    views.show(hand_view(unknown=frozenset()), knows_words=True)
    assert views.notice.isHidden() and views.notice.text() == ""


def test_before_the_first_step_the_views_say_what_brings_the_candidates(views):
    views.show(hand_view(reference="le chat"), knows_words=False)
    assert views.candidates.title.text() == AT_STEP_0 and views.candidates.tokens == []
    assert views.reference.text() == "Reference (from the corpus): le chat" and not views.reference.isHidden()
    assert views.sentence_label.text() == "the cat sat"
    views.clear("a new sentence")
    assert views.view is None and views.reference.isHidden() and views.sentence_label.text() == "a new sentence"
    assert views.candidates.title.text() == "Next-token candidates"


def test_the_n_best_list_holds_each_finished_hypothesis_and_exports_it(views, tmp_path):
    hypotheses = (("a b", -0.12345, -0.5678, (3, 4, 2)), ("", -1.0, -2.25, ()))
    beam = hand_view(settings=DecodeSettings("the cat sat", beam_size=2), at_end=True, hypotheses=hypotheses)
    views.show(beam, knows_words=False)
    rows = [[views.nbest.item(r, c).text() for c in range(4)] for r in range(views.nbest.rowCount())]
    assert rows == [["a b", "-0.123", "-0.568", "3"], ["∅", "-1.000", "-2.250", "0"]]  # an empty output: ∅
    views.export_nbest(str(tmp_path / "nbest.csv"))
    with open(tmp_path / "nbest.csv", encoding="utf-8") as f:
        written = list(csv.reader(f))
    assert written[0] == ["rank", "translation", "score", "log_prob", "tokens"]
    assert [r[:2] + [float(r[2]), float(r[3]), r[4]] for r in written[1:]] == [
        ["1", "a b", -0.12345, -0.5678, "3"],
        ["2", "", -1.0, -2.25, "0"],
    ]


def test_greedy_shows_the_cross_attention_beside_the_candidates_beam_search_the_tree(views):
    views.show(hand_view(), knows_words=False)
    assert views.beside.currentWidget() is views.cross_box and views.beam_box.isHidden()
    views.show(hand_view(settings=DecodeSettings("the cat sat", beam_size=3)), knows_words=False)
    assert views.beside.currentWidget() is views.nbest_box and not views.beam_box.isHidden()
    views.set_focus("tree", beam=True)  # presenter mode: the tree and the n-best list, no candidates
    assert views.candidates.isHidden() and not views.beam_box.isHidden()
    views.set_focus("candidates", beam=True)
    assert not views.candidates.isHidden() and views.beam_box.isHidden()
    assert views.beside.currentWidget() is views.cross_box


def test_a_token_is_named_by_its_piece_the_end_by_eos_and_an_unknown_id_by_its_number(views):
    assert [views.piece(t) for t in (3, 4, 2, 99, -1)] == ["a", "␣b", "<eos>", "#99", "#-1"]
    np.testing.assert_array_equal(views.cross.values, np.zeros((0, 0)))  # nothing decoded: no attention drawn
