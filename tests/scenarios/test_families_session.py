"""The families end to end through the session and the command line: training, evaluation, checkpoints,
generation and mask filling, with the numbers checked against the engine's own functions."""

import importlib
import json
import math

import pytest
import torch

from model.cli import train
from model.data import DataError, DataSpec
from model.data.tokenization import MASK_ID
from model.decoding.search import fill_mask, generate
from model.io.checkpoint import CheckpointError
from model.session import Session
from model.training.config import TrainConfig

generate_cli = importlib.import_module("model.cli.generate")
fill_mask_cli = importlib.import_module("model.cli.fill_mask")
QUICK = TrainConfig(warmup_steps=20, eval_every=0, batch_size=16)


def _session(arch, task="text-grammar-en", train=QUICK, **overrides):
    return Session.create(
        DataSpec(task=task, n_train=400, n_valid=40, n_test=40), "tiny", train, arch=arch, device="cpu", **overrides
    )


def test_families_refuse_data_that_does_not_fit_with_a_message_to_act_on():
    with pytest.raises(DataError, match="learns from plain text.*text-grammar-en"):
        _session("decoder_only", task="grammar-en-zh")
    with pytest.raises(DataError, match="needs sentence pairs.*decoder-only or encoder-only"):
        _session("encoder_decoder", task="text-grammar-en")
    with pytest.raises(DataError, match="next-sentence prediction"):
        _session("decoder_only", train=TrainConfig(nsp=True))


def test_decoder_only_learns_and_reports_perplexity_from_its_own_loss():
    s = _session("decoder_only", train=TrainConfig(warmup_steps=20, eval_every=0, batch_size=16, label_smoothing=0.0))
    first = s.evaluate("valid")
    s.train_steps(60)
    after = s.evaluate("valid")
    assert after["loss"] < first["loss"] - 0.5  # it learns
    # without label smoothing the reported loss is the plain cross-entropy, and perplexity is e^loss
    assert after["perplexity"] == pytest.approx(math.exp(after["loss"]), rel=1e-4)
    assert s.model_cfg.arch == "decoder_only" and s.src_tok is s.tgt_tok and s.src_tok.mask_id is None


def test_encoder_only_with_nsp_trains_both_heads_and_scores_them():
    s = _session("encoder_only", train=TrainConfig(warmup_steps=20, eval_every=0, batch_size=16, nsp=True))
    assert s.model_cfg.n_classes == 2 and s.src_tok.mask_id == MASK_ID
    before = s.evaluate("valid")
    s.train_steps(60)
    after = s.evaluate("valid")
    assert {"mlm_accuracy", "nsp_accuracy"} <= set(after) and "perplexity" not in after
    assert after["loss"] < before["loss"]
    assert after["mlm_accuracy"] > before["mlm_accuracy"]


def test_moe_records_aux_loss_and_load_per_step_and_in_evaluations():
    s = _session("decoder_only", n_experts=4, experts_top_k=2)
    records = s.train_steps(3)
    for r in records:
        assert len(r.expert_load) == 4 and sum(r.expert_load) == pytest.approx(1.0, abs=1e-5)
        assert r.aux_loss >= 1.0 - 1e-4  # the layers' mean of N·Σf·P (≈ 1 or more for a young router)
    ev = s.evaluate("valid")
    assert len(ev["expert_load"]) == 4 and ev["aux_loss"] > 0
    dense = _session("decoder_only").train_steps(1)[0]
    assert dense.expert_load == () and dense.aux_loss == 0.0


def test_family_checkpoints_round_trip_with_history_and_continue_identically(tmp_path):
    for arch, extra in (("decoder_only", dict(n_experts=2)), ("encoder_only", dict(positional="t5_relative"))):
        s = _session(arch, **extra)
        s.train_steps(5)
        path = tmp_path / f"{arch}.ckpt"
        s.save(path)
        back = Session.load(path, device="cpu")
        assert back.model_cfg == s.model_cfg and back.history.train == s.history.train
        expected, got = s.train_steps(2), back.train_steps(2)
        assert [r.loss for r in got] == pytest.approx([r.loss for r in expected], abs=1e-6)


def test_a_checkpoint_whose_family_does_not_match_its_weights_is_refused(tmp_path):
    s = _session("decoder_only")
    path = tmp_path / "m.ckpt"
    s.save(path)
    data = torch.load(path, weights_only=True)
    meta = json.loads(data["meta"])
    meta["model_config"]["arch"] = "encoder_only"
    data["meta"] = json.dumps(meta)
    torch.save(data, path)
    with pytest.raises(CheckpointError, match="do not fit"):
        Session.load(path, device="cpu")


