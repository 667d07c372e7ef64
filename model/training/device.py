"""Where the model runs: CUDA if present, else Apple's MPS, else the CPU; overridable."""

from __future__ import annotations

import contextlib
import gc
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")


def resolve_device(name: str = "auto") -> torch.device:
    """``"auto"`` picks CUDA, then MPS, then CPU; a named device must be available."""
    import torch  # here, not above: the window imports this module before the engine has loaded torch

    if name not in DEVICE_CHOICES and not name.startswith("cuda:"):
        raise ValueError(f"Unknown device {name!r}; choose one of {DEVICE_CHOICES}")
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("CUDA was requested but no CUDA GPU is available to PyTorch; use --device cpu")
    if name == "mps" and not torch.backends.mps.is_available():
        raise ValueError("MPS was requested but is not available on this machine; use --device cpu")
    return torch.device(name)


def device_description(device: torch.device) -> str:
    """A short human name: "CPU", the GPU's name, or "Apple GPU (MPS)"."""
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple GPU (MPS)"
    return "CPU"


def training_autocast(device: torch.device) -> contextlib.AbstractContextManager:
    """bf16 autocast for training on CUDA (where it is supported); full precision elsewhere."""
    import torch

    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@contextlib.contextmanager
def without_collector_pauses() -> Iterator[None]:
    """Run a burst of long-lived allocations (a large import) without garbage-collection pauses,
    then freeze what it created out of the collector's reach.

    While a large package is imported, Python's full collections walk every object in the process,
    millions of them once torch is loaded, and each walk holds the GIL for about 0.1 s: any other
    thread (the window's) stops for that long. Frozen objects are never walked again, which also
    keeps later full collections short."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def prepare_optimizers() -> None:
    """Load what the first optimizer construction loads (``torch._dynamo``: 1–2 s of imports), so that
    it can be done ahead of time on a background thread, without stalling the window. Idempotent."""
    global _optimizers_prepared
    if _optimizers_prepared:
        return
    with without_collector_pauses():
        import torch._dynamo  # noqa: F401 — torch.optim imports it on first use
    _optimizers_prepared = True


def optimizers_prepared() -> bool:
    return _optimizers_prepared


_optimizers_prepared = False


# -- sharing the CPU with other programs ------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuReading:
    """Cumulative CPU time, in clock ticks: every core's busy time, and this process's own."""

    all_busy: int
    own: int


def read_cpu() -> CpuReading | None:
    """The machine's busy time and this process's CPU time from ``/proc`` (None where there is no ``/proc``)."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()  # "cpu user nice system idle iowait irq softirq steal guest guest_nice"
        with open("/proc/self/stat", "rb") as f:
            own = f.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold spaces
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    return CpuReading(user + nice + system + irq + softirq + steal, int(own[11]) + int(own[12]))  # utime, stime


class ThreadGovernor:
    """Fits PyTorch's CPU threads to the cores that other programs leave free.

    PyTorch's CPU kernels split each operation among its threads and wait for the last one. With a thread for
    every core, one busy program elsewhere (a browser tab, a video call) slows every operation to the pace of the
    thread that shares its core with that program: the tiny preset on 2 cores trained at 41.7 steps/s on an idle
    machine and at 5.7 steps/s beside one busy process, against 25.5 steps/s with one thread
    (``bench/contended.py``). So, about once a second, the governor measures how many cores other processes
    used (the machine's busy time less this process's own, from ``/proc``) and uses the rest, at least one:
    fewer threads at once (a thread that waits for a core slows every operation), more again only when two
    readings in a row agree, so that a program that comes and goes does not make the count swing.
    Where ``/proc`` is missing (macOS, Windows) it keeps every core.
    """

    def __init__(
        self,
        cores: int | None = None,
        every_s: float = 1.0,
        read: Callable[[], CpuReading | None] = read_cpu,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cores = cores or max(1, os.cpu_count() or 1)
        self.every_s, self._read, self._clock = every_s, read, clock
        self.threads = self.cores  # what the governor last chose
        self.others = 0.0  # cores the other processes used in the last interval
        self._last: tuple[float, CpuReading] | None = None
        self._wanted: int | None = None  # the previous reading's choice

    def update(self) -> int | None:
        """Call often (between training steps): → the new number of threads when it changes, else None."""
        now = self._clock()
        if self._last is not None and now - self._last[0] < self.every_s:
            return None
        reading = self._read()
        if reading is None:
            return None
        last, self._last = self._last, (now, reading)
        if last is None:
            return None
        ticks = (now - last[0]) * _CLOCK_TICKS
        self.others = max(0.0, (reading.all_busy - last[1].all_busy) - (reading.own - last[1].own)) / ticks
        wanted = min(self.cores, max(1, round(self.cores - self.others)))
        agreed, self._wanted = wanted == self._wanted, wanted
        if wanted == self.threads or (wanted > self.threads and not agreed):
            return None
        self.threads = wanted
        return wanted

    def apply(self) -> None:
        """:meth:`update`, and give torch the new number of threads (on the thread that computes)."""
        threads = self.update()
        if threads is not None:
            import torch

            torch.set_num_threads(threads)


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _tasks() -> set[int]:
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def start_helpers_behind(threads: int) -> int:
    """Start PyTorch's CPU helper threads (``threads`` in all, the calling one included) at a lower priority
    (Linux: nice +10 for them alone); → how many were lowered.

    The calling thread, which holds the GIL between operations, keeps its priority: lowering it let one busy
    program elsewhere starve training and, through the GIL, the window. Its helpers only ever compute their
    share of an operation: lowered, they give way to the window's thread and to the display server at once,
    and take every idle core otherwise. Where another program keeps a core busy the
    :class:`ThreadGovernor` leaves them idle (one thread), so none of them waits behind it. Call it on the
    thread that computes, before its first parallel operation (the helpers are made then, and kept).
    """
    import torch

    before = _tasks()
    torch.set_num_threads(threads)
    x = torch.ones(256, 256)
    (x @ x).sum()  # the first parallel operations make the helper threads (the thread pool and the BLAS one)
    torch.ones(1 << 20).add_(1).sum()
    python_threads = {t.native_id for t in threading.enumerate()}
    helpers = _tasks() - before - python_threads
    lowered = 0
    for tid in helpers:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + 10))
            lowered += 1
        except OSError:  # gone already, or not allowed: it keeps its priority
            pass
    return lowered
