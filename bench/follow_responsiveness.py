"""Responsiveness of the window while it follows a run that logs 100 steps a second.

    python -m bench.follow_responsiveness [--seconds 20] [--rate 100]

A separate writer process plays the trainer: it appends ``--rate`` training lines a second to
``DIR/metrics.jsonl`` (an evaluation line every 100 steps), replaces ``DIR/model.ckpt`` every 5 s and
writes a probe snapshot every 2 s, as ``python -m model.train --probe …`` does. The window follows DIR
(File → Follow a training run…); a 16 ms timer on the GUI thread measures how late it runs while it does.
Goal (the same as while training inside the window): p99 ≤ 10 ms, max ≤ 50 ms.

Uses the display in $DISPLAY when there is one (run under xvfb-run for a real X11 window), else Qt's
offscreen platform.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

WRITER = r"""
import json, os, shutil, sys, time
from pathlib import Path
run, rate, seconds = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
ckpts = [run / "a.ckpt.src", run / "b.ckpt.src"]
probes = sorted((run / "probe-src").glob("*.npz"))
t0, step, n_ckpt, n_probe = time.monotonic(), 0, 0, 0
with open(run / "metrics.jsonl", "a", encoding="utf-8") as log:
    while time.monotonic() - t0 < seconds:
        due = int((time.monotonic() - t0) * rate)
        while step < due:
            step += 1
            log.write(json.dumps({"step": step, "time": step / rate, "loss": 5 / (1 + step / 500), "lr": 1e-3,
                                  "token_accuracy": min(1, step / 5000), "grad_norm": 1.0, "tokens_per_s": 9e4}) + "\n")
            if step % 100 == 0:
                log.write(json.dumps({"step": step, "time": step / rate, "split": "valid", "loss": 4 / (1 + step / 500),
                                      "exact_match": 0.1, "bleu": 10.0, "sentences": 200}) + "\n")
        log.flush()
        elapsed = time.monotonic() - t0
        if elapsed > 5 * (n_ckpt + 1):
            n_ckpt += 1
            shutil.copy(ckpts[n_ckpt % 2], run / ".model.ckpt.tmp")
            os.replace(run / ".model.ckpt.tmp", run / "model.ckpt")
        if elapsed > 2 * (n_probe + 1):
            n_probe += 1
            shutil.copy(probes[n_probe % len(probes)], run / "probe" / ".tmp")
            os.replace(run / "probe" / ".tmp", run / "probe" / f"step-{step:09d}.npz")
        time.sleep(0.01)
"""


def prepare(run: Path) -> None:
    """A run folder with a first checkpoint and one probe, and the files the writer copies in later."""
    from model.data import DataSpec
    from model.io.follow import write_probe
    from model.session import Session
    from model.training.trainer import TrainConfig

    s = Session.create(DataSpec(task="grammar-en-zh", n_train=2000), "small", TrainConfig(eval_every=0))
    s.save(run / "model.ckpt")
    s.save(run / "a.ckpt.src")
    s.train_steps(2)
    s.save(run / "b.ckpt.src")
    for _ in range(3):
        inspection = s.inspect("I read a book in the library yesterday.", None)
        write_probe(run / "probe-src", inspection)
        s.train_steps(1)
    (run / "probe").mkdir()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rate", type=float, default=100.0)
    args = ap.parse_args(argv)
    if not os.environ.get("DISPLAY"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtCore import QSettings, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    work = Path(tempfile.mkdtemp(prefix="follow-bench-"))
    run = work / "run"
    run.mkdir()
    prepare(run)
    app = QApplication.instance() or QApplication([])
    window = MainWindow(
        engine=Engine("cpu"),
        settings=QSettings(str(work / "s.ini"), QSettings.Format.IniFormat),
        data_dir=work / "data",
        start_default=False,
    )
    window.resize(1366, 768)
    window.show()
    window.follow_run(str(run))
    deadline = time.monotonic() + 60
    while window.training.current is None and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)
    followed = window.training.current
    if followed is None:
        raise SystemExit("the window did not open the followed run within 60 s")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(run), str(args.rate), str(args.seconds + 2)])
    stamps: list[float] = []
    timer = QTimer(window, timerType=Qt.TimerType.PreciseTimer, interval=16)
    timer.timeout.connect(lambda: stamps.append(time.perf_counter()))
    timer.start()
    QTimer.singleShot(int(args.seconds * 1000), app.quit)
    app.exec()
    writer.wait()
    late = np.diff(np.array(stamps[10:])) * 1000 - 16
    plotted = window.training.plots["loss_plot"].data(followed.run_id, "train")[0]
    print(
        f"== following a run that logs {args.rate:g} steps/s for {args.seconds:g} s "
        f"({'X11 ' + os.environ['DISPLAY'] if os.environ.get('DISPLAY') else 'offscreen'})"
    )
    print(
        f"steps drawn: {len(plotted):,} (the log had {_steps(run):,}); probe snapshots on the timeline: "
        f"{len(window.attention.over_training.snapshots)}"
    )
    print(
        f"16 ms timer lateness: median {np.median(late):.1f} ms, p99 {np.percentile(late, 99):.1f} ms "
        f"(goal ≤ 10), max {late.max():.1f} ms (goal ≤ 50) over {len(late)} ticks"
    )
    window.close()
    return 0


def _steps(run: Path) -> int:
    return sum(1 for line in (run / "metrics.jsonl").read_text().splitlines() if '"split"' not in line and line)


if __name__ == "__main__":
    sys.exit(main())
