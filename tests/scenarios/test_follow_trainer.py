"""The window follows a Hugging Face Seq2SeqTrainer while it trains a tiny Marian (tests/trainer_runs.py): the curves
are the Trainer's log_history, the model is its newest checkpoint, the attention timeline gains the probe sentence's
maps at each checkpoint, and nothing in the output folder changes."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("accelerate")  # the Trainer needs it

from explorer.answers import ScalarsLogged  # noqa: E402
from tests.test_engine_following import _drawn  # noqa: E402
from tests.trainer_runs import Gate, seq2seq_trainer  # noqa: E402

PROBE = "the cat eats fish"


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def test_the_window_follows_a_seq2seq_trainer_checkpoint_by_checkpoint(make_window, qtbot, tmp_path):
    out = tmp_path / "out"
    gate = Gate()
    trainer = seq2seq_trainer(tmp_path / "models", out, max_steps=8, save_steps=2, callbacks=(gate,))
    thread = threading.Thread(target=trainer.train, daemon=True)
    thread.start()
    try:
        qtbot.waitUntil(lambda: gate.saved == [2], timeout=60000)  # the Trainer holds after its first save
        window = make_window()
        scalars: list[ScalarsLogged] = []
        window.engine.scalars_logged.connect(scalars.append)
        window.files.follow_run(str(out), PROBE)
        timeline = window.attention.over_training
        for n, step in enumerate((2, 4, 6, 8), start=1):
            qtbot.waitUntil(lambda step=step: gate.saved[-1:] == [step], timeout=60000)
            held = _files(out)
            qtbot.waitUntil(lambda step=step: window.status.step == step, timeout=60000)  # the newest checkpoint
            qtbot.waitUntil(lambda n=n: len(timeline.snapshots) == n, timeout=60000)
            assert timeline.snapshots[-1].step == step and timeline.snapshots[-1].source == PROBE
            assert _files(out) == held  # the window read the checkpoint and wrote nothing
            assert sorted(p.name for p in out.iterdir()) == [f"checkpoint-{s}" for s in (step - 2, step) if s > 0]
            gate.open()
    finally:
        gate.closed = True
        gate.open()
        thread.join(timeout=120)
    log = json.loads((out / "checkpoint-8" / "trainer_state.json").read_text())["log_history"]
    run_id = window.training.current.run_id
    plots = window.training.plots
    train = [(e["step"], e["loss"]) for e in log if "loss" in e]
    evals = [(e["step"], e["eval_loss"]) for e in log if "eval_loss" in e]
    qtbot.waitUntil(lambda: len(plots["loss_plot"].data(run_id, "train")[0]) == len(train), timeout=30000)
    x, y = plots["loss_plot"].data(run_id, "train")
    assert list(x) == [s for s, _ in train] and list(y) == pytest.approx([v for _, v in train])  # the Trainer's log
    x, y = plots["lr_plot"].data(run_id, "lr")
    assert list(y) == pytest.approx([e["learning_rate"] for e in log if "loss" in e])
    assert len(plots["lr_plot"].data(run_id, "schedule")[0]) == 0  # the Trainer's schedule shows only in its log
    x, y = plots["loss_plot"].data(run_id, "valid")
    assert list(x) == [s for s, _ in evals] and list(y) == pytest.approx([v for _, v in evals]) and len(evals) == 2
    drawn = _drawn(scalars)
    assert drawn["epoch"] == [(e["step"], e["epoch"]) for e in log if "epoch" in e]  # as written: floats of JSON
    assert drawn["eval_runtime"] == [(e["step"], e["eval_runtime"]) for e in log if "eval_loss" in e]
    assert "loss" not in drawn and "eval_loss" not in drawn  # those are the training plots' own curves
    shown = window.training.scalars_plot  # the Logged scalars plot holds what came, tag by tag
    qtbot.waitUntil(lambda: not shown.isHidden(), timeout=10000)
    for tag in ("epoch", "eval_runtime", "eval_samples_per_second"):
        points = shown.state.points[tag]
        assert list(points.steps) == [s for s, _ in drawn[tag]] and list(points.values) == [v for _, v in drawn[tag]]
