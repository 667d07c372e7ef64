"""The beam tree on real decodes: the highlighted path is the search's best hypothesis, pruned nodes fold
into a badge until asked for, the best path stays in view unless the person moved the view, Fit fits,
and the CSV export keeps every node."""

import csv
import math
from collections import Counter

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, QPointF, QRectF, Qt  # noqa: E402
from PySide6.QtGui import QFont, QFontMetricsF, QWheelEvent  # noqa: E402
from PySide6.QtWidgets import QAbstractSlider, QApplication  # noqa: E402

from explorer.i18n import language  # noqa: E402
from explorer.widgets.beam_tree import MIN_FIT_SCALE, ZOOM_STEP, BeamTreeView  # noqa: E402
from explorer.widgets.beam_tree_items import ACCENT, COL_GAP, NODE_H, PITCH_Y, STYLES, badge_rect, node_rect  # noqa: E402
from model.decoding.stepping import DecodeDriver  # noqa: E402
from model.io.snapshots import DecodeSettings  # noqa: E402
from resources import default_model  # noqa: E402
from tests.beam_steps import pieces_of, step_views  # noqa: E402

SENTENCE = "Did you read two interesting books in the library yesterday?"


@pytest.fixture(scope="module")
def bundled():
    from model.session import Session

    if default_model() is None:
        pytest.skip("the bundled model is missing")
    return Session.load(default_model(), device="cpu")


@pytest.fixture(scope="module")
def untrained(copy_session_factory):
    return copy_session_factory()  # its hypotheses mostly end at max_len, without EOS


def make_tree(qtbot, width: int, height: int) -> BeamTreeView:
    tree = BeamTreeView()
    qtbot.addWidget(tree)
    tree.resize(width, height)
    tree.show()
    qtbot.waitExposed(tree)
    return tree


def show(tree: BeamTreeView, session, view) -> None:
    tree.set_steps(view.steps, pieces_of(session), session.model_cfg.eos_id)
    tree.finish()
    QApplication.processEvents()


def colour_at(tree: BeamTreeView, scene_point: QPointF) -> str:
    """The colour on screen at a scene point."""
    image = tree.viewport().grab().toImage()
    p = tree.mapFromScene(scene_point)
    return image.pixelColor(p.x(), p.y()).name()


def in_viewport(tree: BeamTreeView, rect: QRectF) -> bool:
    """Whether ``rect`` is on screen (to the pixel: Qt rounds a scaled scroll origin to whole pixels)."""
    return tree.viewport().rect().adjusted(-1, -1, 1, 1).contains(tree.mapFromScene(rect).boundingRect())


@pytest.mark.parametrize("which", ["bundled", "untrained"])
def test_the_highlighted_path_is_the_searchs_best_hypothesis(qtbot, request, which):
    session = request.getfixturevalue(which)
    settings = DecodeSettings(SENTENCE, beam_size=4) if which == "bundled" else DecodeSettings("3 1 4 1", 3, max_len=7)
    views = step_views(session, settings)
    assert views[-1].hypotheses and (which == "untrained" or not views[0].hypotheses)  # before and after one finishes
    tree = make_tree(qtbot, 900, 400)
    for view in views:
        show(tree, session, view)
        best = view.hypotheses[0][3] if view.hypotheses else view.focus_tokens  # the engine's ranking
        assert tuple(n.token for n in tree.best_nodes[1:]) == tuple(best)
        assert [n.level for n in tree.best_nodes] == list(range(len(best) + 1))
    last = tree.best_nodes[-1]
    assert last.status == "finished" and last.score == pytest.approx(views[-1].hypotheses[0][1])
    # drawn in the accent colour: the last node's border and the edge into it; other kept nodes are not
    rect, parent = node_rect(last.level, last.row), tree.best_nodes[-2]
    edge_middle = QPointF(rect.left() - COL_GAP / 2, (rect.center().y() + parent.row * PITCH_Y + NODE_H / 2) / 2)
    assert colour_at(tree, QPointF(rect.left() - 1, rect.center().y())) == ACCENT
    assert colour_at(tree, edge_middle) == ACCENT
    other = next(n for n in tree.nodes if n.level == last.level and n.status != "pruned" and n.row != last.row)
    assert colour_at(tree, node_rect(other.level, other.row).topLeft()) != ACCENT


