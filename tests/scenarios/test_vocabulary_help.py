"""Vocabulary help in the Decoding panel, with the bundled model and a real engine: unknown words are shown as
typed and named, the model's words are offered as the person types, a random test sentence is one click away,
and a new model leaves nothing of the old one's sentence on screen."""

import random

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QEvent, Qt  # noqa: E402
from PySide6.QtGui import QHelpEvent, QTextDocument  # noqa: E402
from PySide6.QtWidgets import QApplication, QToolTip  # noqa: E402

from explorer import commands as cmd  # noqa: E402
from explorer.answers import SentenceSampled  # noqa: E402
from model.data import load_corpus  # noqa: E402
from model.data.tokenization import SPECIAL_TOKENS, UNK_ID  # noqa: E402
from resources import default_model  # noqa: E402

pytestmark = pytest.mark.skipif(default_model() is None, reason="the bundled model is not built")

SENTENCE = "The cat sat on the mat."


@pytest.fixture(scope="module")
def bundled():
    from model.session import Session

    return Session.load(default_model(), device="cpu")


def opened(make_window, qtbot):
    """A window with the bundled model, its first-launch sentence on screen."""
    window = make_window(start_default=True)
    d = window.decoding
    qtbot.waitUntil(lambda: d.view is not None and d.view.settings.text == d.input.text(), timeout=30000)
    return window, d


def decode(qtbot, d, text: str) -> None:
    d.input.setFocus()
    d.input.selectAll()
    qtbot.keyClicks(d.input, text)
    qtbot.keyClick(d.input, Qt.Key_Return)
    qtbot.waitUntil(lambda: d.view is not None and d.view.settings.text == text, timeout=20000)


def test_unknown_words_are_shown_as_typed_and_named(make_window, qtbot, bundled):
    window, d = opened(make_window, qtbot)
    decode(qtbot, d, SENTENCE)
    encoded = bundled.src_tok.encode(SENTENCE)
    unknown = {i for i, t in enumerate(encoded.ids) if t == UNK_ID}
    typed = [encoded.text[a:b] for a, b in encoded.spans]
    assert unknown and len(unknown) < len(typed)  # the sentence mixes words the model knows and words it does not
    assert d.chips.highlight == unknown  # exactly the unknown pieces are marked
    assert d.chips.tokens == [*typed, "<eos>"] and "<unk>" not in d.chips.tokens  # each as the person typed it
    assert [d.chips.pieces[i] for i in sorted(unknown)] == ["<unk>"] * len(unknown)  # what the model reads
    words = list(dict.fromkeys(typed[i] for i in sorted(unknown)))
    notice = d.notice.text()
    assert d.notice.isVisibleTo(d) and f"{len(words)} words are not in this model's vocabulary" in notice
    assert f"({', '.join(words)})" in notice and "<unk>" in notice and "start typing for suggestions" in notice

    d.chips.resize(600, 60)
    i = min(unknown)
    rect = d.chips._layout(d.chips.width())[i]
    pos = rect.center().toPoint()
    QApplication.sendEvent(d.chips, QHelpEvent(QEvent.ToolTip, pos, d.chips.mapToGlobal(pos)))
    tip = QTextDocument()
    tip.setHtml(QToolTip.text())
    assert tip.toPlainText() == f"“{typed[i]}” is not in the model's vocabulary: it reads <unk>"

    decode(qtbot, d, "I like the library.")  # every word known: no notice, nothing marked
    assert not d.chips.highlight and not d.notice.isVisibleTo(d)


def test_the_model_s_words_are_offered_for_the_word_being_typed(make_window, qtbot, bundled):
    window, d = opened(make_window, qtbot)
    vocab = bundled.src_tok.hf.get_vocab()
    expected = {p for p in vocab if p not in SPECIAL_TOKENS and any(ch.isalnum() for ch in p)}
    offered = d.completer.words.stringList()
    assert set(offered) == expected and len(offered) == len(expected)
    assert offered == sorted(offered, key=str.casefold)

    shown = d.view
    d.input.setFocus()
    d.input.selectAll()
    qtbot.keyClicks(d.input, "I read a book yes")
    popup = d.completer.list
    qtbot.waitUntil(popup.isVisible, timeout=2000)
    matches = [popup.model().index(r, 0).data() for r in range(popup.model().rowCount())]
    assert matches == [w for w in offered if w.lower().startswith("yes")] == ["yesterday"]
    qtbot.keyClick(popup, Qt.Key_Down)
    qtbot.keyClick(popup, Qt.Key_Return)  # choosing a word completes it; it does not decode
    assert d.input.text() == "I read a book yesterday" and not popup.isVisible()
    assert d.view is shown and not d.waiting
    qtbot.keyClick(d.input, Qt.Key_Z, Qt.ControlModifier)
    assert d.input.text() == "I read a book yes"  # one edit, undone at once

    d.input.setCursorPosition(len("I read a bo"))  # inside a word: that word, and only it, is completed
    qtbot.keyClick(d.input, Qt.Key_Backspace)
    qtbot.keyClick(d.input, Qt.Key_Backspace)
    qtbot.keyClicks(d.input, "LI")  # case-insensitive
    qtbot.waitUntil(popup.isVisible, timeout=2000)
    assert [popup.model().index(r, 0).data() for r in range(popup.model().rowCount())] == [
        w for w in offered if w.lower().startswith("li")
    ]
    qtbot.keyClick(popup, Qt.Key_Tab)  # Tab: the first match
    first = next(w for w in offered if w.lower().startswith("li"))
    assert d.input.text() == f"I read a {first} yes"


