"""Does each bundled experiment show what it predicts, headless, on this machine, in about a minute?

For each experiment of :data:`model.experiments.VARIANTS`: the baseline and the variant trained side by side
(:class:`model.experiments.PairedRun`, tiny preset, the experiment's own task and step count), then the
experiment's figure for each, the seconds both took together, and whether the figure moved the way the
prediction says (by at least ``MARGIN`` of the baseline's value). The table in docs/benchmarks.md is this output.

    python -m bench.experiments [--only no_positional no_residual] [--steps N] [--threads 2] [--seeds 3]
"""

from __future__ import annotations

import argparse
import time

import torch

from model.experiments import VARIANTS
from model.experiments.paired import PairedRun
from model.experiments.variants import MEASURES, Variant

MARGIN = 0.1  # the variant's figure differs from the baseline's by at least 10% of it, the way predicted


def shown(variant: Variant, baseline: float, changed: float) -> bool:
    """The prediction holds: the variant's figure moved the predicted way by at least MARGIN of the baseline's
    (or, predicted the same, stayed within it)."""
    room = MARGIN * max(abs(baseline), 1e-9)
    if variant.predicted == "same":
        return abs(changed - baseline) <= room
    gap = (changed - baseline) if variant.predicted == "higher" else (baseline - changed)
    return gap >= room


def run(variant: Variant, steps: int | None, threads: int, seeds: int = 1) -> str:
    """The pair trained ``seeds`` times (seeds 0, 1, …); the figures are the means over the seeds."""
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    n = steps if steps is not None else variant.steps
    figures = []
    for seed in range(seeds):
        pair = PairedRun(variant, seed=seed)
        pair.train(n)
        figures.append((pair.measure("baseline"), pair.measure("variant")))
    seconds = time.perf_counter() - t0
    base, changed = (float(sum(f[i] for f in figures) / seeds) for i in (0, 1))
    said = MEASURES[variant.measure][0] + (f" (mean of {seeds} seeds)" if seeds > 1 else "")
    verdict = "shows it" if shown(variant, base, changed) else "does NOT show it"
    return (
        f"| {variant.name} | {variant.task} | {n} | {said} | {base:.3f} | {changed:.3f} | {seconds:.0f} s | {verdict} |"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="experiments to run (default: all)")
    ap.add_argument("--steps", type=int, help="updates of each run (default: each experiment's own)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=1, help="train each pair this many times; figures averaged")
    args = ap.parse_args(argv)
    chosen = [v for v in VARIANTS if not args.only or v.name in args.only]
    print(f"tiny preset, cpu, {args.threads} threads; each pair trained side by side (both runs' steps counted)")
    print("| experiment | task | steps each | figure | baseline | variant | time, both runs | prediction |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for variant in chosen:
        print(run(variant, args.steps, args.threads, args.seeds), flush=True)


if __name__ == "__main__":
    main()
