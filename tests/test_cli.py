import json
import math
import re
import signal
import subprocess
import sys
import time

import pytest

from model.cli import train, translate
from model.session import Session

COPY = [
    "--task",
    "copy",
    "--length",
    "5",
    "--min-length",
    "2",
    "--n-train",
    "2000",
    "--preset",
    "tiny",
    "--device",
    "cpu",
    "--threads",
    "1",
]


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
    assert (
        train.main(
            [
                "--resume",
                str(out / "model.ckpt"),
                "--steps",
                "45",
                "--out",
                str(out),
                "--eval-every",
                "0",
                "--threads",
                "1",
            ]
        )
        == 0
    )
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
    assert translate.main(["--checkpoint", ckpt, "1 2 3", "--int8"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 1
    assert re.search(r"int8 fast mode: \d of 8 check sentences decode as in float32", captured.err)


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
    # stderr into a file, not a pipe nobody reads while the run goes on (a full pipe would stop the trainer); the
    # waits are long: late in the whole suite the machine may be slow, and only the outcome is checked
    with open(tmp_path / "stderr.txt", "w+", encoding="utf-8") as stderr:
        command = [sys.executable, "-m", "model.cli.train", *COPY, "--steps", "100000", "--eval-every", "0"]
        proc = subprocess.Popen([*command, "--out", str(out)], stderr=stderr, text=True)
        metrics = out / "metrics.jsonl"
        deadline = time.time() + 180
        while time.time() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < 20):
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
        stderr.seek(0)
        err = stderr.read()
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "interrupted at step" in err
    session = Session.load(out / "model.ckpt", device="cpu")
    assert session.step >= 20
    assert session.step == len(metrics.read_text().splitlines())


def test_resume_applies_training_flags_and_refuses_architecture_flags(tmp_path, capsys):
    out = tmp_path / "run"
    train.main([*COPY, "--steps", "3", "--eval-every", "0", "--out", str(out)])
    ckpt = str(out / "model.ckpt")
    assert (
        train.main(
            [
                "--resume",
                ckpt,
                "--steps",
                "5",
                "--out",
                str(out),
                "--eval-every",
                "0",
                "--schedule",
                "constant",
                "--lr",
                "0.0001",
                "--warmup",
                "0",
            ]
        )
        == 0
    )
    assert "training settings changed on resume" in capsys.readouterr().err
    session = Session.load(ckpt, device="cpu")
    assert session.train_cfg.schedule == "constant" and session.train_cfg.lr == 0.0001
    assert session.history.train["lr"][-1] == pytest.approx(0.0001)
    assert train.main(["--resume", ckpt, "--steps", "6", "--out", str(out), "--d-model", "32"]) == 2
    assert "architecture cannot change: drop --d-model" in capsys.readouterr().err


def _training_steps(metrics):
    return [json.loads(x)["step"] for x in metrics.read_text().splitlines() if "split" not in json.loads(x)]


def test_resume_drops_metric_lines_past_the_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    assert train.main([*COPY, "--steps", "20", "--eval-every", "10", "--eval-sentences", "4", "--out", str(out)]) == 0
    metrics = out / "metrics.jsonl"
    # a run killed after the save at step 20 had logged steps 21-23, an evaluation and half of step 24
    with open(metrics, "a") as log:
        for step in (21, 22, 23):
            log.write(
                json.dumps(
                    {
                        "step": step,
                        "time": 1.0,
                        "loss": 9.0,
                        "lr": 0.1,
                        "token_accuracy": 0.0,
                        "grad_norm": 1.0,
                        "tokens_per_s": 1.0,
                    }
                )
                + "\n"
            )
        log.write(json.dumps({"step": 22, "split": "valid", "loss": 9.0, "exact_match": 0, "bleu": 0}) + "\n")
        log.write('{"step": 24, "time": 1.')
    before = metrics.read_text().splitlines()[:-5]
    capsys.readouterr()
    assert (
        train.main(
            [
                "--resume",
                str(out / "model.ckpt"),
                "--steps",
                "25",
                "--out",
                str(out),
                "--eval-every",
                "0",
                "--eval-sentences",
                "4",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    assert "5 lines past step 20" in capsys.readouterr().err
    lines = metrics.read_text().splitlines()
    assert lines[: len(before)] == before  # the run's own lines up to the checkpoint are untouched
    assert _training_steps(metrics) == list(range(1, 26))
    assert [json.loads(x)["step"] for x in lines if "split" in x] == [10, 20, 20, 25]
    assert all(json.loads(x)["loss"] != 9.0 for x in lines)


def test_the_final_evaluation_decodes_only_eval_sentences(tmp_path, monkeypatch, capsys):
    import model.training.trainer

    decoded = []
    real = model.training.trainer.greedy_decode

    def counting(model_, src, max_len):
        decoded.append(src.shape[0])
        return real(model_, src, max_len)

    monkeypatch.setattr(model.training.trainer, "greedy_decode", counting)
    out = tmp_path / "run"
    assert (
        train.main([*COPY, "--steps", "3", "--eval-every", "0", "--eval-sentences", "7", "--test", "--out", str(out)])
        == 0
    )
    assert sum(decoded) == 14  # 7 valid + 7 test sentences, of 500 each
    finals = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if "split" in x]
    assert [(e["split"], e["sentences"]) for e in finals] == [("valid", 7), ("test", 7)]
    assert "valid: loss" in capsys.readouterr().err


def test_a_diverged_run_can_be_resumed_with_a_lower_rate(tmp_path, capsys):
    out = tmp_path / "run"
    ckpt = out / "model.ckpt"
    assert (
        train.main(
            [
                *COPY,
                "--steps",
                "20",
                "--eval-every",
                "0",
                "--schedule",
                "constant",
                "--lr",
                "1e30",
                "--warmup",
                "0",
                "--out",
                str(out),
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert "Training stopped at step 2" in err and "back at step 0" in err and "Traceback" not in err
    assert "to go on: python -m model.train --resume" in err and "--lr <lower>" in err
    saved = Session.load(ckpt, device="cpu")
    assert saved.step == 0 and all(bool(w.isfinite().all()) for w in saved.model.state_dict().values())
    assert (
        train.main(
            [
                "--resume",
                str(ckpt),
                "--steps",
                "8",
                "--out",
                str(out),
                "--lr",
                "1e-4",
                "--eval-every",
                "0",
                "--eval-sentences",
                "4",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    resumed = Session.load(ckpt, device="cpu")
    assert resumed.step == 8 and all(math.isfinite(x) for x in resumed.history.train["loss"])
    assert _training_steps(out / "metrics.jsonl") == list(range(1, 9))  # the ruinous step 1 was dropped


# -- python -m model.explain -------------------------------------------------------------------------------------
BUNDLED = "resources/models/grammar-en-zh-small.ckpt"


def _csv_matrix(path):
    import csv

    import numpy as np

    rows = list(csv.reader(open(path, encoding="utf-8")))
    assert rows[0][0] == "target"
    return rows[0][1:], [r[0] for r in rows[1:]], np.array([[float(v) for v in r[1:]] for r in rows[1:]])


def _expected(found, n_prefix):
    import numpy as np

    return np.concatenate([found.scores, found.prefix_scores[:, :n_prefix]], 1)


def test_explain_csv_equals_session_attribute_on_the_bundled_model(tmp_path, capsys):
    from model.cli import explain

    sentence, out = "I read a book yesterday.", tmp_path / "why.csv"
    args = ["--checkpoint", BUNDLED, sentence, "--steps", "16", "--csv", str(out), "--threads", "1"]
    assert explain.main(args) == 0
    printed = capsys.readouterr().out.splitlines()
    found = Session.load(BUNDLED, device="cpu").attribute(sentence, steps=16)
    columns, targets, values = _csv_matrix(out)
    assert columns == [*found.source_tokens, *found.prefix_tokens] and targets == list(found.target_tokens)
    assert abs(values - _expected(found, len(found.prefix_tokens))).max() < 1e-4
    assert printed[0].startswith("integrated gradients (16 steps)")
    header, rows = printed[1], printed[2 : 2 + len(targets)]
    assert header.split() == [*found.source_tokens, "│", *found.prefix_tokens]
    for target, line, expected in zip(targets, rows, values):
        cells = line.split()
        assert cells[0] == target and cells[1 + len(found.source_tokens)] == "│"
        assert [float(c) for c in cells[1 : 1 + len(found.source_tokens)]] == pytest.approx(
            expected[: len(found.source_tokens)], abs=1e-3
        )
    assert len({explain.width(line.split("│")[0]) for line in [header, *rows]}) == 1  # aligned
    assert explain.width(header) == explain.width(rows[-1])  # the Chinese columns too: a full last row


def test_explain_a_tiny_trained_checkpoint_with_the_lens_and_ablation(tmp_path, capsys):
    from model.cli import explain

    train.main([*COPY, "--steps", "5", "--eval-every", "0", "--out", str(tmp_path / "run")])
    capsys.readouterr()
    ckpt, out = str(tmp_path / "run" / "model.ckpt"), tmp_path / "why.csv"
    args = ["--checkpoint", ckpt, "1 2 3", "--target", "1 2 3", "--method", "gradient_x_input", "--lens"]
    assert explain.main([*args, "--csv", str(out), "--ablate", "cross:0:1", "encoder:1:0"]) == 0
    printed = capsys.readouterr().out
    session = Session.load(ckpt, device="cpu")
    with session.ablated([("cross", 0, 1), ("encoder", 1, 0)]):
        found = session.attribute("1 2 3", "gradient_x_input", target="1 2 3")
    _, targets, values = _csv_matrix(out)
    assert targets == ["1", "2", "3", "<eos>"]
    assert abs(values - _expected(found, len(found.prefix_tokens))).max() < 1e-4
    assert "heads switched off: cross:0:1, encoder:1:0" in printed
    lens = printed.split("logit lens")[1].splitlines()
    assert [line.split()[:2] for line in lens[2:4]] == [["layer", "1"], ["layer", "2"]]
    assert lens[4].split() == ["output", *targets] and "*" in "".join(lens[2:4])


def test_explain_errors_are_one_line_and_no_traceback(tmp_path, capsys):
    from model.cli import explain

    proc = subprocess.run(
        [sys.executable, "-m", "model.explain", "--checkpoint", BUNDLED, "--ablate", "cross-0-1", "--", "I read."],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "error: --ablate 'cross-0-1' is not KIND:LAYER:HEAD (kind encoder, decoder, cross; layer and head counted "
        "from 0, e.g. cross:0:1)"
    ]
    assert explain.main(["--checkpoint", BUNDLED, "I read.", "--ablate", "cross:9:0", "--threads", "1"]) == 2
    assert capsys.readouterr().err == "error: no cross layer 9: the model has 3 (counted from 0)\n"
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"garbage")
    assert explain.main(["--checkpoint", str(bad), "x"]) == 2
    assert "truncated or corrupt" in capsys.readouterr().err
    run = tmp_path / "bert"
    bert = ["--arch", "encoder_only", "--task", "text-grammar-en", "--preset", "tiny", "--threads", "1"]
    assert train.main([*bert, "--steps", "1", "--eval-every", "0", "--eval-sentences", "4", "--out", str(run)]) == 0
    capsys.readouterr()
    assert explain.main(["--checkpoint", str(run / "model.ckpt"), "the cat sat on the mat ."]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Write <mask>") and len(err.splitlines()) == 1
