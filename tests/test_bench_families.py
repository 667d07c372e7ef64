"""The decoder-only and MoE benchmark runs end to end in its quick mode and prints its three figures."""

import math

import torch

from bench import families
from bench.common import FIGURE_LINE


def test_quick_run_prints_three_finite_positive_figures(capsys):
    families.main(["--quick", "--threads", str(torch.get_num_threads())])  # the session's thread count stays
    lines = capsys.readouterr().out.splitlines()
    found = [m for m in map(FIGURE_LINE.match, lines) if m]
    labels = [m.group(1) for m in found]
    assert len(found) == 3, lines
    assert labels[0].startswith("decoder-only train step vs nn.TransformerEncoder (causal)")
    assert labels[1].startswith("decoder-only greedy generation of")
    assert labels[2].startswith("MoE (4 experts, top-1) train step vs dense")
    for m in found:  # only that each figure is a number; never how fast anything ran
        value = float(m.group(2))
        assert math.isfinite(value) and value > 0, m.group(0)
