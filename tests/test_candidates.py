"""The candidates' bars (explorer/widgets/candidates.py): a bar per token, most probable on top, coloured by what
the search did with it (kept, cut before a draw, the others), each labelled with its probability, the drawn one
said; a click names its bar; the CSV export holds every bar."""

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPointF  # noqa: E402
from PySide6.QtGui import QColor  # noqa: E402

from explorer.widgets.candidates import CHOSEN, OTHER, CandidateBars, cut_colour  # noqa: E402


@pytest.fixture
def bars(qtbot):
    bars = CandidateBars("test_bars")
    qtbot.addWidget(bars)
    bars.resize(500, 300)
    bars.show()
    qtbot.waitExposed(bars)
    return bars


def test_each_bar_is_coloured_by_what_the_search_did_and_labelled_with_its_probability(bars):
    bars.set_data(["the", " cat", "a", "dog"], np.array([0.5, 0.25, 0.125, 0.0625]), {0}, cut={3}, drawn=1)
    opts = bars.bars.opts
    assert list(opts["width"]) == [0.5, 0.25, 0.125, 0.0625] and list(opts["y"]) == [0, 1, 2, 3]  # best on top
    fills = [brush.color().rgba() for brush in opts["brushes"]]
    assert fills == [QColor(c).rgba() for c in (CHOSEN, OTHER, OTHER)] + [cut_colour().rgba()]
    widths = [pen.widthF() for pen in opts["pens"]]
    assert widths[1] == 3 and all(w < 3 for i, w in enumerate(widths) if i != 1)  # the drawn bar outlined
    shown = [label.text() for label in bars.value_labels if label.isVisible()]
    assert shown == ["0.500", "0.250  ◀ drawn at random", "0.125", "0.062"]
    ticks = bars.plot.getAxis("left")._tickLevels[0]
    assert [t for _, t in ticks] == ["the", "␣cat", "a", "dog"]  # a space written as ␣
    bars.set_data(["x"], np.array([1.0]), set())  # fewer bars: the other labels go
    assert [label.text() for label in bars.value_labels if label.isVisible()] == ["1.000"]


def test_a_click_on_a_bars_row_names_it(qtbot, bars):
    bars.set_data(["a", "b", "c"], np.array([0.6, 0.3, 0.1]), set())
    box = bars.plot.getViewBox()
    clicked = []
    bars.candidate_clicked.connect(lambda i, t: clicked.append((i, t)))
    for row in (0, 1, 2):
        point = box.mapViewToScene(QPointF(0.9, row))  # right of every bar's end, in its row
        assert bars.bar_at(point) == row
        bars._on_click(SimpleNamespace(scenePos=lambda point=point: point))  # what the plot's scene sends
    assert clicked == [(0, "a"), (1, "b"), (2, "c")]
    assert bars.bar_at(box.mapViewToScene(QPointF(0.5, 4))) is None  # below the last bar: no bar
    bars._on_click(SimpleNamespace(scenePos=lambda: box.mapViewToScene(QPointF(0.5, 4))))
    assert len(clicked) == 3


def test_the_note_and_title_are_plain_text_and_the_note_goes_when_empty(bars):
    bars.set_note("Grey bars were cut by <top-k>.")
    assert not bars.note.isHidden() and bars.note.text() == "Grey bars were cut by <top-k>."
    bars.set_note("")
    assert bars.note.isHidden()
    bars.set_title("Step 2: after “<b>”")
    assert bars.title.text() == "Step 2: after “<b>”" and bars.title.textFormat() == bars.note.textFormat()


def test_the_csv_export_holds_every_bar_with_its_flags(bars, tmp_path):
    bars.set_data(['say "hi"', "b", "c"], np.array([0.5, 0.25, 0.125]), {0}, cut={2}, drawn=1)
    bars.export(tmp_path / "bars.csv")
    assert (tmp_path / "bars.csv").read_text(encoding="utf-8").splitlines() == [
        "token,probability,kept,cut,drawn",
        '"say ""hi""",0.5,1,0,0',
        '"b",0.25,0,0,1',
        '"c",0.125,0,1,0',
    ]
