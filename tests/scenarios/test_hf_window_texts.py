"""Hugging Face folders in the window, as a person meets them: BERT's own ``[MASK]`` is a mask, a Marian folder
opens with a sentence to translate, and GPT-2's byte-level pieces with a leading space are written one way in
the chips, the attention map and the candidates."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("transformers")

from PySide6.QtCore import Qt  # noqa: E402

from explorer.widgets.token_strip import shown_piece  # noqa: E402
from tests.hf_folders import bert_folder, gpt2_folder, marian_folder  # noqa: E402


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf-texts")
    return {"gpt2": gpt2_folder(root), "bert": bert_folder(root), "marian": marian_folder(root)}


def opened(qtbot, make_window, folder):
    window = make_window(open_path=str(folder))
    window.show()
    window.resize(1366, 768 - 70)
    d = window.decoding
    qtbot.waitUntil(lambda: d.info is not None and d.info.model_origin is not None, timeout=60000)
    return window


@pytest.mark.parametrize("typed", ["i read a [MASK] yesterday .", "i read a <mask> yesterday ."])
def test_a_bert_folder_fills_its_own_mask_token_and_ours(make_window, qtbot, folders, typed):
    window = opened(qtbot, make_window, folders["bert"])
    view = window.decoding.fill_view
    assert "[MASK]" in view.input.placeholderText()  # the model's own mask token is offered
    view.input.setText(typed)
    qtbot.keyClick(view.input, Qt.Key_Return)
    qtbot.waitUntil(lambda: view.view is not None or view.message.isVisibleTo(view), timeout=20000)
    assert view.view is not None, view.message.text()
    assert len(view.view.predictions) == 1 and view.charts[0].isVisibleTo(view)
    assert "[MASK]" in view.chips.tokens


def test_a_marian_folder_opens_with_a_sentence(make_window, qtbot, folders):
    window = opened(qtbot, make_window, folders["marian"])
    qtbot.waitUntil(lambda: bool(window.decoding.input.text()), timeout=20000)


def test_the_gpt2_folder_and_the_bert_folder_open_with_a_sentence(make_window, qtbot, folders):
    window = opened(qtbot, make_window, folders["gpt2"])
    qtbot.waitUntil(lambda: bool(window.decoding.input.text()), timeout=20000)
    window = opened(qtbot, make_window, folders["bert"])
    qtbot.waitUntil(lambda: bool(window.decoding.fill_view.input.text()), timeout=20000)


def test_shown_piece_writes_spaces_and_invisible_characters_one_way():
    assert shown_piece(" the") == "␣the" and shown_piece(" ") == "␣" and shown_piece("") == "∅"
    assert shown_piece("\n") == "↵" and shown_piece("\t") == "⇥" and shown_piece("<eos>") == "<eos>"
    assert shown_piece("\x1e") == "␞"  # a byte-level piece of a control character: not an empty label


def test_gpt2_pieces_with_a_leading_space_are_written_one_way(make_window, qtbot, folders):
    window = opened(qtbot, make_window, folders["gpt2"])
    d, a = window.decoding, window.attention
    d.input.setText("He plays")
    d.translate_button.click()
    qtbot.waitUntil(lambda: d.view is not None and not d.waiting, timeout=20000)
    d.step_button.click()
    qtbot.waitUntil(lambda: not d.waiting and d.view.position == 1, timeout=20000)
    qtbot.waitUntil(lambda: a.current()[0] is d.view.inspection, timeout=10000)
    pieces = list(d.view.source_tokens)
    assert any(p.startswith(" ") for p in pieces), pieces  # the engine's pieces carry their space
    chips, rows, cols = [d.chips._shown(t) for t in d.chips.tokens], a.heatmap.rows, a.heatmap.cols
    assert chips == [shown_piece(p) for p in pieces]
    assert [shown_piece(p) for p in pieces] == cols[1 : len(pieces) + 1]  # after <|endoftext|>
    ticks = [t for _, t in d.candidates.plot.getAxis("left")._tickLevels[0]]
    for label in chips + rows + cols + d.candidates.tokens + ticks:
        assert " " not in label.replace(" → ", "") and label.strip(), repr(label)
