"""Reading a Hugging Face Trainer's output folder as the Trainer writes it (model/io/trainer_folder.py): which
checkpoints are whole, the log entries as records and scalars, and the log read again only for what is new."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from model.io import trainer_folder as tf


def _checkpoint(out: Path, step: int, log: list[dict], state: bool = True) -> Path:
    folder = out / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"x")
    if state:
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": log}))
    return folder


def _entries(first: int, last: int) -> list[dict]:
    return [
        {"step": s, "loss": 5.0 - s / 10, "learning_rate": 1e-3 * (1 - s / 20), "grad_norm": 1.0 + s, "epoch": s / 4}
        for s in range(first, last + 1)
    ]


def test_a_training_entry_an_evaluation_and_a_summary_become_records_and_scalars():
    records, scalars = tf.entry_records(
        {"step": 3, "loss": 2.5, "learning_rate": 1e-4, "grad_norm": 0.5, "epoch": 0.75}
    )
    [r] = records
    assert (r["step"], r["loss"], r["lr"], r["grad_norm"]) == (3, 2.5, 1e-4, 0.5)
    assert math.isnan(r["token_accuracy"]) and math.isnan(r["tokens_per_s"])  # not logged: no point drawn
    assert scalars == {"epoch": ([3], [0.75])}
    records, scalars = tf.entry_records({"step": 4, "eval_loss": 2.0, "eval_bleu": 12.5, "eval_runtime": 0.3})
    assert records == [{"step": 4, "split": "valid", "loss": 2.0}]
    assert scalars == {"eval_bleu": ([4], [12.5]), "eval_runtime": ([4], [0.3])}
    records, scalars = tf.entry_records({"step": 8, "train_runtime": 1.4, "train_loss": 5.9, "epoch": 2.0})
    assert records == [] and set(scalars) == {"train_runtime", "train_loss", "epoch"}
    for broken in ({"loss": 1.0}, {"step": 1.5, "loss": 1.0}, {"step": -1, "loss": 1.0}, [1, 2], "x"):
        assert tf.entry_records(broken) == ([], {})  # no whole step: not an entry


def test_only_checkpoints_with_their_state_written_count_and_the_newest_state_is_read(tmp_path):
    _checkpoint(tmp_path, 2, _entries(1, 2))
    _checkpoint(tmp_path, 10, _entries(1, 10))
    _checkpoint(tmp_path, 12, [], state=False)  # being written: the Trainer writes its state last
    (tmp_path / "checkpoint-x").mkdir()
    (tmp_path / "checkpoint-4").write_text("a file, not a checkpoint")
    assert [n for n, _ in tf.checkpoints(tmp_path)] == [2, 10]
    assert tf.is_trainer_folder(tmp_path) and not tf.is_trainer_folder(tmp_path / "checkpoint-x")
    log = tf.TrainerLog(tmp_path)
    assert log.newest_state() == tmp_path / "checkpoint-10" / "trainer_state.json"
    records, scalars, reset = log.read()
    assert [r["step"] for r in records] == list(range(1, 11)) and not reset
    assert scalars["epoch"] == (list(range(1, 11)), [s / 4 for s in range(1, 11)])
    assert log.read() == ([], {}, False)  # nothing new


def test_a_new_checkpoint_brings_only_the_entries_after_the_last_and_a_rewritten_log_starts_again(tmp_path):
    _checkpoint(tmp_path, 4, _entries(1, 4))
    log = tf.TrainerLog(tmp_path)
    assert len(log.read()[0]) == 4
    _checkpoint(tmp_path, 8, _entries(1, 8) + [{"step": 8, "eval_loss": 3.0}])
    shutil.rmtree(tmp_path / "checkpoint-4")  # save_total_limit
    records, _, reset = log.read()
    assert [(r["step"], "split" in r) for r in records] == [(5, False), (6, False), (7, False), (8, False), (8, True)]
    assert not reset
    restarted = _entries(1, 2)  # the run started again in the same folder
    _checkpoint(tmp_path, 9, restarted)
    records, _, reset = log.read()
    assert reset and [r["step"] for r in records] == [1, 2]


def test_the_folders_own_state_counts_once_it_is_newer_than_the_last_checkpoint(tmp_path):
    _checkpoint(tmp_path, 4, _entries(1, 4))
    own = tmp_path / "trainer_state.json"
    own.write_text(json.dumps({"global_step": 6, "log_history": _entries(1, 6)}))  # trainer.save_state() at the end
    later = os.stat(tmp_path / "checkpoint-4" / "trainer_state.json").st_mtime_ns + 10**9
    os.utime(own, ns=(later, later))
    assert tf.TrainerLog(tmp_path).newest_state() == own
    assert len(tf.TrainerLog(tmp_path).read()[0]) == 6


@pytest.mark.parametrize(
    ("content", "said"),
    [(b"{not json", "is not JSON"), (b'{"log_history": 3}', "no log_history list"), (b"[]", "no log_history")],
)
def test_a_state_file_that_is_not_a_trainers_is_named_and_not_read_again_until_it_changes(tmp_path, content, said):
    folder = _checkpoint(tmp_path, 2, [])
    (folder / "trainer_state.json").write_bytes(content)
    log = tf.TrainerLog(tmp_path)
    assert log.read() == ([], {}, False) and said in log.problem and "checkpoint-2" in log.problem
    (folder / "trainer_state.json").write_text(json.dumps({"log_history": _entries(1, 2)}))
    assert [r["step"] for r in log.read()[0]] == [1, 2]


def test_a_state_file_beyond_the_limit_is_refused_without_being_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(tf, "STATE_LIMIT", 100)
    _checkpoint(tmp_path, 2, _entries(1, 20))
    log = tf.TrainerLog(tmp_path)
    assert log.read() == ([], {}, False) and "more than a Trainer's log" in log.problem


def test_a_pipe_named_like_the_state_is_never_opened(tmp_path):
    folder = _checkpoint(tmp_path, 2, [], state=False)
    os.mkfifo(folder / "trainer_state.json")
    assert tf.checkpoints(tmp_path) == []  # not a regular file: not a whole checkpoint
    with pytest.raises(tf.TrainerStateError, match="named pipe"):
        tf.read_state(folder / "trainer_state.json")


def test_weights_and_config_make_a_checkpoint_readable(tmp_path):
    folder = _checkpoint(tmp_path, 2, [])
    assert tf.has_weights(folder)
    (folder / "model.safetensors").unlink()
    assert not tf.has_weights(folder)
    (folder / "pytorch_model.bin").write_bytes(b"x")
    assert tf.has_weights(folder)
    (folder / "config.json").unlink()
    assert not tf.has_weights(folder)
