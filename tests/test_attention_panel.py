"""explorer/panels/attention.py: the Attention panel. Here its over-training tab: the head functions beside the
entropy plot are drawn only while the tab is open (what they draw is tested in test_attention_functions.py)."""

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
