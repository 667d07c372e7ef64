"""Training with torchrun on two CPU ranks (gloo): the same step as one process, writing, resuming, failing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from model.session import Session

ROOT = Path(__file__).resolve().parent.parent
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def run(args: list[str], timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)


def test_two_ranks_with_batch_b_take_the_step_of_one_process_with_batch_2b(tmp_path):
    one, two = tmp_path / "one.pt", tmp_path / "two.pt"
    r1 = run([sys.executable, "tests/ddp_one_step.py", str(one), "8"])
    assert r1.returncode == 0, r1.stderr
    r2 = run([*TORCHRUN, "tests/ddp_one_step.py", str(two), "8"])
    assert r2.returncode == 0, r2.stderr
    a, b = torch.load(one), torch.load(two)
    assert b["loss"] == pytest.approx(a["loss"], abs=1e-6)  # the loss over both ranks' tokens
    for name, grad in a["grads"].items():  # lengths differ between the ranks' batches: tokens, not batches, count
        assert (grad - b["grads"][name]).abs().max() < 1e-6, name
    for name, weight in a["weights"].items():
        assert (weight - b["weights"][name]).abs().max() < 1e-6, name


def train_args(out: Path, steps: int, *extra: str) -> list[str]:
    return [
        "-m",
        "model.cli.train",
        "--task",
        "copy",
        "--n-train",
        "2000",
        "--steps",
        str(steps),
        "--out",
        str(out),
        "--eval-every",
        "0",
        "--save-every",
        "4",
        *extra,
    ]


def test_only_rank_0_writes_and_a_run_resumes_with_another_number_of_ranks(tmp_path):
    out = tmp_path / "run"
    r = run([*TORCHRUN, *train_args(out, 6)])
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["metrics.jsonl", "model.ckpt"]
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in records if "split" not in x] == [1, 2, 3, 4, 5, 6]  # one line per step, not two
    assert r.stderr.count("saved ") == 1 and r.stderr.count("copy: encoder-decoder") == 1
    assert Session.load(out / "model.ckpt").step == 6
    r = run([sys.executable, *train_args(out, 9, "--resume", str(out / "model.ckpt"))])  # one process now
    assert r.returncode == 0, r.stderr
    r = run([*TORCHRUN, *train_args(out, 12, "--resume", str(out / "model.ckpt"))])  # and two again
    assert r.returncode == 0, r.stderr
    steps = [x["step"] for x in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "split" not in x]
    assert steps == list(range(1, 13)) and Session.load(out / "model.ckpt").step == 12


def _rank_pid(parent: int, rank: int) -> int | None:
    """The pid of the worker of ``rank`` among the processes below ``parent``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            if f"RANK={rank}".encode() in environ and b"TORCHELASTIC_RUN_ID" in b"".join(environ):
                if b"model.cli.train" in (entry / "cmdline").read_bytes():
                    return int(entry.name)
        except OSError:
            continue
    return None


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds the worker through /proc")
def test_a_rank_that_dies_ends_the_run_and_what_was_saved_stays(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [*TORCHRUN, *train_args(out, 100000)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until some steps are logged and saved
            metrics = out / "metrics.jsonl"
            if metrics.exists() and metrics.read_text().count("\n") >= 10:
                break
            time.sleep(0.2)
        pid = _rank_pid(proc.pid, 1)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=90)  # all ranks end: nobody waits forever on the dead one
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert len(lines) >= 10 and all(json.loads(line)["step"] >= 1 for line in lines)
    saved = Session.load(out / "model.ckpt")  # whole: written atomically
    assert saved.step >= 8
