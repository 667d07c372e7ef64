import math

import pytest
import torch

from model.training import TrainConfig, TrainingDiverged, learning_rate, noam_lr


@pytest.mark.parametrize("step", [1, 10, 399, 400, 401, 4000, 100000])
@pytest.mark.parametrize("d_model, warmup", [(512, 4000), (64, 400)])
def test_noam_schedule_matches_the_formula(step, d_model, warmup):
    expected = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
    assert noam_lr(step, d_model, warmup) == pytest.approx(expected, rel=1e-12)
    cfg = TrainConfig(schedule="noam", warmup_steps=warmup, noam_factor=2.0)
    assert learning_rate(cfg, step, d_model) == pytest.approx(2 * expected, rel=1e-12)


def test_noam_peaks_at_warmup_and_step_zero_is_refused():
    rates = [noam_lr(s, 512, 4000) for s in range(1, 10001)]
    assert max(range(len(rates)), key=rates.__getitem__) + 1 == 4000
    assert rates[3999] == pytest.approx(512**-0.5 * 4000**-0.5)
    with pytest.raises(ValueError, match="counted from 1"):
        noam_lr(0, 512, 4000)


def test_constant_and_cosine_schedules():
    const = TrainConfig(schedule="constant", lr=1e-3, warmup_steps=10)
    assert learning_rate(const, 5, 64) == pytest.approx(5e-4)
    assert learning_rate(const, 50, 64) == pytest.approx(1e-3)
    cos = TrainConfig(schedule="cosine", lr=1e-3, warmup_steps=10, total_steps=110)
    assert learning_rate(cos, 10, 64) == pytest.approx(1e-3)
    assert learning_rate(cos, 60, 64) == pytest.approx(0.5e-3)
    assert learning_rate(cos, 110, 64) == pytest.approx(0.0, abs=1e-12)


def test_invalid_training_settings_are_refused():
    with pytest.raises(ValueError, match="schedule"):
        TrainConfig(schedule="triangle")
    with pytest.raises(ValueError, match="cosine schedule needs"):
        TrainConfig(schedule="cosine", warmup_steps=100, total_steps=50)


def test_a_few_hundred_copy_steps_learn(copy_session_factory):
    session = copy_session_factory()
    before = session.evaluate("valid")
    records = session.train_steps(300)
    after = session.evaluate("valid")
    first = sum(r["loss"] for r in records[:20]) / 20
    last = sum(r["loss"] for r in records[-20:]) / 20
    assert last < 0.5 * first
    assert before["exact_match"] < 0.05 and after["exact_match"] > 0.5
    assert after["bleu"] > before["bleu"] + 40
    r = records[-1]
    assert set(r) >= {"step", "time", "loss", "lr", "token_accuracy", "grad_norm", "tokens_per_s"}
    assert r["step"] == 300 and 0 <= r["token_accuracy"] <= 1 and r["tokens_per_s"] > 0
    assert records[-1]["time"] > records[0]["time"]


def test_evaluation_runs_on_schedule(copy_session_factory):
    session = copy_session_factory(eval_every=5, eval_sentences=10)
    records = session.train_steps(10)
    evals = [r for r in records if "split" in r]
    assert [e["step"] for e in evals] == [5, 10]
    assert evals[0]["sentences"] == 10 and evals[0]["split"] == "valid"
    assert session.history.evals == evals


def test_diverging_run_stops_and_keeps_the_last_good_weights(copy_session_factory):
    session = copy_session_factory(schedule="constant", lr=1e30, warmup_steps=0, clip_norm=0.0)
    session.train_steps(1)  # first update: finite loss, gigantic step
    good = {k: v.clone() for k, v in session.model.state_dict().items()}
    with pytest.raises(TrainingDiverged, match=r"step \d+: the (loss|gradient) .*learning rate") as info:
        for _ in range(50):
            good = {k: v.clone() for k, v in session.model.state_dict().items()}
            session.train_steps(1)
    assert info.value.step == session.step + 1
    for k, v in session.model.state_dict().items():
        assert torch.equal(v, good[k]), k  # the failing update was not applied
    assert all(math.isfinite(x) for x in session.history.train["loss"])


def test_loss_is_label_smoothed_cross_entropy_over_real_tokens(copy_session_factory):
    eps = 0.3
    session = copy_session_factory(label_smoothing=eps)
    trainer = session.trainer
    state = trainer.stream.state_dict()
    batch = next(type(trainer.stream)(trainer.stream.data, trainer.stream.batch_size, trainer.stream.seed, **state))
    with torch.no_grad():
        session.model.train()  # tiny preset: dropout 0, so train mode is deterministic
        logp = session.model(batch.src, batch.tgt_in).log_softmax(-1)
    real = batch.tgt_out != 0
    nll = -logp.gather(-1, batch.tgt_out[..., None])[..., 0][real].mean()
    uniform = -logp.mean(-1)[real].mean()
    expected = (1 - eps) * nll + eps * uniform
    assert session.train_steps(1)[0]["loss"] == pytest.approx(expected.item(), rel=1e-5)


def test_inspecting_an_output_that_fills_every_position(copy_session_factory):
    session = copy_session_factory()
    with torch.no_grad():
        session.model.generator.bias[session.model_cfg.eos_id] = -1e4  # never stops: output as long as allowed
    long_text = " ".join(["1"] * 100)
    inspection = session.inspect(long_text)  # greedy fills max_len tokens; the decoder reads BOS + max_len - 1
    assert len(inspection.tgt_tokens) == session.model_cfg.max_len
    assert inspection.target_probs.shape == (session.model_cfg.max_len,)


def test_changed_optimizer_settings_survive_a_saved_state(copy_session_factory, tmp_path):
    from model.session import Session

    session = copy_session_factory()
    session.train_steps(2)
    session.save(tmp_path / "a.ckpt")
    loaded = Session.load(tmp_path / "a.ckpt", device="cpu")
    loaded.with_train_config(beta2=0.9, eps=1e-6, optimizer="adamw", weight_decay=0.05)
    group = loaded.trainer.optimizer.param_groups[0]
    assert group["betas"] == (0.9, 0.9) and group["eps"] == 1e-6 and group["weight_decay"] == 0.05
