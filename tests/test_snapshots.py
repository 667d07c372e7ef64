"""model/io/snapshots.py: what the engine hands the window.

- every answer type is a frozen dataclass (assigning a field raises), History alone stays mutable;
- ``StepColumns`` holds read-only float64 columns, built alike from records (``of``) and from a ``History`` filled
  by ``History.add_step`` (``from_history``), with ``expert_load`` an ``[n, N]`` table (``[n, 0]`` when dense);
- ``TRAIN_METRICS`` are StepColumns' per-update columns in field order;
- ``DecodeStep.live_after``: the kept "live" candidates' prefixes extended by their tokens, in beam order;
- ``DecodeSettings.sampling``: True exactly when temperature > 0 and beam_size is 1;
- importing the module does not import PyTorch.

Expected values are written out by hand from the inputs and the documented meaning.
"""

import dataclasses
import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from model.io import snapshots
from model.io.snapshots import (
    TRAIN_METRICS,
    AttentionExplanation,
    Candidate,
    Compared,
    DecodeSettings,
    DecodeStep,
    DecodeView,
    FillMaskView,
    History,
    Hypothesis,
    Inspection,
    Lane,
    LanesView,
    MaskPrediction,
    PositionalTables,
    RouterView,
    StepColumns,
    Translation,
)

A = np.zeros((1, 1))  # a stand-in array where the value does not matter


def inspection() -> Inspection:
    return Inspection(["a"], ["<bos>"], ["<eos>"], A, A, A, np.zeros(1), True)


def decode_step(kept=(), prefixes=([],)) -> DecodeStep:
    return DecodeStep(0, [list(p) for p in prefixes], [0.0] * len(prefixes), A, A, list(kept), [], [], None, None)


# one instance of every answer type (field values beside the point)
INSTANCES = {
    "Hypothesis": lambda: Hypothesis([5, 2], -1.0, -0.9),
    "Candidate": lambda: Candidate(0, 5, -0.5, "live"),
    "DecodeStep": decode_step,
    "Translation": lambda: Translation(None, [5, 2], "x", [5, 2], [], False, None),  # type: ignore[arg-type]
    "RouterView": lambda: RouterView("encoder", 0, ["a"], A, A, A),
    "Inspection": inspection,
    "MaskPrediction": lambda: MaskPrediction(1, ["a"], [1.0]),
    "FillMaskView": lambda: FillMaskView("a", ["a"], [], inspection(), 0),
    "AttentionExplanation": lambda: AttentionExplanation("t", ["a"], ["a"], *[A] * 10),
    "PositionalTables": lambda: PositionalTables("sinusoidal", 8, 16, 2, 0),
    "DecodeSettings": lambda: DecodeSettings("hello"),
    "DecodeView": lambda: DecodeView(
        0, DecodeSettings("a"), ("a",), frozenset(), 1, 1, None, 0, False, (), (), (), "", None, 0
    ),
    "StepColumns": lambda: StepColumns.of([]),
    "Lane": lambda: Lane("greedy", INSTANCES["DecodeView"](), -1.0, None),
    "LanesView": lambda: LanesView("a", 0, (), True),
    "Compared": lambda: Compared("1 2", "2 1", "2 1", "1 2"),
}


def test_every_answer_type_is_frozen_and_listed_here():
    classes = {n for n, c in inspect.getmembers(snapshots, inspect.isclass) if dataclasses.is_dataclass(c)}
    classes = {n for n in classes if getattr(snapshots, n).__module__ == snapshots.__name__}
    assert classes - {"History"} == set(INSTANCES)  # a new answer type should be added to INSTANCES
    for name in INSTANCES:
        assert getattr(snapshots, name).__dataclass_params__.frozen, name
    assert not History.__dataclass_params__.frozen  # the one the engine fills step by step


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_assigning_a_field_raises(name):
    obj = INSTANCES[name]()
    first = dataclasses.fields(obj)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, first, getattr(obj, first))
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(obj, first)


def test_inspections_do_not_share_their_masks_dict():
    a, b = inspection(), inspection()
    assert a.masks == {} and a.masks is not b.masks


