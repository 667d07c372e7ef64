"""Lines of a run's metrics.jsonl as the command line writes them, for the tests that follow a run."""

from __future__ import annotations

import json


def record(step: int) -> str:
    """One metrics line of step ``step`` (made-up but well-formed values)."""
    return json.dumps(
        {
            "step": step,
            "time": step / 10,
            "loss": 5.0 - step / 100,
            "lr": 1e-3,
            "token_accuracy": 0.1,
            "grad_norm": 1.0,
            "tokens_per_s": 1000.0,
        }
    )
