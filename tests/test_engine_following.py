"""Following a run another process writes (explorer/engine_following.py): the engine reads the run's folder and
passes on its log as metrics, its checkpoint as the model every panel shows, its probe snapshots and how fresh it
is; first driven directly on this thread, then in the window, which never writes into the folder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("pytestqt")

from explorer.answers import FollowStatus, MetricsBatch, ProbeSnapshot, RunInfo, ScalarsLogged  # noqa: E402
from explorer.commands import Follow  # noqa: E402
from explorer.engine_following import FollowingHandlers  # noqa: E402
from model.data import DataSpec  # noqa: E402
from model.io import follow  # noqa: E402
from model.session import Session  # noqa: E402
from model.training.trainer import TrainConfig  # noqa: E402
from tests.run_records import record  # noqa: E402


@pytest.fixture(scope="module")
def session():
    s = Session.create(DataSpec(task="copy", n_train=300), "tiny", TrainConfig(batch_size=16, eval_every=0))
    s.train_steps(3)
    return s


class Following:
    """The following handlers on this thread (their signals arrive at once), and what they said."""

    def __init__(self) -> None:
        self.engine = FollowingHandlers()
        self.engine._device = torch.device("cpu")
        self.status: list[FollowStatus] = []
        self.runs: list[RunInfo] = []
        self.batches: list[MetricsBatch] = []
        self.probes: list[ProbeSnapshot] = []
        self.scalars: list[ScalarsLogged] = []
        e = self.engine
        e.scalars_logged.connect(self.scalars.append)
        e.follow_changed.connect(self.status.append)
        e.run_described.connect(self.runs.append)
        e.metrics_logged.connect(self.batches.append)
        e.probe_recorded.connect(self.probes.append)

    def look(self) -> None:
        self.engine._poll_run(force=True)


def test_the_log_comes_first_then_the_checkpoint_then_what_is_new(qtbot, tmp_path, session):
    _writer(tmp_path, session, range(1, 4))
    seen = Following()
    seen.engine._start_following(Follow(str(tmp_path)))
    status = seen.status[-1]
    assert (status.folder, status.step, status.waiting) == (str(tmp_path), 3, True)
    assert seen.engine.session is None and seen.runs == []  # no model to show yet
    session.save(tmp_path / "model.ckpt")
    seen.look()
    [info] = seen.runs
    assert list(info.history_steps.step) == [1, 2, 3] and info.weights_step == 3  # the history is the log
    assert seen.engine.session.step == 3 and not seen.status[-1].waiting
    _writer(tmp_path, session, range(4, 6))
    follow.write_probe(tmp_path / "probe", session.inspect("3 1 4", None))
    seen.look()
    assert [list(b.steps.step) for b in seen.batches] == [[4, 5]] and seen.batches[0].run_id == info.run_id
    assert [(p.source, p.step, p.run_id) for p in seen.probes] == [("3 1 4", 3, info.run_id)]
    assert seen.status[-1].step == 5 and len(seen.runs) == 1
    seen.engine._unfollow()
    assert seen.status[-1] == FollowStatus("") and seen.engine._follow is None


def test_newer_weights_of_the_same_run_keep_its_run_and_a_final_checkpoint_says_how_it_ended(qtbot, tmp_path):
    s = Session.create(DataSpec(task="copy", n_train=300), "tiny", TrainConfig(batch_size=16, eval_every=0))
    s.save(tmp_path / "model.ckpt")
    seen = Following()
    seen.engine._start_following(Follow(str(tmp_path)))
    run_id = seen.runs[-1].run_id
    s.train_steps(2)
    s.notes["ended"] = follow.ending_note(s.step, 0)  # the trainer's last save
    s.save(tmp_path / "model.ckpt")
    seen.look()
    assert seen.runs[-1].run_id == run_id and seen.runs[-1].weights_step == 2  # the same run, newer weights
    assert seen.status[-1].ended == "finished"
    _writer(tmp_path, s, range(3, 4))  # the run was resumed: it runs again
    seen.look()
    assert seen.status[-1].ended == ""


def test_a_followed_run_makes_no_optimizer_ready_a_model_opened_to_train_does(qtbot, tmp_path, monkeypatch):
    """The run trains in another process: the optimizer's imports (1–4 s of holding the GIL, the window's too) are
    not made while its first checkpoint is shown; a model opened in the window gets them ready for its Start."""
    from explorer import engine_loading

    prepared: list[str] = []
    monkeypatch.setattr(engine_loading, "_preparing", None)
    monkeypatch.setattr(engine_loading, "prepare_optimizers", lambda: prepared.append("imports"))
    s = Session.create(DataSpec(task="copy", n_train=300), "tiny", TrainConfig(batch_size=16, eval_every=0))
    s.save(tmp_path / "model.ckpt")
    seen = Following()
    seen.engine._start_following(Follow(str(tmp_path)))
    assert seen.runs and seen.engine.session is not None
    while seen.engine._later:  # what the engine does once commands stop coming
        seen.engine._later.pop(0)()
    qtbot.wait(50)
    assert prepared == []
    seen.engine._install(s, path=None)  # a model opened to be trained here
    while seen.engine._later:
        seen.engine._later.pop(0)()
    qtbot.waitUntil(lambda: prepared == ["imports"], timeout=2000)


def test_a_folder_that_holds_no_run_is_refused_and_changes_nothing(qtbot, tmp_path):
    seen = Following()
    with pytest.raises(follow.RunFolderError, match="no metrics.jsonl or model.ckpt"):
        seen.engine._start_following(Follow(str(tmp_path)))
    assert seen.engine._follow is None and seen.status == []


def _writer(folder: Path, session: Session, steps: range) -> None:
    with open(folder / "metrics.jsonl", "a", encoding="utf-8") as f:
        f.write("".join(record(s) + "\n" for s in steps))


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def test_the_window_follows_a_run_and_never_writes_into_its_folder(make_window, qtbot, tmp_path, session):
    pytest.importorskip("pytestqt")
    run = tmp_path / "run"
    run.mkdir()
    _writer(run, session, range(1, 4))
    window = make_window()
    seen = []
    window.engine.follow_changed.connect(seen.append)
    window.follow_run(str(run))
    qtbot.waitUntil(lambda: bool(seen) and bool(seen[-1].folder) and seen[-1].waiting, timeout=30000)
    assert "waiting for its first checkpoint" in window.note_label.text()
    session.save(run / "model.ckpt")
    follow.write_probe(run / "probe", session.inspect("3 1 4", None))
    qtbot.waitUntil(lambda: window.training.current is not None and window.status.step == 3, timeout=30000)
    loss_x, _ = window.training.plots["loss_plot"].data(window.training.current.run_id, "train")
    assert list(loss_x) == [1, 2, 3]  # the log, not the checkpoint's own history
    qtbot.waitUntil(lambda: len(window.attention.over_training.snapshots) == 1, timeout=30000)
    assert window.attention.over_training.snapshots[0].source == "3 1 4"
    before = _files(run)
    _writer(run, session, range(4, 9))
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as f:
        f.write(record(9)[:15])  # a line being written
    qtbot.waitUntil(
        lambda: len(window.training.plots["loss_plot"].data(window.training.current.run_id, "train")[0]) == 8,
        timeout=30000,
    )
    qtbot.waitUntil(lambda: window.step_label.text() == "step 8", timeout=30000)  # the run's step, not the model's
    assert "Following run" in window.note_label.text() and window.state_label.text() == "following"
    d = window.decoding
    d.input.setText("3 1 4 1")
    d.translate_button.click()  # the person steps through a sentence on the followed model
    qtbot.waitUntil(lambda: d.view is not None and not d.waiting, timeout=30000)
    assert d.view.weights_step == 3
    session.train_steps(2)
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as f:  # the torn line ends; an evaluation follows
        f.write(
            record(9)[15:]
            + "\n"
            + json.dumps({"step": 9, "split": "valid", "loss": 2.0, "exact_match": 0.25, "bleu": 30.0, "sentences": 10})
            + "\n"
        )
    session.save(run / "model.ckpt")  # the trainer saves newer weights, seen in the same look as the log lines
    run_id = window.training.current.run_id
    qtbot.waitUntil(lambda: window.status.step == 5, timeout=30000)
    assert window.training.current.run_id == run_id  # the same run, newer weights
    qtbot.waitUntil(
        lambda: len(window.training.plots["quality_plot"].data(run_id, "exact_match")[0]) == 1, timeout=30000
    )
    assert list(window.training.plots["loss_plot"].data(run_id, "train")[0]) == list(range(1, 10))
    qtbot.waitUntil(lambda: not d.waiting and d.view.weights_step == 5, timeout=30000)  # redrawn by itself
    assert d.view.position == 0 and d.view.settings.text == "3 1 4 1"
    d.run_button.click()  # the same sentence goes on, on the newer weights
    qtbot.waitUntil(lambda: not d.waiting and d.view.weights_step == 5 and d.view.at_end, timeout=30000)
    after = _files(run)
    written_by_the_test = ("model.ckpt", "metrics.jsonl")
    assert {k: v for k, v in after.items() if k not in written_by_the_test} == {
        k: v for k, v in before.items() if k not in written_by_the_test
    }
    assert set(after) == set(before)  # nothing added by the window
    window.follow_run(str(tmp_path / "empty-dir-that-is-not-there"))
    assert "does not exist" in window.message_bar.label.text()
    from explorer.commands import Pause, Start

    window.engine.submit(Start())  # the person trains the model in the window: following ends, their run goes on
    qtbot.waitUntil(lambda: seen[-1].folder == "" and window.status.state == "training", timeout=30000)
    window.engine.submit(Pause())
    qtbot.waitUntil(lambda: window.status.state == "paused", timeout=30000)
    assert window.note_label.text() == "" and set(_files(run)) == set(before)


def _doc_example() -> str:
    """The RunWriter example of docs/following-runs.md, as it stands."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "following-runs.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


