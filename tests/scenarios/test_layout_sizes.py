"""The default layout on the screens the program meets: a 1366×768 laptop, a 1920×1080 monitor, a 1024×768
projector. The window is sized as a person's would be (the screen less a title bar and a taskbar) with a
beam-search decode on screen, and the views are measured."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRect, Qt  # noqa: E402
from PySide6.QtGui import QImage, QPainter  # noqa: E402
from PySide6.QtWidgets import QAbstractButton, QLabel, QWidget  # noqa: E402

from explorer.main_window import MainWindow  # noqa: E402

SENTENCE = "Did you read two interesting books in the library yesterday?"
CHROME = 70  # a window title bar and a taskbar


def window_on(make_window, qtbot, monkeypatch, width, height):
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (width, height)))
    window = make_window(start_default=True)
    window.show()
    window.setWindowState(Qt.WindowState.WindowNoState)  # the test screen is not the one pretended here
    window.resize(width, height - CHROME)  # as a window manager maximises it on that screen
    qtbot.waitUntil(lambda: window.decoding.view is not None, timeout=20000)
    d = window.decoding
    d.mode.setCurrentIndex(d.mode.findData("beam"))
    d.input.setText(SENTENCE)
    d.translate_button.click()  # as a person does (the welcome bar, its suggestion taken, goes)
    qtbot.waitUntil(lambda: d.view is not None and d.view.settings.text == SENTENCE and not d.waiting, timeout=10000)
    d.run_button.click()
    qtbot.waitUntil(lambda: d.view.at_end and not d.waiting, timeout=20000)
    qtbot.waitUntil(lambda: len(window.attention.heatmap.rows) == len(d.view.steps), timeout=10000)
    qtbot.wait(100)
    return window


def drawn_tick_labels(axis):
    """The labels a pyqtgraph axis draws at its current size, with their rectangles (it leaves out
    labels that would overlap)."""
    image = QImage(max(axis.width(), 1), max(axis.height(), 1), QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(rect, text) for rect, _flags, text in specs[2]] if specs else []


def assert_readable_labels(axis, expected):
    drawn = drawn_tick_labels(axis)
    assert sorted(t for _, t in drawn) == sorted(expected), "labels left out"
    rects = [r for r, _ in drawn]
    for i, a in enumerate(rects):
        assert a.height() >= 10, "unreadably small"
        for b in rects[i + 1 :]:
            assert not a.intersects(b), "labels overlap"


def view_size(plot_item):
    box = plot_item.getViewBox()
    return box.width(), box.height()


@pytest.mark.parametrize("width, height", [(1366, 768), (1920, 1080)])
def test_decoding_and_attention_side_by_side_with_room(make_window, qtbot, monkeypatch, width, height):
    window = window_on(make_window, qtbot, monkeypatch, width, height)
    d, a = window.decoding, window.attention
    # side by side: both on screen at once, neither behind a tab
    assert not window.message_bar.isVisible()
    for key in ("decoding", "attention"):
        assert not window.docks[key].visibleRegion().isEmpty(), key
    assert window.docks["decoding"].x() + window.docks["decoding"].width() <= window.docks["attention"].x()
    w, h = view_size(a.heatmap.plot)
    assert w >= 480 and h >= 300, (w, h)
    assert d.tree.width() >= 480 and d.tree.height() >= 240, d.tree.size()
    chart = d.candidates.plot  # the chart with its axes
    assert chart.width() >= 320 and chart.height() >= 200, chart.size()
    assert_readable_labels(d.candidates.plot.getAxis("left"), [t.replace(" ", "␣") for t in d.candidates.tokens])
    assert len(d.candidates.tokens) == 10
    # every row of the attention map is labelled
    assert_readable_labels(a.heatmap.plot.getAxis("left"), a.heatmap.rows)
    # the n-best scores are in view without scrolling
    table = d.nbest
    assert table.isVisible()
    right = table.horizontalHeader().sectionViewportPosition(3) + table.columnWidth(3)
    assert right <= table.viewport().width()
    assert table.item(0, 1).text() and table.columnWidth(1) >= table.fontMetrics().horizontalAdvance("-0.000")


def test_a_1024_projector_cuts_nothing_off(make_window, qtbot, monkeypatch):
    window = window_on(make_window, qtbot, monkeypatch, 1024, 768)
    hint = window.minimumSizeHint()
    assert hint.width() <= 1024 and hint.height() <= 768 - CHROME, hint
    for key in ("decoding", "attention", "training", "positional", "model", "data", "map"):
        dock = window.docks[key]
        dock.raise_()
        qtbot.wait(50)
        panel = window.panels[key]
        assert panel.width() >= panel.minimumSizeHint().width(), key
        assert panel.height() >= panel.minimumSizeHint().height(), key
        assert_inside(panel)


def assert_inside(panel: QWidget):
    """Every visible label and button of ``panel`` lies inside it, wide enough for its text."""
    area = QRect(0, 0, panel.width(), panel.height())
    for child in panel.findChildren(QWidget):
        if not child.isVisible() or not isinstance(child, (QLabel, QAbstractButton)) or not child.isVisibleTo(panel):
            continue
        top_left = child.mapTo(panel, child.rect().topLeft())
        rect = QRect(top_left, child.size())
        if child.parentWidget() is not None and child.parentWidget().inherits("QAbstractScrollArea"):
            continue
        clipped = any(p.inherits("QAbstractScrollArea") for p in ancestors(child, panel))
        if clipped:
            continue  # inside a scrolling area: reachable by scrolling
        assert area.contains(rect), (child.objectName() or type(child).__name__, rect, area)
        if isinstance(child, QAbstractButton) and child.text() and child.icon().isNull() is not False:
            needed = child.fontMetrics().horizontalAdvance(child.text().replace("&", ""))
            assert child.width() >= needed, (child.text(), child.width(), needed)


def ancestors(widget, stop):
    parent = widget.parentWidget()
    while parent is not None and parent is not stop:
        yield parent
        parent = parent.parentWidget()


def test_side_by_side_panels_fit_a_1024_screen_too(make_window, qtbot, monkeypatch):
    """A layout saved on a laptop and restored on a projector: the two panels side by side still fit."""
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (1366, 768)))
    window = make_window()
    window.show()
    hint = window.minimumSizeHint()
    assert hint.width() <= 1024 and hint.height() <= 768 - CHROME, hint
    assert Qt.DockWidgetArea.RightDockWidgetArea == window.dockWidgetArea(window.docks["attention"])
