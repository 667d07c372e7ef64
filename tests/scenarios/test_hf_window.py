"""Hugging Face model folders in the window: opened from the menu, by a drop or from the command line, with the
engine's progress in the status bar, their origin in the Model panel, fine-tuned from the Training panel, and
a folder that is not a model refused with the engine's message while the current model stays."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("transformers")

from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from explorer.answers import LoadProgress, ModelOrigin  # noqa: E402
from explorer.app import parse_args  # noqa: E402
from explorer.i18n import language  # noqa: E402
from explorer.panels.settings_form import needs_new_model  # noqa: E402
from tests.hf_folders import gpt2_folder, marian_folder, not_a_model_folder, unsupported_model_folder  # noqa: E402


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf-window")
    return {
        "gpt2": gpt2_folder(root),
        "marian": marian_folder(root),
        "junk": not_a_model_folder(root),
        "t5": unsupported_model_folder(root),
    }


def _open_from_the_menu(window, qtbot, monkeypatch, folder) -> list[tuple[LoadProgress, str]]:
    """File → Open model folder… on ``folder``; returns each progress event with the note it put on screen."""
    seen: list[tuple[LoadProgress, str]] = []
    window.engine.load_progressed.connect(lambda p: seen.append((p, window.note_label.text())))  # after the window's
    monkeypatch.setattr("explorer.model_files.QFileDialog.getExistingDirectory", lambda *a, **k: str(folder))
    window.menu_actions["open_folder"].trigger()
    return seen


def _opened(window, name: str) -> bool:
    info = window.model_panel.info
    return info is not None and info.model_origin is not None and info.model_origin.name == name


def _step(window, qtbot, n: int, then_at: int) -> None:
    window.training.step_n.setValue(n)
    button = window.findChild(QPushButton, "train_step_n_button")
    assert button.isEnabled()
    qtbot.mouseClick(button, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.status.step == then_at and window.status.state == "paused", timeout=60000)


def test_the_command_line_takes_a_model_folder(folders):
    args = parse_args([str(folders["marian"])])
    assert args.checkpoint == str(folders["marian"])
    assert parse_args(["--open", str(folders["gpt2"])]).open_path == str(folders["gpt2"])


def test_a_gpt2_folder_opens_from_the_menu_with_progress_and_its_origin(make_window, qtbot, monkeypatch, folders):
    window = make_window()
    seen = _open_from_the_menu(window, qtbot, monkeypatch, folders["gpt2"])
    qtbot.waitUntil(lambda: _opened(window, "tiny-gpt2"), timeout=60000)
    stages = [p.stage for p, _ in seen]
    assert "reading the weights" in stages and seen[-1][0].fraction == 1.0
    assert all(p.name == "tiny-gpt2" and p.request_id == seen[0][0].request_id for p, _ in seen)
    weights = next(note for p, note in seen if p.stage == "reading the weights")
    assert "reading the weights" in weights and "10%" in weights and "tiny-gpt2" in weights
    assert window.note_label.text() == "Opened tiny-gpt2"

    info = window.model_panel.info
    assert info.model_origin == ModelOrigin("gpt2", "tiny-gpt2", str(folders["gpt2"].resolve()), ("GPT2LMHeadModel",))
    summary = window.model_panel.summary.text()
    assert "Decoder-only Transformer" in summary and "Opened from Hugging Face: <i>gpt2 · tiny-gpt2</i>" in summary
    assert f"Parameters: {info.total_parameters:,}" in summary and "byte-level BPE" in summary
    qtbot.waitUntil(lambda: window.windowTitle().startswith("tiny-gpt2 — "), timeout=5000)  # the status follows
    assert str(folders["gpt2"].resolve()) in window.recent_files()
    # the form shows the opened model as it is: Start continues it, it does not build another
    assert not needs_new_model(window.training.form.spec(), info)

    language.set("zh")
    try:
        assert "从 Hugging Face 打开" in window.model_panel.summary.text()
    finally:
        language.set("en")


def test_a_folder_that_is_not_a_model_is_refused_and_the_model_stays(make_window, qtbot, monkeypatch, folders):
    window = make_window()
    _open_from_the_menu(window, qtbot, monkeypatch, folders["gpt2"])
    qtbot.waitUntil(lambda: _opened(window, "tiny-gpt2"), timeout=60000)
    run = window.model_panel.info.run_id
    for folder, words in ((folders["junk"], "not a model folder"), (folders["t5"], "'t5' is not supported")):
        window.message_bar.hide()
        window.open_model_folder(str(folder))
        qtbot.waitUntil(lambda: window.message_bar.showing, timeout=30000)
        text = window.message_bar.label.text()
        assert words in text and "Unexpected" not in text, text
        assert window.status.run_id == run and window.model_panel.info.run_id == run and _opened(window, "tiny-gpt2")
        assert window.note_label.text() == ""  # no "Opening …" left behind


def test_a_dropped_marian_folder_opens_and_translates(make_window, qtbot, folders):
    window = make_window()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(folders["marian"]))])
    event = QDropEvent(QPoint(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    window.dropEvent(event)
    assert event.isAccepted()
    qtbot.waitUntil(lambda: _opened(window, "opus-mt-en-zh"), timeout=60000)
    summary = window.model_panel.summary.text()
    assert "Encoder–decoder Transformer" in summary and "marian · opus-mt-en-zh" in summary
    assert "SentencePiece" in summary and window.model_panel.info.data.task == "hsk-en-zh"
    window.decoding.input.setText("The teacher reads a book.")
    window.decoding.input.returnPressed.emit()
    qtbot.waitUntil(
        lambda: window.decoding.view is not None and bool(window.decoding.view.source_tokens), timeout=30000
    )
    assert window.decoding.view.source_tokens[-1] == "</s>"  # Marian's own end token, read by its own tokenizer


def test_fine_tuning_continues_the_opened_weights_and_keeps_them_for_other_data(
    make_window, qtbot, monkeypatch, folders, tmp_path
):
    window = make_window()
    _open_from_the_menu(window, qtbot, monkeypatch, folders["gpt2"])
    qtbot.waitUntil(lambda: _opened(window, "tiny-gpt2"), timeout=60000)
    opened = window.model_panel.info
    asked = []
    monkeypatch.setattr("explorer.dialogs.ask", lambda *a: asked.append(a[2]) or "cancel")
    _step(window, qtbot, 3, then_at=3)  # the opened weights, its fine-tuning settings: no new model
    assert window.status.run_id == opened.run_id and not asked
    assert window.training.current.train_config == opened.train_config
    assert window.training.current.train_config.lr == pytest.approx(3e-5)

    form = window.training.form
    form.task_combo.setCurrentIndex(form.task_combo.findData("text-grammar-en"))
    _step(window, qtbot, 2, then_at=5)  # other data: the same model and tokenizer learn it
    current = window.training.current
    assert window.status.run_id == opened.run_id and not asked
    assert current.data.task == "text-grammar-en" and current.vocab_sizes == opened.vocab_sizes
    assert current.model_origin == opened.model_origin
    qtbot.waitUntil(
        lambda: window.data_panel.data is not None and window.data_panel.data.corpus.name == current.data.name,
        timeout=20000,
    )

    # another architecture would need a new model: that is asked, never done silently
    form.norm.setCurrentIndex(form.norm.findData("post"))
    _click_step(window, qtbot)
    assert asked and "tiny-gpt2" in asked[-1] and window.status.run_id == opened.run_id

    saved = tmp_path / "tuned.ckpt"
    suggested = []
    monkeypatch.setattr(
        "explorer.model_files.QFileDialog.getSaveFileName",
        lambda _w, _t, name, _f: suggested.append(name) or (str(saved), ""),
    )
    with qtbot.waitSignal(window.engine.saved, timeout=20000):
        window.save()  # a folder is never written over: Save asks where the checkpoint goes
    assert suggested == [str(folders["gpt2"].resolve().parent / "tiny-gpt2.ckpt")]
    window.open_checkpoint(str(saved))
    qtbot.waitUntil(
        lambda: window.status.path == str(saved) and window.model_panel.info.run_id > opened.run_id, timeout=30000
    )
    assert window.model_panel.info.model_origin == opened.model_origin and window.status.step == 5


def _click_step(window, qtbot) -> None:
    qtbot.mouseClick(window.findChild(QPushButton, "train_step_button"), Qt.LeftButton)
    qtbot.wait(300)


def test_an_origin_is_read_only_from_notes_that_hold_one():
    assert ModelOrigin.of({}) is None
    assert ModelOrigin.of({"origin": "somewhere"}) is None
    assert ModelOrigin.of({"origin": {"name": "x"}}) is None
    got = ModelOrigin.of({"origin": {"model_type": "bert", "name": "bert-base-chinese", "architectures": "X"}})
    assert got == ModelOrigin("bert", "bert-base-chinese", "", ())
