"""File → Get a model (explorer/get_model.py): offered from the welcome and the File menu, a download with its
progress that opens the model in the engine, Cancel, a wrong id said in the dialog, the cache listed and opened
without network. Against the local stand-in for the Hub (tests/hub_server.py)."""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from explorer.get_model import OFFERED, GetModelDialog, progress_text
from model.hf import download as dl
from tests.hub_server import Hub, HubServer, gpt2_repo, hub_of

pytest.importorskip("transformers")

REPO = "tiny-org/tiny-gpt2"


@pytest.fixture(scope="module")
def gpt2_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return gpt2_repo(tmp_path_factory.mktemp("hub"))


@pytest.fixture()
def hub(gpt2_files: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hub:
    return hub_of(REPO, gpt2_files, monkeypatch, tmp_path / "hub-cache")


def _from(hub: Hub) -> functools.partial:
    return functools.partial(dl.download, endpoint=hub.url)


def test_the_welcome_and_the_file_menu_offer_a_real_model(make_window, qtbot, hub):
    window = make_window(start_default=True)
    qtbot.waitUntil(lambda: window.message_bar.showing and window.message_bar.kind == "welcome", timeout=20000)
    button = next(b for b in window.message_bar.buttons if b.text() == "Get a real model…")
    qtbot.mouseClick(button, Qt.LeftButton)
    dialog = window.files.get_model_dialog
    assert dialog is not None and dialog.isVisible()
    ids = [dialog.offered.item(i).data(Qt.ItemDataRole.UserRole) for i in range(dialog.offered.count())]
    assert ids == [o.repo_id for o in OFFERED]
    assert "Helsinki-NLP/opus-mt-en-zh" in ids and "openai-community/gpt2" in ids
    assert all("MB)" in dialog.offered.item(i).text() for i in range(dialog.offered.count()))
    dialog.close()
    menu_texts = [a.text() for a in window.menus.file_menu.actions()]
    assert "Get a model from the Hub…" in menu_texts


def test_a_download_shows_its_progress_then_the_model_opens_in_the_engine(make_window, qtbot, hub):
    window = make_window()
    dialog = window.files.get_model()
    seen: list[str] = []
    with HubServer(hub):
        dialog.model_id.setText(REPO)
        job = dialog.fetch(get=_from(hub))
        job.progressed.connect(lambda p: seen.append(dialog.status.text()))
        qtbot.waitUntil(lambda: window.training.current is not None, timeout=30000)
    info = window.training.current
    assert info.model_origin is not None and info.model_origin.name == REPO
    assert not dialog.isVisible()
    assert seen and all("MB" in t for t in seen)
    assert dialog.bar.maximum() == 1000 and dialog.bar.value() == 1000


def test_cancel_stops_the_download_and_opens_nothing(qtbot, hub):
    opened: list[str] = []
    dialog = GetModelDialog(opened.append)
    qtbot.addWidget(dialog)
    weights = "model.safetensors"
    hub.halfway[weights], hub.hold[weights] = threading.Event(), threading.Event()
    with HubServer(hub):
        dialog.fetch(REPO, get=_from(hub))
        assert hub.halfway[weights].wait(20)
        assert dialog.cancel_button.isEnabled() and not dialog.fetch_button.isEnabled()
        qtbot.mouseClick(dialog.cancel_button, Qt.LeftButton)
        hub.hold[weights].set()
        qtbot.waitUntil(lambda: dialog.job is None, timeout=20000)
    assert dialog.status.text().startswith("Cancelled.") and not opened
    assert dialog.fetch_button.isEnabled() and not dialog.bar.isVisible()


def test_a_wrong_id_is_said_in_the_dialog(qtbot, hub):
    dialog = GetModelDialog(lambda folder: None)
    qtbot.addWidget(dialog)
    with HubServer(hub):
        dialog.fetch("nobody/nothing", get=_from(hub))
        qtbot.waitUntil(lambda: dialog.job is None, timeout=20000)
    assert "There is no model 'nobody/nothing'" in dialog.status.text()


def test_a_model_in_the_cache_is_listed_and_opens_without_network(qtbot, hub, monkeypatch):
    from huggingface_hub import constants

    with HubServer(hub):
        folder = _from(hub)(REPO)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    opened: list[str] = []
    dialog = GetModelDialog(opened.append)
    qtbot.addWidget(dialog)
    assert dialog.cached.count() == 1 and dialog.cached.item(0).text().startswith(REPO)
    dialog.cached.itemDoubleClicked.emit(dialog.cached.item(0))
    assert opened == [str(folder)]


def test_progress_reads_as_a_person_says_it():
    p = dl.DownloadProgress(REPO, "model.safetensors", 12_300_000, 310_000_000, 4_100_000, 72.0)
    assert progress_text(p) == "12.3 MB of 310.0 MB · 4.1 MB/s · 72 s left"
    starting = dl.DownloadProgress(REPO, "config.json", 0, 310_000_000, 0.0, None)
    assert progress_text(starting) == "0.0 MB of 310.0 MB"
