"""Responsiveness of the window while it follows a run: this project's own, and a Hugging Face Trainer's folder.

    python -m bench.follow_responsiveness [--case own|trainer|both] [--seconds 20] [--rate 100]
                                          [--checkpoints 5] [--folder DIR]

``own``: a separate writer process plays this project's trainer: it appends ``--rate`` training lines a second to
``DIR/metrics.jsonl`` (an evaluation line every 100 steps), replaces ``DIR/model.ckpt`` every 5 s and writes a
probe snapshot every 2 s, as ``python -m model.train --probe …`` does. The window follows DIR (File → Follow a
training run…).

``trainer``: a separate process plays a ``Seq2SeqTrainer`` fine-tuning a model of ``Helsinki-NLP/opus-mt-en-zh``'s
size (Marian, d 512, 6 + 6 layers, 8 heads, FFN 2048, 65,001 pieces: 77.9 M parameters; the folder of
``bench.decoding_peers``, random weights): every 500 steps a ``checkpoint-N/`` with the model's and the tokenizer's
files and, last, a ``trainer_state.json`` whose log holds an entry every 5 steps and an evaluation every 250; the
oldest deleted (``save_total_limit=2``). The window follows the output folder with a probe sentence; each checkpoint
is timed from its appearance until the window shows its step and the probe's attention on it.

A 16 ms timer on the GUI thread measures how late it runs meanwhile. Goal (the same as while training inside the
window): p99 ≤ 10 ms, max ≤ 50 ms.

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


# -- a Hugging Face Trainer's output folder ------------------------------------------------------------------
PROBE = "The weather is nice today."
SAVE_STEPS, LOGGING_STEPS, EVAL_STEPS, MAX_STEPS = 500, 5, 250, 10_000


def log_history(step: int) -> list[dict[str, float]]:
    """The log a Seq2SeqTrainer holds at ``step`` (``logging_steps`` 5, an evaluation every 250 steps): a loss that
    falls with some noise, a linear schedule after 200 warm-up steps, the gradient's norm, the epoch."""
    rng = np.random.default_rng(0)
    log: list[dict[str, float]] = []
    for s in range(LOGGING_STEPS, step + 1, LOGGING_STEPS):
        lr = 5e-5 * min(s / 200, (MAX_STEPS - s) / (MAX_STEPS - 200))
        loss = 1.8 + 5.5 * np.exp(-s / 400) + rng.normal(0, 0.08)
        epoch = round(s / 1250, 4)
        log.append(
            {
                "loss": round(loss, 4),
                "grad_norm": round(2 + 6 * np.exp(-s / 300) + rng.gamma(2, 0.3), 6),
                "learning_rate": lr,
                "epoch": epoch,
                "step": s,
            }
        )
        if s % EVAL_STEPS == 0:
            log.append(
                {
                    "eval_loss": round(loss + 0.15, 6),
                    "eval_runtime": round(38 + rng.normal(0, 1), 4),
                    "eval_samples_per_second": 52.6,
                    "eval_steps_per_second": 3.29,
                    "epoch": epoch,
                    "step": s,
                }
            )
    return log


def trainer_state(step: int) -> dict[str, object]:
    """``checkpoint-N/trainer_state.json`` as transformers 4.4x writes it."""
    return {
        "best_global_step": None,
        "best_metric": None,
        "best_model_checkpoint": None,
        "epoch": round(step / 1250, 4),
        "eval_steps": EVAL_STEPS,
        "global_step": step,
        "is_hyper_param_search": False,
        "is_local_process_zero": True,
        "is_world_process_zero": True,
        "log_history": log_history(step),
        "logging_steps": LOGGING_STEPS,
        "max_steps": MAX_STEPS,
        "num_input_tokens_seen": 0,
        "num_train_epochs": 8,
        "save_steps": SAVE_STEPS,
        "stateful_callbacks": {"TrainerControl": {"args": {"should_training_stop": False}, "attributes": {}}},
        "total_flos": 1.1e13 * step,
        "train_batch_size": 16,
        "trial_name": None,
        "trial_params": None,
    }


def write_trainer_run(model: str, out: str, work: str, checkpoints: int) -> None:
    """The Trainer, in a process of its own: ``checkpoint-N/`` every 500 steps (``model``'s files copied, its
    ``trainer_state.json`` last), the oldest deleted as ``save_total_limit=2`` does; each save after the first waits
    for ``work/go-N`` (the window has shown the one before), and its time of appearance goes into
    ``work/appeared.txt``. The optimizer's state (optimizer.pt, 2 × the weights) is not written."""
    import json
    import shutil

    folder, run, here, window = Path(model), Path(out), Path(work), os.getppid()
    for n in range(1, checkpoints + 1):
        step = n * SAVE_STEPS
        while n > 1 and not (here / f"go-{step}").exists():
            if os.getppid() != window:
                return  # the window's process ended
            time.sleep(0.05)
        checkpoint = run / f"checkpoint-{step}"
        checkpoint.mkdir(parents=True)
        for f in folder.iterdir():
            shutil.copyfile(f, checkpoint / f.name)
        (checkpoint / "trainer_state.json").write_text(json.dumps(trainer_state(step), indent=2) + "\n")
        with open(here / "appeared.txt", "a", encoding="utf-8") as said:
            said.write(f"{step} {time.monotonic()}\n")
        for old in sorted(run.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))[:-2]:
            shutil.rmtree(old)  # save_total_limit=2, right after the save