def test_the_documented_loop_is_followed_checkpoint_by_checkpoint(qtbot, tmp_path, monkeypatch):
    """docs/following-runs.md's loop, run as written (a small local GPT-2 for distilgpt2), followed as it saves."""
    pytest.importorskip("transformers")
    from model.follow import RunWriter
    from tests.hf_folders import gpt2_folder

    code = _doc_example()
    assert code.count("\n") <= 30 and 'MODEL = "distilgpt2"' in code
    source, out = gpt2_folder(tmp_path / "models"), tmp_path / "runs" / "my-loop"
    code = code.replace('MODEL = "distilgpt2"', f"MODEL = {str(source)!r}").replace('"runs/my-loop"', repr(str(out)))
    seen = Following()
    save = RunWriter.checkpoint

    def checkpoint_then_look(writer, model, step, tokenizer=None):  # the window looks after each save
        if seen.engine._follow is None:
            seen.engine._start_following(Follow(str(out), probe="The cat sat"))
        path = save(writer, model, step, tokenizer)
        seen.look()
        assert seen.engine.session.step == step and seen.probes[-1].step == step
        return path

    monkeypatch.setattr(RunWriter, "checkpoint", checkpoint_then_look)
    exec(compile(code, "following-runs.md", "exec"), {})
    logged = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged] == list(range(1, 201)) and logged[-1]["loss"] < logged[0]["loss"]
    [info] = seen.runs[:1]
    assert list(info.history_steps.step) == list(range(1, 51)) and info.weights_step == 50  # the log so far
    later = np.concatenate([b.steps.loss for b in seen.batches])
    assert list(np.concatenate([b.steps.step for b in seen.batches])) == list(range(51, 201))
    assert list(later) == pytest.approx([r["loss"] for r in logged[50:]])
    assert list(info.history_steps.lr) == pytest.approx([r["lr"] for r in logged[:50]])
    assert [(p.step, p.source) for p in seen.probes] == [(s, "The cat sat") for s in (50, 100, 150, 200)]
    assert {r.run_id for r in seen.runs} == {info.run_id}  # newer weights of the same run
    assert len(info.schedule) == 0  # the loop's schedule is its own: only the log shows it
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint-150", "checkpoint-200", "metrics.jsonl"]


