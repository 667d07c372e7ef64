"""bench/experiments.py prints one table row per experiment with both figures, the time and the verdict (never
a figure of speed: only that each is a number), and judges the prediction by the experiment's direction."""

import dataclasses
import re

from bench.experiments import main, shown
from model.experiments import variant_named

ROW = re.compile(r"^\| (\w+) \| ([\w-]+) \| (\d+) \| (.+) \| ([\d.]+|nan) \| ([\d.]+|nan) \| (\d+) s \| (.+) \|$")


def test_a_quick_run_prints_a_row_per_experiment(capsys):
    main(["--only", "no_label_smoothing", "one_head", "--steps", "2", "--threads", "1"])
    rows = [
        ROW.match(line)
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| no_") or line.startswith("| one")
    ]
    assert [m.group(1) for m in rows if m] == ["one_head", "no_label_smoothing"]
    assert all(m.group(8) in ("shows it", "does NOT show it") and m.group(3) == "2" for m in rows)


def test_the_verdict_follows_the_predicted_direction():
    lower = variant_named("no_label_smoothing")  # the variant's training loss should be lower
    assert shown(lower, 0.6, 0.2) and not shown(lower, 0.6, 0.58) and not shown(lower, 0.2, 0.6)
    worse = variant_named("no_residual")  # its training loss should be higher
    assert shown(worse, 0.2, 0.9) and not shown(worse, 0.9, 0.2)
    same = dataclasses.replace(variant_named("tied_embeddings"), predicted="same")  # about as well
    assert shown(same, 0.8, 0.78) and not shown(same, 0.8, 0.4)
