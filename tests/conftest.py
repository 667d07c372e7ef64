import os

# Qt runs headless in tests; set before any Qt import.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(autouse=True)
def _deterministic():
    torch.manual_seed(0)
    yield


@pytest.fixture(scope="session")
def copy_session_factory():
    """Fresh small copy-task sessions (short sequences, tiny model) for training tests."""
    from model.data import DataSpec
    from model.session import Session
    from model.tokenization import TokenizerSpec
    from model.training import train_config_for

    def make(**train_overrides):
        data = DataSpec(task="copy", n_train=4000, n_valid=100, n_test=100, length=6, min_length=2, alphabet=8)
        train = train_config_for("tiny", **{"eval_every": 0, **train_overrides})
        return Session.create(data, "tiny", train, TokenizerSpec("word"), device="cpu")

    return make
