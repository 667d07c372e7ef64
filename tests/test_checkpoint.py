import itertools
import json
import os
import pickle
import subprocess
import sys
import time

import pytest
import torch

from model.io.checkpoint import CheckpointError, all_finite, load_checkpoint, save_checkpoint, weight_shapes
from model.session import Session


class CreatesAFile:
    """A pickle payload that, if unpickled, creates a file (a stand-in for running any code)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def test_crash_during_save_keeps_the_previous_file(copy_session_factory, tmp_path, monkeypatch):
    session = copy_session_factory()
    path = tmp_path / "model.ckpt"
    session.save(path)
    before = path.read_bytes()
    session.train_steps(3)

    def dies_half_way(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 half a zip file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", dies_half_way)
    with pytest.raises(OSError, match="No space left"):
        session.save(path)
    assert path.read_bytes() == before
    assert Session.load(path, device="cpu").step == 0
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt"]  # no temporary file left behind
    assert session.dirty  # the unsaved work is still marked unsaved


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_loading_refuses_code_and_runs_none(tmp_path):
    victim = tmp_path / "created-by-unpickling.txt"
    evil = tmp_path / "evil.ckpt"
    torch.save({"format": "transformer-explorer-checkpoint", "payload": CreatesAFile(victim)}, evil)
    raw = tmp_path / "evil-raw.ckpt"
    raw.write_bytes(pickle.dumps(CreatesAFile(victim)))
    with pytest.raises(CheckpointError, match="refused: it contains code"):
        Session.load(evil, device="cpu")
    with pytest.raises(CheckpointError, match="not a PyTorch checkpoint"):
        Session.load(raw, device="cpu")
    assert not victim.exists()
    # the same payloads really do run code when unpickled without protection
    pickle.loads(raw.read_bytes()).close()
    assert victim.exists()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p, good: p.write_bytes(good[: len(good) // 2]), "truncated or corrupt"),
        (lambda p, good: p.write_bytes(b"\x00" * 1000), "truncated or corrupt"),
        (lambda p, good: torch.save({"weights": torch.zeros(3)}, p), "not a Transformer Explorer checkpoint"),
        (lambda p, good: save_checkpoint(p, {"format_version": 99}), "newer Transformer Explorer"),
        (lambda p, good: save_checkpoint(p, {"meta": "{}"}), "incomplete"),
    ],
)
def test_unusable_files_give_clear_errors(copy_session_factory, tmp_path, make, message):
    good_path = tmp_path / "good.ckpt"
    copy_session_factory().save(good_path)
    bad = tmp_path / "bad.ckpt"
    make(bad, good_path.read_bytes())
    with pytest.raises(CheckpointError, match=message):
        Session.load(bad, device="cpu")


def test_settings_that_do_not_fit_are_refused(copy_session_factory, tmp_path):
    path = tmp_path / "x.ckpt"
    copy_session_factory().save(path)
    data = load_checkpoint(path)
    data["model"] = {k: v for k, v in list(data["model"].items())[:-1]}  # a weight missing
    save_checkpoint(tmp_path / "y.ckpt", {k: v for k, v in data.items() if not k.startswith("format")})
    with pytest.raises(CheckpointError, match="weights do not fit"):
        Session.load(tmp_path / "y.ckpt", device="cpu")
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        Session.load(tmp_path / "nothing.ckpt", device="cpu")


class RunsAShellCommand:
    """A pickle payload that, if unpickled, calls os.system (torch refuses it as "unsupported GLOBAL posix.system")."""

    def __init__(self, victim):
        self.victim = victim

    def __reduce__(self):
        return (os.system, (f"touch {self.victim}",))


def test_a_file_that_would_run_a_shell_command_is_refused_as_code(tmp_path):
    victim = tmp_path / "created-by-the-shell.txt"
    evil = tmp_path / "evil.ckpt"
    torch.save({"format": "transformer-explorer-checkpoint", "payload": RunsAShellCommand(victim)}, evil)
    with pytest.raises(CheckpointError) as info:
        Session.load(evil, device="cpu")
    assert str(evil) in str(info.value) and "refused: it contains code" in str(info.value)
    assert "truncated or corrupt" not in str(info.value)
    assert not victim.exists()


@pytest.mark.parametrize(
    "options",
    [
        dict(positional=p, norm=n, shared_vocab=s, tie_embeddings=t)
        for p, n, s, t in itertools.product(("sinusoidal", "learned", "rope"), ("post", "pre"), (0, 1), (0, 1))
    ],
)
def test_weight_shapes_are_those_of_the_real_model(options):
    from model.core.config import ModelConfig
    from model.core.transformer import Transformer

    options = {k: bool(v) if k in ("shared_vocab", "tie_embeddings") else v for k, v in options.items()}
    cfg = ModelConfig(
        src_vocab_size=11,
        tgt_vocab_size=11 if options["shared_vocab"] else 13,
        d_model=12,
        n_heads=2,
        d_ff=20,
        n_encoder_layers=2,
        n_decoder_layers=3,
        max_len=9,
        **options,
    )
    real = {name: tuple(t.shape) for name, t in Transformer(cfg).state_dict().items()}
    assert weight_shapes(cfg) == real


def _save_that_gets_killed(path, started):
    """A process that starts a save of ``path`` and is then killed -9 while writing it."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from model.io.checkpoint import write_atomically\n"
        "def write(handle):\n"
        "    handle.write(b'PK half a checkpoint')\n"
        "    handle.flush()\n"
        f"    Path({str(started)!r}).touch()\n"
        "    time.sleep(600)\n"
        f"write_atomically({str(path)!r}, write)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.time() + 120
    while not started.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert started.exists(), "the save never started"
    proc.kill()  # SIGKILL: no cleanup runs
    proc.wait()


