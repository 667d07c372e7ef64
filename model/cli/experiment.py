"""``python -m model.experiment``: one experiment, headless — a variant trained beside its baseline.

    python -m model.experiment --variant no_positional --steps 600 --out runs/no-pos
    python -m model.experiment --list

Prints what to expect before the run, trains both (same seed, batches and initial weights where the shapes
allow, taking turns), prints the experiment's figure for each, and leaves ``OUT/baseline/`` and
``OUT/<variant>/``: ordinary run folders (``metrics.jsonl``, ``model.ckpt``) that the window opens or follows
(``main.py --follow OUT/no_positional``) while they train.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import torch

from model.cli.common import Progress, add_device_flags
from model.core.config import PRESETS
from model.data import TASKS
from model.experiments.paired import PairedRun
from model.experiments.variants import MEASURES, VARIANTS, variant_named


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m model.experiment", description="Train a variant of the Transformer beside its baseline."
    )
    ap.add_argument("--variant", choices=[v.name for v in VARIANTS], help="the experiment (see --list)")
    ap.add_argument("--list", action="store_true", help="list the experiments with what each should show")
    ap.add_argument("--task", choices=TASKS, help="the data (default: the experiment's own task)")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--steps", type=int, help="updates of each run (default: the experiment's own)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", metavar="DIR", help="folder for OUT/baseline and OUT/<variant>")
    add_device_flags(ap)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.list:
        for v in VARIANTS:
            print(f"{v.name}  ({v.task}, {MEASURES[v.measure][0]})\n{textwrap.indent(textwrap.fill(v.expect), '    ')}")
        return 0
    if args.variant is None or args.out is None:
        print("error: give --variant and --out (or --list)", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    variant = variant_named(args.variant)
    steps = args.steps if args.steps is not None else variant.steps
    if steps < 1:
        print("error: --steps must be at least 1", file=sys.stderr)
        return 2
    print(f"{variant.title}, on {args.task or variant.task}. What to expect:\n{textwrap.fill(variant.expect)}\n")
    try:
        pair = PairedRun(variant, args.preset, args.task, args.seed, device=args.device)
    except ValueError as exc:  # a task the family cannot learn from, a setting the model refuses
        print(f"error: {exc}", file=sys.stderr)
        return 2
    folders = pair.open_folders(Path(args.out))
    progress = Progress(steps, 0)
    status = 0
    try:
        pair.train(steps, every=lambda step: progress.update(step, f"{variant.name} beside its baseline"))
    except KeyboardInterrupt:
        status = 130
    finally:
        progress.close()
        pair.close(folders, status)
    said = MEASURES[variant.measure][0]
    for run, folder in folders.items():
        print(f"{run:>9}: {said} {pair.measure(run):.3f} ({pair.seconds[run]:.1f} s, {folder})")
    return status


if __name__ == "__main__":
    sys.exit(main())
