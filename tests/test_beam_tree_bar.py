"""The beam tree's overlay (explorer/widgets/beam_tree_bar.py): the best path's key and Fit, −, + and Show pruned,
named, in the interface's language, over the bottom-right corner of the tree."""

import pytest

pytest.importorskip("pytestqt")

from explorer.i18n import language  # noqa: E402
from explorer.widgets.beam_tree_bar import ZoomBar  # noqa: E402
from explorer.widgets.beam_tree_items import ACCENT  # noqa: E402


def test_the_zoom_bar_names_its_buttons_and_sits_in_the_corner(qtbot):
    from PySide6.QtCore import QRect
    from PySide6.QtWidgets import QWidget

    from explorer.widgets.beam_tree_bar import ZoomBar

    view = QWidget()
    qtbot.addWidget(view)
    bar = ZoomBar(view)
    assert list(bar.buttons) == ["fit", "zoom_out", "zoom_in", "show_pruned"]
    assert [b.objectName() for b in bar.buttons.values()] == [f"beam_tree_{k}" for k in bar.buttons]
    assert [b.isCheckable() for b in bar.buttons.values()] == [False, False, False, True]
    bar.retranslate()
    assert [b.text() for b in bar.buttons.values()] == ["Fit", "−", "+", "Show pruned"] and "best" in bar.legend.text()
    area = QRect(0, 0, 500, 300)
    bar.place(area)
    geometry = bar.widget.geometry()
    assert area.contains(geometry) and area.right() - geometry.right() == area.bottom() - geometry.bottom() == 7


def test_the_key_is_drawn_in_the_best_paths_colour_and_the_bar_speaks_chinese(qtbot):
    from PySide6.QtWidgets import QWidget

    view = QWidget()
    qtbot.addWidget(view)
    bar = ZoomBar(view)
    try:
        language.set("zh")
        bar.retranslate()
        assert bar.buttons["fit"].text() == "适应窗口" and bar.buttons["show_pruned"].text() == "显示剪除项"
    finally:
        language.set("en")
    bar.retranslate()
    assert f"color:{ACCENT}" in bar.legend.text()  # the key's stroke: the colour the best path is drawn in
    assert all(button.toolTip() for button in bar.buttons.values())  # each button says what it does
