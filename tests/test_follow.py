"""Following a run another process writes: reading its folder (model/io/follow.py) and the window that shows it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from model.data import DataSpec
from model.io import follow
from model.session import Session
from model.training.trainer import TrainConfig


def record(step: int) -> str:
    return json.dumps(
        {
            "step": step,
            "time": step / 10,
            "loss": 5.0 - step / 100,
            "lr": 1e-3,
            "token_accuracy": 0.1,
            "grad_norm": 1.0,
            "tokens_per_s": 1000.0,
        }
    )


def test_the_log_is_read_as_it_grows_torn_lines_garbage_and_rewrites_included(tmp_path):
    log = tmp_path / "metrics.jsonl"
    tail = follow.MetricsTail(log)
    assert tail.read() == ([], False)  # not there yet
    log.write_text(record(1) + "\n" + record(2)[:20], encoding="utf-8")  # the writer is mid-line
    records, reset = tail.read()
    assert [r["step"] for r in records] == [1] and not reset
    with open(log, "a", encoding="utf-8") as f:
        f.write(record(2)[20:] + "\nnot json\n[1, 2]\n" + record(3) + "\n")
    records, _ = tail.read()
    assert [r["step"] for r in records] == [2, 3] and tail.bad == 2
    new = tmp_path / "new.jsonl"  # a resume trims the log: a new, shorter file put in its place
    new.write_text(record(1) + "\n" + record(2) + "\n", encoding="utf-8")
    os.replace(new, log)
    records, reset = tail.read()
    assert reset and [r["step"] for r in records] == [1, 2]
    log.write_text("", encoding="utf-8")  # truncated in place
    log.write_text(record(7) + "\n", encoding="utf-8")
    records, reset = tail.read()
    assert [r["step"] for r in records] == [7]


def test_a_folder_that_holds_no_run_is_named_with_what_was_looked_for(tmp_path):
    with pytest.raises(follow.RunFolderError, match="does not exist"):
        follow.check_run_folder(tmp_path / "nowhere")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(follow.RunFolderError, match="is a file"):
        follow.check_run_folder(tmp_path / "file.txt")
    with pytest.raises(follow.RunFolderError, match="no metrics.jsonl or model.ckpt"):
        follow.check_run_folder(tmp_path)


@pytest.fixture(scope="module")
def session():
    s = Session.create(DataSpec(task="copy", n_train=300), "tiny", TrainConfig(batch_size=16, eval_every=0))
    s.train_steps(3)
    return s


def test_probe_snapshots_round_trip_in_float16_and_are_thinned(tmp_path, session, monkeypatch):
    inspection = session.inspect("3 1 4 1 5", "5 1 4 1 3")
    path = follow.write_probe(tmp_path / "probe", inspection)
    back = follow.read_probe(path)
    for name in ("encoder", "decoder_self", "cross"):
        assert np.abs(getattr(back, name) - getattr(inspection, name)).max() < 1e-3  # float16
    assert (back.src_tokens, back.out_tokens, back.step) == (inspection.src_tokens, inspection.out_tokens, 3)
    assert all((back.masks[k] == v).all() for k, v in inspection.masks.items())
    assert back.teacher_forced and back.target_ids == inspection.target_ids
    monkeypatch.setattr(follow, "MAX_PROBES", 10)
    from dataclasses import replace

    for step in range(1, 40):
        follow.write_probe(tmp_path / "probe", replace(inspection, step=step * 10))
    kept = sorted(int(p.stem[5:]) for p in (tmp_path / "probe").glob("step-*.npz"))
    assert len(kept) <= 10 and kept[0] == 3 and kept[-1] == 390  # the start and the newest stay
    assert not list((tmp_path / "probe").glob(".*"))  # no temporary files left


def test_a_probe_of_a_model_with_experts_keeps_what_its_routers_did(tmp_path):
    s = Session.create(
        DataSpec(task="text-grammar-en", n_train=200),
        "tiny",
        TrainConfig(batch_size=8, eval_every=0),
        arch="decoder_only",
        n_experts=4,
        experts_top_k=2,
    )
    inspection = s.inspect("I read a book .", "")
    assert inspection.routing
    back = follow.read_probe(follow.write_probe(tmp_path, inspection))
    assert len(back.routing) == len(inspection.routing)
    for a, b in zip(inspection.routing, back.routing):
        assert (a.stack, a.layer, a.tokens) == (b.stack, b.layer, b.tokens) and (a.chosen == b.chosen).all()
        assert np.abs(a.probs - b.probs).max() < 1e-3 and np.abs(a.weights - b.weights).max() < 1e-3


def test_the_watcher_sees_a_replaced_checkpoint_and_new_probes_once(tmp_path, session):
    session.save(tmp_path / "model.ckpt")
    watcher = follow.RunWatcher(tmp_path)
    assert watcher.poll().checkpoint
    assert not watcher.poll().checkpoint
    session.save(tmp_path / "model.ckpt")  # replaced atomically: a new file
    first = watcher.poll()
    assert first.checkpoint and not first.probes
    follow.write_probe(tmp_path / "probe", session.inspect("1 2 3", None))
    assert [p.name for p in watcher.poll().probes] == ["step-000000003.npz"]
    assert watcher.poll().probes == []


# -- the window ----------------------------------------------------------------------------------------------------
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


def test_the_command_line_takes_a_run_to_follow(tmp_path):
    from explorer.app import parse_args

    args = parse_args(["--follow", str(tmp_path)])
    assert args.follow == str(tmp_path) and args.checkpoint is None
