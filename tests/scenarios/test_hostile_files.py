"""Checkpoint files that lie: each is refused with one message naming the file and the problem, before
anything is built from it, and the command-line tools say so without a traceback."""

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from model.cli import evaluate, train, translate
from model.io.checkpoint import CheckpointError
from model.session import Session


@pytest.fixture(scope="module")
def good_checkpoint(tmp_path_factory):
    """A real small checkpoint: tiny model, two updates, optimizer state included."""
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.training.trainer import train_config_for

    data = DataSpec(task="copy", n_train=300, n_valid=20, n_test=20, length=5, min_length=2, alphabet=6)
    session = Session.create(
        data, "tiny", train_config_for("tiny", eval_every=0, batch_size=16), TokenizerSpec("word"), device="cpu"
    )
    session.train_steps(2)
    path = tmp_path_factory.mktemp("good") / "model.ckpt"
    session.save(path)
    return path


def altered(good, bad, change):
    """Copy of the checkpoint ``good`` with ``change(data, meta)`` applied, written with plain torch.save."""
    data = torch.load(good, weights_only=True)
    meta, saved_meta = json.loads(data["meta"]), data["meta"]
    change(data, meta)
    if data["meta"] is saved_meta:  # not replaced by the change itself
        data["meta"] = json.dumps(meta)
    torch.save(data, bad)
    return bad


def fill(value):
    return lambda d, m: d.update(model={k: torch.full_like(v, value) for k, v in d["model"].items()})


LIES = {  # name → (change, what the message must say)
    "d_ff of a billion": (lambda d, m: m["model_config"].update(d_ff=10**9), r"needs \[1000000000, 64\]"),
    "d_model of 2^20": (
        lambda d, m: m["model_config"].update(d_model=2**20),
        r"d_model 1048576.*needs \[\d+, 1048576\]",
    ),
    "max_len of 10^7": (lambda d, m: m["model_config"].update(max_len=10**7), "max_len = 10,000,000 positions"),
    "a million layers": (lambda d, m: m["model_config"].update(n_decoder_layers=10**6), "1,000,000 layers"),
    "a layer too few": (lambda d, m: m["model_config"].update(n_encoder_layers=1), "unexpected encoder_layers.1"),
    "history not a table": (lambda d, m: d.update(history=[1.0, 2.0]), "metric history is a list"),
    "history column missing": (lambda d, m: d["history"].pop("loss"), "no usable column 'loss'"),
    "stream not a mapping": (lambda d, m: m.update(stream=[0, 3]), r"position in the training data \(\[0, 3\]\)"),
    "step 'abc'": (lambda d, m: m.update(step="abc"), r"its step \('abc'\) is not a whole number"),
    "format version '1'": (lambda d, m: d.update(format_version="1"), r"format version \('1'\) is not a version"),
    "all-NaN weights": (fill(float("nan")), "weights contain NaN or infinite values"),
    "infinite weights": (fill(float("inf")), "weights contain NaN or infinite values"),
    "int8 weights": (
        lambda d, m: d.update(model={k: v.to(torch.int8) for k, v in d["model"].items()}),
        "stored as int8 .*not as floating-point",
    ),
    "weights not tensors": (lambda d, m: d.update(model=[1, 2]), "not a table of named tensors"),
    "batch size 1.5": (lambda d, m: m["train_config"].update(batch_size=1.5), "batch_size must be a whole number"),
    "data size 'abc'": (lambda d, m: m["data_spec"].update(n_train="abc"), "n_train cannot be 'abc'"),
    "settings not JSON": (lambda d, m: d.update(meta="{not json"), "settings are not readable"),
    "unknown model key": (lambda d, m: m["model_config"].update(n_towers=8), "model_config.*'?n_towers"),
    "unknown training key": (lambda d, m: m["train_config"].update(momentum=0.9), "train_config.*'?momentum"),
    "unknown data key": (lambda d, m: m["data_spec"].update(shuffle=True), "data_spec.*'?shuffle"),
    "unknown tokenizer key": (lambda d, m: m["tokenizer_spec"].update(lower=True), "tokenizer_spec.*'?lower"),
    "evals not results": (lambda d, m: m.update(evals=["x"]), "evaluations is not a list of results"),
    "tokenizer garbage": (lambda d, m: d.update(src_tokenizer='{"kind": "word", "tokenizer": 5}'), "tokenizers"),
    "random state": (lambda d, m: d.update(rng={"torch": torch.zeros(3)}), "random-number state"),
    # shapes cannot tell 8 heads from the 4 the weights were trained with: the fingerprint saved beside them can
    "8 heads, trained with 4": (lambda d, m: m["model_config"].update(n_heads=8), "changed after it was saved"),
    "dropout edited": (lambda d, m: m["model_config"].update(dropout=0.5), "changed after it was saved"),
    "fingerprint not text": (lambda d, m: d.update(model_config_sha256=5), "fingerprint .* is not text"),
}


