"""The training panel's run list (explorer/panels/training_runs.py): the newest run ticked and bold, the oldest
unticked ones let go beyond MAX_RUNS, each row labelled with its run (and which of an experiment's pair it is), and
rows as tall as their wrapped text."""

from types import SimpleNamespace

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from explorer.answers import ExperimentInfo  # noqa: E402
from explorer.panels.training_runs import RunList, laid_out_height  # noqa: E402


def test_the_run_list_ticks_the_newest_run_and_lets_the_oldest_go(qtbot):
    from explorer.panels.training_runs import MAX_RUNS, RunList

    runs = RunList()
    qtbot.addWidget(runs)
    assert runs.add_run(1) == [] and runs.ticked() == {1}
    runs.add_run(2)
    assert runs.ticked() == {2}  # a new run: the earlier ones unticked
    runs.item(1).setCheckState(Qt.CheckState.Checked)  # run 1 again, for comparison
    assert runs.ticked() == {1, 2}
    forgotten = [rid for run in range(3, MAX_RUNS + 4) for rid in runs.add_run(run)]
    assert forgotten == [1, 2, 3]  # the oldest, one at a time
    ids = [runs.item(i).data(Qt.ItemDataRole.UserRole) for i in range(runs.count())]
    assert ids == list(range(MAX_RUNS + 3, 3, -1))  # the newest first
    runs.make_bold(4)
    assert runs.item(runs.count() - 1).font().bold() and not runs.item(0).font().bold()


def _experiment(run: str) -> ExperimentInfo:
    return ExperimentInfo(
        name="no_scaling",
        title="No scaling",
        title_zh="不缩放",
        expect="",
        expect_zh="",
        measure="exact_match",
        predicted="lower",
        steps=100,
        run=run,
        run_ids=(2, 3),
    )


def test_each_row_names_its_run_and_which_of_an_experiments_pair_it_is(qtbot, english):
    runs = RunList()
    qtbot.addWidget(runs)
    for run_id in (1, 2, 3):
        runs.add_run(run_id)
    infos = {
        1: SimpleNamespace(label="copy · tiny", experiment=None),
        2: SimpleNamespace(label="copy · small", experiment=_experiment("baseline")),
        3: SimpleNamespace(label="copy · small", experiment=_experiment("variant")),
    }
    runs.label_runs(infos)
    assert [runs.item(i).text() for i in range(runs.count())] == [
        "Run 3: variant: No scaling · copy · small",
        "Run 2: baseline · copy · small",
        "Run 1: copy · tiny",
    ]


def test_a_run_is_ticked_by_its_id(qtbot):
    runs = RunList()
    qtbot.addWidget(runs)
    for run_id in (1, 2, 3):
        runs.add_run(run_id)
    runs.tick(1)
    assert runs.ticked() == {1, 3}
    runs.tick(99)  # not in the list: nothing changes
    assert runs.ticked() == {1, 3}


def test_a_wrapped_text_is_as_tall_as_its_lines(qtbot):
    from PySide6.QtGui import QFontMetrics

    runs = RunList()
    qtbot.addWidget(runs)
    font = runs.font()
    one_line = laid_out_height("aaaa", font, 1000)
    assert one_line > 0
    narrow = QFontMetrics(font).horizontalAdvance("aaaa") + 2  # one word a line
    assert laid_out_height("aaaa bbbb", font, 1000) == pytest.approx(one_line)
    assert laid_out_height("aaaa bbbb", font, narrow) == pytest.approx(2 * one_line)
    assert laid_out_height("aaaa bbbb cccc", font, narrow) == pytest.approx(3 * one_line)


def test_a_row_whose_text_wraps_is_taller(qtbot):
    runs = RunList()
    qtbot.addWidget(runs)
    runs.resize(160, 300)
    runs.show()
    qtbot.waitExposed(runs)
    runs.add_run(1)
    runs.add_run(2)
    runs.label_runs(
        {1: SimpleNamespace(label="a", experiment=None), 2: SimpleNamespace(label="long " * 20, experiment=None)}
    )
    long_row, short_row = runs.sizeHintForRow(0), runs.sizeHintForRow(1)
    assert long_row >= 2 * short_row - 4  # several lines, none of them cut to "…"
