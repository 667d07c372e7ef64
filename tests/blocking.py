"""A call that must not block (on a named pipe, say), run on a thread with a time limit."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def finishes(fn: Callable[[], Any], seconds: float = 5.0) -> Any:
    """``fn()``'s result or the exception it raised, failing when it has not returned within ``seconds``."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # handed back to the test
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return out[0] if out else TimeoutError(f"{fn} blocked")
