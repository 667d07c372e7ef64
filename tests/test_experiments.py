"""Experiments (model/experiments/, model/cli/experiment.py): the baseline and the variant of a pair see the same
batches step by step and start from the same weights wherever they share a parameter; they differ only by the
change the experiment names; every bundled experiment trains and gives its figure; the command line leaves two
ordinary run folders the window can open."""

import json

import pytest
import torch

from model.experiments import VARIANTS, variant_named
from model.experiments.paired import PairedRun, data_for, share_initial_weights
from model.session import Session

SMALL = {"n_train": 200, "n_valid": 8, "n_test": 8}


def small_pair(name: str) -> PairedRun:
    """The experiment on a small share of its data (the tests only need a few steps)."""
    v = variant_named(name)
    data = data_for(v)
    from dataclasses import replace

    return PairedRun(v, data=replace(data, **SMALL))


def recording(session: Session) -> list[tuple[torch.Tensor, ...]]:
    """The batches the session's trainer draws from now on."""
    seen: list[tuple[torch.Tensor, ...]] = []
    stream = session.trainer.stream
    draw = stream.__next__

    class Recorded:
        def __iter__(self):
            return self

        def __next__(self):
            batch = draw()
            parts = (batch.ids, batch.targets) if hasattr(batch, "ids") else (batch.src, batch.tgt_in, batch.tgt_out)
            seen.append(tuple(t.clone() for t in parts))  # a decoder-only model's batches are texts
            return batch

        def __getattr__(self, name):
            return getattr(stream, name)

    session.trainer.stream = Recorded()
    return seen


@pytest.mark.parametrize("name", ["no_positional", "tied_embeddings", "no_causal_mask"])
def test_both_runs_see_the_same_batches_step_by_step(name):
    pair = small_pair(name)
    seen = {run: recording(s) for run, s in pair.sessions.items()}
    pair.train(6)
    assert len(seen["baseline"]) == len(seen["variant"]) == 6
    for mine, theirs in zip(seen["variant"], seen["baseline"]):
        for a, b in zip(mine, theirs):
            assert torch.equal(a, b)


@pytest.mark.parametrize("name", [v.name for v in VARIANTS])
def test_every_shared_parameter_starts_equal_and_the_runs_differ_only_by_the_change(name):
    pair = small_pair(name)
    base, var = pair.baseline.model.state_dict(), pair.changed.model.state_dict()
    assert pair.shared, "nothing shared"
    for key in pair.shared:
        assert torch.equal(base[key], var[key]), key
    same_shape = [k for k in var if k in base and base[k].shape == var[k].shape]
    left = set(same_shape) - set(pair.shared)  # only aliases of a tied variant keep their own values
    assert all(var[k].data_ptr() in {var[s].data_ptr() for s in pair.shared} for k in left)
    v = pair.variant
    mine, theirs = pair.changed.model_cfg.to_dict(), pair.baseline.model_cfg.to_dict()
    differing = {k for k in mine if mine[k] != theirs[k]}
    assert differing == {k for k in v.changed.model if v.changed.model[k] != theirs.get(k)}
    train_mine, train_theirs = pair.changed.train_cfg, pair.baseline.train_cfg
    assert {k for k in vars(train_mine) if getattr(train_mine, k) != getattr(train_theirs, k)} == set(v.changed.train)


def test_sharing_copies_the_embedding_once_into_a_tied_output_layer():
    pair = small_pair("tied_embeddings")
    model = pair.changed.model
    assert model.generator.weight is model.tgt_embed.weight  # still tied after the copy
    assert torch.equal(model.tgt_embed.weight, pair.baseline.model.tgt_embed.weight)
    assert "generator.weight" not in pair.shared
    again = share_initial_weights(pair.baseline.model, model)
    assert again == pair.shared


@pytest.mark.parametrize("name", [v.name for v in VARIANTS])
def test_every_bundled_experiment_trains_and_gives_its_figure(name):
    pair = small_pair(name)
    pair.train(3)
    assert pair.baseline.step == pair.changed.step == 3
    for run in ("baseline", "variant"):
        value = pair.measure(run)
        assert value == value and value >= 0, (name, run, value)  # a number, not NaN
    v = pair.variant
    assert v.expect and v.expect_zh and v.title_zh and v.task


def test_the_command_line_leaves_two_run_folders_the_window_can_open(tmp_path, capsys):
    from model.cli.experiment import main

    status = main(["--variant", "no_label_smoothing", "--steps", "3", "--out", str(tmp_path), "--threads", "1"])
    assert status == 0
    printed = capsys.readouterr().out
    assert "Label smoothing" in printed and "baseline:" in printed and "variant:" in printed
    for run in ("baseline", "no_label_smoothing"):
        folder = tmp_path / run
        lines = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        assert [r["step"] for r in lines] == [1, 2, 3]
        session = Session.load(folder / "model.ckpt", device="cpu")
        assert session.step == 3 and session.notes["ended"]["how"] == "finished"
        assert session.notes["experiment"]["name"] == "no_label_smoothing"
    smoothed = Session.load(tmp_path / "baseline" / "model.ckpt", device="cpu").train_cfg.label_smoothing
    assert smoothed > 0 and Session.load(tmp_path / "no_label_smoothing" / "model.ckpt").train_cfg.label_smoothing == 0


def test_the_list_and_wrong_input_are_said(capsys):
    from model.cli.experiment import main

    assert main(["--list"]) == 0
    listed = capsys.readouterr().out
    assert all(v.name in listed for v in VARIANTS)
    assert main(["--variant", "no_positional"]) == 2  # no --out
    assert "--out" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no_positional"):
        variant_named("no_such_thing")


def test_the_figure_at_an_evaluated_step_is_that_evaluation():
    """measure() reuses the held-out evaluation made at this very step (the window compares at every 50th) and
    gives what evaluating again gives."""
    pair = PairedRun(variant_named("no_positional"), eval_every=2)
    pair.train(2)
    session = pair.changed
    assert session.history.evals[-1]["step"] == session.step == 2
    calls = []
    evaluate = session.evaluate
    session.evaluate = lambda *a, **k: calls.append(a) or evaluate(*a, **k)  # type: ignore[method-assign]
    kept = pair.measure("variant")
    assert calls == [] and kept == pytest.approx(evaluate("valid")["exact_match"])
