"""model.session: training steps as typed records, the positional tables, files that round-trip a run exactly."""

import dataclasses

import numpy as np
import pytest
import torch

from model.core.positional import sinusoidal_table
from model.data import DataSpec
from model.data.tokenization import TokenizerSpec
from model.io.checkpoint import _umask
from model.io.snapshots import TRAIN_METRICS
from model.session import PositionalTables, Session, TrainStep
from model.training.trainer import train_config_for


def copy_session(**model_overrides) -> Session:
    data = DataSpec(task="copy", n_train=2000, n_valid=50, n_test=50, length=6, min_length=2, alphabet=8)
    train = train_config_for("tiny", eval_every=0, batch_size=32)
    return Session.create(data, "tiny", train, TokenizerSpec("word"), device="cpu", **model_overrides)


# -- training ------------------------------------------------------------------------------------------------------
def test_train_steps_are_typed_records_whose_loss_falls_on_the_copy_task():
    session = copy_session()
    steps = session.train_steps(40)
    assert all(type(s) is TrainStep for s in steps)
    assert [s.step for s in steps] == list(range(1, 41)) and session.step == 40
    first, last = np.mean([s.loss for s in steps[:8]]), np.mean([s.loss for s in steps[-8:]])
    assert last < 0.8 * first, (first, last)
    assert all(s.evaluation is None for s in steps)  # eval_every=0: none evaluated
    assert [s.time for s in steps] == sorted(s.time for s in steps) and steps[-1].time > steps[0].time
    assert all(0 <= s.token_accuracy <= 1 and s.tokens_per_s > 0 and s.grad_norm > 0 for s in steps)
    assert steps[-1].expert_load == () and steps[-1].aux_loss == 0.0  # a dense model
    # the history keeps exactly what the steps report, column by column
    for name in TRAIN_METRICS:
        assert session.history.train[name] == [getattr(s, name) for s in steps], name
    with pytest.raises(dataclasses.FrozenInstanceError):
        steps[0].loss = 0.0  # type: ignore[misc]


def test_a_train_step_as_a_dict_has_the_logs_columns_in_the_trainers_order():
    step = copy_session().train_steps(1)[0]
    record = step.to_dict()
    assert list(record) == [
        "step",
        "loss",
        "lr",
        "token_accuracy",
        "grad_norm",
        "tokens_per_s",
        "aux_loss",
        "expert_load",
        "time",
    ]
    assert set(record) == {*TRAIN_METRICS, "expert_load"} and record["expert_load"] == []
    assert TrainStep.of(record) == step


def test_a_few_hundred_copy_steps_learn(copy_session_factory):
    session = copy_session_factory()
    before = session.evaluate("valid")
    records = session.train_steps(300)
    after = session.evaluate("valid")
    first = sum(r.loss for r in records[:20]) / 20
    last = sum(r.loss for r in records[-20:]) / 20
    assert last < 0.5 * first
    assert before["exact_match"] < 0.05 and after["exact_match"] > 0.5
    assert after["bleu"] > before["bleu"] + 40
    r = records[-1]
    assert r.step == 300 and 0 <= r.token_accuracy <= 1 and r.tokens_per_s > 0
    assert records[-1].time > records[0].time


def test_evaluation_runs_on_schedule(copy_session_factory):
    session = copy_session_factory(eval_every=5, eval_sentences=10)
    records = session.train_steps(10)
    evals = [r.evaluation for r in records if r.evaluation is not None]
    assert [r.step for r in records if r.evaluation is not None] == [5, 10]
    assert [e["step"] for e in evals] == [5, 10]
    assert evals[0]["sentences"] == 10 and evals[0]["split"] == "valid"
    assert session.history.evals == evals


# -- positions -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_positional_tables_of_a_fresh_sinusoidal_model_are_the_papers_sinusoids(layout):
    session = copy_session(sinusoid_layout=layout)
    cfg = session.model_cfg
    tables = session.positional_tables()
    assert isinstance(tables, PositionalTables)
    assert (tables.kind, tables.d_model, tables.max_len, tables.head_dim, tables.step) == (
        "sinusoidal",
        cfg.d_model,
        cfg.max_len,
        cfg.head_dim,
        0,
    )
    expected = sinusoidal_table(cfg.max_len, cfg.d_model, layout).numpy()
    assert tables.sinusoids is not None and tables.sinusoids.shape == (cfg.max_len, cfg.d_model)
    np.testing.assert_allclose(tables.sinusoids, expected, rtol=0, atol=1e-6)
    assert tables.sinusoids[0, 1] == pytest.approx(1.0 if layout == "interleaved" else 0.0)  # cos(0) / sin(0·ω₁)
    assert tables.source is None and tables.target is None  # nothing learned
    assert tables.t5_encoder is None and tables.t5_decoder is None


