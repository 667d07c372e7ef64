"""What the window asks of the engine (explorer/commands.py): frozen commands of plain data, each with a request id
of its own, and the kinds of which only the newest is served."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from explorer import commands as cmd

ROOT = Path(__file__).resolve().parents[1]


def test_every_command_gets_a_request_id_of_its_own_in_the_order_made():
    made = [cmd.Start(), cmd.Step(n=3), cmd.Inspect(source="1 2"), cmd.Start()]
    ids = [c.request_id for c in made]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert cmd.next_request_id() > ids[-1]
    assert cmd.Save("a.ckpt", request_id=7).request_id == 7  # given by name only
    assert cmd.Step(5).n == 5  # a field given by position is never the id


def test_commands_are_frozen():
    step = cmd.Step(n=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.n = 3  # type: ignore[misc]
    assert cmd.Step(n=2, request_id=1) == cmd.Step(n=2, request_id=1) != cmd.Step(n=2, request_id=2)


def test_only_views_of_the_model_are_served_newest_first():
    views = (cmd.Inspect, cmd.Explain, cmd.Positional)
    assert set(views) <= set(cmd.LATEST_ONLY)
    # controls, decoding steps and files each count: none is dropped for a newer one
    for kind in (cmd.Start, cmd.Pause, cmd.Step, cmd.Decode, cmd.DecodeLanes, cmd.Save, cmd.Load, cmd.NewModel):
        assert kind not in cmd.LATEST_ONLY, kind
    assert all(issubclass(kind, cmd.Command) for kind in cmd.LATEST_ONLY)


def test_commands_are_plain_data_without_qt_or_pytorch():
    code = (
        "import sys, explorer.commands\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('torch', 'PySide6', 'numpy')]\n"
        "assert not loaded, loaded\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
