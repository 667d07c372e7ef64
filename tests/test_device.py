"""The engine's CPU threads follow the cores that other programs leave free (model.training.device.ThreadGovernor)."""

import subprocess
import sys
import time

import pytest

from model.training.device import _CLOCK_TICKS as TICKS  # clock ticks per second in /proc
from model.training.device import CpuReading, ThreadGovernor, read_cpu


class FakeMachine:
    """A clock and /proc readings: each second, ``others`` cores busy elsewhere and ``own`` in this process."""

    def __init__(self) -> None:
        self.t, self.all_busy, self.own = 0.0, 0, 0

    def run(self, seconds: float, others: float, own: float) -> None:
        self.t += seconds
        self.own += round(own * seconds * TICKS)
        self.all_busy += round((others + own) * seconds * TICKS)

    def read(self) -> CpuReading:
        return CpuReading(self.all_busy, self.own)


def governor(machine: FakeMachine, cores: int) -> ThreadGovernor:
    return ThreadGovernor(cores=cores, every_s=1.0, read=machine.read, clock=lambda: machine.t)


@pytest.mark.parametrize("cores, others, expected", [(2, 0.0, 2), (2, 1.0, 1), (2, 1.9, 1), (4, 1.0, 3), (8, 2.1, 6)])
def test_the_threads_are_the_cores_left_free(cores, others, expected):
    m = FakeMachine()
    g = governor(m, cores)
    changes = []
    for _ in range(5):
        changes.append(g.update())
        m.run(1.0, others=others, own=cores - others)
    assert g.threads == expected and g.others == pytest.approx(others, abs=0.02)
    assert [c for c in changes if c is not None] == ([expected] if expected != cores else [])


def test_threads_go_at_once_and_come_back_when_two_readings_agree():
    m = FakeMachine()
    g = governor(m, 2)
    seen = []
    for others in (0, 0, 1.0, 0, 1.0, 0, 0, 0):  # a second busy, one idle, one busy, then idle
        seen.append(g.update())
        m.run(1.0, others=others, own=2 - others)
    assert seen[:4] == [None, None, None, 1]  # (the first reading only starts the count; the busy second: 1)
    assert seen[4:] == [None, None, None, 2]  # one idle second between busy ones does not bring the core back
    assert g.threads == 2


def test_between_readings_it_does_nothing():
    m = FakeMachine()
    g = governor(m, 2)
    g.update()
    m.run(0.5, others=1.0, own=1.0)
    assert g.update() is None and g.others == 0.0  # half a second: not read yet


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_busy_process_elsewhere_is_seen_in_proc():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)  # (started)
        g = ThreadGovernor(cores=2, every_s=0.0)
        g.update()
        time.sleep(1.0)
        g.update()
    finally:
        busy.kill()
        busy.wait()
    assert read_cpu() is not None
    assert g.others >= 0.5  # a whole core, less what the scheduler gave others on a loaded machine


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priority is Linux's")
def test_the_computing_threads_helpers_give_way_and_it_keeps_its_priority():
    """The engine thread holds the GIL between operations: it keeps the ordinary priority. PyTorch's helper
    threads that it starts (they only compute its share of an operation) run at nice +10."""
    import os
    import threading

    from model.training.device import _tasks, start_helpers_behind

    base = os.getpriority(os.PRIO_PROCESS, 0)
    seen = {}

    def engine():
        before = _tasks()
        seen["lowered"] = start_helpers_behind(2)
        seen["own"] = os.getpriority(os.PRIO_PROCESS, 0)  # (this thread's own, on Linux)
        seen["new"] = {t: os.getpriority(os.PRIO_PROCESS, t) for t in _tasks() - before - {threading.get_native_id()}}

    t = threading.Thread(target=engine)
    t.start()
    t.join()
    assert seen["own"] == base
    assert seen["lowered"] >= 1 and seen["new"]  # at least the thread pool's second thread
    assert all(nice == min(19, base + 10) for nice in seen["new"].values())
