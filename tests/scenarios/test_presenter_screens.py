"""Presenter mode on the screens of a classroom, measured from the widgets (geometry and fonts, not pixels): every
text of a view in large type, the editing rows gone, the clicker's keys (auto-play's speeds, the Q·K explainer's
queries), nothing clipped at 1366×768 and 1024×768, the n-best list's height, the bars' probabilities and the
small plots' legends."""

import re

import numpy as np
import pytest

pytest.importorskip("PySide6")

import pyqtgraph as pg  # noqa: E402
from PySide6.QtCore import QRect, QRectF, Qt  # noqa: E402
from PySide6.QtGui import QFontMetricsF  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import (  # noqa: E402
    QAbstractButton,
    QAbstractScrollArea,
    QApplication,
    QComboBox,
    QGraphicsSimpleTextItem,
    QGraphicsTextItem,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTabBar,
    QWidget,
)

from explorer.appearance import PRESENTER_SCALE  # noqa: E402
from explorer.i18n import language  # noqa: E402
from explorer.main_window import MainWindow  # noqa: E402
from explorer.presenter import VIEWS  # noqa: E402

SENTENCE = "Did you read two interesting books in the library yesterday?"
TEXT_WIDGETS = (QLabel, QAbstractButton, QLineEdit, QComboBox, QTabBar, QHeaderView)


def presenting(make_window, qtbot, monkeypatch, width=1366, height=768, mode="beam", steps=4):
    """The bundled model's window on a ``width`` × ``height`` screen, a decode ``steps`` steps in, presenting."""
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (width, height)))
    window = make_window(start_default=True)
    window.show()
    qtbot.waitUntil(lambda: window.decoding.view is not None, timeout=20000)
    d = window.decoding
    d.mode.setCurrentIndex(d.mode.findData(mode))
    d.input.setText(SENTENCE)
    d.start()
    qtbot.waitUntil(lambda: d.view is not None and d.view.settings.text == SENTENCE and not d.waiting, timeout=10000)
    present(window, qtbot, width, height)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    for _ in range(steps):
        key(window, qtbot, Qt.Key_PageDown)
    return window


def present(window, qtbot, width, height):
    """Presenter mode, full screen on a ``width`` × ``height`` screen (the test's own screen is another size)."""
    window.set_presenter(True)
    qtbot.wait(100)  # the platform's full-screen geometry first
    window.resize(width, height)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == (width, height), timeout=3000)
    qtbot.wait(100)


def key(window, qtbot, which):
    QTest.keyClick(window, which)
    qtbot.waitUntil(lambda: not window.decoding.waiting, timeout=10000)
    qtbot.wait(30)


def view(window, qtbot, number):
    key(window, qtbot, Qt.Key(Qt.Key_0 + number))
    qtbot.wait(150)  # the views lay themselves out


def shown(widget: QWidget) -> bool:
    """On screen: visible and not behind another widget (a scroll area or a plot is covered by its own viewport)."""
    seen = widget.viewport() if isinstance(widget, QAbstractScrollArea) else widget
    return widget.isVisible() and not seen.visibleRegion().isEmpty()


# -- the sizes of every text on screen ------------------------------------------------------------------------
def css_points(html: str) -> list[float]:
    return [float(p) for p in re.findall(r"font-size:\s*([\d.]+)pt", html)]


def graphics_texts(plot_view: pg.GraphicsView):
    """(what, point size) of every text a pyqtgraph view draws: tick labels, axis labels, legends, titles, the
    text items of a chart (the probabilities on the bars)."""
    for item in plot_view.scene().items():
        if not item.isVisible():
            continue
        if isinstance(item, pg.AxisItem) and item.isVisible() and item.style["showValues"]:
            font = item.style["tickFont"] or plot_view.font()
            yield f"ticks of {item.orientation} axis", font.pointSizeF()
        elif isinstance(item, QGraphicsTextItem) and item.toPlainText().strip():
            sizes = css_points(item.toHtml()) or [item.font().pointSizeF()]
            yield f"text {item.toPlainText()[:30]!r}", min(sizes)
        elif isinstance(item, QGraphicsSimpleTextItem) and item.text().strip():
            yield f"text {item.text()[:30]!r}", item.font().pointSizeF()