# -- StepColumns and History ---------------------------------------------------------------------------------------
def test_train_metrics_are_the_per_update_columns_in_order():
    assert TRAIN_METRICS == ("step", "time", "loss", "lr", "token_accuracy", "grad_norm", "tokens_per_s", "aux_loss")


def record(step: int, loss: float, expert_load: list[float] | None = None) -> dict:
    r = dict(
        step=step,
        time=0.5 * step,
        loss=loss,
        lr=1e-3 * step,
        token_accuracy=0.1 * step,
        grad_norm=2.0 + step,
        tokens_per_s=1000 + step,
        aux_loss=0.0 if expert_load is None else 1.0 + 0.01 * step,
    )
    if expert_load is not None:
        r["expert_load"] = expert_load
    return r


MOE_RECORDS = [
    record(1, 4.0, [0.5, 0.25, 0.25]),
    record(2, 3.5, [0.25, 0.5, 0.25]),
    record(3, 3.25, [0.0, 0.0, 1.0]),
]
DENSE_RECORDS = [record(10, 2.0), record(11, 1.5)]


def check_moe_columns(cols: StepColumns) -> None:
    assert len(cols) == 3
    assert cols.step.tolist() == [1.0, 2.0, 3.0]
    assert cols.time.tolist() == [0.5, 1.0, 1.5]
    assert cols.loss.tolist() == [4.0, 3.5, 3.25]
    assert np.allclose(cols.lr, [1e-3, 2e-3, 3e-3])
    assert np.allclose(cols.token_accuracy, [0.1, 0.2, 0.3])
    assert cols.grad_norm.tolist() == [3.0, 4.0, 5.0]
    assert cols.tokens_per_s.tolist() == [1001.0, 1002.0, 1003.0]
    assert np.allclose(cols.aux_loss, [1.01, 1.02, 1.03])
    assert cols.expert_load.shape == (3, 3)  # [n updates, N experts]
    assert cols.expert_load.tolist() == [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.0, 0.0, 1.0]]
    for f in dataclasses.fields(cols):
        assert getattr(cols, f.name).dtype == np.float64, f.name


def test_of_builds_columns_from_records():
    check_moe_columns(StepColumns.of(MOE_RECORDS))


def test_from_history_builds_the_same_columns_as_of():
    history = History()
    for r in MOE_RECORDS:
        history.add_step(r)
    assert history.train["step"] == [1, 2, 3]
    assert history.train["expert_load"] == [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.0, 0.0, 1.0]]
    from_history = StepColumns.from_history(history.train)
    check_moe_columns(from_history)
    from_records = StepColumns.of(MOE_RECORDS)
    for f in dataclasses.fields(StepColumns):
        assert np.array_equal(getattr(from_history, f.name), getattr(from_records, f.name)), f.name


def test_dense_model_has_an_empty_expert_load_per_update():
    history = History()
    for r in DENSE_RECORDS:
        history.add_step(r)
    assert history.train["expert_load"] == [[], []]  # "empty for a dense model"
    for cols in (StepColumns.of(DENSE_RECORDS), StepColumns.from_history(history.train)):
        assert len(cols) == 2
        assert cols.step.tolist() == [10.0, 11.0]
        assert cols.loss.tolist() == [2.0, 1.5]
        assert cols.aux_loss.tolist() == [0.0, 0.0]
        assert cols.expert_load.shape == (2, 0)


def test_from_history_without_an_expert_load_column():
    """A plain mapping of the per-update columns with no "expert_load" column: a dense model's [n, 0] table."""
    columns = {k: [record(s, 1.0)[k] for s in (1, 2)] for k in TRAIN_METRICS}
    cols = StepColumns.from_history(columns)
    assert cols.step.tolist() == [1.0, 2.0] and cols.expert_load.shape == (2, 0)


def test_no_updates_give_empty_columns():
    for cols in (StepColumns.of([]), StepColumns.from_history(History().train)):
        assert len(cols) == 0
        assert cols.loss.shape == (0,) and cols.expert_load.shape[0] == 0


