"""The engine driven directly, without a window: typed commands in, typed answers out."""

import ast
import dataclasses
import re
import typing
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer import commands as cmd  # noqa: E402
from explorer.answers import (  # noqa: E402
    DecodeStepped,
    EngineStatus,
    Explained,
    InspectionReady,
    MetricsBatch,
    PositionalReady,
    RunInfo,
)
from explorer.worker import Engine  # noqa: E402
from model.io.snapshots import StepColumns  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _copy_spec():
    from explorer.commands import NewModelSpec
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.training.trainer import train_config_for

    data = DataSpec(task="copy", n_train=300, n_valid=20, n_test=20, length=6, min_length=3, alphabet=6)
    return NewModelSpec(data, "tiny", {}, train_config_for("tiny", eval_every=0, batch_size=16), TokenizerSpec("word"))


class Recorder:
    """Every answer the engine sends, in order."""

    def __init__(self, engine: Engine) -> None:
        self.got: list[object] = []
        for signal in (
            engine.status_changed,
            engine.metrics_logged,
            engine.run_described,
            engine.inspection_ready,
            engine.decode_stepped,
            engine.explained,
            engine.positional_ready,
        ):
            signal.connect(self.got.append)
        self.failed: list[tuple[int, str]] = []
        self.saved: list[tuple[int, str]] = []
        engine.engine_failed.connect(lambda rid, message: self.failed.append((rid, message)))
        engine.saved.connect(lambda rid, path: self.saved.append((rid, path)))

    def of(self, kind):
        return [g for g in self.got if isinstance(g, kind)]

    def answer(self, kind, request_id: int):
        found = [g for g in self.of(kind) if g.request_id == request_id]
        return found[-1] if found else None


def test_the_engine_answers_typed_commands_with_typed_snapshots(qtbot, tmp_path):
    engine = Engine("cpu", threads=1)
    seen = Recorder(engine)
    engine.start()
    try:
        new = engine.submit(cmd.NewModel(_copy_spec()))
        qtbot.waitUntil(lambda: any(r.origin == new for r in seen.of(RunInfo)), timeout=30000)
        info = next(r for r in seen.of(RunInfo) if r.origin == new)
        assert info.model_config.d_model == 64 and info.tokenizer.kind == "word" and info.data.task == "copy"
        assert info.vocab_sizes[0] > 0 and isinstance(info.history_steps, StepColumns)

        engine.submit(cmd.Step(n=3))  # three updates, then it pauses by itself
        qtbot.waitUntil(lambda: any(s.state == "paused" and s.step == 3 for s in seen.of(EngineStatus)), timeout=30000)
        qtbot.waitUntil(lambda: sum(len(b.steps) for b in seen.of(MetricsBatch)) == 3, timeout=5000)
        steps = np.concatenate([b.steps.step for b in seen.of(MetricsBatch)])
        assert list(steps) == [1, 2, 3]

        rid = engine.submit(cmd.Inspect(source="1 2 3", target="1 2 3"))
        qtbot.waitUntil(lambda: seen.answer(InspectionReady, rid) is not None, timeout=10000)
        inspection = seen.answer(InspectionReady, rid).inspection
        assert inspection.cross.shape[-2:] == (4, 4) and inspection.step == 3  # <bos>+3 queries, 3 tokens+<eos>

        from model.io.snapshots import DecodeSettings

        start = engine.submit(cmd.Decode(action="start", settings=DecodeSettings("1 2 3")))
        step = engine.submit(cmd.Decode(action="step"))
        qtbot.waitUntil(lambda: seen.answer(DecodeStepped, step) is not None, timeout=10000)
        assert seen.answer(DecodeStepped, start).view.position == 0
        assert seen.answer(DecodeStepped, step).view.position == 1

        explain = engine.submit(cmd.Explain(source="1 2", target_ids=None, kind="encoder", layer=0, head=0))
        positional = engine.submit(cmd.Positional())
        qtbot.waitUntil(lambda: seen.answer(PositionalReady, positional) is not None, timeout=10000)
        explanation = seen.answer(Explained, explain).explanation
        assert explanation.kind == "encoder" and explanation.weights.shape == (3, 3)
        assert seen.answer(PositionalReady, positional).tables.kind == "sinusoidal"

        path = str(tmp_path / "m.ckpt")
        save = engine.submit(cmd.Save(path))
        qtbot.waitUntil(lambda: save in [rid for rid, _ in seen.saved], timeout=20000)
        load = engine.submit(cmd.Load(path))
        qtbot.waitUntil(lambda: any(r.origin == load for r in seen.of(RunInfo)), timeout=20000)
        loaded = next(r for r in seen.of(RunInfo) if r.origin == load)
        assert list(loaded.history_steps.step) == [1, 2, 3] and loaded.model_config == info.model_config

        bad = engine.submit(cmd.Inspect(source=""))
        qtbot.waitUntil(lambda: bad in [rid for rid, _ in seen.failed], timeout=10000)
    finally:
        engine.shutdown(None, timeout_ms=20000)
    assert engine.isFinished()


def test_every_command_has_its_handler():
    """A command class without a case in the engine's dispatch would only fail when sent."""

    def cases(module: str, function: str) -> dict[str, ast.match_case]:
        """Each class a match in ``function`` names → its case (a case ``A() | B()`` names both)."""
        source = (ROOT / "explorer" / module).read_text(encoding="utf-8")
        body = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == function)
        named = {}
        for case in body.body[-1].cases:
            patterns = case.pattern.patterns if isinstance(case.pattern, ast.MatchOr) else [case.pattern]
            named.update({p.cls.id: case for p in patterns if isinstance(p, ast.MatchClass)})
        return named

    dispatched = cases("worker.py", "_dispatch")
    # the commands that ask why, and an experiment's, go on to their handlers through a match of their own
    routed = {**cases("engine_interpret.py", "_interpret"), **cases("engine_experiment.py", "_experiment")}
    assert set(routed) == {name for name, case in dispatched.items() if isinstance(case.pattern, ast.MatchOr)}
    handled = set(dispatched)
    defined = {
        name
        for name, obj in vars(cmd).items()
        if isinstance(obj, type) and issubclass(obj, cmd.Command) and obj is not cmd.Command
    }
    assert defined - {"Shutdown"} == handled  # Shutdown ends the thread's loop before dispatch


def test_no_string_protocol_is_left():
    """The old glue: getattr dispatch by name, untyped reply signals, dict fields in snapshots."""
    explorer = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "explorer").rglob("*.py"))
    assert not re.search(r"getattr\(self, f\"_cmd_", explorer)
    assert not re.search(r"Signal\((int, )?object\)", explorer)
    assert ".split()[0]" not in explorer and 'split(":")' not in explorer
    import explorer.answers as answers
    import explorer.commands as commands
    from model.core.settings import SettingValue
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.io.snapshots import DecodeSettings
    from model.training.config import TrainConfig

    # the names the commands' fields use for type checking only
    checked_only = {"SettingValue": SettingValue, "DataSpec": DataSpec, "TokenizerSpec": TokenizerSpec}
    checked_only |= {"DecodeSettings": DecodeSettings, "TrainConfig": TrainConfig}
    for module in (commands, answers):
        for name, obj in vars(module).items():
            if dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__:
                hints = typing.get_type_hints(
                    obj,
                    vars(module)
                    | checked_only
                    | {"Inspection": object, "AttentionExplanation": object, "DecodeView": object},
                )
                for field_name, hint in hints.items():
                    assert "dict[str, typing.Any]" not in str(hint), f"{name}.{field_name} is {hint}"
                    assert hint is not typing.Any, f"{name}.{field_name} is Any"
