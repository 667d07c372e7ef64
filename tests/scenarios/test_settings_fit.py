"""The Training panel on a 1366×768 laptop, in English and Chinese: every label and value of the settings readable
(nothing cut, no sideways scrolling, for every family), the run list's entries whole, and a greyed *Train from
scratch* says why. Geometry and fonts are read from the widgets, not from pixels."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QFontMetrics, QTextLayout, QTextOption  # noqa: E402
from PySide6.QtWidgets import (  # noqa: E402
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QLabel,
    QStyle,
    QStyleOptionComboBox,
    QWidget,
)

from explorer.commands import Start  # noqa: E402
from explorer.i18n import language  # noqa: E402
from explorer.main_window import MainWindow  # noqa: E402

CHROME = 70  # a window title bar and a taskbar


def laptop_window(make_window, qtbot, monkeypatch, width=1366, height=768):
    """The window with the bundled model, sized as a window manager maximises it on a ``width``×``height`` screen,
    the Training panel in front."""
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (width, height)))
    window = make_window(start_default=True)
    window.show()
    window.setWindowState(Qt.WindowState.WindowNoState)  # the test screen is not the one pretended here
    window.resize(width, height - CHROME)
    qtbot.waitUntil(lambda: window.training.current is not None, timeout=20000)
    window.docks["training"].raise_()
    qtbot.wait(50)
    return window


def shown_in(widget: QWidget, area: QWidget) -> bool:
    return widget.isVisibleTo(area) and widget.isVisible()


def fits(widget: QWidget, text: str, room: int) -> str:
    """Nothing when ``text`` fits in ``room`` pixels of the widget's font; else what does not."""
    needed = QFontMetrics(widget.font()).horizontalAdvance(text)
    return "" if needed <= room else f"{type(widget).__name__} {widget.objectName()!r}: {text!r} {needed} > {room}"


def combo_room(combo: QComboBox) -> int:
    """The width a closed combo box has for its text."""
    option = QStyleOptionComboBox()
    combo.initStyleOption(option)
    field = combo.style().subControlRect(
        QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, combo
    )
    return field.width()


def cut_texts(area: QWidget) -> list[str]:
    """The labels, combo boxes, check boxes and spin boxes shown in ``area`` whose text is cut."""
    problems = []
    for w in area.findChildren(QWidget):
        if not shown_in(w, area):
            continue
        if isinstance(w, QLabel) and w.text() and not w.wordWrap():
            problems.append(fits(w, w.text(), w.contentsRect().width()))
        elif isinstance(w, QLabel) and w.text():  # wrapped: every line within its height
            needed = w.heightForWidth(w.contentsRect().width())
            problems.append("" if needed <= w.contentsRect().height() else f"{w.text()!r} wraps past its height")
        elif isinstance(w, QComboBox):
            problems.append(fits(w, w.currentText(), combo_room(w)))
        elif isinstance(w, QCheckBox) and w.text():
            indicator = w.style().pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth, None, w) + 4
            problems.append(fits(w, w.text(), w.width() - indicator))
        elif isinstance(w, QAbstractSpinBox):
            edit = w.lineEdit()
            problems.append(fits(w, edit.text(), edit.contentsRect().width() - 4))  # (a line edit's margins)
    return [p for p in problems if p]


def outside(area: QWidget, viewport: QWidget) -> list[str]:
    """Widgets of ``area`` that reach beyond the right edge of ``viewport`` (the part a person sees)."""
    right = viewport.width()
    out = []
    for w in area.findChildren(QWidget):
        if shown_in(w, area) and isinstance(w, (QLabel, QComboBox, QAbstractSpinBox, QCheckBox)):
            x = w.mapTo(viewport, w.rect().topRight()).x()
            if x > right:
                out.append(f"{w.objectName() or type(w).__name__} ends at {x} > {right}")
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_setting_is_readable_for_every_family_on_a_laptop(make_window, qtbot, monkeypatch, chinese_font, lang):
    language.set(lang)
    window = laptop_window(make_window, qtbot, monkeypatch)
    panel = window.training
    form, area = panel.form, panel.settings_area
    for arch in ("encoder_decoder", "decoder_only", "encoder_only"):
        form.arch_combo.setCurrentIndex(form.arch_combo.findData(arch))
        form.experts_spin.setValue(4)  # the experts' rows too
        qtbot.wait(20)
        assert not area.horizontalScrollBar().isVisible(), arch
        assert form.width() <= area.viewport().width(), (arch, form.width(), area.viewport().width())
        assert outside(form, area.viewport()) == [], arch
        assert cut_texts(form) == [], arch
        # whichever family or task is chosen, its name is read whole (the list that opens is as wide as the box)
        for combo in (form.arch_combo, form.task_combo):
            widest = max(QFontMetrics(combo.font()).horizontalAdvance(combo.itemText(i)) for i in range(combo.count()))
            assert widest <= combo_room(combo), (combo.objectName(), widest, combo_room(combo))
    # the controls and the run list beside the settings
    assert cut_texts(panel.findChild(QWidget, "training_controls")) == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_run_list_shows_each_run_whole(make_window, qtbot, monkeypatch, chinese_font, lang):
    language.set(lang)
    window = laptop_window(make_window, qtbot, monkeypatch)
    panel = window.training
    info = panel.current
    label = "GPT · text-hsk-zh · tiny · pre-LN · rope · 4 experts top-2 · ls 0.1 · noam"
    longer = dataclasses.replace(info, run_id=info.run_id + 1, label=label)
    panel.on_run(longer)
    panel.on_run(dataclasses.replace(info, run_id=info.run_id + 2))
    qtbot.wait(20)
    runs = panel.run_list
    assert not runs.horizontalScrollBar().isVisible()
    indicator = runs.style().pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth, None, runs) + 8
    for i in range(runs.count()):
        item = runs.item(i)
        rect = runs.visualItemRect(item)
        assert rect.right() <= runs.viewport().width()
        # the text wrapped at word boundaries into the room beside the check box, line by line as drawn (a line
        # with Chinese in it is as tall as the Chinese font's lines)
        layout = QTextLayout(item.text(), item.font())
        option = QTextOption()
        option.setWrapMode(QTextOption.WrapMode.WordWrap)
        layout.setTextOption(option)
        layout.beginLayout()
        height, widest = 0.0, 0.0
        while (line := layout.createLine()).isValid():
            line.setLineWidth(rect.width() - indicator)
            height, widest = height + line.height(), max(widest, line.naturalTextWidth())
        layout.endLayout()
        assert widest <= rect.width() - indicator and height <= rect.height(), (item.text(), rect, height, widest)


def test_a_greyed_train_from_scratch_says_why(make_window, qtbot, monkeypatch):
    window = laptop_window(make_window, qtbot, monkeypatch)
    panel = window.training
    scratch = panel.scratch_button
    assert scratch.isEnabled() and "fresh model" in scratch.toolTip()
    window.engine.submit(Start())  # the bundled model trains on
    qtbot.waitUntil(lambda: window.status.state == "training", timeout=20000)
    assert not scratch.isEnabled()
    assert "Pause" in scratch.toolTip() or "pause" in scratch.toolTip(), scratch.toolTip()
    panel.pause_button.click()
    qtbot.waitUntil(lambda: window.status.state == "paused", timeout=20000)
    assert scratch.isEnabled() and "fresh model" in scratch.toolTip()
