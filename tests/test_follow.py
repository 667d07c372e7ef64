"""Following a run another process writes: reading its folder (model/io/follow.py); the window that shows it is
tested in test_engine_following.py."""

from __future__ import annotations

import os

import numpy as np
import pytest

from model.data import DataSpec
from model.io import follow
from model.session import Session
from model.training.trainer import TrainConfig
from tests.run_records import record


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
