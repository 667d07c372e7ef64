"""Files shipped with Transformer Explorer: the bundled model, icons, the desktop entry."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

DEFAULT_MODEL = "models/grammar-en-zh-small.ckpt"


def resource_path(name: str) -> Path:
    """The path of a shipped file (it may not exist, e.g. a model not built yet)."""
    return Path(str(files(__name__).joinpath(name)))


def default_model() -> Path | None:
    """The bundled, trained English→Chinese model, if it is there."""
    path = resource_path(DEFAULT_MODEL)
    return path if path.is_file() else None
