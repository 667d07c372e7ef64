"""Presenter mode's scenes drive the Attention panel through its view state (explorer/presenter.py): a scene is
read from ``AttentionPanel.view()`` and recalled with ``AttentionPanel.show_view()``, never the panel's widgets.
(Presenter mode on classroom screens: tests/scenarios/test_presenter_screens.py.)"""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QMainWindow  # noqa: E402

from explorer.panels.attention import AttentionPanel  # noqa: E402
from explorer.panels.attention_view import AttentionView  # noqa: E402
from explorer.panels.decoding import DecodingPanel  # noqa: E402
from explorer.presenter import Presenter, Scene, Scenes  # noqa: E402


class Window(QMainWindow):
    """What Presenter reads of a main window for scenes: its settings and its two panels."""

    def __init__(self, settings: QSettings) -> None:
        super().__init__()
        self.settings = settings
        self.decoding = DecodingPanel()
        self.attention = AttentionPanel()


@pytest.fixture
def presenter(qtbot, tmp_path):
    window = Window(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    return Presenter(window)


def test_a_recalled_scene_sets_the_attention_panel_through_its_view(presenter, monkeypatch):
    attention = presenter.window.attention
    shown = AttentionView(source="pair", stretch=True)
    monkeypatch.setattr(attention, "view", lambda: shown)
    asked = []
    monkeypatch.setattr(attention, "show_view", asked.append)
    presenter.scenes.put(Scene("lecture", "attention", attention_kind="decoder_self", layer=3, head=2, average=False))
    presenter.apply_scene("lecture")
    # the scene's kind, layer, head and averaging over what the panel shows; the rest of its view stays
    assert asked == [AttentionView(source="pair", kind="decoder_self", layer=3, head=2, stretch=True)]
    assert attention.kind.currentData() == "encoder" and attention.layer.value() == 1  # no widget set directly


def test_a_saved_scene_is_read_from_the_attention_view(presenter, monkeypatch):
    attention = presenter.window.attention
    monkeypatch.setattr(attention, "view", lambda: AttentionView(kind="cross", layer=4, head=3, average=False))
    presenter.save_scene("cross at 4")
    scene = Scenes(presenter.window.settings).get("cross at 4")
    assert scene is not None
    assert (scene.attention_kind, scene.layer, scene.head, scene.average) == ("cross", 4, 3, False)


def test_a_scene_round_trips_through_the_panel(presenter):
    attention = presenter.window.attention
    attention.show_view(AttentionView(kind="decoder_self", average=True))
    presenter.save_scene("self")
    attention.show_view(AttentionView(kind="cross"))
    presenter.apply_scene("self")
    assert attention.view() == AttentionView(kind="decoder_self", average=True)
