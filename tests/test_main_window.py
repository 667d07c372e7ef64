"""The main window lays out docks and menus; what its menus do is elsewhere (explorer/model_files.py,
explorer/window_status.py, explorer/presenter.py), and every command goes through the EngineClient."""

import ast
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from explorer.panels.attention_view import AttentionView  # noqa: E402
from explorer.panels.model_map import ModelPart  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_the_window_submits_nothing_to_the_engine_itself():
    calls = [
        node.func.attr
        for node in ast.walk(ast.parse((ROOT / "explorer" / "main_window.py").read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    ]
    assert "submit" not in calls and "send" not in calls and "ask" not in calls


def test_the_main_window_class_is_docks_and_menus():
    cls = next(
        node
        for node in ast.parse((ROOT / "explorer" / "main_window.py").read_text(encoding="utf-8")).body
        if isinstance(node, ast.ClassDef) and node.name == "MainWindow"
    )
    assert cls.end_lineno - cls.lineno + 1 <= 400


def test_a_model_map_part_opens_its_attention_view(make_window):
    window = make_window()
    window.attention.show_view(AttentionView(stretch=True))
    window.model_map.part_chosen.emit(ModelPart("cross_attention", "decoder", 0))
    assert window.attention.view() == AttentionView(kind="cross", layer=1, stretch=True)
    assert window.attention.tabs.currentIndex() == 0  # the map's tab