def test_positional_tables_are_one_type_from_the_session_to_the_window():
    import explorer.answers
    import model.io.snapshots

    # the session returns the answer the window reads; the engine passes it through unchanged
    assert PositionalTables is model.io.snapshots.PositionalTables is explorer.answers.PositionalTables


def test_positional_tables_of_a_learned_model_are_its_weights_as_copies():
    session = copy_session(positional="learned")
    session.train_steps(2)
    tables = session.positional_tables()
    assert tables.kind == "learned" and tables.sinusoids is None and tables.step == 2
    assert tables.source is not None and tables.target is not None
    np.testing.assert_array_equal(tables.source, session.model.src_pos.weight.detach().numpy())
    np.testing.assert_array_equal(tables.target, session.model.tgt_pos.weight.detach().numpy())
    before = tables.target.copy()
    session.train_steps(1)
    np.testing.assert_array_equal(tables.target, before)  # a snapshot: later training does not change it


def test_a_model_without_positions_trains_translates_and_has_no_tables_to_show(tmp_path):
    session = copy_session(positional="none")
    session.train_steps(2)
    assert session.model.src_pos is None and session.model.rope is None
    tables = session.positional_tables()
    assert (tables.kind, tables.step) == ("none", 2)
    shown = (tables.source, tables.target, tables.sinusoids, tables.t5_encoder, tables.t5_decoder)
    assert all(t is None for t in shown)
    assert isinstance(session.translate("3 1 4").text, str)
    session.save(tmp_path / "none.ckpt")
    assert Session.load(tmp_path / "none.ckpt", device="cpu").model_cfg.positional == "none"


# -- looking inside --------------------------------------------------------------------------------------------
def test_the_explained_attention_of_an_unscaled_model_without_the_causal_mask_is_the_models_own():
    """Its worked numbers: scaled = QKᵀ (no √d_k), weights = softmax(QKᵀ) over every target position, equal to the
    attention map of the model's own forward pass; the masks shown hide no later position."""
    session = copy_session(scaled_attention=False, causal=False)
    y = session.tgt_tok.encode_ids("2 4 1")
    e = session.explain_attention("3 1 4", y, "decoder_self", 1, 2)
    seen = session.inspect("3 1 4", tgt_ids=y)
    assert e.root_scaled is False and "not divided by √d_k" in e.title
    np.testing.assert_array_equal(e.scaled, e.scores)
    by_hand = torch.as_tensor(e.q @ e.k.T).softmax(-1).numpy()
    np.testing.assert_allclose(e.weights, by_hand, atol=1e-9)
    np.testing.assert_allclose(e.weights, seen.decoder_self[1, 2], atol=1e-5)
    assert e.mask.all() and seen.masks["decoder_self"].all() and (seen.decoder_self[1, 2] > 0).all()
    paper = copy_session().explain_attention("3 1 4", y, "decoder_self", 1, 2)
    assert paper.root_scaled is True and not np.triu(paper.mask, 1).any()
    np.testing.assert_allclose(paper.scaled, paper.scores / np.sqrt(session.model_cfg.head_dim), atol=1e-12)


# -- files ---------------------------------------------------------------------------------------------------------
def test_save_then_load_gives_the_same_weights_and_settings_exactly_in_eval_mode(tmp_path):
    session = copy_session(dropout=0.2)
    session.train_steps(3)
    path = tmp_path / "run.ckpt"
    session.save(path)
    again = Session.load(path, device="cpu")
    saved, loaded = session.model.state_dict(), again.model.state_dict()
    assert list(loaded) == list(saved)
    for name, tensor in saved.items():
        assert loaded[name].dtype == tensor.dtype and torch.equal(loaded[name], tensor), name
    assert again.model_cfg == session.model_cfg and again.train_cfg == session.train_cfg
    assert again.data_spec == session.data_spec and again.tokenizer_spec == session.tokenizer_spec
    assert again.step == 3 and again.history.train == session.history.train and not again.dirty
    assert not any(m.training for m in again.model.modules())  # no dropout: exact outputs
    src, tgt = torch.tensor([[4, 5, 6, 2]]), torch.tensor([[1, 4, 5]])
    session.model.eval()
    assert torch.equal(again.model(src, tgt), session.model(src, tgt))


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
    def make():
        data = DataSpec(task="reverse", n_train=2000, n_valid=20, n_test=20, length=6, min_length=2)
        train = train_config_for("tiny", eval_every=0, batch_size=16)
        return Session.create(data, "tiny", train, TokenizerSpec("word"), device="cpu", dropout=0.2)

    straight = make()
    losses = [r.loss for r in straight.train_steps(30)]
    first = make()
    first.train_steps(12)
    first.save(tmp_path / "half.ckpt")
    torch.manual_seed(1234)  # whatever happens in between must not matter
    resumed = Session.load(tmp_path / "half.ckpt", device="cpu")
    assert [r.loss for r in resumed.train_steps(18)] == losses[12:]