@pytest.mark.skipif(os.name != "posix", reason="the writer's process is only checked on POSIX")
def test_a_save_removes_what_killed_saves_left_and_nothing_else(copy_session_factory, tmp_path):
    from model.io import checkpoint

    path = tmp_path / "model.ckpt"
    _save_that_gets_killed(path, tmp_path / "started")
    crashed = [p.name for p in tmp_path.iterdir() if p.name.startswith(".model.ckpt.")]
    assert len(crashed) == 1 and crashed[0].endswith(".tmp")  # what a kill -9 leaves behind
    dead = crashed[0].split(".")[3].split("@")[0]  # ".model.ckpt.<pid>@<host>.<random>.tmp": that process is gone
    stale_old_style = tmp_path / ".model.ckpt.k2j4h5g6.tmp"  # older naming: no writer known; two hours idle
    stale_old_style.write_bytes(b"x")
    os.utime(stale_old_style, (time.time() - 7200, time.time() - 7200))
    keep = {
        "in progress here": f".model.ckpt.{os.getpid()}@{checkpoint._HOST}.abcd1234.tmp",  # a live writer
        "recent, writer unknown": ".model.ckpt.q1w2e3r4.tmp",
        "another host's, recent": f".model.ckpt.{dead}@elsewhere.abcd1234.tmp",
        "another checkpoint's": f".model.ckpt.bak.{dead}@{checkpoint._HOST}.abcd1234.tmp",
        "someone's file": "model.ckpt.tmp",
    }
    for name in keep.values():
        (tmp_path / name).write_bytes(b"x")
    copy_session_factory().save(path)
    left = {p.name for p in tmp_path.iterdir()} - {"started"}
    assert left == {"model.ckpt", *keep.values()}
    assert Session.load(path, device="cpu").step == 0


@pytest.mark.parametrize(
    "options",
    [
        dict(arch=a, positional=p, norm=n, n_experts=e, n_classes=c)
        for a, p, n, e, c in itertools.product(
            ("encoder_decoder", "decoder_only", "encoder_only"),
            ("learned", "t5_relative"),
            ("post", "pre"),
            (1, 3),
            (0, 2),
        )
        if not (c and a != "encoder_only")
    ],
)
def test_weight_shapes_of_every_family_are_those_of_the_real_model(options):
    from model.core.config import ModelConfig
    from model.core.transformer import Transformer

    sizes = (
        dict(src_vocab_size=11, tgt_vocab_size=13)
        if options["arch"] == "encoder_decoder"
        else dict(src_vocab_size=0, tgt_vocab_size=0, vocab_size=11)
    )
    cfg = ModelConfig(
        **sizes,
        d_model=12,
        n_heads=2,
        d_ff=20,
        n_encoder_layers=2,
        n_decoder_layers=3,
        max_len=9,
        experts_top_k=1,
        **options,
    )
    real = {name: tuple(t.shape) for name, t in Transformer(cfg).state_dict().items()}
    assert weight_shapes(cfg) == real


def test_a_checkpoint_saved_before_the_switches_loads_as_the_papers_model(copy_session_factory, tmp_path):
    """A file whose model configuration lacks residual, scaled_attention and causal (written before they existed,
    its fingerprint over what it carries) loads with their defaults, and its model computes what it computed."""
    session = copy_session_factory()
    session.save(tmp_path / "now.ckpt")
    data = load_checkpoint(tmp_path / "now.ckpt")
    meta = json.loads(data["meta"])
    for key in ("residual", "scaled_attention", "causal"):
        del meta["model_config"][key]
    data["meta"] = json.dumps(meta)
    save_checkpoint(tmp_path / "old.ckpt", {k: v for k, v in data.items() if not k.startswith("format")})
    old = Session.load(tmp_path / "old.ckpt", device="cpu")
    cfg = old.model_cfg
    assert (cfg.residual, cfg.scaled_attention, cfg.causal) == (True, True, True) and cfg == session.model_cfg
    src, tgt = torch.tensor([[3, 4, 5, 2]]), torch.tensor([[1, 3, 4, 5]])
    session.model.eval()
    with torch.no_grad():
        assert torch.equal(old.model(src, tgt), session.model(src, tgt))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_all_finite_says_what_isfinite_says_nan_and_infinities_anywhere_and_sums_that_overflow(dtype):
    """The quick check (a finite sum) and torch.isfinite(t).all() agree on every case: a NaN, +inf, -inf or both at
    any place, finite values whose sum overflows (finite: the exact check decides), an empty tensor."""
    big = torch.finfo(dtype).max
    cases = [torch.randn(1000, dtype=dtype), torch.empty(0, dtype=dtype), torch.full((4,), big, dtype=dtype)]
    for at in (0, 517, 998):
        for bad in ([float("nan")], [float("inf")], [float("-inf")], [float("inf"), float("-inf")]):
            t = torch.randn(1000, dtype=dtype)
            t[at : at + len(bad)] = torch.tensor(bad, dtype=dtype)
            cases.append(t.reshape(10, 100))
    for t in cases:
        assert all_finite(t) == bool(torch.isfinite(t).all()), t
    assert all_finite(cases[2]) and not all_finite(cases[3])  # overflowing sum: still finite; a NaN: not
