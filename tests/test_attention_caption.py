"""The line under the Attention panel's map (explorer/panels/attention_caption.py): what its rows and columns are for
each family, what to do for a map to appear, the notes in brackets (the outlined row, whose target, the previous
sentence), and a map drawn with older weights said so, with its Update button."""

import pytest

pytest.importorskip("pytestqt")

from explorer.panels.attention_caption import (  # noqa: E402
    GREEDY_NOTE,
    HINTS,
    PREVIOUS_NOTE,
    ROWS,
    MapCaption,
    MapPlace,
    empty_hint,
    map_notes,
    rows_caption,
)
from model.families.registry import DECODER_ONLY, ENCODER_DECODER, ENCODER_ONLY, FAMILIES  # noqa: E402

STEP_0 = "step 0: nothing written yet — press Step ▶ in the Decoding panel"
OUTLINED = "the outlined row predicted the token chosen at the decoding panel's current step"


@pytest.mark.parametrize("arch", FAMILIES)
def test_the_rows_and_the_hint_are_the_familys_words_or_the_papers(english, arch):
    family = FAMILIES[arch]
    for kind in family.attention:
        assert rows_caption(kind, family) == family.labels.get(f"rows:{kind}", ROWS[kind])
    for mode in HINTS:
        assert empty_hint(mode, family) == family.labels.get(f"hint:{mode}", HINTS[mode])
    assert rows_caption("encoder", ENCODER_DECODER).startswith("Rows: source positions (queries)")
    assert "No cell is hatched" in rows_caption("encoder", ENCODER_ONLY)  # BERT's words


def test_the_notes_say_which_row_is_outlined_while_decoding(english):
    opened = MapPlace(decoding_open=True, decoded=0)
    assert map_notes("cross", "decoding", ENCODER_DECODER, opened, teacher_forced=False) == [STEP_0]
    two = MapPlace(decoding_open=True, decoded=2)
    assert map_notes("decoder_self", "decoding", ENCODER_DECODER, two, teacher_forced=False) == [OUTLINED]
    assert map_notes("encoder", "decoding", ENCODER_DECODER, two, teacher_forced=False) == []  # rows predict nothing
    assert map_notes("cross", "decoding", ENCODER_DECODER, MapPlace(), teacher_forced=False) == []


def test_the_notes_say_whose_target_a_typed_pair_reads(english):
    for mode in ("pair", "probe"):
        assert map_notes("cross", mode, ENCODER_DECODER, MapPlace(), teacher_forced=False) == [GREEDY_NOTE]
        assert map_notes("cross", mode, ENCODER_DECODER, MapPlace(), teacher_forced=True) == []
    greedy = map_notes("decoder_self", "pair", DECODER_ONLY, MapPlace(), teacher_forced=False)
    assert greedy == [DECODER_ONLY.labels["note:greedy"]]


def test_a_previous_sentence_is_said_after_the_other_notes(english):
    place = MapPlace(decoding_open=True, decoded=1, previous_sentence=True)
    assert map_notes("cross", "decoding", ENCODER_DECODER, place, teacher_forced=False) == [OUTLINED, PREVIOUS_NOTE]
    notes = map_notes("encoder", "decoding", ENCODER_ONLY, MapPlace(previous_sentence=True), teacher_forced=True)
    assert notes == [ENCODER_ONLY.labels["note:previous_sentence"]]


@pytest.fixture
def caption(qtbot):
    c = MapCaption()
    qtbot.addWidget(c)
    return c


def test_the_caption_puts_the_notes_in_brackets(caption):
    caption.show_caption("Rows: a", ["one", "two"])
    assert caption.label.text() == "Rows: a  (one · two)" and caption.update_button.isHidden()
    caption.show_caption("Rows: a", [])
    assert caption.label.text() == "Rows: a"


def test_a_map_of_older_weights_says_so_and_offers_update(caption, english, qtbot):
    caption.show_caption("Rows: a", ["one"], shown_step=40, now=40)
    assert caption.label.text() == "Rows: a  (training step 40 · one)" and caption.update_button.isHidden()
    caption.show_caption("Rows: a", ["one"], shown_step=40, now=55)
    assert caption.label.text() == (
        "Rows: a  (training step 40 — the model is now at step 55: press Update to redraw the map · one)"
    )
    assert not caption.update_button.isHidden()
    with qtbot.waitSignal(caption.update_asked, timeout=1000):
        caption.update_button.click()
    caption.show_hint("Type a sentence.")
    assert caption.label.text() == "Type a sentence." and caption.update_button.isHidden()


def test_the_caption_keeps_two_lines_and_its_tallest_height_at_one_width(qtbot):
    """The map above keeps its size as captions change: a one-line hint and the first two-line caption take the
    same room, a longer caption grows it and a shorter one after it leaves it, until the width changes."""
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    host = QWidget()  # the caption above a stretch, as under the map
    qtbot.addWidget(host)
    caption = MapCaption()
    column = QVBoxLayout(host)
    column.addWidget(caption)
    column.addStretch(1)
    host.resize(300, 400)
    host.show()
    qtbot.waitExposed(host)
    line = caption.label.fontMetrics().lineSpacing()

    def room() -> int:
        qtbot.wait(20)  # laid out
        return caption.height()

    caption.show_hint("Type a sentence.")
    hint = room()
    assert 2 * line <= hint < 3 * line
    caption.show_caption("Rows: the words that attend", ["training step 500", "one head of layer 6"])
    assert caption.label.heightForWidth(caption.label.width()) > line  # two lines of text
    assert room() == hint
    long = " · ".join(f"note {i} of a caption that wraps" for i in range(8))
    caption.show_caption("Rows: the words that attend", [long])
    tallest = room()
    assert tallest >= caption.label.heightForWidth(caption.label.width()) > 2 * line
    caption.show_hint("Type a sentence.")
    assert room() == tallest
    host.resize(900, 400)  # another width: the room of what is said now
    assert room() < tallest
