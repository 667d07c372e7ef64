"""Launch and close the application many times and count the crashes.

    python -m bench.exit_crashes [--cycles 200] [--busy both|idle|busy]

Each cycle runs the real program (``explorer.app.main``, as ``main.py`` does) under
``python -X faulthandler`` with fresh settings and closes its window at one of three moments,
taking turns: while the bundled model is still loading, with the first screen done and the
engine idle, or in the middle of training (a fresh tiny model on the copy task, so closing also
writes an autosave). Half of the cycles run with both cores kept busy by two other processes
(``--busy both``). A cycle that ends by a signal, with a non-zero status or with a Python fatal
error counts as a crash; its output is kept under the folder printed at the end. Goal: 0 in 200.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MOMENTS = ("mid-load", "idle", "mid-training")


def child(moment: str, delay_s: float) -> int:
    """One launch: the application's own main(), with the window closed at the chosen moment."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from explorer.app import main

    app = QApplication(sys.argv[:1])  # main() uses this one

    def window():
        return next(w for w in app.topLevelWidgets() if w.objectName() == "main_window")

    def train() -> None:
        w = window()
        form = w.training.form
        form.task_combo.setCurrentIndex(form.task_combo.findData("copy"))
        form.preset_combo.setCurrentText("tiny")
        w.training.start_button.click()
        QTimer.singleShot(int(delay_s * 1000), w.close)

    if moment == "mid-training":
        QTimer.singleShot(500, train)
    else:
        QTimer.singleShot(int(delay_s * 1000), lambda: window().close())
    return main([])


def burners(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def cycle(moment: str, rng: random.Random, logs: Path, index: int) -> str | None:
    """Run one launch; returns what went wrong, or None."""
    delay = {"mid-load": rng.uniform(0.0, 0.4), "idle": rng.uniform(2.0, 5.0), "mid-training": rng.uniform(1.0, 3.0)}
    folder = tempfile.mkdtemp()
    env = {**os.environ, "XDG_CONFIG_HOME": folder, "XDG_DATA_HOME": folder}
    command = [
        sys.executable,
        "-X",
        "faulthandler",
        "-m",
        "bench.exit_crashes",
        "--child",
        moment,
        "--delay",
        f"{delay[moment]:.3f}",
    ]
    problem: str | None = None
    try:
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        problem = "did not exit within 120 s"
        out = ""
    else:
        out = proc.stdout + proc.stderr
        if proc.returncode < 0:
            problem = f"killed by signal {-proc.returncode}"
        elif proc.returncode != 0:
            problem = f"exit status {proc.returncode}"
        elif "Fatal Python error" in out or "Segmentation fault" in out:
            problem = "fatal error reported"
    if problem:
        (logs / f"cycle-{index:03d}-{moment}.log").write_text(f"{' '.join(command)}\n{problem}\n\n{out}")
    return problem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--busy", choices=("both", "idle", "busy"), default="both")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", choices=MOMENTS, help=argparse.SUPPRESS)
    ap.add_argument("--delay", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not os.environ.get("DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if args.child:
        sys.exit(child(args.child, args.delay))
    rng = random.Random(args.seed)
    logs = Path(tempfile.mkdtemp(prefix="exit-crashes-"))
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    crashes: collections.Counter[tuple[str, str]] = collections.Counter()
    t0 = time.perf_counter()
    for i in range(args.cycles):
        busy = args.busy == "busy" or (args.busy == "both" and i % 2 == 1)
        moment = MOMENTS[(i // 2 if args.busy == "both" else i) % len(MOMENTS)]
        load = burners(2) if busy else []
        try:
            problem = cycle(moment, rng, logs, i)
        finally:
            for p in load:
                p.kill()
                p.wait()
        condition = "both cores busy" if busy else "machine idle"
        counts[(condition, moment)] += 1
        if problem:
            crashes[(condition, moment)] += 1
            print(f"  cycle {i}: {condition}, closed {moment}: {problem}", flush=True)
        if (i + 1) % 10 == 0:
            print(f"  {i + 1} cycles, {sum(crashes.values())} crashes, {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"== {args.cycles} launch/close cycles in {time.perf_counter() - t0:.0f} s (python -X faulthandler)")
    for key in sorted(counts):
        print(f"  {key[0]:<16} closed {key[1]:<13} {crashes[key]} crashes in {counts[key]}")
    print(f"  total: {sum(crashes.values())} crashes in {args.cycles}  (goal: 0)  logs: {logs}")


if __name__ == "__main__":
    main()
