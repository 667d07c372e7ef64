"""The Q·K explainer (explorer/panels/attention_parts.py) says the formula the model computes: a model that does not
divide by √d_k (the experiment "no_scaling") is spelled out without it, its scaled column equal to q·k."""

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.panels.attention_parts import QkExplainer  # noqa: E402
from model.experiments.paired import PairedRun  # noqa: E402
from model.experiments.variants import variant_named  # noqa: E402


def test_the_explainer_spells_out_an_unscaled_head_without_root_dk(qtbot):
    pair = PairedRun(variant_named("no_scaling"))
    explainer = QkExplainer()
    qtbot.addWidget(explainer)
    for session, scaled in ((pair.baseline, True), (pair.changed, False)):
        e = session.explain_attention("1 2 3", None, "encoder", 0, 0)
        assert e.root_scaled == scaled
        explainer.show_explanation(e)
        title = explainer.explain_title.text()
        header = explainer.per_key.horizontalHeaderItem(1).text()
        if scaled:
            assert "softmax(q·kᵀ / √d_k)" in title and header == "÷ √d_k"
        else:
            assert "softmax(q·kᵀ) " in title and "does not divide by √d_k" in title and header == "not ÷ √d_k"
            np.testing.assert_allclose(e.scaled, e.scores, rtol=1e-6)