def test_a_random_test_sentence_is_one_click_away(make_window, qtbot, bundled):
    window, d = opened(make_window, qtbot)
    test_sources = {s for s, _ in bundled.corpus.test}
    first = d.view.decode_id
    qtbot.mouseClick(d.sample_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: d.view is not None and d.view.decode_id != first, timeout=20000)
    text = d.input.text()
    assert text in test_sources and d.view.settings.text == text
    assert d.view.position == 0 and d.view.steps == () and not d.view.at_end  # ready to step
    assert d.view.reference == bundled.corpus.reference_for(text) and d.view.reference in d.reference.text()
    assert "test split" in d.sample_button.toolTip() and "validation" not in d.sample_button.toolTip()


def test_a_corpus_without_a_test_split_gives_another_and_says_so(qtbot, copy_session_factory):
    session = copy_session_factory()
    valid = {s for s, _ in session.corpus.valid}
    session.corpus.test.clear()
    source, reference, split = session.sample_source("test", random.Random(0))
    assert split == "valid" and source in valid and reference == session.corpus.reference_for(source)

    from types import SimpleNamespace

    from explorer.panels.decoding import DecodingPanel

    d = DecodingPanel()
    qtbot.addWidget(d)
    d.on_run(
        SimpleNamespace(
            run_id=7,
            model_config=session.model_cfg,
            src_words=session.source_words(),
            weights_step=0,
            tgt_pieces=(),
            model_origin=None,
        )
    )
    d.sample = (41, False)
    d._on_sentence_sampled(SentenceSampled(41, 7, "test", split, source, reference))
    assert d.input.text() == source and "validation split" in d.sample_button.toolTip()
    d.sample = (42, True)
    d._on_sentence_sampled(SentenceSampled(42, 7, "test", error="data.tsv: no such file"))
    assert "cannot be read (data.tsv: no such file)" in d.notice.text() and d.notice.isVisibleTo(d)
    assert d.input.text() == source  # the person's box is left as it was


def copy_spec():
    from explorer.commands import NewModelSpec
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.training.trainer import train_config_for

    data = DataSpec(task="copy", n_train=300, n_valid=20, n_test=20, length=6, min_length=3, alphabet=6)
    return NewModelSpec(data, "tiny", {}, train_config_for("tiny", eval_every=0, batch_size=16), TokenizerSpec("word"))


def on_screen(d):
    """Everything the panel shows of a sentence."""
    return {
        "input": d.input.text(),
        "chips": list(d.chips.tokens),
        "output": d.output.text(),
        "reference": d.reference.text(),
        "notice": d.notice.text(),
        "step": d.step_label.text(),
        "candidates": list(d.candidates.tokens),
        "heatmap": d.cross.values.copy(),
        "heatmap_cols": list(d.cross.cols),
        "tree": [(n.level, n.piece) for n in d.tree.nodes],
        "nbest": d.nbest.rowCount(),
    }


def test_a_new_model_shows_nothing_of_the_old_one(make_window, qtbot):
    window, d = opened(make_window, qtbot)
    d.mode.setCurrentIndex(d.mode.findData("beam"))
    decode(qtbot, d, SENTENCE)
    qtbot.mouseClick(d.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: d.view.at_end, timeout=20000)
    old = on_screen(d)
    assert old["chips"] and old["candidates"] and old["heatmap"].size and len(old["tree"]) > 1 and old["nbest"]
    old_run = d.info.run_id

    at_arrival = []  # what the panel shows the moment the new model is announced (the window's slot runs first)
    window.engine.run_described.connect(lambda info: at_arrival.append(on_screen(d)))
    window.client.send(cmd.NewModel(copy_spec()))
    qtbot.waitUntil(lambda: d.info.run_id != old_run and d.view is not None, timeout=30000)
    cleared = at_arrival[0]
    assert cleared["input"] == "" and cleared["chips"] == [] and cleared["candidates"] == []
    assert cleared["output"] == cleared["reference"] == cleared["notice"] == cleared["step"] == ""
    assert cleared["heatmap"].size == 0 and cleared["nbest"] == 0 and len(cleared["tree"]) == 1  # the root only

    # the new model's own test sentence, decoded (the old sentence's decoding was showing), at step 0
    text = d.input.text()
    assert text in {s for s, _ in load_corpus(copy_spec().data).test}
    assert d.view.settings.text == text and d.view.position == 0
    now = on_screen(d)
    assert now["chips"] == [*text.split(), "<eos>"] and not set(now["chips"]) & set(old["chips"][:-1])
    assert now["candidates"] == [] and now["heatmap"].size == 0 and len(now["tree"]) == 1  # nothing stepped yet
    for key in ("output", "reference", "notice"):
        assert "cat" not in now[key] and "猫" not in now[key]
    qtbot.mouseClick(d.step_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: d.view.position == 1, timeout=20000)
    stepped = on_screen(d)
    pieces = set(d.info.tgt_pieces) | {"<eos>"}
    assert stepped["heatmap_cols"] == now["chips"] and stepped["heatmap"].shape[1] == len(now["chips"])
    assert stepped["candidates"] and set(stepped["candidates"]) <= pieces
    assert len(stepped["tree"]) > 1 and {piece for level, piece in stepped["tree"] if level > 0} <= pieces

    d.input.setFocus()
    qtbot.keyClick(d.input, Qt.Key_Z, Qt.ControlModifier)  # the person's sentence is not lost
    assert d.input.text() == SENTENCE