def test_pruned_nodes_fold_into_a_badge_until_shown(qtbot, bundled):
    view = step_views(bundled, DecodeSettings(SENTENCE, beam_size=4))[-1]
    tree = make_tree(qtbot, 900, 400)
    show(tree, bundled, view)
    drawn = [len(column.shown_rows()) for column in tree.columns[1:]]
    assert drawn == [len(step.kept) for step in view.steps]  # collapsed: the kept nodes only
    assert [column.n_pruned for column in tree.columns[1:]] == [len(step.pruned) for step in view.steps]
    kept_before = {(n.level, n.row, n.token) for n in tree.nodes if n.status != "pruned"}
    level = 3
    column, step = tree.columns[level], view.steps[level - 1]
    pruned = node_rect(level, column.n_kept + 1)  # the first pruned node, under the badge
    tree.horizontalScrollBar().setValue(0)
    assert in_viewport(tree, pruned)
    inside = pruned.topLeft() + QPointF(4, 4)
    assert colour_at(tree, inside) == "#ffffff" and tree.node_at(inside.x(), inside.y()) is None
    badge = tree.mapFromScene(badge_rect(level, column.n_kept).center())
    qtbot.mouseClick(tree.viewport(), Qt.LeftButton, pos=badge)  # this step's pruned nodes only
    drawn = [len(c.shown_rows()) for c in tree.columns[1:]]
    assert drawn[level - 1] == len(step.kept) + len(step.pruned)
    assert all(n == len(s.kept) for i, (n, s) in enumerate(zip(drawn, view.steps)) if i != level - 1)
    assert colour_at(tree, inside) == STYLES["pruned"][0]
    node = tree.node_at(inside.x(), inside.y())
    assert node is not None and node.status == "pruned"
    assert (node.token, round(node.log_prob, 5)) in {(c.token, round(c.log_prob, 5)) for c in step.pruned}
    assert {(n.level, n.row, n.token) for n in tree.nodes if n.status != "pruned"} == kept_before  # none moved
    qtbot.mouseClick(tree.buttons["show_pruned"], Qt.LeftButton)  # every step
    assert sum(len(c.shown_rows()) for c in tree.columns) == 1 + sum(len(s.kept) + len(s.pruned) for s in view.steps)
    qtbot.mouseClick(tree.buttons["show_pruned"], Qt.LeftButton)
    assert [len(c.shown_rows()) for c in tree.columns[1:]] == [len(s.kept) for s in view.steps]


def test_the_best_path_end_is_in_view_at_every_step_and_after_a_run(qtbot, bundled):
    views = step_views(bundled, DecodeSettings(SENTENCE, beam_size=4))
    tree = make_tree(qtbot, 560, 260)
    for view in views:
        show(tree, bundled, view)
        last = tree.best_nodes[-1]
        assert in_viewport(tree, node_rect(last.level, last.row)), view.position
    assert tree.horizontalScrollBar().value() > 0  # the tree is wider than the view: it was scrolled
    other = make_tree(qtbot, 560, 260)
    with qtbot.waitSignal(other.drawn):
        other.set_steps(views[-1].steps, pieces_of(bundled), bundled.model_cfg.eos_id)  # Run to end: all at once
    last = other.best_nodes[-1]
    assert in_viewport(other, node_rect(last.level, last.row))


