"""explorer/panels/attention.py: the Attention panel. Here its over-training tab: the head functions beside the
entropy plot are drawn only while the tab is open (what they draw is tested in test_attention_functions.py); and
the first probe snapshot's map, painted once."""

import pytest

pytest.importorskip("pytestqt")

from tests.attention_probes import curves, probe_snapshots  # noqa: E402


@pytest.fixture(scope="module")
def probes():
    """Snapshots of one copy model's probe at steps 0, 15, 30 and 45, as the engine makes them, and its run."""
    return probe_snapshots()


def test_the_head_functions_are_drawn_only_when_their_tab_is_open(qtbot, probes):
    from explorer.panels.attention import AttentionPanel

    info, snapshots = probes
    p = AttentionPanel()
    qtbot.addWidget(p)
    p.on_run(info)
    p.show_tab("map")
    for s in snapshots:
        p.on_probe(s)
    p.over_training._absorb()
    assert curves(p) == {}
    p.show_tab("over_training")
    assert len(curves(p)) == 4


def test_the_first_probe_snapshots_map_is_painted_once_with_its_caption_and_labels_in_place(qtbot, probes):
    """The first snapshot of a followed run's probe replaces the hint with a map, its labels, title and a longer
    caption. Each of those re-laid out the map after a paint (3-4 paints, 20-30 ms in one turn of the window):
    the caption and title are written first, laid out at once, and the map painted once at its final size."""
    from explorer.panels.attention import AttentionPanel
    from tests.test_heatmap import count_paints

    info, snapshots = probes
    p = AttentionPanel()
    qtbot.addWidget(p)
    p.resize(420, 560)  # narrow: the caption takes more lines than the hint
    p.on_run(info)
    p.show_tab("map")
    p.show()
    qtbot.waitExposed(p)
    qtbot.wait(100)
    hint_lines = p.caption.height()
    paints = count_paints(p.heatmap)
    p.on_probe(snapshots[0])
    p.over_training._absorb()
    qtbot.wait(200)
    assert p.caption.height() > hint_lines  # (the case: a caption longer than the hint)
    assert p.heatmap.values.size
    assert paints[0] == 1