def test_cli_trains_each_family_and_generates_and_fills_masks(tmp_path, capsys):
    base = ["--task", "text-grammar-en", "--n-train", "300", "--device", "cpu", "--threads", "1", "--batch-size", "16"]
    gpt, bert = tmp_path / "gpt", tmp_path / "bert"
    assert (
        train.main(
            [*base, "--arch", "decoder-only", "--experts", "2", "--steps", "6", "--eval-every", "3", "--out", str(gpt)]
        )
        == 0
    )
    lines = [json.loads(x) for x in (gpt / "metrics.jsonl").read_text().splitlines()]
    evals = [x for x in lines if "split" in x]
    assert evals and all({"perplexity", "aux_loss", "expert_load"} <= set(e) for e in evals)
    assert all({"aux_loss", "expert_load"} <= set(x) for x in lines if "split" not in x)
    assert train.main([*base, "--arch", "encoder-only", "--nsp", "--steps", "3", "--out", str(bert)]) == 0
    lines = [json.loads(x) for x in (bert / "metrics.jsonl").read_text().splitlines()]
    assert all("aux_loss" not in x for x in lines if "split" not in x)  # dense: no experts to report
    assert {"mlm_accuracy", "nsp_accuracy"} <= set(lines[-1])
    capsys.readouterr()

    session = Session.load(gpt / "model.ckpt", device="cpu")
    assert (
        generate_cli.main(
            [
                "--checkpoint",
                str(gpt / "model.ckpt"),
                "--temperature",
                "1",
                "--top-k",
                "5",
                "--seed",
                "3",
                "--max-new-tokens",
                "8",
                "--threads",
                "1",
                "the cat",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out.strip()
    ids = session.src_tok.encode_ids("the cat")
    new = generate(session.model, ids, 8, temperature=1.0, top_k=5, seed=3)
    assert printed == session.tgt_tok.decode(ids + new)

    assert (
        fill_mask_cli.main(
            ["--checkpoint", str(bert / "model.ckpt"), "--top-k", "2", "--threads", "1", "the <mask> is red ."]
        )
        == 0
    )
    out = capsys.readouterr().out.strip().split("\t")
    bert_session = Session.load(bert / "model.ckpt", device="cpu")
    ids = [1, *bert_session.src_tok.encode_ids("the <mask> is red ."), 2]
    expected = fill_mask(bert_session.model, ids, MASK_ID, 2)[0]
    assert out[0] == f"1:{expected.position}"
    assert [x.split(" ")[0] for x in out[1:]] == [bert_session.src_tok.display_token(t) for t in expected.tokens]
    # the wrong family is refused with a pointer to the right tool
    assert generate_cli.main(["--checkpoint", str(bert / "model.ckpt"), "x"]) == 2
    assert "model.cli.fill_mask" in capsys.readouterr().err


def test_cli_minutes_stop_a_run_by_wall_time(tmp_path):
    out = tmp_path / "timed"
    args = [
        "--arch",
        "decoder-only",
        "--task",
        "text-grammar-en",
        "--n-train",
        "300",
        "--device",
        "cpu",
        "--threads",
        "1",
        "--steps",
        "100000",
        "--eval-every",
        "0",
        "--minutes",
        "0.02",
        "--out",
        str(out),
    ]
    assert train.main(args) == 0
    steps = Session.load(out / "model.ckpt", device="cpu").step
    assert 0 < steps < 100000


def test_the_explainer_spells_out_t5_attention_with_its_relative_bias():
    s = _session("decoder_only", positional="t5_relative")
    s.train_steps(5)
    inspection = s.inspect("the cat", tgt_text="")
    for layer, head in ((0, 0), (1, 3)):
        ex = s.explain_attention("the cat", list(inspection.target_ids), "decoder_self", layer, head)
        assert "relative position bias" in ex.title
        assert abs(ex.weights - inspection.decoder_self[layer, head]).max() < 1e-5


def test_masked_lm_loss_counts_only_the_chosen_positions():
    from model.core.config import ModelConfig
    from model.core.transformer import Transformer
    from model.data.text_batching import IGNORE, MLMBatch
    from model.families.objectives import run_batch

    torch.manual_seed(0)
    model = Transformer(
        ModelConfig.preset("tiny", arch="encoder_only", src_vocab_size=0, tgt_vocab_size=0, vocab_size=30, dropout=0.0)
    )
    ids = torch.randint(5, 30, (3, 9))
    labels = torch.full_like(ids, IGNORE)
    chosen = torch.tensor([[0, 2], [1, 5], [2, 7]])
    for row, col in chosen.tolist():
        labels[row, col] = int(torch.randint(5, 30, ()))
    batch = MLMBatch(ids, torch.zeros_like(ids), labels, None, len(chosen))
    out = run_batch(model, batch, label_smoothing=0.0)
    logits = model(ids).float()
    rows, cols = chosen[:, 0], chosen[:, 1]
    expected = torch.nn.functional.cross_entropy(logits[rows, cols], labels[rows, cols])
    assert out.counted == 3 and out.loss.item() == pytest.approx(expected.item(), rel=1e-5)
    # what sits at an unchosen position's label changes nothing; a chosen one's does
    other = labels.clone()
    other[0, 0] = 7  # position (0, 0) was not chosen: now it is, and the loss moves
    moved = run_batch(model, MLMBatch(ids, torch.zeros_like(ids), other, None, 4), 0.0)
    assert moved.counted == 4 and moved.loss.item() != pytest.approx(out.loss.item())


def test_a_clicked_mask_is_part_of_the_input_the_explainer_reads():
    s = _session("encoder_only")
    s.train_steps(3)
    view = s.fill_mask("the cat is red .", mask_positions=(2,))
    assert view.tokens[2] == "<mask>" and view.inspection.source == "the <mask> is red ."
    ex = s.explain_attention(view.inspection.source, None, "encoder", 0, 1)
    assert ex.query_tokens == view.tokens
    assert abs(ex.weights - view.inspection.encoder[0, 1]).max() < 1e-5
