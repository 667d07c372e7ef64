"""Checkpoint files: written atomically, read without unpickling arbitrary objects.

A checkpoint is one file written with ``torch.save`` holding only plain data:
tensors, numbers, strings, lists and dicts (configuration, tokenizers as JSON,
weights, optimizer state, step, metric history, RNG state, data description).
It is read with ``torch.load(weights_only=True)``, whose restricted unpickler
refuses any other Python object, so opening a file cannot run code.

Writing goes to a temporary file in the same folder, which is flushed, fsynced
and then renamed over the old file: a crash or a full disk during a save leaves
the previous checkpoint whole.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import torch

FORMAT = "transformer-explorer-checkpoint"
FORMAT_VERSION = 1
REQUIRED = ("format", "format_version", "meta", "model", "src_tokenizer", "tgt_tokenizer")


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, with what to do about it."""


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` (plain data and tensors) to ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format": FORMAT, "format_version": FORMAT_VERSION, **payload}
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp_name, 0o666 & ~_umask())  # mkstemp makes the file private; a checkpoint is an ordinary file
        with os.fdopen(fd, "wb") as handle:
            torch.save(payload, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)


def _read_umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it: done once, at import, before any threads
    os.umask(mask)
    return mask


UMASK = _read_umask()


def _umask() -> int:
    return UMASK


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (where the platform allows opening a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read and check a checkpoint; raises :class:`CheckpointError` with a reason a person can act on."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        data = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        if "Unsupported global" in str(exc):
            raise CheckpointError(
                f"{path} was refused: it contains Python objects other than tensors and plain data, which "
                "could run code when opened. It is not a Transformer Explorer checkpoint (or was tampered with)."
            ) from None
        raise CheckpointError(
            f"{path} is truncated or corrupt, or not a PyTorch checkpoint at all, and cannot be read; "
            "use an earlier copy, an autosave, or train again"
        ) from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError, KeyError) as exc:
        raise CheckpointError(
            f"{path} is truncated or corrupt and cannot be read ({type(exc).__name__}); "
            "use an earlier copy, an autosave, or train again"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a Transformer Explorer checkpoint (it is some other PyTorch file)")
    version = data.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise CheckpointError(
            f"{path} was written by a newer Transformer Explorer (checkpoint format {version}; this one reads "
            f"up to {FORMAT_VERSION}). Update the program to open it."
        )
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise CheckpointError(f"{path} is incomplete (missing {', '.join(missing)}); it cannot be used")
    return data