def texts_on_screen(window, dock_key):
    """(what, point size) of the texts of the presenter bar and the view's panel that are on screen."""
    roots = [window.presenter.bar, window.docks[dock_key]]
    for root in roots:
        for w in root.findChildren(QWidget):
            if not shown(w):
                continue
            if isinstance(w, TEXT_WIDGETS):
                text = w.text() if hasattr(w, "text") and callable(w.text) else type(w).__name__
                if text or not isinstance(w, (QLabel, QAbstractButton)):
                    yield f"{type(w).__name__} {w.objectName()} {str(text)[:30]!r}", w.font().pointSizeF()
            if isinstance(w, pg.GraphicsView):
                yield from graphics_texts(w)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_text_of_a_view_is_large(make_window, qtbot, monkeypatch, lang):
    base = QApplication.font().pointSizeF()
    language.set(lang)
    try:
        window = presenting(make_window, qtbot, monkeypatch)
        body = base * PRESENTER_SCALE
        for number, v in enumerate(VIEWS, 1):
            view(window, qtbot, number)
            if v.key == "explainer":
                qtbot.waitUntil(lambda: window.attention.explainer.explanation is not None, timeout=10000)
            small = [(what, round(pt, 1)) for what, pt in texts_on_screen(window, v.dock) if pt < body - 0.05]
            assert not small, (v.key, body, small)
        d = window.decoding
        view(window, qtbot, 2)
        assert shown(d.tree.zoom_bar) and shown(d.tree.buttons["show_pruned"])  # the tree's overlay was measured
        assert d.tree.zoom_bar.width() >= d.tree.zoom_bar.sizeHint().width()  # laid out for its larger text
    finally:
        language.set("en")


# -- what stays on screen --------------------------------------------------------------------------------------
def test_the_editing_rows_leave_the_screen_to_the_view(make_window, qtbot, monkeypatch):
    window = presenting(make_window, qtbot, monkeypatch)
    d, body = window.decoding, QApplication.font().pointSizeF()
    dock = window.docks["decoding"]
    for number in (1, 2):
        view(window, qtbot, number)
        for w in (d.input, d.chips, d.mode, d.beam_size, d.alpha, d.max_len, d.step_button, d.play_button):
            assert not w.isVisible(), (number, w.objectName())
        # the sentence (read-only) and the step count stay, in large type
        assert shown(d.sentence_label) and d.sentence_label.text() == SENTENCE
        assert shown(d.step_label) and d.step_label.text() == "Step 4"
        for label in (d.sentence_label, d.step_label):
            assert label.font().pointSizeF() >= 1.4 * body, label.objectName()
        # the views take the panel: nothing above them but the sentence, the step and the output line
        views = d.body.mapTo(dock, d.body.rect().topLeft()).y()
        assert views <= 0.12 * dock.height(), (number, views, dock.height())
    a = window.attention
    for number in (3, 6):  # the map and the explainer: the rows that choose them leave too
        view(window, qtbot, number)
        for w in (a.source, a.kind, a.layer, a.head, a.average):
            assert not w.isVisible(), (number, w.objectName())
        tabs = a.tabs.mapTo(window.docks["attention"], a.tabs.rect().topLeft()).y()
        assert tabs <= 0.05 * window.docks["attention"].height(), (number, tabs)
    view(window, qtbot, 5)
    t = window.training
    assert not t.run_list.isVisible() and not t.pause_at_step.isVisible() and not t.smooth_slider.isVisible()
    area = t.plot_scroll
    assert area.mapTo(window.docks["training"], area.rect().topLeft()).y() <= 0.1 * window.docks["training"].height()
    key(window, qtbot, Qt.Key_Escape)
    assert d.input.isVisible() and d.step_button.isVisible() and not d.sentence_label.isVisible()
    assert a.layer.isVisible() and a.kind.isVisible()
    assert t.run_list.isVisible() and d.step_label.font().pointSizeF() == pytest.approx(body / PRESENTER_SCALE)


