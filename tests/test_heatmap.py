"""The labelled heatmap (explorer/widgets/heatmap.py)."""

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.widgets.heatmap import Heatmap  # noqa: E402


def _count_calls(monkeypatch, obj, name: str) -> list[int]:
    calls = [0]
    original = getattr(obj, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(obj, name, counted)
    return calls


def test_new_weights_for_the_same_sentence_change_only_the_image(qtbot, monkeypatch):
    """A probe during training redraws the same sentence with new weights about once a second: the axes'
    labels, the hatching and the layout stay as they are (setting them again made every probe a whole
    repaint of the panel), while the image, the values read on hover and the colour levels follow."""
    heatmap = Heatmap("probe_heatmap", "map")
    qtbot.addWidget(heatmap)
    heatmap.resize(500, 400)
    heatmap.show()
    rows, cols = ["<bos>", "a", "b"], ["x", "y", "z", "<eos>"]
    mask = np.zeros((3, 4), dtype=bool)
    mask[0, 3] = True
    rng = np.random.default_rng(0)
    heatmap.set_data(rng.random((3, 4)), rows, cols, mask)
    bottom = _count_calls(monkeypatch, heatmap.plot.getAxis("bottom"), "setTicks")
    left = _count_calls(monkeypatch, heatmap.plot.getAxis("left"), "setTicks")
    hatching = _count_calls(monkeypatch, heatmap.overlay, "setImage")

    newer = rng.random((3, 4))
    heatmap.set_data(newer, rows, cols, mask.copy(), highlight_row=1, levels=(0.0, 0.5))
    assert (bottom[0], left[0], hatching[0]) == (0, 0, 0)
    np.testing.assert_array_equal(heatmap.values, newer)
    np.testing.assert_allclose(heatmap.image.image, newer)
    assert heatmap.colorbar.levels() == (0.0, 0.5)
    assert heatmap.row_box.isVisible()  # the highlighted row follows too

    heatmap.set_data(rng.random((3, 4)), rows, ["x", "y", "w", "<eos>"], mask)  # another sentence: relabelled
    assert bottom[0] == 1 and left[0] == 1
    drawn = hatching[0]
    heatmap.set_data(rng.random((3, 4)), rows, ["x", "y", "w", "<eos>"], ~mask)  # other masked cells
    assert hatching[0] == drawn + 1
    assert heatmap.hatched()[0, 0] and not heatmap.hatched()[0, 3]
