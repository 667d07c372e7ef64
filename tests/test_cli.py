import json
import signal
import subprocess
import sys
import time

import pytest

from model import train, translate
from model.session import Session

COPY = ["--task", "copy", "--length", "5", "--min-length", "2", "--n-train", "2000", "--preset", "tiny",
        "--device", "cpu", "--threads", "1"]  # fmt: skip


def test_train_writes_metrics_and_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    assert train.main([*COPY, "--steps", "30", "--eval-every", "10", "--eval-sentences", "8", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [x for x in lines if "split" not in x]
    evals = [x for x in lines if "split" in x]
    assert [x["step"] for x in steps] == list(range(1, 31))
    for x in steps:
        assert set(x) == {"step", "time", "loss", "lr", "token_accuracy", "grad_norm", "tokens_per_s"}
    assert [e["step"] for e in evals] == [10, 20, 30, 30]  # every 10, and the final one
    assert {"split", "loss", "exact_match", "bleu", "time"} <= set(evals[0])
    assert all(b["time"] >= a["time"] for a, b in zip(steps, steps[1:]))
    session = Session.load(out / "model.ckpt", device="cpu")
    assert session.step == 30 and session.model_cfg.d_model == 64
    assert "--steps 30" in session.notes["commands"][0]
    assert "valid: loss" in capsys.readouterr().err

    # resume to 45 steps: the log grows, the run continues
    assert train.main(["--resume", str(out / "model.ckpt"), "--steps", "45", "--out", str(out), "--eval-every", "0",
                       "--threads", "1"]) == 0  # fmt: skip
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines if "split" not in x][-15:] == list(range(31, 46))
    assert Session.load(out / "model.ckpt", device="cpu").step == 45


def test_translate_arguments_and_stdin(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    train.main([*COPY, "--steps", "5", "--eval-every", "0", "--out", str(out)])
    capsys.readouterr()
    ckpt = str(out / "model.ckpt")
    assert translate.main(["--checkpoint", ckpt, "1 2 3", "4 4", "--beam", "3"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO("1 2\n\n9 9 z\n"))
    assert translate.main(["--checkpoint", ckpt]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 3 and captured.out.splitlines()[1] == ""
    assert "line 2: empty" in captured.err
    assert "line 3: not in the model's vocabulary" in captured.err and "'z'" in captured.err


def test_bad_inputs_give_messages_not_tracebacks(tmp_path, capsys):
    assert train.main(["--data", str(tmp_path / "none.tsv"), "--steps", "1", "--out", str(tmp_path)]) == 2
    assert "no such file" in capsys.readouterr().err
    assert train.main([*COPY, "--d-model", "30", "--heads", "4", "--steps", "1", "--out", str(tmp_path)]) == 2
    assert "divisible by n_heads" in capsys.readouterr().err
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"garbage")
    assert translate.main(["--checkpoint", str(bad), "x"]) == 2
    assert "truncated or corrupt" in capsys.readouterr().err


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT semantics")
def test_ctrl_c_saves_and_exits_cleanly(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "model.train", *COPY, "--steps", "100000", "--eval-every", "0", "--out", str(out)],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    metrics = out / "metrics.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < 20):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted at step" in err
    session = Session.load(out / "model.ckpt", device="cpu")
    assert session.step >= 20
    assert session.step == len(metrics.read_text().splitlines())


def test_resume_applies_training_flags_and_refuses_architecture_flags(tmp_path, capsys):
    out = tmp_path / "run"
    train.main([*COPY, "--steps", "3", "--eval-every", "0", "--out", str(out)])
    ckpt = str(out / "model.ckpt")
    assert train.main(["--resume", ckpt, "--steps", "5", "--out", str(out), "--eval-every", "0", "--schedule",
                       "constant", "--lr", "0.0001", "--warmup", "0"]) == 0  # fmt: skip
    assert "training settings changed on resume" in capsys.readouterr().err
    session = Session.load(ckpt, device="cpu")
    assert session.train_cfg.schedule == "constant" and session.train_cfg.lr == 0.0001
    assert session.history.train["lr"][-1] == pytest.approx(0.0001)
    assert train.main(["--resume", ckpt, "--steps", "6", "--out", str(out), "--d-model", "32"]) == 2
    assert "architecture cannot change: drop --d-model" in capsys.readouterr().err