def _window(work: Path):
    """The real window with a real engine, on screen, holding no model (the run followed will be its model)."""
    from PySide6.QtCore import QSettings

    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    window = MainWindow(
        engine=Engine("cpu", None, wait_for_window=True),
        settings=QSettings(str(work / "s.ini"), QSettings.Format.IniFormat),
        data_dir=work / "data",
        start_default=False,
    )
    window.resize(1366, 768)
    window.show()
    window.engine.release()
    return window


def _settle(app, seconds: float = 2.0) -> None:
    """Let the window show itself: its first layout and paint, as after a launch, before the person acts."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)


def _lateness(stamps: list[float], start: float = -np.inf, end: float = np.inf) -> np.ndarray:
    """Milliseconds late of each tick of the 16 ms timer that ended in (start, end]."""
    t = np.array(stamps)
    late = np.diff(t) * 1000 - 16
    return late[(t[1:] > start) & (t[1:] <= end)]


def _said(late: np.ndarray) -> str:
    if not len(late):
        return "no ticks"
    p99, worst = np.percentile(late, 99), late.max()
    holds = "holds" if p99 <= 10 and worst <= 50 else "FAILS"
    return f"p99 {p99:5.1f} ms, max {worst:6.1f} ms over {len(late):4d} ticks: {holds}"


def own_run(app, work: Path, seconds: float, rate: float) -> None:
    """The window following this project's own trainer (metrics.jsonl, model.ckpt, probe/) for ``seconds``."""
    from PySide6.QtCore import Qt, QTimer

    run = work / "run"
    run.mkdir()
    prepare(run)
    window = _window(work)
    window.follow_run(str(run))
    deadline = time.monotonic() + 60
    while window.training.current is None and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)
    followed = window.training.current
    if followed is None:
        raise SystemExit("the window did not open the followed run within 60 s")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(run), str(rate), str(seconds + 2)])
    stamps: list[float] = []
    timer = QTimer(window, timerType=Qt.TimerType.PreciseTimer, interval=16)
    timer.timeout.connect(lambda: stamps.append(time.perf_counter()))
    timer.start()
    QTimer.singleShot(int(seconds * 1000), app.quit)
    app.exec()
    writer.wait()
    late = np.diff(np.array(stamps[10:])) * 1000 - 16
    plotted = window.training.plots["loss_plot"].data(followed.run_id, "train")[0]
    print(f"== following a run that logs {rate:g} steps/s for {seconds:g} s ({_display()})")
    print(
        f"steps drawn: {len(plotted):,} (the log had {_steps(run):,}); probe snapshots on the timeline: "
        f"{len(window.attention.over_training.snapshots)}"
    )
    print(
        f"16 ms timer lateness: median {np.median(late):.1f} ms, p99 {np.percentile(late, 99):.1f} ms "
        f"(goal ≤ 10), max {late.max():.1f} ms (goal ≤ 50) over {len(late)} ticks"
    )
    timer.stop()
    window.close()
    window.settings.sync()  # written now, not into the removed temporary folder at exit


def _display() -> str:
    return "X11 " + os.environ["DISPLAY"] if os.environ.get("DISPLAY") else "offscreen"


