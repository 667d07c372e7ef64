"""The model map in the window of a 1366×768 laptop: a click keeps the map on screen (its view opens on a double-click
or with the button under the equation), what a part does is said under the drawing instead of in a tooltip over it,
and no equation is wrapped in the middle of a term, in English and Chinese."""

from __future__ import annotations

import dataclasses

import pytest
import torch

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, QPointF, QRect, Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from explorer.i18n import language  # noqa: E402
from explorer.main_window import MainWindow  # noqa: E402
from explorer.panels.model_map import PartItem  # noqa: E402
from explorer.panels.model_map_text import ModelPart, part_name  # noqa: E402
from model.core.config import ModelConfig  # noqa: E402
from model.core.transformer import Transformer  # noqa: E402

CHROME = 70  # a window title bar and a taskbar


def map_window(make_window, qtbot, monkeypatch, width=1366, height=768):
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (width, height)))
    window = make_window(start_default=True)
    window.show()
    window.activateWindow()  # pointing at the map reaches it
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    window.setWindowState(Qt.WindowState.WindowNoState)
    window.resize(width, height - CHROME)
    qtbot.waitUntil(lambda: window.model_map.info is not None, timeout=20000)
    window.docks["map"].raise_()
    qtbot.wait(50)
    return window


def on_screen(window, key: str) -> bool:
    return not window.docks[key].visibleRegion().isEmpty()


def centre_of(panel, part: ModelPart):
    return panel.view.mapFromScene(panel.parts()[part].center())


def test_a_click_keeps_the_map_on_screen_and_its_view_opens_when_asked(make_window, qtbot, monkeypatch):
    window = map_window(make_window, qtbot, monkeypatch)
    panel, attention = window.model_map, window.attention
    part = ModelPart("cross_attention", "decoder", 1)
    panel.select(ModelPart("layer", "decoder", 1))  # its layer open
    left, plain = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    QTest.mouseClick(panel.view.viewport(), left, plain, centre_of(panel, part))
    qtbot.wait(50)
    assert on_screen(window, "map") and not on_screen(window, "attention")  # the map stays: click on
    assert panel.chosen == part and "cross-attention" in panel.equation.toPlainText().lower()
    assert panel.open_button.isVisible() and "attention map" in panel.open_button.text()
    panel.open_button.click()
    qtbot.wait(50)
    assert on_screen(window, "attention") and attention.kind.currentData() == "cross" and attention.layer.value() == 2
    window.docks["map"].raise_()
    qtbot.wait(50)
    other = ModelPart("positional", "encoder")
    QTest.mouseDClick(panel.view.viewport(), left, plain, centre_of(panel, other))
    QTest.mouseRelease(panel.view.viewport(), left, plain, centre_of(panel, other))  # (QTest leaves it pressed)
    qtbot.wait(50)
    assert on_screen(window, "positional")  # a double-click opens the part's view at once
    window.docks["map"].raise_()
    qtbot.wait(50)
    panel.select(ModelPart("feed_forward", "encoder", 0))  # a part no other view shows: no button
    assert not panel.open_button.isVisible()


def test_what_a_part_does_is_said_under_the_drawing_not_over_it(make_window, qtbot, monkeypatch):
    window = map_window(make_window, qtbot, monkeypatch)
    panel = window.model_map
    items = [i for i in panel.scene.items() if isinstance(i, PartItem)]
    assert items and not any(i.toolTip() for i in items)  # no tooltip covers the parts it names
    part = ModelPart("feed_forward", "encoder", 0)
    window.move(window.x() - panel.mapTo(window, panel.rect().topLeft()).x(), window.y())  # the map on the
    qtbot.wait(50)  # test's screen (800 px wide): the pointer is followed where a screen is
    QTest.mouseMove(panel.view.viewport(), QPoint(2, 2))  # in from beside the drawing
    qtbot.wait(50)
    QTest.mouseMove(panel.view.viewport(), centre_of(panel, part))
    qtbot.waitUntil(lambda: "each position" in panel.caption.text(), timeout=2000)
    assert part_name(part, panel.info.model_config) in panel.caption.text()
    caption = QRect(panel.caption.mapTo(panel, panel.caption.rect().topLeft()), panel.caption.size())
    view = QRect(panel.view.mapTo(panel, panel.view.rect().topLeft()), panel.view.size())
    assert panel.caption.isVisible() and not caption.intersects(view)
    lines = panel.caption.heightForWidth(panel.caption.width())
    assert lines <= panel.caption.height(), "the caption's text is cut"
    QTest.mouseMove(panel.view.viewport(), panel.view.mapFromScene(QPointF(-500, -500)))
    qtbot.waitUntil(lambda: "Point at a part" in panel.caption.text(), timeout=2000)


def info_for(info, **overrides):
    """The bundled model's RunInfo for another configuration (its parameter counts as the model reports them)."""
    single = overrides.get("arch") in ("decoder_only", "encoder_only")
    vocab = {"vocab_size": 291} if single else {"src_vocab_size": 412, "tgt_vocab_size": 291}
    cfg = ModelConfig.preset("small", **vocab, **overrides)
    with torch.device("meta"):
        model = Transformer(cfg)
    counts, total = model.parameter_breakdown(), model.num_parameters()
    return dataclasses.replace(info, model_config=cfg, parameters=counts, total_parameters=total)


def wrapped_equations(panel) -> list[str]:
    """The displayed equations (the centred paragraphs) that take more than one line or reach past the column."""
    doc = panel.equation.document()
    room = panel.equation.viewport().width() - 2 * doc.documentMargin()
    bad = []
    block = doc.begin()
    while block.isValid():
        layout = block.layout()
        if block.blockFormat().alignment() & Qt.AlignmentFlag.AlignHCenter and layout.lineCount():
            widest = max(layout.lineAt(n).naturalTextWidth() for n in range(layout.lineCount()))
            if layout.lineCount() > 1 or widest > room:
                bad.append(f"{block.text()!r}: {layout.lineCount()} lines, {widest:.0f} of {room:.0f} px")
        block = block.next()
    return bad


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_equation_is_wrapped_mid_term_on_a_laptop(make_window, qtbot, monkeypatch, chinese_font, lang):
    language.set(lang)
    window = map_window(make_window, qtbot, monkeypatch)
    panel = window.model_map
    bundled = panel.info
    configs = [
        {},
        {"arch": "decoder_only", "positional": "rope", "norm": "pre", "n_experts": 4, "experts_top_k": 2},
        {"arch": "encoder_only", "positional": "learned", "activation": "gelu"},
    ]
    for overrides in configs:
        panel.on_run(info_for(bundled, **overrides) if overrides else bundled)
        qtbot.wait(20)
        for part in list(panel.parts()):
            panel.select(part)
            assert wrapped_equations(panel) == [], (overrides, part)
        assert panel.view.transform().m11() >= 0.8, "the drawing is shrunk to make room"
