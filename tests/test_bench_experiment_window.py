"""bench/experiment_window.py trains a pair in the engine and headless and prints a row with both times, their ratio
and the engine's figures (only that each is a number: never a speed asserted)."""

import re

import pytest

pytest.importorskip("pytestqt")

from bench.experiment_window import main  # noqa: E402

ROW = re.compile(
    r"^\| (\w+) \| (\d+) \| ([\d.]+) s \| ([\d.]+) s \| ([\d.]+)[^|]* \| ([\d.na]+) → ([\d.na]+) \| (.+) \|$"
)


def test_a_quick_run_prints_a_row_with_both_times(qtbot, capsys):
    main(["--only", "one_head", "--steps", "3", "--threads", "1", "--fixed"])
    rows = [ROW.match(line) for line in capsys.readouterr().out.splitlines() if line.startswith("| one_head")]
    assert len(rows) == 1 and rows[0] is not None
    assert rows[0].group(2) == "3" and rows[0].group(8) in ("shows it", "does NOT show it")
