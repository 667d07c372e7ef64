"""The File menu's commands (explorer/model_files.py): what is opened as a model, the commands sent through the
engine client, the question asked before unsaved work is replaced, saving and opening again, a dropped checkpoint."""

from dataclasses import replace

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent  # noqa: E402

from explorer import dialogs  # noqa: E402
from explorer.commands import Follow, Load, NewModel, Save, Start  # noqa: E402
from explorer.model_files import dropped_model, is_model_path  # noqa: E402
from tests.copy_task_window import small_copy_task, train_steps  # noqa: E402


def sending(window, monkeypatch) -> list:
    """The commands the window's client is asked to send (none reaches the engine)."""
    sent: list = []
    monkeypatch.setattr(window.client, "send", lambda command: sent.append(command) or command.request_id)
    return sent


def dropped(*paths) -> str | None:
    """What the window takes from a drop of ``paths`` (local files, or ``http…`` addresses)."""
    mime = QMimeData()
    mime.setUrls([QUrl(p) if str(p).startswith("http") else QUrl.fromLocalFile(str(p)) for p in paths])
    return dropped_model(QDropEvent(QPoint(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier))


def test_a_checkpoint_or_a_folder_is_a_model_and_nothing_else_is(tmp_path):
    folder = tmp_path / "opus-mt-en-zh"
    folder.mkdir()
    assert is_model_path(str(tmp_path / "model.ckpt")) and is_model_path(str(tmp_path / "OLD.CKPT"))  # need not exist
    assert is_model_path(str(folder))
    (tmp_path / "notes.txt").write_text("x")
    assert not is_model_path(str(tmp_path / "notes.txt")) and not is_model_path(str(tmp_path / "gone"))


def test_the_first_model_dropped_is_taken(qtbot, tmp_path):
    folder = tmp_path / "gpt2"
    folder.mkdir()
    assert dropped(tmp_path / "notes.txt", tmp_path / "b.ckpt", folder) == str(tmp_path / "b.ckpt")
    assert dropped(tmp_path / "notes.txt", folder) == str(folder)
    assert dropped("https://example.org/a.ckpt", tmp_path / "notes.txt") is None  # not a local file


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


def test_a_folder_that_holds_no_run_is_said_and_not_followed(make_window, monkeypatch, tmp_path):
    window = make_window()
    sent = sending(window, monkeypatch)
    window.follow_run(str(tmp_path / "nowhere"))
    assert sent == [] and window.message_bar.showing and "does not exist" in window.message_bar.label.text()
    (tmp_path / "metrics.jsonl").write_text("", encoding="utf-8")
    window.follow_run(str(tmp_path))
    assert [type(c) for c in sent] == [Follow] and sent[0].folder == str(tmp_path)


def test_a_model_read_from_a_folder_is_saved_as_a_checkpoint_beside_it(make_window, monkeypatch, tmp_path):
    window = make_window()
    sent = sending(window, monkeypatch)
    folder = tmp_path / "opus-mt-en-zh"
    folder.mkdir()
    window.window_status.status = replace(window.window_status.status, path=str(folder))
    suggested = []

    def save_dialog(parent, title, where, filter_):
        suggested.append(where)
        return str(tmp_path / "mine.ckpt"), ""

    monkeypatch.setattr("explorer.model_files.QFileDialog.getSaveFileName", save_dialog)
    window.save()  # never into the folder: Save as, beside it
    assert suggested == [str(tmp_path / "opus-mt-en-zh.ckpt")]
    assert isinstance(sent[-1], Save) and sent[-1].path == str(tmp_path / "mine.ckpt")
    window.window_status.status = replace(window.window_status.status, path=str(tmp_path / "mine.ckpt"))
    window.save()  # a checkpoint: saved where it came from, without asking
    assert len(suggested) == 1 and sent[-1].path == str(tmp_path / "mine.ckpt")


def test_what_waits_for_a_save_runs_once_that_save_is_done(make_window, monkeypatch, tmp_path):
    window = make_window()
    sent = sending(window, monkeypatch)
    window.window_status.status = replace(window.window_status.status, dirty=True, path=str(tmp_path / "m.ckpt"))
    monkeypatch.setattr(dialogs, "ask", lambda *a: dialogs.SAVE)
    done = []
    window.files.when_discarded(lambda: done.append("replaced"), "A new model replaces the current one.")
    save = sent[-1]
    assert isinstance(save, Save) and done == []  # nothing replaced before the work is on disk
    window.engine.saved.emit(save.request_id + 1000, str(tmp_path / "other.ckpt"))  # another request's save
    assert done == []
    window.engine.saved.emit(save.request_id, save.path)
    assert done == ["replaced"] and window.recent_files()[0] == str((tmp_path / "m.ckpt").resolve())
    window.files.when_discarded(lambda: done.append("again"), "A new model replaces the current one.")
    failed = sent[-1]
    window.engine.engine_failed.emit(failed.request_id, "disk full")  # the save failed: the work stays
    window.engine.saved.emit(failed.request_id, failed.path)
    assert done == ["replaced"]


def test_unsaved_work_prompts_before_it_is_discarded(make_window, qtbot, monkeypatch):
    window = make_window()
    small_copy_task(window)
    train_steps(window, qtbot, 5)
    asked = []
    monkeypatch.setattr(dialogs, "ask", lambda *a: asked.append(a[3]) or dialogs.CANCEL)
    window.new_model()
    qtbot.wait(200)
    assert asked and dialogs.SAVE in asked[0] and window.status.step == 5


def test_save_then_open_in_a_fresh_window(make_window, qtbot, tmp_path, monkeypatch):
    window = make_window()
    small_copy_task(window)
    train_steps(window, qtbot, 30)
    path = tmp_path / "saved.ckpt"
    monkeypatch.setattr("explorer.model_files.QFileDialog.getSaveFileName", lambda *a, **k: (str(path), ""))
    with qtbot.waitSignal(window.engine.saved, timeout=10000):
        window.save()
    assert path.exists() and not window.status.dirty
    assert window.recent_files()[0] == str(path.resolve())
    losses = window.training.plots["loss_plot"].data(window.status.run_id, "train")[1]

    fresh = make_window(open_path=str(path), settings_name="other.ini")
    qtbot.waitUntil(lambda: fresh.training.current is not None and fresh.status.step == 30, timeout=15000)
    again = fresh.training.plots["loss_plot"].data(fresh.status.run_id, "train")[1]
    assert list(again) == pytest.approx(list(losses))
    assert fresh.windowTitle().startswith("saved.ckpt")
    assert fresh.training.form.task_combo.currentData() == "copy"


def test_the_bundled_model_is_never_the_file_save_writes(make_window, qtbot):
    from resources import default_model

    window = make_window(start_default=True)
    qtbot.waitUntil(lambda: window.training.current is not None and window.status.run_id == 1, timeout=20000)
    assert window.status.path is None and str(default_model()) not in window.recent_files()
    # named as what it is, not as a file (Save asks where to write it)
    assert "the bundled model" in window.windowTitle() and ".ckpt" not in window.windowTitle()


def test_a_dropped_checkpoint_opens(make_window, qtbot, tmp_path, copy_session_factory):
    path = tmp_path / "dropped.ckpt"
    session = copy_session_factory()
    session.train_steps(7)
    session.save(path)
    window = make_window()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(QPoint(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    window.dropEvent(event)
    assert event.isAccepted()
    qtbot.waitUntil(lambda: window.status.path == str(path) and window.status.step == 7, timeout=15000)
    other = QMimeData()
    other.setUrls([QUrl.fromLocalFile(str(tmp_path / "notes.txt"))])
    ignored = QDropEvent(QPoint(10, 10), Qt.CopyAction, other, Qt.LeftButton, Qt.NoModifier)
    ignored.setAccepted(False)
    window.dropEvent(ignored)
    assert not ignored.isAccepted()
