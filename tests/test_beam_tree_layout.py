"""Where the beam tree's nodes go (explorer/widgets/beam_tree_layout.py): the columns drawn stay when the next step
arrives, new steps are added as time allows, and the layout finds what is drawn at a point, the prefix rows and
the best path."""

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QGraphicsScene  # noqa: E402

from explorer.widgets.beam_tree_items import badge_rect, node_rect  # noqa: E402
from explorer.widgets.beam_tree_layout import BeamTreeLayout  # noqa: E402
from model.io.snapshots import Candidate, DecodeSettings, DecodeStep, Hypothesis  # noqa: E402
from tests.beam_steps import Host, pieces_of, step_views  # noqa: E402


@pytest.fixture(scope="module")
def untrained(copy_session_factory):
    return copy_session_factory()  # its hypotheses mostly end at max_len, without EOS


def test_the_layout_keeps_the_columns_drawn_and_adds_new_steps_as_time_allows(qtbot, untrained):
    from PySide6.QtWidgets import QGraphicsScene

    from explorer.widgets.beam_tree_layout import BeamTreeLayout

    views = step_views(untrained, DecodeSettings("3 1 4 1", 3, max_len=7))
    pieces, eos = pieces_of(untrained), untrained.model_cfg.eos_id
    scene = QGraphicsScene()
    layout = BeamTreeLayout(scene, Host())
    assert not layout.is_for(pieces, eos)
    layout.restart(pieces, eos)
    assert layout.is_for(pieces, eos) and len(layout.columns) == 1 and layout.prefix_row(0, 0) == 0
    before, last = views[-2], views[-1]
    n = len(before.steps)
    assert n >= 2 and len(last.steps) == n + 1
    assert layout.keep_drawn(before.steps) == 0 and len(layout.pending) == n
    assert layout.add_pending(0.0) and len(layout.columns) == 1  # no time left: nothing added yet
    assert not layout.add_pending(1.0) and len(layout.columns) == n + 1
    drawn = list(layout.columns)
    assert layout.keep_drawn(last.steps) == n and len(layout.pending) == 1  # one more step: one more column
    layout.add_pending(1.0)
    assert layout.columns[: n + 1] == drawn and len(scene.items()) == n + 2
    assert layout.keep_drawn(views[0].steps) == 1 and len(scene.items()) == 2  # Back to the first step
    assert layout.prefix_row(5, 0) is None  # a level not drawn


def test_the_layout_finds_what_is_drawn_at_a_point_and_the_best_path(qtbot, untrained):
    from PySide6.QtWidgets import QGraphicsScene

    from explorer.widgets.beam_tree_layout import BeamTreeLayout

    view = step_views(untrained, DecodeSettings("3 1 4 1", 3, max_len=7))[-1]
    layout = BeamTreeLayout(QGraphicsScene(), Host())
    layout.restart(pieces_of(untrained), untrained.model_cfg.eos_id)
    layout.keep_drawn(view.steps)
    layout.add_pending(10.0)
    for node in layout.nodes:
        point = node_rect(node.level, node.row).center()
        found = layout.node_at(point.x(), point.y())
        assert (found == node) == (node.status != "pruned")  # pruned ones only once their level shows them
        if node.live_index is not None:
            assert layout.prefix_row(node.level, node.live_index) == node.row
    level = next(c.level for c in layout.columns if c.n_pruned)
    badge = badge_rect(level, layout.columns[level].n_kept).center()
    assert layout.badge_at(badge.x(), badge.y()) == level and layout.node_at(badge.x(), badge.y()) is None
    layout.set_expanded(True)
    assert all(layout.node_at(*node_rect(n.level, n.row).center().toTuple()) == n for n in layout.nodes)
    finished = [n for n in layout.nodes if n.status == "finished"]
    column, row = layout.best_path()[-1]
    assert column.node(row).score == max(n.score for n in finished)  # the highest ★


# -- a search written by hand: a beam of two over seven pieces ------------------------------------------
PIECES = ("<pad>", "<bos>", "<eos>", "a", "b", "c", "d")
EOS = 2


def hand_step(index: int, prefixes, kept, pruned=(), finished=()) -> DecodeStep:
    n = len(prefixes)
    zeros = np.zeros((n, 2))
    return DecodeStep(
        index, prefixes, [0.0] * n, zeros.astype(np.int64), zeros, list(kept), list(pruned), list(finished), None, None
    )


def hand_search() -> list[DecodeStep]:
    """Step 1 keeps a (−0.2) and b (−0.9) and prunes c; step 2 keeps b→d (−0.4) then a→c (−1.0); step 3 ends
    both: a→c→<eos> scores −1.5, b→d→<eos> −0.8."""
    first = hand_step(
        0, [[]], [Candidate(0, 3, -0.2, "live"), Candidate(0, 4, -0.9, "live")], [Candidate(0, 5, -2.0, "pruned")]
    )
    second = hand_step(1, [[3], [4]], [Candidate(1, 6, -0.4, "live"), Candidate(0, 5, -1.0, "live")])
    ends = [Candidate(1, EOS, -1.9, "finished"), Candidate(0, EOS, -1.2, "finished")]
    hypotheses = [Hypothesis([3, 5, EOS], -1.9, -1.5), Hypothesis([4, 6, EOS], -1.2, -0.8)]
    third = hand_step(2, [[4, 6], [3, 5]], ends, (), hypotheses)
    return [first, second, third]


def laid_out(steps) -> BeamTreeLayout:
    layout = BeamTreeLayout(QGraphicsScene(), Host())
    layout.restart(PIECES, EOS)
    layout.keep_drawn(steps)
    layout.add_pending(10.0)
    return layout


def path_tokens(layout: BeamTreeLayout) -> list[int]:
    return [int(column.token[column.index(row)]) for column, row in layout.best_path()]


def test_the_best_path_leads_to_the_best_live_prefix_then_to_the_highest_finished_score(qtbot):
    steps = hand_search()
    assert path_tokens(laid_out([])) == []  # the start alone: no path yet
    assert path_tokens(laid_out(steps[:1])) == [-1, 3]  # a, the most probable live prefix
    assert path_tokens(laid_out(steps[:2])) == [-1, 4, 6]  # b→d, kept first by the search, and its parent b
    assert path_tokens(laid_out(steps)) == [-1, 4, 6, EOS]  # b→d→<eos>: ★ −0.8 beats −1.5


def test_kept_per_level_counts_the_live_nodes_up_to_the_last_level_with_any(qtbot):
    steps = hand_search()
    assert laid_out(steps[:2]).kept_per_level() == [2, 2]
    assert laid_out(steps).kept_per_level() == [2, 2]  # the last step finished both: no live node there


def test_the_layout_names_the_start_the_end_and_a_token_outside_the_vocabulary(qtbot):
    layout = laid_out(hand_search())
    assert [layout.piece(t) for t in (-1, EOS, 3, 6, 99)] == ["<bos>", "<eos>", "a", "d", "?"]
    assert layout.prefix_row(1, 1) == 1  # b, kept second at step 1
    assert (layout.prefix_row(2, 0), layout.prefix_row(2, 1)) == (1, 0)  # b→d kept first, drawn under a→c
    assert layout.badge_at(*badge_rect(1, 2).center().toTuple()) == 1  # level 1's one pruned continuation
    assert layout.badge_at(*badge_rect(2, 2).center().toTuple()) is None  # level 2 pruned nothing