@pytest.mark.parametrize("lie", LIES, ids=list(LIES))
def test_a_lying_checkpoint_is_refused_before_any_model_is_built(good_checkpoint, tmp_path, monkeypatch, lie):
    import model.session.state

    change, says = LIES[lie]
    bad = altered(good_checkpoint, tmp_path / "bad.ckpt", change)

    def no_model(cfg):
        raise AssertionError(f"a model was built from a lying file: {cfg}")

    monkeypatch.setattr(model.session.state, "Transformer", no_model)
    rng = torch.get_rng_state()
    with pytest.raises(CheckpointError, match=says) as info:
        Session.load(bad, device="cpu")
    assert str(info.value).startswith(str(bad)), "the message names the file first"
    assert torch.equal(torch.get_rng_state(), rng)  # nothing changed


def test_optimizer_state_that_lies_is_refused(good_checkpoint, tmp_path):
    def nan_moments(d, m):
        for state in d["optimizer"]["state"].values():
            state["exp_avg"].fill_(float("nan"))

    def wrong_shape(d, m):
        state = next(iter(d["optimizer"]["state"].values()))
        state["exp_avg_sq"] = torch.zeros(3, 3)

    for change, says in ((nan_moments, "exp_avg holds NaN"), (wrong_shape, r"exp_avg_sq of shape \[3, 3\]")):
        bad = altered(good_checkpoint, tmp_path / "bad.ckpt", change)
        with pytest.raises(CheckpointError, match=f"{bad}: its optimizer state does not fit.*{says}"):
            Session.load(bad, device="cpu")


def test_the_real_checkpoint_still_loads(good_checkpoint):
    session = Session.load(good_checkpoint, device="cpu")
    assert session.step == 2 and len(session.history.train["loss"]) == 2
    assert all(len(session.history.train[k]) == 2 for k in session.history.train)


@pytest.mark.parametrize("lie", ["d_ff of a billion", "max_len of 10^7", "step 'abc'", "all-NaN weights"])
def test_all_three_command_line_tools_say_what_is_wrong_and_exit(good_checkpoint, tmp_path, capsys, lie):
    bad = str(altered(good_checkpoint, tmp_path / "bad.ckpt", LIES[lie][0]))
    runs = {
        "translate": lambda: translate.main(["--checkpoint", bad, "--device", "cpu", "1 2"]),
        "evaluate": lambda: evaluate.main(["--checkpoint", bad, "--device", "cpu"]),
        "train --resume": lambda: train.main(["--resume", bad, "--steps", "5", "--out", str(tmp_path / "out")]),
    }
    for tool, run in runs.items():
        assert run() == 2, tool  # an exception escaping main() would fail the test here
        captured = capsys.readouterr()
        assert captured.err.startswith(f"error: {bad}"), (tool, captured.err)
        assert "Traceback" not in captured.err and captured.out == ""
    assert not (tmp_path / "out").exists()  # nothing written for a file that was refused


def test_a_checkpoint_saved_before_fingerprints_still_loads(good_checkpoint, tmp_path):
    """Files without the model configuration's fingerprint (all saved before it existed) are read as before,
    an edited head count included: nothing in them can tell it."""

    def old(d, m):
        del d["model_config_sha256"]
        m["model_config"].update(n_heads=8)

    session = Session.load(altered(good_checkpoint, tmp_path / "old.ckpt", old), device="cpu")
    assert session.model_cfg.n_heads == 8
    fresh = Session.load(good_checkpoint, device="cpu")
    assert fresh.model_cfg.n_heads == 4


def test_the_bundled_model_has_no_fingerprint_and_loads():
    bundled = sorted((Path(__file__).resolve().parents[2] / "resources" / "models").glob("*.ckpt"))
    assert bundled
    for path in bundled:
        assert "model_config_sha256" not in torch.load(path, weights_only=True)
        assert Session.load(path, device="cpu").step > 0


def returns_without_blocking(call: Callable[[], object], fifo: Path, seconds: float = 10.0) -> BaseException | None:
    """What ``call`` raises (None if nothing), when it returns within ``seconds`` without waiting on the named
    pipe ``fifo``. A blocked open holds the interpreter (safetensors opens files without releasing it), so the
    pipe is released from another process: after ``seconds``, a writer opens it now and then until the end."""
    release = (
        "import os, sys, time\ntime.sleep(float(sys.argv[2]))\nwhile True:\n"
        "    try: os.close(os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK))\n"
        "    except OSError: pass\n    time.sleep(0.2)"
    )
    releaser = subprocess.Popen([sys.executable, "-c", release, str(fifo), str(seconds)])
    start, error = time.monotonic(), None
    try:
        call()
    except Exception as exc:  # noqa: BLE001 — handed to the test
        error = exc
    finally:
        releaser.kill()
        releaser.wait()
    assert time.monotonic() - start < seconds, f"opening {fifo} waited for a writer to the pipe"
    return error


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_given_as_a_checkpoint_does_not_block(tmp_path):
    pipe = tmp_path / "model.ckpt"
    os.mkfifo(pipe)
    error = returns_without_blocking(lambda: Session.load(pipe, device="cpu"), pipe)
    assert isinstance(error, CheckpointError) and "not a regular file" in str(error), error