def test_fit_shows_the_whole_tree_and_a_double_click_fits_again(qtbot, bundled):
    view = step_views(bundled, DecodeSettings("I will buy a book.", beam_size=2))[-1]
    tree = make_tree(qtbot, 1100, 450)
    show(tree, bundled, view)
    scene = tree.scene().sceneRect()
    assert not in_viewport(tree, scene)  # wider than the view at full size
    qtbot.mouseClick(tree.buttons["fit"], Qt.LeftButton)
    assert in_viewport(tree, scene) and MIN_FIT_SCALE <= tree.scale_factor / tree.text_scale < 1
    tree.zoom(3)
    assert not in_viewport(tree, scene) and tree.mode == "manual"
    empty = next(
        QPoint(x, y)
        for x in range(5, 1000, 15)
        for y in range(5, 400, 15)
        if (p := tree.mapToScene(QPoint(x, y))) is not None
        and tree.node_at(p.x(), p.y()) is None
        and tree.badge_at(p.x(), p.y()) is None
    )
    qtbot.mouseDClick(tree.viewport(), Qt.LeftButton, pos=empty)
    assert in_viewport(tree, scene) and tree.mode == "fit"


def test_fit_of_a_long_tree_stays_legible_and_shows_the_best_path(qtbot, bundled):
    view = step_views(bundled, DecodeSettings(SENTENCE, beam_size=4))[-1]
    tree = make_tree(qtbot, 900, 400)
    show(tree, bundled, view)
    tree.fit()
    last = tree.best_nodes[-1]
    assert tree.scale_factor == pytest.approx(MIN_FIT_SCALE * tree.text_scale)
    assert in_viewport(tree, node_rect(last.level, last.row))


