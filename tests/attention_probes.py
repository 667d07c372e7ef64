"""The probe sentence's snapshots over training, as the engine makes them, and the head-function curves the
Attention panel draws of them: for the tests of the panel (test_attention_panel.py) and of its head functions
(test_attention_functions.py)."""

import numpy as np


def probe_snapshots():
    """Snapshots of one copy model's probe at steps 0, 15, 30 and 45, as the engine makes them, and its run."""
    from explorer.answers import ProbeSnapshot
    from explorer.engine_base import attention_entropy, run_info_of
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.interpret.head_functions import head_functions
    from model.session import Session
    from model.training.trainer import train_config_for

    data = DataSpec(task="copy", n_train=2000, n_valid=50, n_test=50, length=6, min_length=2, alphabet=8)
    session = Session.create(data, "tiny", train_config_for("tiny", eval_every=0), TokenizerSpec("word"), device="cpu")
    snapshots = []
    for _ in range(4):
        inspection = session.inspect("1 2 3 4 5", "1 2 3 4 5")
        entropy = {k: attention_entropy(getattr(inspection, k)) for k in ("encoder", "decoder_self", "cross")}
        functions = head_functions(inspection)
        snapshots.append(ProbeSnapshot(1, session.step, "1 2 3 4 5", "1 2 3 4 5", inspection, entropy, functions))
        session.train_steps(15)
    return run_info_of(session, 1), snapshots


def curves(panel) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    plot = panel.over_training.functions.plot
    return {h: plot.data(1, f"head{h}") for h in range(4) if (1, f"head{h}") in plot.series}