def test_the_empty_n_best_list_leaves_the_tree_the_room(make_window, qtbot, monkeypatch):
    window = presenting(make_window, qtbot, monkeypatch, steps=1)
    d = window.decoding
    view(window, qtbot, 2)
    assert d.view.hypotheses == ()  # no hypothesis has finished yet
    row = d.nbest.verticalHeader().defaultSectionSize()
    assert d.beside.height() <= d.nbest.horizontalHeader().height() + 3 * row, d.beside.height()  # the n-best box
    assert d.tree.height() >= 0.75 * d.body.height()
    d.run_button.click()  # (hidden while presenting; run to the end)
    qtbot.waitUntil(lambda: d.view.at_end and not d.waiting, timeout=20000)
    qtbot.wait(100)
    # every hypothesis listed without scrolling, and the tree still has most of the height
    assert d.nbest.rowCount() >= 2
    last = d.nbest.visualRect(d.nbest.model().index(d.nbest.rowCount() - 1, 0))
    assert last.bottom() <= d.nbest.viewport().height()
    assert d.tree.height() >= 2 * d.nbest.height()


# -- the clicker's keys -------------------------------------------------------------------------------------
def test_plus_and_minus_step_through_a_few_speeds(make_window, qtbot, monkeypatch):
    window = presenting(make_window, qtbot, monkeypatch, steps=0)
    d = window.decoding

    def speed():
        return 1000 / d.play_timer.interval()

    assert speed() == pytest.approx(2)
    seen = []
    for _ in range(4):
        QTest.keyClick(window, Qt.Key_Plus)
        seen.append(speed())
    assert seen == pytest.approx([3, 5, 5, 5], rel=0.01)
    seen = []
    for _ in range(5):
        QTest.keyClick(window, Qt.Key_Minus)
        seen.append(speed())
    assert seen == pytest.approx([3, 2, 1, 0.5, 0.5], rel=0.01)
    assert "0.5" in window.presenter.bar.play_state.text()  # the presenter sees the speed
    QTest.keyClick(window, Qt.Key_P)
    assert d.play_button.isChecked() and d.play_timer.isActive()
    QTest.keyClick(window, Qt.Key_Escape)  # auto-play stops with presenter mode
    assert not d.play_button.isChecked() and not d.play_timer.isActive()


def test_view_6_explains_a_head_at_once_and_the_clicker_walks_its_queries(make_window, qtbot, monkeypatch):
    window = presenting(make_window, qtbot, monkeypatch)
    a = window.attention
    assert a.average.isChecked() and not a.head.isEnabled()  # the launch default: heads averaged
    view(window, qtbot, 6)
    qtbot.waitUntil(lambda: a.explainer.explanation is not None, timeout=10000)
    e = a.explainer.explanation
    assert (e.layer, e.head) == (a.layer.value() - 1, 0) and len(e.query_tokens) >= 4
    queries = a.explainer.query
    assert queries.currentIndex() == 0
    for expected, which in ((1, Qt.Key_Right), (2, Qt.Key_PageDown), (3, Qt.Key_Space), (2, Qt.Key_Left)):
        key(window, qtbot, which)
        assert queries.currentIndex() == expected


# -- nothing clipped -------------------------------------------------------------------------------------------
def assert_tabs_whole(tabs: QTabBar):
    # first as it is on screen (asking a tab bar for its size or a tab's rectangle lays it out again)
    texts = [tabs.tabText(i) for i in range(tabs.count()) if tabs.isTabVisible(i)]
    needed = sum(tabs.fontMetrics().horizontalAdvance(text) + 8 for text in texts)
    assert tabs.width() >= needed, (texts, tabs.width(), needed)
    assert tabs.sizeHint().width() <= tabs.width(), (tabs.sizeHint().width(), tabs.width())
    for i in range(tabs.count()):
        if tabs.isTabVisible(i):
            text = tabs.fontMetrics().horizontalAdvance(tabs.tabText(i))
            assert tabs.tabRect(i).width() >= text + 8, (tabs.tabText(i), tabs.tabRect(i).width(), text)


def assert_buttons_whole(bar: QWidget, window):
    area = QRect(0, 0, window.width(), window.height())
    for w in bar.findChildren(QWidget):
        if not shown(w):
            continue
        rect = QRect(w.mapTo(window, w.rect().topLeft()), w.size())
        assert area.contains(rect), (w.objectName(), rect)
        if isinstance(w, (QAbstractButton, QLabel)) and w.text():
            needed = w.fontMetrics().horizontalAdvance(w.text())
            assert w.contentsRect().width() >= needed, (w.text(), w.width(), needed)


