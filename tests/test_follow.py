"""Following a run another process writes: reading its folder (model/io/follow.py); the window that shows it is
tested in test_engine_following.py."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from model.data import DataSpec
from model.follow import RunWriter
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
    with pytest.raises(follow.RunFolderError, match="no metrics.jsonl or model.ckpt.*checkpoint-N.*TensorBoard"):
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


# -- the runs engineers run: a Trainer's folder, a loop's RunWriter ---------------------------------------------
def test_a_trainer_folder_a_loops_folder_and_an_event_file_are_runs(tmp_path):
    trainer = tmp_path / "trainer"
    (trainer / "checkpoint-2").mkdir(parents=True)
    assert follow.check_run_folder(trainer) == trainer
    events = tmp_path / "tb" / "runs" / "Dec03_host"
    events.mkdir(parents=True)
    (events / "events.out.tfevents.1.host").write_bytes(b"")
    assert follow.check_run_folder(tmp_path / "tb") == tmp_path / "tb"


def test_a_loops_lines_are_split_into_what_the_plots_draw_and_scalars_of_their_own(tmp_path):
    with RunWriter(tmp_path) as w:
        w.log(1, loss=2.5, lr=1e-3, reward=0.25)
        w.log(2, loss=torch.tensor(2.0), learning_rate=5e-4, eval_loss=2.2, eval_bleu=3.5)
        w.log(3, loss=float("nan"))  # a diverged loss stays a point
        with pytest.raises(ValueError, match="not a number"):
            w.log(4, loss="low")
        with pytest.raises(ValueError, match="whole number"):
            w.log(2.5, loss=1.0)
    poll = follow.RunWatcher(tmp_path).poll()
    train = [r for r in poll.records if "split" not in r]
    assert [(r["step"], r["lr"]) for r in train[:2]] == [(1, 1e-3), (2, 5e-4)] and train[1]["loss"] == 2.0
    assert np.isnan(train[2]["loss"]) and np.isnan(train[0]["grad_norm"])
    assert [r for r in poll.records if "split" in r] == [{"step": 2, "split": "valid", "loss": 2.2}]
    assert poll.scalars == {"reward": ([1], [0.25]), "eval_bleu": ([2], [3.5])}
    assert follow.RunWatcher(tmp_path).tail.bad == 0


def test_own_log_lines_bring_no_scalars_but_the_numbers_they_do_not_know(tmp_path):
    lines = [
        json.loads(record(1)),
        {"step": 1, "time": 1.0, "split": "valid", "loss": 2.0, "bleu": 3.0, "sentences": 8},
    ]
    lines[0]["beta"] = 0.5
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    poll = follow.RunWatcher(tmp_path).poll()
    assert [r.get("split") for r in poll.records] == [None, "valid"] and poll.scalars == {"beta": ([1], [0.5])}


def test_a_loops_hugging_face_checkpoints_appear_whole_and_the_oldest_go(tmp_path):
    transformers = pytest.importorskip("transformers")
    from tests.hf_folders import gpt2_folder

    source = gpt2_folder(tmp_path / "models")
    model = transformers.GPT2LMHeadModel.from_pretrained(source)
    tokenizer = transformers.GPT2TokenizerFast.from_pretrained(source)
    run = tmp_path / "run"
    w = RunWriter(run, tokenizer=tokenizer, keep=2)
    watcher = follow.RunWatcher(run)
    for step in (10, 20, 30):
        path = w.checkpoint(model, step)
        assert path == run / f"checkpoint-{step}" and (path / "tokenizer.json").is_file()
        poll = watcher.poll()
        assert poll.checkpoint and watcher.checkpoint_path == path and watcher.computes_probes
        assert not watcher.poll().checkpoint  # seen once
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint-20", "checkpoint-30", "metrics.jsonl"]
    with pytest.raises(TypeError, match="Hugging Face model"):
        w.checkpoint(object(), 40)
    with pytest.raises(ValueError, match="keep"):
        RunWriter(run, keep=0)


def test_a_loop_can_save_a_session_as_this_projects_checkpoint(tmp_path, session):
    w = RunWriter(tmp_path)
    assert w.checkpoint(session, 7) == tmp_path / "model.ckpt"
    watcher = follow.RunWatcher(tmp_path)
    assert watcher.poll().checkpoint and not watcher.computes_probes  # this project's checkpoint: probes as before
    assert Session.load(tmp_path / "model.ckpt").step == 7


def test_a_checkpoint_that_cannot_be_opened_is_not_tried_again_until_a_newer_one_comes(tmp_path):
    for step in (2, 4):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        for name in ("config.json", "model.safetensors", "trainer_state.json"):
            (folder / name).write_text("{}")
        if step == 2:
            watcher = follow.RunWatcher(tmp_path)
            assert watcher.poll().checkpoint
            watcher.refuse_checkpoint("checkpoint-2 is a T5")
            assert not watcher.poll().checkpoint and watcher.problem == "checkpoint-2 is a T5"
    assert watcher.poll().checkpoint and watcher.checkpoint_path == tmp_path / "checkpoint-4"
