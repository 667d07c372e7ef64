"""Training from a big file read as a stream: time to the first step, peak memory, and data loading's cost.

    python -m bench.streaming                      # a 1 GB JSON-lines file (made once in /tmp)
    python -m bench.streaming --size-mb 200 --quick

1. Makes the file with ``bench/make_big_corpus.py`` (recombined grammar sentences) unless it exists.
2. Trains the tiny preset on it with the command-line trainer, in a child process: seconds from the start of
   the process to the first training step, and its peak resident memory (goals: ≤ 60 s, ≤ 1.5 GB). Then
   resumes that run: the scan and the token ids come from the cache next to the run.
3. Trains the small preset on 30 MB of the file both ways, streamed and read whole, in child processes
   taking turns (whole, streamed, whole, streamed, whole): median tokens/s of each run, and the ratio of
   the means (goal: streamed ≥ 95% of read whole). Minute-to-minute drift of the machine is of the same
   size as the goal's margin: the runs take turns so that it cancels.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.make_big_corpus import write_corpus

PY = sys.executable


def run_timed(args: list[str], marker: str) -> tuple[float | None, float, float, str]:
    """Run ``python -m model.train ARGS``; → (seconds until a stderr line contains ``marker``, total seconds,
    peak RSS of the child in GB, the stderr text)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [PY, "-m", "model.cli.train", *args],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen: list[float] = []
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if marker in line and not seen:
                seen.append(time.perf_counter() - t0)

    reader = threading.Thread(target=read)
    reader.start()
    proc.wait()
    reader.join()
    total = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        raise SystemExit("the trainer failed:\n" + "".join(lines[-20:]))
    # ru_maxrss is the largest of all children so far: each measured run is the biggest one yet here
    return (seen[0] if seen else None), total, max(peak, before) / 1e6, "".join(lines)


def tokens_per_s(out: Path, skip: int) -> float:
    rates = [
        r["tokens_per_s"]
        for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
        if "tokens_per_s" in r and r["step"] > skip
    ]
    return statistics.median(rates)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=1024)
    ap.add_argument("--file", type=Path, help="the big file (default /tmp/big-SIZE.jsonl, made if missing)")
    ap.add_argument("--quick", action="store_true", help="fewer steps in the tokens/s comparison")
    args = ap.parse_args(argv)
    big = args.file or Path(tempfile.gettempdir()) / f"big-{args.size_mb:g}.jsonl"
    if not big.exists():
        lines, size = write_corpus(args.size_mb, big)
        print(f"made {big}: {lines:,} pairs, {size / 1e6:,.0f} MB")
    work = Path(tempfile.mkdtemp(prefix="stream-bench-"))
    common = ["--eval-every", "0", "--save-every", "0", "--threads", "2"]
    first, total, rss, log = run_timed(
        ["--data", str(big), "--preset", "tiny", "--steps", "20", "--out", str(work / "tiny"), *common], "step 1/"
    )
    print(f"== tiny preset on {big} ({big.stat().st_size / 1e6:,.0f} MB), 20 steps")
    print("\n".join(["   " + line for line in log.splitlines() if not line.startswith("step ")][:8]))
    print(f"time to the first training step: {first:.1f} s (goal ≤ 60 s); whole run {total:.1f} s")
    print(f"peak resident memory: {rss:.2f} GB (goal ≤ 1.5 GB)")
    first, total, _, _ = run_timed(
        ["--resume", str(work / "tiny" / "model.ckpt"), "--steps", "40", "--out", str(work / "tiny"), *common],
        "step 21/",
    )
    print(f"resumed (scan and token ids from the cache): first step after {first:.1f} s")
    compare(args, big, work, common)
    return 0


def compare(args: argparse.Namespace, big: Path, work: Path, common: list[str]) -> None:
    """Small preset, streamed vs read whole, on the first 30 MB of the big file."""
    part = work / "part.jsonl"
    with open(big, "rb") as src, open(part, "wb") as dst:
        dst.write(src.read(30_000_000).rsplit(b"\n", 1)[0] + b"\n")
    steps = 60 if args.quick else 150
    rates: dict[str, list[float]] = {"read whole": [], "streamed": []}
    order = ["read whole", "streamed"] * (1 if args.quick else 2) + ["read whole"]  # taking turns: drift cancels
    for k, name in enumerate(order):
        out = work / f"compare-{k}"
        extra = ["--stream"] if name == "streamed" else []
        run_timed(
            [
                "--data",
                str(part),
                "--preset",
                "small",
                "--steps",
                str(steps),
                "--out",
                str(out),
                "--eval-every",
                "0",
                "--save-every",
                "0",
                "--threads",
                "2",
                *extra,
            ],
            "step 1/",
        )
        rates[name].append(tokens_per_s(out, skip=10))
    print(f"== small preset, {steps} steps on 30 MB of it, median tokens/s after 10 steps, runs taking turns")
    for name, values in rates.items():
        print(f"  {name:12s} " + ", ".join(f"{v:,.0f}" for v in values))
    ratio = statistics.mean(rates["streamed"]) / statistics.mean(rates["read whole"])
    print(f"streamed / read whole (means): {ratio:.1%} (goal ≥ 95%)")


if __name__ == "__main__":
    sys.exit(main())
