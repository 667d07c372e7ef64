"""Metrics as the engine sends them to the Training panel, made by hand for its tests (test_training_panel.py,
test_training_plots.py)."""

import numpy as np


def steps_batch(run_id: int, first: int, n: int):
    """``n`` updates of a dense model from step ``first``: a falling loss, a rising accuracy."""
    from explorer.answers import MetricsBatch
    from model.io.snapshots import StepColumns

    x = np.arange(first, first + n, dtype=float)
    cols = StepColumns(
        step=x,
        time=x / 100,
        loss=0.5 + 3 * np.exp(-x / 300),
        lr=np.full(n, 1e-3),
        token_accuracy=1 - np.exp(-x / 300),
        grad_norm=np.full(n, 2.0),
        tokens_per_s=np.full(n, 5000.0),
        aux_loss=np.zeros(n),
        expert_load=np.zeros((n, 0)),
    )  # a dense model: no experts
    return MetricsBatch(run_id, cols, ())
