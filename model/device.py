"""Where the model runs: CUDA if present, else Apple's MPS, else the CPU; overridable."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
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