def _drawn(batches: list[ScalarsLogged]) -> dict[str, list[tuple[int, float]]]:
    """What the window has of each tag after these batches (a reset drops what came before)."""
    drawn: dict[str, list[tuple[int, float]]] = {}
    for batch in batches:
        if batch.reset:
            drawn = {}
        for tag, steps, values in zip(batch.tags, batch.steps, batch.values, strict=True):
            drawn.setdefault(tag, []).extend(zip(steps.tolist(), values.tolist(), strict=True))
    return drawn


def test_tensorboard_scalars_written_while_following_arrive_as_written(qtbot, tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    written: dict[str, list[tuple[int, float]]] = {"train/loss": [], "eval/bleu": []}
    writer = SummaryWriter(str(tmp_path / "runs" / "exp1"))  # a loop's default place: runs/<name>
    writer.add_scalar("train/loss", 4.0, 0)
    writer.flush()
    seen = Following()
    seen.engine._start_following(Follow(str(tmp_path)))
    written["train/loss"].append((0, 4.0))
    for step in range(1, 40):
        loss = float(np.float32(4.0 / (1 + step)))  # (the event file holds float32)
        writer.add_scalar("train/loss", loss, step)
        written["train/loss"].append((step, loss))
        if step % 10 == 0:
            writer.add_scalar("eval/bleu", float(step), step)
            written["eval/bleu"].append((step, float(step)))
        if step % 7 == 0:
            writer.flush()
            seen.look()
    writer.close()
    seen.look()
    assert _drawn(seen.scalars) == written
    assert seen.engine.session is None and seen.status[-1].waiting  # no model in such a folder: the curves only
    assert {b.folder for b in seen.scalars} == {str(tmp_path)}


def test_a_tensorboard_writer_restarted_with_purge_step_is_drawn_as_tensorboard_shows_it(qtbot, tmp_path):
    """A loop resumed from its step-5 checkpoint opens a new SummaryWriter with purge_step=5 while the window
    follows: the window draws every tag again as TensorBoard shows the run (the points from step 5 on that the
    restarted writer replaces are gone), not a curve that turns back."""
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    from tests.test_tensorboard_events import tensorboards_view

    run = tmp_path / "runs" / "exp1"
    writer = SummaryWriter(str(run))
    for step in range(10):
        writer.add_scalar("train/loss", 4.0 / (1 + step), step)
    writer.add_scalar("train/lr", 0.5, 8)
    writer.close()
    seen = Following()
    seen.engine._start_following(Follow(str(tmp_path)))
    seen.look()
    writer = SummaryWriter(str(run), purge_step=5)
    for step in range(5, 12):
        writer.add_scalar("train/loss", 3.0 / (1 + step), step)
    writer.close()
    seen.look()
    assert seen.scalars[-1].reset  # drawn again whole
    wanted = tensorboards_view(run, ["train/loss", "train/lr"])
    assert wanted["train/lr"] == ([], [])  # (the case: its point at step 8 is dropped too)
    drawn = _drawn(seen.scalars)
    assert drawn["train/loss"] == list(zip(*wanted["train/loss"], strict=True))
    assert drawn.get("train/lr", []) == []


def test_a_trainer_checkpoint_of_another_kind_is_named_once_and_a_readable_one_after_it_is_shown(
    qtbot, tmp_path, monkeypatch
):
    pytest.importorskip("transformers")
    import shutil

    from tests.hf_folders import marian_folder, unsupported_model_folder

    def as_checkpoint(folder: Path, step: int) -> None:
        if not (folder / "model.safetensors").exists():
            (folder / "model.safetensors").write_bytes(b"")
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
        shutil.move(folder, tmp_path / "out" / f"checkpoint-{step}")

    (tmp_path / "out").mkdir()
    as_checkpoint(unsupported_model_folder(tmp_path / "a"), 2)
    seen = Following()
    seen.engine._start_following(Follow(str(tmp_path / "out")))
    loads = []
    real_load = Session.load
    monkeypatch.setattr(Session, "load", lambda *a, **k: loads.append(a) or real_load(*a, **k))  # count the tries
    for _ in range(3):
        seen.look()
    assert loads == [] and seen.engine.session is None  # tried once (at the start), not at every look
    problem = seen.status[-1].problem
    assert "checkpoint-2" in problem and "cannot be opened" in problem and "t5" in problem.lower()
    as_checkpoint(marian_folder(tmp_path / "b"), 4)
    seen.look()
    assert seen.engine.session is not None and seen.engine.session.step == 4 and loads


def test_a_checkpoint_deleted_under_save_total_limit_while_it_is_read_is_skipped_for_the_newest(
    qtbot, tmp_path, monkeypatch
):
    pytest.importorskip("transformers")
    import shutil

    from tests.hf_folders import marian_folder

    out = tmp_path / "out"
    out.mkdir()
    for step in (2, 4):
        folder = marian_folder(tmp_path / str(step))
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
        shutil.move(folder, out / f"checkpoint-{step}")
    seen = Following()
    real_load = Session.load
    deleted = []

    def load_while_deleted(path, *args, **kwargs):  # the Trainer's rotation deletes it half-way through the read
        if not deleted and Path(path).name == "checkpoint-4":
            (Path(path) / "model.safetensors").unlink()
            deleted.append(path)
        return real_load(path, *args, **kwargs)

    monkeypatch.setattr(Session, "load", load_while_deleted)
    seen.engine._start_following(Follow(str(out)))
    assert deleted and seen.engine.session is None and seen.status[-1].problem == ""  # skipped, not an error
    shutil.rmtree(out / "checkpoint-4")  # the rotation ends
    seen.look()
    assert seen.engine.session is not None and seen.engine.session.step == 2 and seen.status[-1].problem == ""
