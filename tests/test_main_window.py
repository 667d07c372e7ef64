"""The main window lays out docks and menus; what its menus do is elsewhere (explorer/model_files.py,
explorer/window_status.py, explorer/presenter.py), and every command goes through the EngineClient."""

import ast
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from explorer.commands import Load, NewModel, Save, Start  # noqa: E402
from explorer.main_window import MainWindow  # noqa: E402
from explorer.panels.attention_view import AttentionView  # noqa: E402
from explorer.panels.model_map import ModelPart  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def sending(window, monkeypatch) -> list:
    """The commands the window's client is asked to send (none reaches the engine)."""
    sent: list = []
    monkeypatch.setattr(window.client, "send", lambda command: sent.append(command) or command.request_id)
    return sent


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


def test_file_commands_go_through_the_engine_client(make_window, monkeypatch, tmp_path):
    window = make_window()
    sent = sending(window, monkeypatch)
    checkpoint = str(tmp_path / "model.ckpt")
    window.open_checkpoint(checkpoint, confirm=False)
    assert [type(c) for c in sent] == [Load] and sent[0].path == checkpoint
    assert window.note_label.toolTip() == "Opening model.ckpt…"  # the note follows that request
    monkeypatch.setattr("explorer.model_files.QFileDialog.getSaveFileName", lambda *a, **k: (str(tmp_path / "a"), ""))
    window.save()  # a model from no file: Save as, with the checkpoint's suffix added
    assert isinstance(sent[-1], Save) and sent[-1].path == str(tmp_path / "a.ckpt")
    window.train_from_scratch()
    assert [type(c) for c in sent[-2:]] == [NewModel, Start]


def test_a_model_map_part_opens_its_attention_view(make_window):
    window = make_window()
    window.attention.show_view(AttentionView(stretch=True))
    window.model_map.part_chosen.emit(ModelPart("cross_attention", "decoder", 0))
    assert window.attention.view() == AttentionView(kind="cross", layer=1, stretch=True)
    assert window.attention.tabs.currentIndex() == 0  # the map's tab


def test_the_menus_name_every_action(make_window):
    window = make_window()
    for key, action in window.menu_actions.items():
        assert action.text(), key
    assert [a.objectName() for a in window.file_menu.actions()][:3] == [
        "action_new",
        "action_open",
        "action_open_folder",
    ]
    assert {f"action_show_{key}" for key, _ in MainWindow.PANELS} <= {
        a.objectName() for a in window.menus.view_menu.actions()
    }