@pytest.fixture
def desktop_font():
    """The desktop's interface font at ``points`` (Ubuntu's is 11 pt; the tests' 9 pt), restored afterwards."""
    saved = QApplication.font()

    def set_points(points):
        font = QApplication.font()
        font.setPointSizeF(points)
        QApplication.setFont(font)

    yield set_points
    QApplication.setFont(saved)


@pytest.mark.parametrize("width, points", [(1366, None), (1366, 11), (1024, None)])
def test_nothing_is_clipped(make_window, qtbot, monkeypatch, desktop_font, width, points):
    if points is not None:
        desktop_font(points)
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (width, 768)))
    window = make_window(start_default=True)
    window.show()
    window.setWindowState(Qt.WindowState.WindowNoState)
    window.resize(width, 768 - 70)  # maximised, less a title bar and a taskbar
    qtbot.waitUntil(lambda: window.decoding.view is not None, timeout=20000)
    a = window.attention
    window.docks["attention"].raise_()
    qtbot.wait(100)
    assert_tabs_whole(a.tabs.tabBar())
    present(window, qtbot, width, 768)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    for _ in range(4):  # the decoding goes on in view 1 (the attention panel, off screen, follows it)
        key(window, qtbot, Qt.Key_PageDown)
    for number in range(1, 7):
        view(window, qtbot, number)
        assert_buttons_whole(window.presenter.bar, window)
        assert window.presenter.bar.buttons[VIEWS[number - 1].key].text().endswith(VIEWS[number - 1].title)
        if number in (3, 6):
            assert_tabs_whole(a.tabs.tabBar())


@pytest.mark.parametrize("width", [1366, 1024])
def test_leaving_presenter_mode_the_window_fits_the_screen_again(make_window, qtbot, monkeypatch, width):
    """The type is back to its desktop size before the panels come back: laid out while still large, the docks
    side by side wanted more than the screen (1413 px at 1366) and the window grew to that, never to shrink."""
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (width, 768)))
    window = make_window(start_default=True)
    window.show()
    window.setWindowState(Qt.WindowState.WindowNoState)
    window.resize(width, 768 - 70)
    qtbot.waitUntil(lambda: window.decoding.view is not None and window.lanes.info is not None, timeout=20000)
    window.docks["lanes"].raise_()
    window.lanes.start()
    qtbot.waitUntil(lambda: window.lanes.view is not None, timeout=10000)
    assert window.width() <= width, window.minimumSizeHint()
    for _ in range(2):
        present(window, qtbot, width, 768)
        window.presenter.show_view("lanes")
        qtbot.wait(100)
        window.set_presenter(False)
        assert window.lanes.font().pointSizeF() == pytest.approx(window.base_font.pointSizeF())  # before any event
        qtbot.wait(200)
        assert window.width() <= width, (window.width(), window.minimumSizeHint())


def test_a_slide_above_the_narrow_lanes_view_leaves_it_on_the_screen(make_window, qtbot, monkeypatch):
    """The bars above the docks get the height their text needs at the window's minimum width, which the Lanes view
    alone sets while presenting (under 160 px): there a slide's two lines wrapped into thirty and the window asked
    for 795 px of a 768-pixel screen."""
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (1366, 768)))
    window = make_window(start_default=True)
    window.show()
    qtbot.waitUntil(lambda: window.decoding.view is not None and window.lanes.info is not None, timeout=20000)
    bar = window.lesson_bar
    bar.where.setText("Decoding: greedy, beam search, sampling — slide 8 of 10")
    bar.text.setText(
        "Here every lane has run to its end. Orange tokens are where a lane parted from the greedy one. Compare the"
        " log P: which lane found the most probable translation? (At a desk: the Lanes panel's Step moves every lane"
        " one token.)"
    )
    bar.show()
    present(window, qtbot, 1366, 768)
    window.presenter.show_view("lanes")
    qtbot.waitUntil(lambda: window.lanes.view is not None and window.lanes.waiting is None, timeout=10000)
    qtbot.wait(100)
    assert window.minimumSizeHint().width() < 400  # the narrow view that sets the bars' width
    assert window.minimumSizeHint().height() <= 768 - 200, window.minimumSizeHint()
    assert window.height() == 768 and bar.text.height() <= 4 * bar.text.fontMetrics().lineSpacing()


