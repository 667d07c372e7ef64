"""The help texts (explorer/help.py): the “What am I looking at?” box opens over a panel and never moves or shrinks
what the panel shows, and the window names what the Decoding panel is for the model's family, and explains it."""

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtGui import QColor, QPainter, QPalette  # noqa: E402
from PySide6.QtWidgets import QApplication, QLayout, QVBoxLayout, QWidget  # noqa: E402

from explorer.appearance import apply_theme, dark_palette  # noqa: E402
from explorer.help import HELP, HelpBox, info_icon, info_pixmap  # noqa: E402
from explorer.i18n import language  # noqa: E402
from explorer.panels.decoding import DecodingPanel  # noqa: E402
from model.core.config import ModelConfig  # noqa: E402


def geometries(panel: QWidget) -> dict[str, tuple]:
    """Where the panel and every visible widget in it lie, in the panel's top-level window's pixels."""
    top = panel.window()
    widgets = [panel, *(w for w in panel.findChildren(QWidget) if w.isVisible())]
    return {
        f"{i}:{w.objectName() or type(w).__name__}": (w.mapTo(top, QPoint(0, 0)), w.size())
        for i, w in enumerate(widgets)
    }


def on_top(sheet: QWidget, holder: QWidget) -> bool:
    """The widget the holder shows in the sheet's middle belongs to the sheet."""
    hit = holder.childAt(sheet.geometry().center())
    return hit is not None and (hit is sheet or sheet.isAncestorOf(hit))


@pytest.fixture
def shown_window(make_window, qtbot):
    window = make_window()
    window.resize(1366, 768)
    window.show()
    qtbot.waitExposed(window)
    window.docks["decoding"].raise_()
    qtbot.wait(50)
    return window


def test_opening_help_moves_nothing_in_the_panel(shown_window, qtbot):
    window = shown_window
    box, panel = window.help_boxes["decoding"], window.panels["decoding"]
    holder = panel.parentWidget()
    before = geometries(panel)
    assert len(before) > 10
    box.button.click()
    qtbot.wait(50)
    assert geometries(panel) == before
    assert box.sheet.isVisible() and box.sheet.parentWidget() is holder and on_top(box.sheet, holder)
    assert holder.rect().contains(box.sheet.geometry())
    assert box.sheet.width() < holder.width()  # over the right part only: the left part stays in view
    box.button.click()
    qtbot.wait(50)
    assert not box.sheet.isVisible() and geometries(panel) == before


def test_the_help_button_takes_no_row(shown_window):
    """It sits in the dock's title bar, left of the float and close buttons, not above the panel."""
    for key, box in shown_window.help_boxes.items():
        dock, holder = shown_window.docks[key], shown_window.panels[key].parentWidget()
        assert box.parentWidget() is dock and box.geometry().bottom() < holder.y(), key
        assert shown_window.panels[key].y() == 0, key
        buttons = [b for b in dock.children() if b.objectName() == "qt_dockwidget_floatbutton"]
        assert box.geometry().right() < buttons[0].x(), key


def test_escape_and_the_close_button_close_the_sheet(shown_window, qtbot):
    box = shown_window.help_boxes["decoding"]
    shown_window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is shown_window)
    box.button.click()
    qtbot.waitUntil(lambda: box.sheet.isAncestorOf(QApplication.focusWidget()))
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Escape)
    assert not box.sheet.isVisible() and not box.button.isChecked()
    box.button.click()
    assert box.sheet.isVisible()
    qtbot.mouseClick(box.sheet.close_button, Qt.MouseButton.LeftButton)
    assert not box.sheet.isVisible() and not box.button.isChecked()


def test_the_sheet_follows_the_holder_and_scrolls_at_small_sizes(qtbot):
    holder = QWidget()
    qtbot.addWidget(holder)
    panel = DecodingPanel()
    layout = QVBoxLayout(holder)
    layout.setSizeConstraint(QLayout.SizeConstraint.SetNoConstraint)  # smaller than the panel would like
    layout.addWidget(panel)
    box = HelpBox("decoding")
    box.attach_to(holder)
    holder.resize(400, 300)
    holder.show()
    qtbot.waitExposed(holder)
    assert holder.size().toTuple() == (400, 300)
    before = geometries(panel)
    box.button.setChecked(True)
    qtbot.wait(50)
    assert geometries(panel) == before and on_top(box.sheet, holder)
    assert holder.rect().contains(box.sheet.geometry()) and holder.rect().contains(box.geometry())
    assert box.sheet.body.verticalScrollBar().maximum() > 0  # the rest of the text is a scroll away
    assert box.text.width() <= box.sheet.body.viewport().width()  # wrapped, never cut off at the side
    holder.resize(700, 500)
    qtbot.wait(50)
    assert box.sheet.geometry().right() == holder.width() - 1 and box.sheet.height() == holder.height()