def ctrl_wheel(tree: BeamTreeView, pos: QPoint, clicks: int) -> None:
    event = QWheelEvent(
        QPointF(pos),
        QPointF(tree.viewport().mapToGlobal(pos)),
        QPoint(0, 0),
        QPoint(0, 120 * clicks),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.ControlModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(tree.viewport(), event)


def test_a_manual_zoom_or_scroll_is_not_undone_by_the_next_step(qtbot, bundled):
    views = step_views(bundled, DecodeSettings(SENTENCE, beam_size=4))
    tree = make_tree(qtbot, 560, 260)
    for view in views[:6]:
        show(tree, bundled, view)
    cursor = QPoint(300, 110)
    under = tree.mapToScene(cursor)
    ctrl_wheel(tree, cursor, 2)  # zoom in around the cursor
    assert tree.scale_factor == pytest.approx(1.0015**240 * tree.text_scale)
    assert (tree.mapFromScene(under) - cursor).manhattanLength() <= 2  # the point under the cursor stays
    placed = (tree.scale_factor, tree.horizontalScrollBar().value(), tree.verticalScrollBar().value())
    for view in views[6:]:
        show(tree, bundled, view)
        assert (tree.scale_factor, tree.horizontalScrollBar().value(), tree.verticalScrollBar().value()) == placed
    assert tree.mode == "manual"
    # a new sentence follows its best path again, at the person's zoom
    fresh = step_views(bundled, DecodeSettings("I will buy a book.", beam_size=4))
    for view in fresh:
        show(tree, bundled, view)
    last = tree.best_nodes[-1]
    assert tree.mode == "follow" and in_viewport(tree, node_rect(last.level, last.row))
    assert tree.scale_factor == pytest.approx(placed[0])
    # scrolling by hand is the person's choice too
    tree.horizontalScrollBar().triggerAction(QAbstractSlider.SliderAction.SliderToMinimum)
    show(tree, bundled, fresh[-2])
    show(tree, bundled, fresh[-1])
    bar = tree.horizontalScrollBar()
    assert tree.mode == "manual" and bar.value() == bar.minimum()


def test_zoom_buttons_and_their_chinese_names(qtbot, bundled):
    tree = make_tree(qtbot, 560, 260)
    show(tree, bundled, step_views(bundled, DecodeSettings("I will buy a book.", beam_size=2))[-1])
    qtbot.mouseClick(tree.buttons["zoom_in"], Qt.LeftButton)
    assert tree.scale_factor == pytest.approx(ZOOM_STEP * tree.text_scale)
    qtbot.mouseClick(tree.buttons["zoom_out"], Qt.LeftButton)
    qtbot.mouseClick(tree.buttons["zoom_out"], Qt.LeftButton)
    assert tree.scale_factor == pytest.approx(tree.text_scale / ZOOM_STEP)
    bar = tree.zoom_bar.geometry()
    assert tree.viewport().geometry().contains(bar)  # over the tree, inside the view
    try:
        language.set("zh")
        assert tree.buttons["fit"].text() == "适应窗口" and tree.buttons["show_pruned"].text() == "显示剪除项"
    finally:
        language.set("en")
    assert tree.buttons["fit"].text() == "Fit"


def test_csv_export_holds_every_node_pruned_ones_too(qtbot, bundled, tmp_path):
    view = step_views(bundled, DecodeSettings(SENTENCE, beam_size=4))[-1]
    tree = make_tree(qtbot, 560, 260)
    show(tree, bundled, view)
    assert not any(len(c.shown_rows()) > c.n_kept for c in tree.columns)  # pruned ones are not drawn
    tree.export(tmp_path / "tree.csv")
    with open(tmp_path / "tree.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    written = Counter((int(r["level"]), r["status"], r["log_prob"]) for r in rows)
    searched = Counter(
        (level, c.status, f"{c.log_prob:.6f}")
        for level, step in enumerate(view.steps, start=1)
        for c in step.kept + step.pruned
    )
    searched[(0, "root", "0.000000")] += 1
    assert written == searched and written[next(k for k in written if k[1] == "pruned")] > 0


def test_a_larger_interface_font_zooms_the_tree_and_its_text_still_fits(qtbot, bundled):
    tree = make_tree(qtbot, 900, 400)
    show(tree, bundled, step_views(bundled, DecodeSettings(SENTENCE, beam_size=4))[-1])
    before = tree.scale_factor
    font = QFont(tree.font())
    font.setPointSizeF(tree.font().pointSizeF() * 1.4)  # presenter mode
    tree.setFont(font)
    assert tree.scale_factor == pytest.approx(before * 1.4) and tree.text_scale == pytest.approx(1.4 * before)
    last = tree.best_nodes[-1]
    assert in_viewport(tree, node_rect(last.level, last.row))
    metrics = [QFontMetricsF(font) for font in tree.fonts(True)]  # bold: the widest
    widest = max(m.horizontalAdvance(line) for n in tree.nodes for m, line in zip(metrics, n.text.split("\n")))
    assert widest < node_rect(0, 0).width()  # the boxes hold their labels at any interface size
    tree.fit()
    assert tree.scale_factor == pytest.approx(MIN_FIT_SCALE * tree.text_scale)


# -- drawn step by step, as the search saw it (from tests/test_decoding_panel.py) ------------------------------
def candidates_of(step):
    return sorted((c.status, c.token, round(c.log_prob, 5)) for c in step.kept + step.pruned)


def nodes_at(tree, level):
    return sorted((n.status, n.token, round(n.log_prob, 5)) for n in tree.nodes if n.level == level)


def test_beam_tree_draws_each_step_once_and_as_the_search_saw_it(qtbot, untrained):
    tree = BeamTreeView()
    qtbot.addWidget(tree)
    tree.resize(600, 400)
    tree.show()
    session = untrained
    pieces = pieces_of(session)
    driver = DecodeDriver(session)
    driver.start(DecodeSettings("3 1 4", beam_size=2))
    columns = []
    for n in range(1, 5):
        view = driver.act("step")
        assert len(view.steps) == n  # the search is still going (five steps for this sentence and model)
        tree.set_steps(view.steps, pieces, session.model_cfg.eos_id)
        qtbot.waitUntil(lambda: not tree.pending)
        assert len(tree.columns) == n + 1  # the start, then one column per step
        assert all(a is b for a, b in zip(tree.columns, columns))  # the columns drawn before are kept, not redrawn
        columns = list(tree.columns)
        for level, step in enumerate(view.steps, start=1):
            assert nodes_at(tree, level) == candidates_of(step)
    view = driver.act("back")
    tree.set_steps(view.steps, pieces, session.model_cfg.eos_id)
    assert len(tree.columns) == 4 and all(a is b for a, b in zip(tree.columns, columns[:4]))
    # each kept node leads to the prefix the search extends next
    for level, step in enumerate(view.steps[1:], start=1):
        for node in (n for n in tree.nodes if n.level == level and n.status == "live"):
            assert step.prefixes[node.live_index][-1] == node.token
    # a click on a kept node asks for its candidates, and is outlined when selected
    node = next(n for n in tree.nodes if n.level == 2 and n.status == "live")
    tree.ensureVisible(node_rect(node.level, node.row))
    centre = tree.mapFromScene(node_rect(node.level, node.row).center())
    with qtbot.waitSignal(tree.node_clicked) as clicked:
        qtbot.mouseClick(tree.viewport(), Qt.LeftButton, pos=QPoint(centre.x(), centre.y()))
    assert clicked.args == [2, node.live_index]
    tree.select(2, node.live_index)
    assert tree.outline.isVisible() and tree.outline.rect().contains(node_rect(2, node.row))


def test_a_whole_search_at_once_is_drawn_in_full(qtbot, untrained):
    tree = BeamTreeView()
    qtbot.addWidget(tree)
    tree.show()
    session = untrained
    driver = DecodeDriver(session)
    driver.start(DecodeSettings("3 1 4 1 5 9 2 6", beam_size=16, max_len=40))
    view = driver.act("run")
    tree.set_steps(view.steps, pieces_of(session), session.model_cfg.eos_id)
    qtbot.waitUntil(lambda: not tree.pending, timeout=10000)
    assert len(tree.columns) == len(view.steps) + 1
    assert len(tree.nodes) == 1 + sum(len(s.kept) + len(s.pruned) for s in view.steps)
    live = [sum(c.status == "live" for c in s.kept) for s in view.steps]
    assert tree.kept_per_level() == live[: len(tree.kept_per_level())] and max(live) <= 16
    scores = sorted(n.score for n in tree.nodes if n.status == "finished")
    assert scores == pytest.approx(sorted(h.score for s in view.steps for h in s.finished))
    assert all(math.isfinite(n.log_prob) for n in tree.nodes)


# -- the tooltips ------------------------------------------------------------------------------------------------
def test_hovering_a_node_or_a_badge_says_what_it_is(qtbot, untrained):
    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QToolTip

    from explorer.widgets.beam_tree import node_tooltip

    view = step_views(untrained, DecodeSettings("3 1 4 1", 3, max_len=7))[-1]
    tree = make_tree(qtbot, 900, 500)
    show(tree, untrained, view)
    tree.horizontalScrollBar().setValue(0)
    tree.verticalScrollBar().setValue(0)

    def tip_at(scene_point: QPointF) -> str:
        pos = tree.mapFromScene(scene_point)
        QApplication.sendEvent(tree.viewport(), QHelpEvent(QEvent.Type.ToolTip, pos, tree.viewport().mapToGlobal(pos)))
        return QToolTip.text() if QToolTip.isVisible() else ""

    live = next(n for n in tree.nodes if n.level == 1 and n.status == "live")
    assert tip_at(node_rect(live.level, live.row).center()) == node_tooltip(live)
    column = next(c for c in tree.columns if c.n_pruned and c.level <= 4)
    badge = badge_rect(column.level, column.n_kept).center()
    assert tip_at(badge).startswith(f"{column.n_pruned} more continuations were considered here and pruned")
    tip_at(QPointF(badge.x(), badge.y() + 200))  # nothing there: the tip goes
    qtbot.waitUntil(lambda: not QToolTip.isVisible(), timeout=3000)
