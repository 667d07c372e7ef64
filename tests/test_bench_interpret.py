"""The attribution, head-importance and logit-lens benchmark runs end to end in its quick mode and prints its
three figures."""

import math

import torch

from bench import interpret
from bench.common import FIGURE_LINE


def test_quick_run_prints_three_finite_positive_figures(capsys):
    interpret.main(["--quick", "--threads", str(torch.get_num_threads())])  # the session's thread count stays
    lines = capsys.readouterr().out.splitlines()
    found = [m for m in map(FIGURE_LINE.match, lines) if m]
    labels = [m.group(1) for m in found]
    assert len(found) == 3, lines
    assert labels[0].startswith(
        "integrated gradients (8 steps), one target of one 8-token sentence / one training step"
    )
    assert labels[1].startswith("head-importance sweep of 24 heads on 16 sentences / (24 × one evaluation pass)")
    assert labels[2].startswith("step-through decoding of a 8-token sentence with the logit lens watched / unwatched")
    assert [m.group(3) for m in found] == ["goal ≤ 1.5×", "goal ≤ 1.2×", "goal ≤ 1.1×"]
    for m in found:  # only that each figure is a number; never how fast anything ran
        value = float(m.group(2))
        assert math.isfinite(value) and value > 0, m.group(0)