@pytest.mark.parametrize("palette", [QPalette(QColor("#efefef")), dark_palette()], ids=["light", "dark"])
def test_the_info_icon_is_drawn_in_the_text_colour(palette, monkeypatch):
    def no_text(*args):
        raise AssertionError("the icon must not depend on a font having the ⓘ glyph")

    monkeypatch.setattr(QPainter, "drawText", no_text)
    text = palette.color(QPalette.ColorRole.WindowText)
    image = info_icon(palette).pixmap(32, 32).toImage()
    inked = [image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height())]
    inked = [c for c in inked if c.alpha() > 200]
    assert len(inked) > 60  # the ring, the dot and the bar
    assert all(abs(c.lightness() - text.lightness()) < 40 for c in inked)
    centre = info_pixmap(text, 32).toImage()
    assert centre.pixelColor(16, 20).alpha() > 200 and centre.pixelColor(16, 5).alpha() == 0  # bar, gap


def test_the_icon_follows_the_theme(shown_window, qtbot):
    box = shown_window.help_boxes["decoding"]
    assert "ⓘ" not in box.button.text() and "ⓘ" not in box.sheet.title.text()

    def ink() -> int:
        image = box.button.icon().pixmap(32, 32).toImage()
        return max(
            image.pixelColor(x, y).lightness()
            for x in range(32)
            for y in range(32)
            if image.pixelColor(x, y).alpha() > 200
        )

    dark_ink_on_light = ink()
    try:
        shown_window.set_theme("dark")
        qtbot.waitUntil(lambda: ink() > 180 > dark_ink_on_light, timeout=2000)
    finally:
        shown_window.set_theme("light")
        apply_theme("light")


def test_a_language_switch_retranslates_the_open_sheet(shown_window, qtbot):
    box = shown_window.help_boxes["decoding"]
    box.button.click()
    try:
        language.set("zh")
        assert box.sheet.title.text() == "解码" and "一次一个词元" in box.text.text()
        assert box.button.text().strip() == "我看到的是什么？" and box.sheet.isVisible()
        assert box.geometry().right() < shown_window.docks["decoding"].width() - 30  # still left of the buttons
    finally:
        language.set("en")
    assert box.sheet.title.text() == "Decoding" and "one token at a time" in box.text.text()


def family(arch: str) -> ModelConfig:
    """A tiny model of the family ``arch``."""
    if arch == "encoder_decoder":
        return ModelConfig.preset("tiny", src_vocab_size=40, tgt_vocab_size=40)
    return ModelConfig.preset("tiny", src_vocab_size=0, tgt_vocab_size=0, vocab_size=40, arch=arch)


def test_the_decoding_dock_follows_the_family(make_window):
    window = make_window()
    dock, box = window.docks["decoding"], window.help_boxes["decoding"]
    window._follow_family(family("encoder_only"))
    assert dock.windowTitle() == "Fill the mask" and box.key == "family_encoder_only"
    assert window.help_boxes["training"].key == "training_encoder_only"  # the Training panel's help follows too
    window._follow_family(family("decoder_only"))
    assert dock.windowTitle() == "Decoding" and box.key == "generation"
    assert "top-p" in box.text.text() and "seed" in box.text.text()
    assert window.help_boxes["map"].key.startswith("map_decoder_only")
    window._follow_family(family("encoder_only"))
    language.set("zh")
    try:
        window.retranslate()
        assert dock.windowTitle() == "填空"  # the family's title, in the interface language
    finally:
        language.set("en")
        window.retranslate()
    window._follow_family(family("encoder_decoder"))
    assert dock.windowTitle() == "Decoding" and box.key == "decoding"
    assert (window.help_boxes["training"].key, window.help_boxes["map"].key) == ("training", "map")


def test_the_generation_help_exists_in_both_languages():
    assert {"en", "zh"} <= set(HELP["generation"])
    assert "温度" in HELP["generation"]["zh"] and "temperature" in HELP["generation"]["en"]


def test_a_scene_keeps_the_sampling_settings(make_window):
    window = make_window()
    d = window.decoding
    d.temperature_spin.setValue(0.7)
    d.top_k_spin.setValue(12)
    d.top_p_spin.setValue(0.85)
    d.seed_spin.setValue(5)
    window.presenter.save_scene("sampling")
    for spin, value in ((d.temperature_spin, 1.5), (d.top_k_spin, 0), (d.top_p_spin, 1.0), (d.seed_spin, 9)):
        spin.setValue(value)
    window.presenter.apply_scene("sampling")
    assert (d.temperature_spin.value(), d.top_k_spin.value(), d.seed_spin.value()) == (0.7, 12, 5)
    assert abs(d.top_p_spin.value() - 0.85) < 1e-9
