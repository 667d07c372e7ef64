"""Token chips (explorer/widgets/token_strip.py): an unknown piece shown as it was typed and said to read <unk>,
tooltips that quote tokens literally, the tint of a weight per chip, rows that wrap, and a click on a chip."""

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QEvent, QPoint, Qt  # noqa: E402
from PySide6.QtGui import QColor, QHelpEvent  # noqa: E402
from PySide6.QtWidgets import QApplication, QToolTip  # noqa: E402

from explorer.pieces import shown_piece, shown_pieces  # noqa: E402
from explorer.widgets.token_strip import TokenStrip, plain_tooltip  # noqa: E402


@pytest.fixture
def strip(qtbot):
    strip = TokenStrip()
    qtbot.addWidget(strip)
    strip.resize(400, 60)
    strip.show()
    qtbot.waitExposed(strip)
    return strip


def chip_centre(strip: TokenStrip, index: int) -> QPoint:
    """The middle of chip ``index``, found by asking the strip what is under each point of its first row."""
    xs = [x for x in range(strip.width()) if strip.chip_at(QPoint(x, 5)) == index]
    return QPoint((xs[0] + xs[-1]) // 2, 5)


def tooltip_at(strip: TokenStrip, pos: QPoint) -> str:
    QApplication.sendEvent(strip, QHelpEvent(QEvent.Type.ToolTip, pos, strip.mapToGlobal(pos)))
    return QToolTip.text() if QToolTip.isVisible() else ""


def test_a_vocabulary_is_shown_once_per_tuple_of_pieces():
    """The engine sends the same tuple for each checkpoint of a followed run: the panels share one shown copy."""
    pieces = ("▁the", " cat", "\n", "")
    shown = shown_pieces(pieces)
    assert shown == tuple(map(shown_piece, pieces)) == ("▁the", "␣cat", "↵", "∅")
    assert shown_pieces(pieces) is shown
    assert shown_pieces(tuple(list(pieces))) == shown  # another tuple (another tokenizer): worked out for itself


def test_a_tooltip_shows_its_text_literally():
    assert plain_tooltip("[<b>] & [&amp;]") == "<p style='white-space:pre'>[&lt;b&gt;] &amp; [&amp;amp;]</p>"


def test_an_unknown_piece_shows_what_was_typed_and_says_it_reads_unk(strip):
    strip.set_tokens(["the", "<unk>", "sat", "<eos>"], highlight={1}, typed=["the", "cat", "sat", "<eos>"])
    assert strip.tokens == ["the", "cat", "sat", "<eos>"] and strip.pieces == ["the", "<unk>", "sat", "<eos>"]
    assert strip.toolTip() == plain_tooltip("[the] [<unk>] [sat] [<eos>]")  # the strip's: what the model reads
    said = tooltip_at(strip, chip_centre(strip, 1))
    assert said == plain_tooltip("“cat” is not in the model's vocabulary: it reads <unk>")


def test_a_weight_tints_its_chip_red_or_blue_the_strongest_at_four_fifths(strip):
    strip.set_tokens(["a", "b", "c", "d"])
    strip.set_weights([2.0, -1.0, float("nan")], "attribution")
    # red (214, 96, 77) at 0.8 of the way from white; blue (67, 147, 195) at 0.8 × 1/2 = 0.4 of the way
    assert strip.tint(0) == QColor(round(255 - 0.8 * 41), round(255 - 0.8 * 159), round(255 - 0.8 * 178))
    assert strip.tint(1) == QColor(round(255 - 0.4 * 188), round(255 - 0.4 * 108), round(255 - 0.4 * 60))
    assert strip.tint(2) is None and strip.tint(3) is None  # no value (NaN, or none given): untinted
    assert tooltip_at(strip, chip_centre(strip, 1)) == plain_tooltip("“b”: -1.0000\nattribution")
    strip.set_weights(None, "attribution")
    assert strip.tint(0) is None and strip.legend == ""


def test_chips_wrap_to_more_rows_when_narrow_and_a_legend_takes_a_line(strip):
    strip.set_tokens([f"token{i}" for i in range(12)])
    one_row = strip.heightForWidth(5000)
    assert strip.heightForWidth(120) > 2 * one_row  # several rows
    strip.set_weights([1.0] * 12, "what the tint means")
    assert strip.heightForWidth(5000) > one_row


def test_a_click_on_a_chip_says_which_only_when_chips_are_clickable(qtbot, strip):
    strip.set_tokens(["<bos>", "the", "cat", "<eos>"])
    clicked: list[int] = []
    strip.chip_clicked.connect(clicked.append)
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=chip_centre(strip, 2))
    assert clicked == []
    strip.set_clickable(True)
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=chip_centre(strip, 2))
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=QPoint(395, 55))  # beside the chips: nothing
    assert clicked == [2] and strip.cursor().shape() == Qt.CursorShape.PointingHandCursor


def test_a_long_texts_chips_take_a_few_lines_its_end_first_and_the_wheel_scrolls(qtbot, strip):
    """A 512-token prompt's chips took 20-odd lines and made the window taller than the screen: at most MAX_LINES
    lines are shown, the text's end first (where the model reads on); the wheel scrolls, a click names the chip
    under it, and at either end the wheel is left to what holds the strip."""
    from PySide6.QtCore import QPointF
    from PySide6.QtGui import QWheelEvent

    from explorer.widgets.token_strip import MAX_LINES

    strip.set_tokens([f"t{i}" for i in range(512)])
    strip.resize(400, strip.heightForWidth(400))
    lines, line = strip.lines(), strip._chip_height() + strip.GAP
    assert lines > MAX_LINES and strip.heightForWidth(400) <= MAX_LINES * line + 2
    assert strip.top_line() == lines - MAX_LINES
    assert strip.chip_at(QPoint(3, int(strip._band()) + 3)) is None  # below the lines shown: no chip
    first_shown = strip.chip_at(QPoint(3, 5))
    assert first_shown is not None and strip._layout(400)[first_shown].y() == strip.top_line() * line

    def wheel(notches: int) -> bool:
        event = QWheelEvent(
            QPointF(5, 5),
            QPointF(strip.mapToGlobal(QPoint(5, 5))),
            QPoint(),
            QPoint(0, 120 * notches),
            Qt.MouseButton.NoButton,
            Qt.KeyboardModifier.NoModifier,
            Qt.ScrollPhase.NoScrollPhase,
            False,
        )
        QApplication.sendEvent(strip, event)
        return event.isAccepted()

    assert not wheel(-1)  # at the end already: the wheel goes on to the panel
    assert wheel(3) and strip.top_line() == lines - MAX_LINES - 3
    assert strip.chip_at(QPoint(3, 5)) < first_shown  # earlier chips under the same point
    for _ in range(lines):
        wheel(5)
    assert strip.top_line() == 0 and strip.chip_at(QPoint(3, 5)) == 0 and not wheel(1)
    strip.set_tokens([f"u{i}" for i in range(512)])  # another text: its end again
    assert strip.top_line() == strip.lines() - MAX_LINES
