"""The engine's handlers for whole models (explorer/engine_files.py): a new model, a checkpoint opened as a person's
file, an autosave or the bundled model, saving, and the autosave written as the window closes; driven directly on
this thread."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("pytestqt")

from explorer.answers import IDLE, EngineStatus, RunInfo  # noqa: E402
from explorer.commands import Load, NewModel, NewModelSpec, Save  # noqa: E402
from explorer.engine_files import FileHandlers, data_cache_dir  # noqa: E402
from explorer.failures import NOT_SAVED, RefusedRequest  # noqa: E402
from model.data import DataSpec  # noqa: E402
from model.data.tokenization import TokenizerSpec  # noqa: E402
from model.io.checkpoint import CheckpointError  # noqa: E402
from model.training.trainer import train_config_for  # noqa: E402


def copy_spec() -> NewModelSpec:
    data = DataSpec(task="copy", n_train=200, n_valid=20, n_test=20, length=6, min_length=3, alphabet=6)
    return NewModelSpec(data, "tiny", {}, train_config_for("tiny", eval_every=0, batch_size=16), TokenizerSpec("word"))


class Files:
    """The file handlers on this thread (their signals arrive at once), and what they said."""

    def __init__(self) -> None:
        self.engine = FileHandlers()
        self.engine._device = torch.device("cpu")
        self.runs: list[RunInfo] = []
        self.status: list[EngineStatus] = []
        self.saved: list[tuple[int, str]] = []
        e = self.engine
        e.run_described.connect(self.runs.append)
        e.status_changed.connect(self.status.append)
        e.saved.connect(lambda rid, path: self.saved.append((rid, path)))


@pytest.fixture
def files(qtbot):
    return Files()


@pytest.fixture
def checkpoint(copy_session_factory, tmp_path):
    session = copy_session_factory()
    session.train_steps(2)
    path = tmp_path / "trained.ckpt"
    session.save(path)
    return path


def test_a_new_model_is_a_new_run_from_no_file(files):
    new = NewModel(copy_spec())
    files.engine._new(new)
    [info] = files.runs
    assert info.origin == new.request_id and info.run_id == 1 and info.data.task == "copy"
    status = files.status[-1]
    assert (status.state, status.step, status.path, status.dirty, status.run_id) == (IDLE, 0, None, False, 1)
    assert files.engine.session.data_cache == data_cache_dir()
    session = files.engine.session
    files.engine._new(NewModel(copy_spec(), if_no_model=True))  # the start-up plan: a model exists already
    assert files.engine.session is session and len(files.runs) == 1
    files.engine._new(NewModel(copy_spec()))
    assert files.runs[-1].run_id == 2 and files.engine.session is not session


@pytest.mark.parametrize(
    "kind, path_kept, dirty", [("file", True, False), ("autosave", False, True), ("bundled", False, False)]
)
def test_what_save_writes_to_depends_on_what_was_opened(files, checkpoint, kind, path_kept, dirty):
    load = Load(str(checkpoint), kind=kind)
    files.engine._load(load)
    assert files.runs[-1].origin == load.request_id and files.engine.session.step == 2
    status = files.status[-1]
    assert status.path == (str(checkpoint) if path_kept else None)  # only a person's own file is written back
    assert status.dirty == dirty  # restored work is not saved anywhere the person chose


def test_a_file_that_cannot_be_opened_leaves_the_model_as_it_was(files, checkpoint, tmp_path):
    files.engine._load(Load(str(checkpoint)))
    session = files.engine.session
    (tmp_path / "broken.ckpt").write_bytes(b"\x00" * 100)
    with pytest.raises(CheckpointError):
        files.engine._load(Load(str(tmp_path / "broken.ckpt")))
    assert files.engine.session is session and files.engine._path == str(checkpoint) and len(files.runs) == 1


def test_saving_says_where_and_a_failed_save_says_why(files, checkpoint, tmp_path):
    files.engine._load(Load(str(checkpoint), kind="autosave"))
    save = Save(str(tmp_path / "mine.ckpt"))
    files.engine._save(save)
    assert files.saved == [(save.request_id, save.path)] and (tmp_path / "mine.ckpt").is_file()
    assert (files.status[-1].path, files.status[-1].dirty) == (save.path, False)
    (tmp_path / "notes.txt").write_text("x")
    nowhere = str(tmp_path / "notes.txt" / "x.ckpt")  # a file where its folder should be
    with pytest.raises(RefusedRequest) as refused:
        files.engine._save(Save(nowhere))
    message = refused.value.message
    assert message.text == NOT_SAVED and dict(message.fields)["path"] == nowhere and dict(message.fields)["why"]
    assert len(files.saved) == 1 and files.engine._path == save.path


def test_closing_keeps_unsaved_work_beside_an_autosave_nobody_answered_for(files, checkpoint, tmp_path):
    autosave = tmp_path / "data" / "autosave.ckpt"
    files.engine._load(Load(str(checkpoint)))
    files.engine._do_shutdown(str(autosave))  # nothing unsaved: nothing written
    assert not autosave.parent.exists()
    files.engine.session.train_steps(1)
    files.engine._do_shutdown(str(autosave))
    assert autosave.is_file() and files.engine._state == IDLE
    earlier = autosave.read_bytes()
    files.engine.session.train_steps(1)
    files.engine._do_shutdown(str(autosave))  # an autosave is there already: a second one beside it
    assert autosave.read_bytes() == earlier
    [beside] = [p.name for p in autosave.parent.iterdir() if p.name != "autosave.ckpt"]
    assert beside.startswith("autosave-") and beside.endswith(".ckpt") and len(beside) == len("autosave-.ckpt") + 15


def test_an_autosave_that_cannot_be_written_is_said_on_the_terminal(files, checkpoint, tmp_path, capsys):
    files.engine._load(Load(str(checkpoint)))
    files.engine.session.train_steps(1)
    (tmp_path / "data").write_text("a file where the data folder should be")
    files.engine._do_shutdown(str(tmp_path / "data" / "autosave.ckpt"))  # the window closes all the same
    assert "could not write the autosave file" in capsys.readouterr().err
