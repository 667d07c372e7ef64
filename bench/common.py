"""Shared helpers for the benchmarks: interleaved timing with medians, a figure's line, the common arguments."""

from __future__ import annotations

import argparse
import math
import re
import statistics
import time
from collections.abc import Callable, Mapping


def interleaved_medians(fns: Mapping[str, Callable[[], object]], repeats: int, warmup: int = 3) -> dict[str, float]:
    """Time each function ``repeats`` times, taking turns (a, b, c, a, b, c, …) so that
    machine noise hits them alike; returns the median seconds per call of each."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(s) for name, s in samples.items()}


def report(title: str, medians: dict[str, float], ratios: list[tuple[str, str, str]]) -> None:
    """Print medians and ratios ``(label, numerator, denominator)``."""
    print(f"== {title}")
    for name, t in medians.items():
        print(f"  {name:<40} {t * 1e3:9.2f} ms (median)")
    for label, num, den in ratios:
        print(f"  {label:<40} {medians[num] / medians[den]:9.2f}")


FIGURE_LINE = re.compile(r"^(.+): (\S+)× \((goal [≤≥] [\d.]+×?)\): (holds|FAILS)$")  # a line figure() prints


def figure(label: str, value: float, goal: str, holds: bool) -> str:
    """One figure's line: ``label: 0.93× (goal ≤ 1.5×): holds``."""
    ok = "holds" if math.isfinite(value) and holds else "FAILS"
    return f"{label}: {value:.2f}× ({goal}): {ok}"


def quick_arguments(description: str, repeats: int, argv: list[str] | None) -> argparse.Namespace:
    """``--repeats``, ``--threads`` (set for torch here) and ``--quick``, as the benchmarks of figures take them."""
    import torch

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--repeats", type=int, default=repeats)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="tiny sizes and two repeats (a smoke test, not a figure)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    return args