def test_history_copies_the_expert_load_it_is_given():
    load = [0.5, 0.5]
    history = History()
    history.add_step(record(1, 1.0, load))
    load[0] = 9.0  # the engine reusing its list must not rewrite the history
    assert history.train["expert_load"] == [[0.5, 0.5]]


def test_histories_do_not_share_their_columns():
    a, b = History(), History()
    a.add_step(record(1, 1.0))
    assert b.train["step"] == [] and b.evals == []
    assert set(a.train) == {*TRAIN_METRICS, "expert_load"}


@pytest.mark.parametrize("build", ["of", "from_history"])
def test_step_columns_arrays_are_read_only(build):
    if build == "of":
        cols = StepColumns.of(MOE_RECORDS)
    else:
        history = History()
        for r in MOE_RECORDS:
            history.add_step(r)
        cols = StepColumns.from_history(history.train)
    for f in dataclasses.fields(cols):
        a = getattr(cols, f.name)
        assert not a.flags.writeable, f.name
        with pytest.raises(ValueError):
            a[0] = 123.0
    assert cols.loss.tolist() == [4.0, 3.5, 3.25]


def test_step_columns_do_not_follow_later_changes_to_the_history():
    history = History()
    history.add_step(MOE_RECORDS[0])
    cols = StepColumns.from_history(history.train)
    history.add_step(MOE_RECORDS[1])
    history.train["loss"][0] = 99.0
    assert cols.loss.tolist() == [4.0] and len(cols) == 1


# -- DecodeStep.live_after --------------------------------------------------------------------------------------------
def test_live_after_extends_the_kept_live_prefixes_in_beam_order():
    kept = [
        Candidate(parent=1, token=7, log_prob=-0.5, status="live"),
        Candidate(parent=0, token=8, log_prob=-0.7, status="live"),
        Candidate(parent=1, token=9, log_prob=-0.9, status="live"),
        Candidate(parent=0, token=2, log_prob=-0.2, status="finished"),  # EOS: not alive
    ]
    step = decode_step(kept, prefixes=[[5], [6, 4]])
    assert step.live_after == [[6, 4, 7], [5, 8], [6, 4, 9]]
    assert step.prefixes == [[5], [6, 4]]  # the prefixes entering the step are left as they were


def test_live_after_ignores_pruned_and_finished():
    pruned = Candidate(0, 3, -5.0, "pruned")
    step = dataclasses.replace(decode_step([Candidate(0, 2, -0.1, "finished")], prefixes=[[5]]), pruned=[pruned])
    assert step.live_after == []


def test_live_after_of_the_first_step():
    step = decode_step([Candidate(0, 4, -0.1, "live"), Candidate(0, 6, -0.3, "live")], prefixes=[[]])
    assert step.live_after == [[4], [6]]


def test_decode_step_and_candidate_defaults():
    step = decode_step()
    assert step.cut is None and step.sampled is False
    assert np.isnan(Candidate(0, 1, 0.0, "live").prob)


# -- DecodeSettings.sampling ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "changes, sampling",
    [
        ({}, False),  # greedy: temperature 0
        ({"temperature": 0.7}, True),
        ({"temperature": 1e-6}, True),  # any temperature above 0
        ({"temperature": 0.7, "beam_size": 4}, False),  # beam search never samples
        ({"temperature": 0.7, "beam_size": 2}, False),
        ({"beam_size": 4}, False),
        ({"sample_top_k": 5, "top_p": 0.9}, False),  # cuts alone do not sample
        ({"temperature": 1.5, "sample_top_k": 5, "top_p": 0.9, "seed": None}, True),
        ({"temperature": -1.0}, False),
    ],
)
def test_sampling_exactly_when_temperature_is_positive_and_beam_is_one(changes, sampling):
    assert DecodeSettings("a sentence", **changes).sampling is sampling


# -- no PyTorch -----------------------------------------------------------------------------------------------------
def test_importing_snapshots_does_not_import_torch():
    code = "import sys, model.io.snapshots; print('torch' in sys.modules)"
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"
