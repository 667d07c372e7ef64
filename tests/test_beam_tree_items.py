"""What the beam tree draws (explorer/widgets/beam_tree_items.py): a column holds one step's nodes as arrays, the
kept ones first and the pruned ones under their badge, each group by the prefix it extends and most probable
first; a node reads back with its label, and every box has its place on the grid."""

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QRectF  # noqa: E402

from explorer.widgets.beam_tree_items import (  # noqa: E402
    BADGE_H,
    COL_GAP,
    NODE_H,
    NODE_W,
    ROW_GAP,
    Column,
    Node,
    badge_rect,
    node_rect,
    node_tooltip,
)
from model.io.snapshots import Candidate, DecodeSettings, DecodeStep, Hypothesis  # noqa: E402
from tests.beam_steps import Host, step_views  # noqa: E402


@pytest.fixture(scope="module")
def untrained(copy_session_factory):
    return copy_session_factory()  # its hypotheses mostly end at max_len, without EOS


def test_a_column_puts_its_kept_nodes_first_and_the_pruned_ones_under_the_badge(qtbot):
    from explorer.widgets.beam_tree_items import FINISHED, LIVE, PRUNED, Column

    arrays = {
        "status": np.array([LIVE, FINISHED, PRUNED, PRUNED], np.int8),
        "token": np.array([5, 6, 7, 8]),
        "log_prob": np.array([-0.1, -0.4, -2.0, -3.0]),
        "score": np.array([np.nan, -0.5, np.nan, np.nan]),
        "live_index": np.array([0, -1, -1, -1]),
    }
    column = Column(1, arrays, np.zeros(4, np.int64), Host())
    assert (column.n_kept, column.n_pruned) == (2, 2)
    assert column.rows.tolist() == [0, 1, 3, 4]  # row 2: the "+2 pruned" badge
    assert [column.index(row) for row in range(6)] == [0, 1, None, 2, 3, None]
    finished = column.node(1)
    assert (finished.status, finished.piece, finished.score, finished.live_index) == ("finished", "t6", -0.5, None)
    assert column.node(0).live_index == 0 and column.node(4).status == "pruned"
    assert column.shown_rows().tolist() == [0, 1]
    folded = column.boundingRect()
    column.set_expanded(True)
    assert column.shown_rows().tolist() == [0, 1, 3, 4] and column.boundingRect().height() > folded.height()


def test_a_step_s_continuations_are_grouped_by_prefix_most_probable_first(untrained):
    from explorer.widgets.beam_tree_items import Column

    view = step_views(untrained, DecodeSettings("3 1 4 1", 3, max_len=7))[-1]
    entering = np.arange(3)
    for level, step in enumerate(view.steps[1:], start=2):
        column = Column.from_step(step, level, entering[: len(step.prefixes)], Host())
        kept = slice(0, column.n_kept)
        parents, log_probs = column.parent_row[kept], column.log_prob[kept]
        assert (np.diff(parents) >= 0).all()  # grouped by the prefix they extend
        for parent in set(parents.tolist()):
            assert (np.diff(log_probs[parents == parent]) <= 0).all()  # most probable first
        assert set(column.live_index[column.live_index >= 0].tolist()) == set(range(len(column.live_rows())))


def two_prefix_step() -> DecodeStep:
    """A beam of two prefixes ([4] and [5]) extended once: two kept live, one finished (EOS, id 2), two pruned —
    listed in the order the search writes them (live ones in beam order, then the finished one)."""
    kept = [
        Candidate(parent=1, token=7, log_prob=-0.5, status="live"),
        Candidate(parent=0, token=8, log_prob=-0.7, status="live"),
        Candidate(parent=0, token=2, log_prob=-0.6, status="finished"),
    ]
    pruned = [Candidate(parent=1, token=9, log_prob=-3.0, status="pruned"), Candidate(0, 6, -2.0, "pruned")]
    return DecodeStep(
        index=1,
        prefixes=[[4], [5]],
        prefix_log_probs=[-0.1, -0.3],
        top_tokens=np.zeros((2, 3), np.int64),
        top_probs=np.zeros((2, 3)),
        kept=kept,
        pruned=pruned,
        finished=[Hypothesis(tokens=[4, 2], log_prob=-0.6, score=-0.4)],
        cross_attention=None,
        self_attention=None,
    )


def test_a_hand_made_step_is_laid_out_kept_first_by_parent_most_probable_first(qtbot):
    column = Column.from_step(two_prefix_step(), 2, np.array([0, 1]), Host())
    # kept: prefix 0's finished EOS (−0.6) before its live 8 (−0.7), then prefix 1's live 7; pruned: 6, then 9
    assert column.token.tolist() == [2, 8, 7, 6, 9]
    assert column.parent_row.tolist() == [0, 0, 1, 0, 1]
    assert (column.n_kept, column.n_pruned) == (3, 2)
    assert column.rows.tolist() == [0, 1, 2, 4, 5]  # row 3: the badge
    assert column.live_index.tolist() == [-1, 1, 0, -1, -1]  # 7 was kept first by the search, 8 second
    assert column.live_rows().tolist() == [2, 1]  # the next step's prefixes, in the search's order
    assert column.best == 0 and column.score[0] == -0.4  # the one finished hypothesis, with its score
    assert [n.status for n in column.all_nodes()] == ["finished", "live", "live", "pruned", "pruned"]
    assert column.node(2) == Node(2, 2, "live", 7, "t7", -0.5, None, 0)
    with pytest.raises(IndexError):
        column.node(3)  # the badge's row holds no node


def test_a_node_s_label_and_tooltip_give_its_piece_log_prob_and_score_as_written():
    finished = Node(3, 0, "finished", 2, "<eos>", -1.234, -0.5, None)
    assert finished.text == "<eos>\n-1.23  ★ -0.50"
    live = Node(1, 2, "live", 5, "<b>", -0.456, None, 1)
    assert live.text == "<b>\n-0.46"
    assert node_tooltip(live) == "<p style='white-space:pre'>&lt;b&gt;  -0.46</p>"  # a piece is never markup


def test_boxes_and_badges_sit_on_the_grid_of_levels_and_rows():
    pitch_x, pitch_y = NODE_W + COL_GAP, NODE_H + ROW_GAP
    assert node_rect(0, 0) == QRectF(0, 0, NODE_W, NODE_H)
    assert node_rect(2, 3) == QRectF(2 * pitch_x, 3 * pitch_y, NODE_W, NODE_H)
    badge = badge_rect(1, 2)
    assert badge.height() == BADGE_H and badge.top() == 2 * pitch_y
    assert node_rect(1, 2).contains(badge)  # inside the box of its row, narrower
