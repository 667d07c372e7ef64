"""An experiment in the window's engine against the same pair trained headless, side by side in one run.

For each chosen experiment: the engine (:class:`explorer.worker.Engine`, as the window drives it: RunExperiment, both
runs in turns, a comparison at every probe snapshot) trains the pair for the experiment's updates; then the headless
:class:`model.experiments.paired.PairedRun` trains the same pair the same number of updates. Printed: each one's
seconds, the ratio of their rates (goal ≥ 0.8: the window's comparisons cost little), the engine's last figures and
whether they show the prediction. Each is measured in a fresh process, one after the other.

    python -m bench.experiment_window [--only no_scaling one_head] [--steps N] [--threads 2]
"""

from __future__ import annotations

import argparse
import time

import torch

from bench.experiments import shown
from model.experiments import VARIANTS
from model.experiments.paired import PairedRun
from model.experiments.variants import Variant

GOAL = 0.8


def in_engine(variant: Variant, steps: int, threads: int | None) -> tuple[float, tuple[float, float]]:
    """Seconds from RunExperiment to both runs paused after ``steps`` updates; the last comparison's figures.
    ``threads`` None: as the window runs it, with the cores other programs leave free (ThreadGovernor)."""
    from PySide6.QtCore import QCoreApplication

    from explorer import commands as cmd
    from explorer.answers import EngineStatus, ExperimentCompared
    from explorer.worker import Engine

    app = QCoreApplication.instance() or QCoreApplication([])
    engine = Engine("cpu", threads=threads)
    got: list[object] = []
    engine.status_changed.connect(got.append)
    engine.experiment_compared.connect(got.append)
    engine.start()
    t0 = time.perf_counter()
    engine.submit(cmd.RunExperiment(variant.name))
    engine.submit(cmd.Step(n=steps))

    def compared() -> ExperimentCompared | None:
        last = [g for g in got if isinstance(g, ExperimentCompared) and g.step == steps]
        return last[-1] if last else None

    while not any(isinstance(g, EngineStatus) and g.state == "paused" and g.step == steps for g in got):
        app.processEvents()
        time.sleep(0.005)
    seconds = time.perf_counter() - t0
    while compared() is None:
        app.processEvents()
        time.sleep(0.005)
    engine.shutdown(None, timeout_ms=30000)
    found = compared()
    assert found is not None
    return seconds, found.measure


def headless(variant: Variant, steps: int, threads: int) -> float:
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    PairedRun(variant, eval_every=50).train(steps)  # (the window's pair evaluates every 50 updates too)
    return time.perf_counter() - t0


def fresh(measure, *args):
    """``measure(*args)`` in a process of its own, as the window and the CLI each run in theirs: an engine
    lowers PyTorch's helper threads and tunes the interpreter for the window, for the whole process."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(measure, args)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=["no_scaling", "one_head"], help="experiments to run")
    ap.add_argument("--steps", type=int, help="updates of each run (default: each experiment's own)")
    ap.add_argument("--threads", type=int, default=2, help="the headless pair's threads (and the engine's if fixed)")
    ap.add_argument("--fixed", action="store_true", help="the engine on --threads too (default: as the window)")
    args = ap.parse_args(argv)
    engine_threads = args.threads if args.fixed else None
    said = f"{args.threads} threads" if args.fixed else "the window's threads (ThreadGovernor)"
    print(f"tiny preset, cpu; headless on {args.threads} threads, the engine on {said}; seconds for both runs")
    print("| experiment | steps each | engine (window) | headless | rate ratio | figures in the engine | prediction |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for variant in (v for v in VARIANTS if v.name in args.only):
        steps = args.steps or variant.steps
        window_s, (base, changed) = fresh(in_engine, variant, steps, engine_threads)
        plain_s = fresh(headless, variant, steps, args.threads)
        ratio = plain_s / window_s
        verdict = "shows it" if shown(variant, base, changed) else "does NOT show it"
        goal = "" if ratio >= GOAL else f" (goal ≥ {GOAL})"
        print(
            f"| {variant.name} | {steps} | {window_s:.1f} s | {plain_s:.1f} s | {ratio:.2f}{goal} "
            f"| {base:.3f} → {changed:.3f} | {verdict} |"
        )


if __name__ == "__main__":
    main()
