"""Two CPU ranks under torchrun against one process, in tokens/s.

    python -m bench.distributed [--steps 60] [--preset small]

Trains the grammar task with the command-line trainer three times, one after the other: one process with
2 threads, ``torchrun --nproc_per_node 2`` with 1 thread per rank (each rank a batch of the configured size,
so a step trains twice the tokens), and the single process again. Prints the median tokens/s (all ranks'
tokens per step time) after the first 5 steps of each, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rate(out: Path) -> float:
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return statistics.median(r["tokens_per_s"] for r in records if "tokens_per_s" in r and r["step"] > 5)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--preset", default="small")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ddp-bench-"))
    train = [
        "-m",
        "model.cli.train",
        "--task",
        "grammar-en-zh",
        "--preset",
        args.preset,
        "--steps",
        str(args.steps),
        "--eval-every",
        "0",
        "--save-every",
        "0",
    ]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    runs = {
        "1 process × 2 threads": [sys.executable, *train, "--threads", "2"],
        "2 ranks × 1 thread (torchrun, gloo)": [*torchrun, *train, "--threads", "1"],
        "1 process × 2 threads, again": [sys.executable, *train, "--threads", "2"],
    }
    rates: dict[str, float] = {}
    for name, command in runs.items():
        out = work / str(len(rates))
        env = {**os.environ, "OMP_NUM_THREADS": "1" if "torchrun" in name else "2"}
        done = subprocess.run([*command, "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{name} failed:\n{done.stderr[-2000:]}")
        rates[name] = rate(out)
    print(f"== {args.preset} preset, grammar-en-zh, {args.steps} steps; median tokens/s after step 5")
    for name, value in rates.items():
        print(f"  {name:40s} {value:10,.0f}")
    single = statistics.mean([rates["1 process × 2 threads"], rates["1 process × 2 threads, again"]])
    print(f"2 ranks / 1 process: {rates['2 ranks × 1 thread (torchrun, gloo)'] / single:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
