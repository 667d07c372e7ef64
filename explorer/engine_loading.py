"""Getting the engine thread going without keeping the window waiting: PyTorch imported on the engine thread once
the window is on screen, the GIL handed back quickly, the optimizers' imports done on a thread of their own; and
whether the window may use PyTorch-backed code yet."""

from __future__ import annotations

import sys
import threading
import weakref

from PySide6.QtCore import QThread

from model.training.device import prepare_optimizers, without_collector_pauses

LIVE_ENGINES: weakref.WeakSet[QThread] = weakref.WeakSet()  # every engine made (and not yet shut down)
_LOADED = threading.Event()  # set once an engine thread has imported PyTorch and the engine


def load_engine() -> None:
    """Import PyTorch and the engine (most of a launch's work), taking what the imports made, which
    lives as long as the program, out of the garbage collector's walks (see
    :func:`model.training.device.without_collector_pauses`). The engine thread does this first, after the
    window is on screen; the window's own modules do not import PyTorch."""
    with without_collector_pauses():
        import model.session  # noqa: F401 — torch, the model, data batching, training
    _LOADED.set()


def favour_the_window() -> None:
    """Called by the engine thread as it begins: the interpreter hands the GIL to a waiting thread after 1 ms
    instead of 5, so that the window's thread, taking the GIL back from a training engine, never waits long.

    The engine thread keeps the ordinary CPU priority. A lowered one (nice +10, as before) let a single busy
    program elsewhere starve training (0.25–0.41 steps/s against the command line's 4.9–5.1) and, holding the
    GIL while it waited for a core, made the window wait too (a 16 ms timer once 1.9 s late). What keeps the
    window smooth instead: this interval, collections kept off the long-lived objects, PyTorch's helper threads
    (which hold no GIL) started at the lower priority (:func:`model.training.device.start_helpers_behind`), and as many
    threads as the cores other programs leave free (:class:`model.training.device.ThreadGovernor`).
    """
    sys.setswitchinterval(0.001)


def prepare_optimizers_aside() -> None:
    """:func:`prepare_optimizers` (1–4 s of imports) on a thread of its own, once: the engine thread stays free
    for what the person asks meanwhile — closing the window waited for these imports to end (2.4–5.0 s)."""
    global _preparing
    if _preparing is None:
        _preparing = threading.Thread(target=prepare_optimizers, name="prepare-optimizers", daemon=True)
        _preparing.start()


_preparing: threading.Thread | None = None


def engine_loaded() -> bool:
    """Whether the window can use PyTorch-backed code now without waiting for an engine thread that is
    still importing it (Python makes a second importer wait for the first)."""
    return _LOADED.is_set() or not any(e.isRunning() for e in list(LIVE_ENGINES))