# -- the chart's probabilities and the small plots' legends -----------------------------------------------------
def viewport_rect(plot_view: pg.GraphicsView, item) -> QRectF:
    """Where ``item`` is drawn in the view's viewport, in pixels (also for an item that ignores the zoom)."""
    return item.deviceTransform(plot_view.viewportTransform()).mapRect(item.boundingRect())


def assert_probabilities_clear_of_bar_ends(bars):
    plot_view, box = bars.plot, bars.plot.getViewBox()
    area = box.mapRectToDevice(box.boundingRect())
    for i, p in enumerate(bars.probs):
        label = viewport_rect(plot_view, bars.value_labels[i])
        end = box.mapViewToDevice(pg.Point(p, i)).x()
        assert area.contains(label), (p, label, area)
        assert label.right() <= end - 1 or label.left() >= end + 1, (p, label, end)  # not across the bar's end
        fm = QFontMetricsF(bars.value_labels[i].font())
        assert label.width() >= fm.horizontalAdvance(f"{p:.3f}") - 0.5


def test_a_probability_near_1_is_written_inside_the_plot_not_across_its_bar(make_window, qtbot, monkeypatch):
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (1366, 768)))
    window = make_window(start_default=True)
    window.show()
    window.setWindowState(Qt.WindowState.WindowNoState)
    window.resize(1366, 768 - 70)
    d = window.decoding
    qtbot.waitUntil(lambda: d.view is not None, timeout=20000)
    probs = np.array([0.995, 0.97, 0.94, 0.91, 0.88, 0.85, 0.84, 0.83, 0.5, 0.02])
    for presenting_now in (False, True):
        if presenting_now:
            present(window, qtbot, 1366, 768)
            view(window, qtbot, 1)
        d.candidates.set_data([f"t{i}" for i in range(len(probs))], probs, {0})
        qtbot.wait(50)
        assert d.candidates.plot.width() >= 300
        assert_probabilities_clear_of_bar_ends(d.candidates)


def test_the_small_plots_legends_lie_over_no_curve(make_window, qtbot, monkeypatch):
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (1366, 768)))
    window = make_window(start_default=True)
    window.show()
    window.setWindowState(Qt.WindowState.WindowNoState)
    window.resize(1366, 768 - 70)
    qtbot.waitUntil(lambda: window.training.current is not None, timeout=20000)
    t = window.training
    window.docks["training"].raise_()
    run = t.current.run_id
    x = np.arange(1, 201, dtype=float)
    for plot in t.plots.values():  # a curve across the whole plot, up to the top right corner
        for name in plot.styles:
            plot.append(run, name, x, np.linspace(0.05, 0.98, len(x)) * (plot.y_domain or (0, 1))[1])
        plot.redraw()

    def over_a_curve():  # the shown plots whose legend lies over the plotting area, or is cut
        placed = [(name, plot.legend.sceneBoundingRect(), plot) for name, plot in t.plots.items()]
        return [
            (name, legend, plot.plot.getViewBox().sceneBoundingRect())
            for name, legend, plot in placed
            if shown(plot)
            and plot.legend.items
            and (
                legend.intersects(plot.plot.getViewBox().sceneBoundingRect())
                or not plot.plot.getPlotItem().sceneBoundingRect().contains(legend)
            )
        ]

    for presenting_now in (False, True):
        if presenting_now:
            present(window, qtbot, 1366, 768)
            view(window, qtbot, 5)
        qtbot.wait(200)
        try:  # (a loaded machine lays the plots out a few frames later)
            qtbot.waitUntil(lambda: not over_a_curve(), timeout=5000)
        except qtbot.TimeoutError:
            pass
        assert not over_a_curve(), presenting_now
    view(window, qtbot, 4)  # and the positional-encoding lab's sinusoids
    curves = window.positional.curves
    assert shown(curves.plot) and len(curves.legend.items) >= 2
    legend, data = curves.legend.sceneBoundingRect(), curves.plot.getViewBox().sceneBoundingRect()
    assert not legend.intersects(data) and curves.plot.getPlotItem().sceneBoundingRect().contains(legend)
