import os
import pickle

import pytest
import torch

from model.checkpoint import CheckpointError, _umask, load_checkpoint, save_checkpoint
from model.session import Session


class CreatesAFile:
    """A pickle payload that, if unpickled, creates a file (a stand-in for running any code)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def test_save_and_load_round_trip(copy_session_factory, tmp_path):
    session = copy_session_factory(eval_every=10, eval_sentences=5)
    session.train_steps(20)
    path = tmp_path / "run.ckpt"
    session.save(path)
    assert not session.dirty
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()  # an ordinary file, not a private temporary one
    again = Session.load(path, device="cpu")
    assert again.step == 20 and again.model_cfg == session.model_cfg and again.train_cfg == session.train_cfg
    assert again.history.train["loss"] == session.history.train["loss"]
    assert [e["step"] for e in again.history.evals] == [10, 20]
    assert again.data_spec == session.data_spec
    src = torch.tensor([[4, 5, 6, 2]])
    tgt = torch.tensor([[1, 4, 5]])
    session.model.eval()
    again.model.eval()
    assert torch.equal(session.model(src, tgt), again.model(src, tgt))
    assert again.translate("3 1 4").text == session.translate("3 1 4").text
    assert again.src_tok.encode_ids("3 1 4") == session.src_tok.encode_ids("3 1 4")


def test_resume_continues_the_same_run(tmp_path):
    from model.data import DataSpec
    from model.tokenization import TokenizerSpec
    from model.training import train_config_for

    def make():
        data = DataSpec(task="reverse", n_train=2000, n_valid=20, n_test=20, length=6, min_length=2)
        train = train_config_for("tiny", eval_every=0, batch_size=16)
        return Session.create(data, "tiny", train, TokenizerSpec("word"), device="cpu", dropout=0.2)

    straight = make()
    losses = [r["loss"] for r in straight.train_steps(30)]
    first = make()
    first.train_steps(12)
    first.save(tmp_path / "half.ckpt")
    torch.manual_seed(1234)  # whatever happens in between must not matter
    resumed = Session.load(tmp_path / "half.ckpt", device="cpu")
    assert [r["loss"] for r in resumed.train_steps(18)] == losses[12:]


def test_crash_during_save_keeps_the_previous_file(copy_session_factory, tmp_path, monkeypatch):
    session = copy_session_factory()
    path = tmp_path / "model.ckpt"
    session.save(path)
    before = path.read_bytes()
    session.train_steps(3)

    def dies_half_way(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 half a zip file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", dies_half_way)
    with pytest.raises(OSError, match="No space left"):
        session.save(path)
    assert path.read_bytes() == before
    assert Session.load(path, device="cpu").step == 0
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt"]  # no temporary file left behind
    assert session.dirty  # the unsaved work is still marked unsaved


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_loading_refuses_code_and_runs_none(tmp_path):
    victim = tmp_path / "created-by-unpickling.txt"
    evil = tmp_path / "evil.ckpt"
    torch.save({"format": "transformer-explorer-checkpoint", "payload": CreatesAFile(victim)}, evil)
    raw = tmp_path / "evil-raw.ckpt"
    raw.write_bytes(pickle.dumps(CreatesAFile(victim)))
    with pytest.raises(CheckpointError, match="refused: it contains Python objects"):
        Session.load(evil, device="cpu")
    with pytest.raises(CheckpointError, match="not a PyTorch checkpoint"):
        Session.load(raw, device="cpu")
    assert not victim.exists()
    # the same payloads really do run code when unpickled without protection
    pickle.loads(raw.read_bytes()).close()
    assert victim.exists()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p, good: p.write_bytes(good[: len(good) // 2]), "truncated or corrupt"),
        (lambda p, good: p.write_bytes(b"\x00" * 1000), "truncated or corrupt"),
        (lambda p, good: torch.save({"weights": torch.zeros(3)}, p), "not a Transformer Explorer checkpoint"),
        (lambda p, good: save_checkpoint(p, {"format_version": 99}), "newer Transformer Explorer"),
        (lambda p, good: save_checkpoint(p, {"meta": "{}"}), "incomplete"),
    ],
)
def test_unusable_files_give_clear_errors(copy_session_factory, tmp_path, make, message):
    good_path = tmp_path / "good.ckpt"
    copy_session_factory().save(good_path)
    bad = tmp_path / "bad.ckpt"
    make(bad, good_path.read_bytes())
    with pytest.raises(CheckpointError, match=message):
        Session.load(bad, device="cpu")


def test_settings_that_do_not_fit_are_refused(copy_session_factory, tmp_path):
    path = tmp_path / "x.ckpt"
    copy_session_factory().save(path)
    data = load_checkpoint(path)
    data["model"] = {k: v for k, v in list(data["model"].items())[:-1]}  # a weight missing
    save_checkpoint(tmp_path / "y.ckpt", {k: v for k, v in data.items() if not k.startswith("format")})
    with pytest.raises(CheckpointError, match="weights do not fit"):
        Session.load(tmp_path / "y.ckpt", device="cpu")
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        Session.load(tmp_path / "nothing.ckpt", device="cpu")