class TrainerFollowed:
    """What the window showed of each checkpoint of the Trainer's run, and when, on the 16 ms timer's ticks."""

    def __init__(self, window, work: Path, steps: list[int]) -> None:
        self.window, self.work, self.steps = window, work, steps
        self.pending = list(steps)  # the checkpoints not yet shown whole (model and probe)
        self.stamps: list[float] = []  # the timer's ticks (time.monotonic, the clock the Trainer's process writes)
        self.shown: dict[int, float] = {}  # step → when the window showed it as the model's step
        self.probed: dict[int, float] = {}  # step → when the probe's attention on it was on the timeline
        self.began = time.monotonic()  # when the window was told to follow the folder

    def tick(self) -> bool:
        """One tick of the timer: → whether the run is over (every checkpoint shown, 3 s ago)."""
        now = time.monotonic()
        self.stamps.append(now)
        if not self.pending:
            return now - max(self.probed.values()) > 3
        step, timeline = self.pending[0], self.window.attention.over_training
        if step not in self.shown and self.window.status.step == step:
            self.shown[step] = now
        if step not in self.probed and timeline.snapshots and timeline.snapshots[-1].step == step:
            self.probed[step] = now
        if step in self.shown and step in self.probed:
            self.pending.pop(0)
            if self.pending:  # the Trainer trains on for 3 s, and saves again
                from PySide6.QtCore import QTimer

                go = self.work / f"go-{self.pending[0]}"
                QTimer.singleShot(3000, lambda: go.touch())  # (a bound method of a Path here crashes PySide)
        return False

    def report(self) -> None:
        """Per checkpoint: how long until the window showed it, and the timer's lateness meanwhile."""
        lines = (self.work / "appeared.txt").read_text().splitlines()
        appeared = {int(step): float(t) for step, t in (line.split() for line in lines)}
        appeared[self.steps[0]] = self.began  # the first was there before: from the window's following the folder
        t = np.array(self.stamps[1:])
        reading = np.zeros(len(t), bool)  # the ticks while a checkpoint was being read and shown
        together = []
        for step in self.steps:
            if step not in self.shown or step not in self.probed:
                print(f"  checkpoint-{step}: {'its probe' if step in self.shown else 'it'} was not shown in time")
                continue
            start, end = appeared[step], max(self.shown[step], self.probed[step]) + 0.016
            late = _lateness(self.stamps, start, end)
            reading |= (t > start) & (t <= end)
            together += [late] if step != self.steps[0] else []
            print(
                f"  checkpoint-{step}{' (the first: a new run)' if step == self.steps[0] else ''}: model shown after "
                f"{self.shown[step] - start:5.2f} s, probe after {self.probed[step] - start:5.2f} s; {_said(late)}"
            )
        if together:
            print(f"  the checkpoints after the first, together: {_said(np.concatenate(together))}")
        calm = (t > max(self.probed.get(self.steps[0], np.inf), self.shown.get(self.steps[0], np.inf))) & ~reading
        late = np.diff(np.array(self.stamps)) * 1000 - 16
        print(f"  for comparison, after the first while no checkpoint is read (saving, or idle): {_said(late[calm])}")


def trainer_run(app, work: Path, checkpoints: int, folder: Path | None) -> None:
    """The window following a Trainer's output folder, ``checkpoints`` saves of an opus-mt-en-zh-sized Marian."""
    from PySide6.QtCore import Qt, QTimer

    from bench.decoding_peers import make_folder

    model = make_folder((folder or work) / "opus-mt-en-zh-sized")  # outside the timed part
    out, steps = work / "out", [SAVE_STEPS * n for n in range(1, checkpoints + 1)]
    call = f"from bench.follow_responsiveness import write_trainer_run; write_trainer_run({str(model)!r}, "
    call += f"{str(out)!r}, {str(work)!r}, {checkpoints})"
    trainer = subprocess.Popen([sys.executable, "-c", call], cwd=ROOT)
    while not (work / "appeared.txt").exists():  # the first save, before the window follows the folder
        if trainer.poll() is not None:
            raise SystemExit("the Trainer's stand-in failed")
        time.sleep(0.05)
    window = _window(work)
    _settle(app)  # its first showing (layout, polish, paint) is the program's start, not a checkpoint's reading
    followed = TrainerFollowed(window, work, steps)
    timer = QTimer(window, timerType=Qt.TimerType.PreciseTimer, interval=16)
    timer.timeout.connect(lambda: followed.tick() and app.quit())
    timer.start()
    window.files.follow_run(str(out), PROBE)
    QTimer.singleShot(60_000 * checkpoints, app.quit)  # given up
    app.exec()
    timer.stop()
    trainer.kill()
    trainer.wait()
    print(
        f"== following a Trainer's output folder: opus-mt-en-zh-sized Marian, {checkpoints} checkpoints ({_display()})"
    )
    print("  16 ms timer lateness (goal: p99 ≤ 10 ms, max ≤ 50 ms) from a checkpoint's appearance until it is shown")
    followed.report()
    window.close()
    window.settings.sync()  # written now, not into the removed temporary folder at exit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", choices=("own", "trainer", "both"), default="both")
    ap.add_argument("--seconds", type=float, default=20.0, help="own: how long the run is followed")
    ap.add_argument("--rate", type=float, default=100.0, help="own: training lines a second")
    ap.add_argument("--checkpoints", type=int, default=5, help="trainer: the saves (the first opens the run)")
    ap.add_argument("--folder", type=Path, help="trainer: where the model folder is written once and kept")
    args = ap.parse_args(argv)
    if args.case == "both":  # each case in a process of its own (a second main window in one process crashes Qt)
        for case in ("own", "trainer"):
            given = argv if argv is not None else sys.argv[1:]  # the case named last is the one taken
            subprocess.run([sys.executable, "-m", "bench.follow_responsiveness", *given, "--case", case], cwd=ROOT)
        return 0
    if not os.environ.get("DISPLAY"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory(prefix="follow-bench-") as tmp:
        if args.case == "own":
            own_run(app, Path(tmp), args.seconds, args.rate)
        else:
            trainer_run(app, Path(tmp), args.checkpoints, args.folder)
    return 0


def _steps(run: Path) -> int:
    return sum(1 for line in (run / "metrics.jsonl").read_text().splitlines() if '"split"' not in line and line)


if __name__ == "__main__":
    sys.exit(main())
