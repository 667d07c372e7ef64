"""Checkpoint files: written atomically, read without unpickling arbitrary objects.

A checkpoint is one file written with ``torch.save`` holding only plain data:
tensors, numbers, strings, lists and dicts (configuration, tokenizers as JSON,
weights, optimizer state, step, metric history, RNG state, data description).
It is read with ``torch.load(weights_only=True)``, whose restricted unpickler
refuses any other Python object, so opening a file cannot run code.

Writing goes to a temporary file in the same folder, which is flushed, fsynced
and then renamed over the old file: a crash or a full disk during a save leaves
the previous checkpoint whole. A save also removes the temporary files that
earlier saves of the same file left behind when their process was killed.

A file that reads is then checked before anything is built from it: its
configuration against the shapes of its weights (:func:`check_weights`), so a
file that claims a huge model is refused without allocating it. Shapes cannot
tell everything (8 heads or 4 over the same matrices), so a save also stores a
fingerprint of the model configuration (:data:`FINGERPRINT`), and a file whose
configuration was edited afterwards is refused. Files saved before fingerprints
existed have none and are read as before.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import re
import socket
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import torch

from model.core.config import ModelConfig
from model.families.registry import T5_BIAS, family_of
from model.io.safe_files import NotAFileError, check_regular

FORMAT = "transformer-explorer-checkpoint"
FORMAT_VERSION = 1
REQUIRED = ("format", "format_version", "meta", "model", "src_tokenizer", "tgt_tokenizer")
MAX_POSITIONS = 65_536  # a larger max_len is refused: its position tables alone would take gigabytes
MAX_LAYERS = 1_000  # per stack; far beyond any model this program trains
MAX_EXPERTS = 64  # per layer (the settings allow up to 64)
STALE_AFTER_S = 3600.0  # a temporary file not written for this long belongs to no save in progress
DAMAGED = "the file was altered or is damaged; use an earlier copy or an autosave"
FINGERPRINT = "model_config_sha256"  # payload key: SHA-256 of the model configuration saved in "meta"


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, with what to do about it."""


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` (plain data and tensors) to ``path`` atomically."""
    payload = {"format": FORMAT, "format_version": FORMAT_VERSION, **payload}
    payload.pop(FINGERPRINT, None)  # one read from an earlier file: the fingerprint is made afresh
    fingerprint = config_fingerprint(payload.get("meta"))
    if fingerprint is not None:
        payload[FINGERPRINT] = fingerprint
    write_atomically(path, lambda handle: torch.save(payload, handle))


def write_atomically(path: str | Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Call ``write`` on a temporary file next to ``path``, make it durable, then rename it over ``path``.

    Either the old file or the complete new one is there afterwards, whatever happens in between.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    fd, tmp_name = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp_name, 0o666 & ~_umask())  # mkstemp makes the file private; a checkpoint is an ordinary file
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)


# Temporary files are named ".<name>.<pid>@<host>.<random>.tmp": the writer is known by its process id on its host.
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.{os.getpid()}@{_HOST}."


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Delete the temporary files of earlier saves of ``path`` that can no longer finish; → those deleted.

    Only files named as this module names the temporaries of ``path`` are considered (older versions'
    ".<name>.<random>.tmp" included). One is stale when the process that wrote it is no longer running on
    this host, or when it has not been written to for an hour (a save in progress keeps writing to its file,
    and its rename follows the last write at once; this also covers files from other hosts, whose processes
    cannot be checked, and process ids that were reused). The file a running save is writing is left alone.
    """
    path = Path(path)
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(?:(?P<pid>\d+)@(?P<host>[A-Za-z0-9-]+)\.)?[A-Za-z0-9_]+\.tmp")
    removed: list[Path] = []
    try:
        candidates = [p for p in path.parent.iterdir() if pattern.fullmatch(p.name)]
    except OSError:
        return removed
    now = time.time()
    for tmp in candidates:
        match = pattern.fullmatch(tmp.name)
        assert match is not None  # the candidates were chosen by this pattern
        try:
            idle = now - tmp.stat().st_mtime
        except OSError:
            continue  # gone already (its save finished)
        writer_gone = match["pid"] is not None and match["host"] == _HOST and not _process_running(int(match["pid"]))
        if writer_gone or idle > STALE_AFTER_S:
            try:
                tmp.unlink()
                removed.append(tmp)
            except OSError:
                pass
    return removed


def _process_running(pid: int) -> bool:
    """Whether a process with this id runs on this host (True when it cannot be told)."""
    if pid == os.getpid():
        return True
    if os.name != "posix":
        return True  # os.kill(pid, 0) would not probe there; such files wait for the age rule
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:  # it exists but belongs to someone else (PermissionError)
        return True
    return True


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
    if not os.path.lexists(path):
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        check_regular(path)  # a named pipe would block a plain open
        data = torch.load(path, map_location=map_location, weights_only=True)
    except NotAFileError as exc:
        raise CheckpointError(str(exc)) from None
    except pickle.UnpicklingError as exc:
        # torch names a refused class or function "Unsupported global: GLOBAL x" or "unsupported GLOBAL x"
        if re.search(r"unsupported global", str(exc), re.IGNORECASE):
            raise CheckpointError(
                f"{path} was refused: it contains code (Python objects other than tensors and plain data, which "
                "could run when opened). It is not a Transformer Explorer checkpoint, or it was tampered with."
            ) from None
        raise CheckpointError(
            f"{path} is truncated or corrupt, or not a PyTorch checkpoint at all, and cannot be read; "
            "use an earlier copy, an autosave, or train again"
        ) from None
    except Exception as exc:  # noqa: BLE001 — whatever reading arbitrary bytes raises (IndexError, struct.error…)
        raise CheckpointError(
            f"{path} is truncated or corrupt and cannot be read ({type(exc).__name__}); "
            "use an earlier copy, an autosave, or train again"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a Transformer Explorer checkpoint (it is some other PyTorch file)")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CheckpointError(f"{path}: its format version ({version!r}) is not a version number; {DAMAGED}")
    if version > FORMAT_VERSION:
        raise CheckpointError(
            f"{path} was written by a newer Transformer Explorer (checkpoint format {version}; this one reads "
            f"up to {FORMAT_VERSION}). Update the program to open it."
        )
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise CheckpointError(f"{path} is incomplete (missing {', '.join(missing)}); it cannot be used")
    _check_fingerprint(path, data)
    return data


# -- the fingerprint of the model configuration --------------------------------------------------------------------
def config_fingerprint(meta: Any) -> str | None:
    """SHA-256 of the model configuration in a checkpoint's ``meta`` (its JSON text), written canonically (sorted
    keys, ASCII) so that reading and writing the JSON again does not change it; None without one."""
    try:
        config = json.loads(meta)["model_config"]
    except (TypeError, ValueError, KeyError):
        return None
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _check_fingerprint(path: Path, data: dict[str, Any]) -> None:
    """Refuse a file whose model configuration is not the one it was saved with (edited by hand, say 8 heads
    over weights trained with 4). A file without a fingerprint was saved before they existed: nothing to check.

    When the configuration no longer fits the weights, the checks that say how (:func:`check_model_size`,
    :func:`check_weights`) are left to speak; the fingerprint speaks for the edits that shapes cannot show.
    """
    saved = data.get(FINGERPRINT)
    if saved is None:
        return
    if not isinstance(saved, str):
        raise CheckpointError(f"{path}: its fingerprint ({saved!r}) is not text; {DAMAGED}")
    if config_fingerprint(data["meta"]) == saved:
        return
    try:
        cfg = ModelConfig.from_dict(json.loads(data["meta"])["model_config"])
    except (TypeError, ValueError, KeyError):
        return  # reading the settings names the problem (see model.session)
    check_model_size(path, cfg)
    check_weights(path, cfg, data["model"])
    raise CheckpointError(
        f"{path}: its model configuration was changed after it was saved (it no longer matches the fingerprint "
        f"saved with it: {_describe(cfg)}, {cfg.n_heads} heads); {DAMAGED}"
    )


# -- what the weights must be ------------------------------------------------------------------------------------
def weight_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Name and shape of every tensor in the ``state_dict`` of ``Transformer(cfg)``, worked out without building it.

    (A test pins this to the real model for every architecture option and family.)
    """
    d, spec = cfg.d_model, family_of(cfg)
    shapes: dict[str, tuple[int, ...]] = {
        "src_embed.weight": (cfg.src_vocab_size, d),
        "tgt_embed.weight": (cfg.tgt_vocab_size, d),  # the same table as src_embed when shared_vocab
        "generator.weight": (cfg.tgt_vocab_size, d),
        "generator.bias": (cfg.tgt_vocab_size,),
    }
    if cfg.positional == "learned":
        shapes["src_pos.weight"] = shapes["tgt_pos.weight"] = (cfg.max_len, d)
    if cfg.embed_norm:  # BERT's LayerNorm over the summed embeddings
        shapes["embed_norm.weight"] = shapes["embed_norm.bias"] = (d,)
    if T5_BIAS.applies(cfg):  # a table per stack
        for stack in spec.stacks:
            shapes[f"{stack}_bias.weight"] = (cfg.t5_buckets, cfg.n_heads)
    if "segment_embedding" in spec.parameter_groups:
        shapes["segment_embed.weight"] = (2, d)
    if "masked_lm_head" in spec.parameter_groups:
        shapes["mlm_transform.0.weight"], shapes["mlm_transform.0.bias"] = (d, d), (d,)
        shapes["mlm_transform.2.weight"] = shapes["mlm_transform.2.bias"] = (d,)
    if cfg.n_classes:  # only a family with a classification head takes n_classes
        shapes["pooler.weight"], shapes["pooler.bias"] = (d, d), (d,)
        shapes["classifier.weight"], shapes["classifier.bias"] = (cfg.n_classes, d), (cfg.n_classes,)
    n_enc = cfg.n_encoder_layers if "encoder" in spec.stacks else 0
    n_dec = cfg.n_decoder_layers if "decoder" in spec.stacks else 0
    cross = "cross" in spec.attention
    for i in range(n_enc):
        _layer_shapes(shapes, cfg, f"encoder_layers.{i}", ("self_attn",), 2)
    for i in range(n_dec):
        _layer_shapes(
            shapes,
            cfg,
            f"decoder_layers.{i}",
            ("self_attn", "cross_attn") if cross else ("self_attn",),
            3 if cross else 2,
        )
    if cfg.norm == "pre":
        for stack in spec.stacks:
            shapes[f"{stack}_norm.weight"] = shapes[f"{stack}_norm.bias"] = (d,)
    return shapes


def _layer_shapes(
    shapes: dict[str, tuple[int, ...]], cfg: ModelConfig, prefix: str, blocks: tuple[str, ...], norms: int
) -> None:
    d, f = cfg.d_model, cfg.d_ff
    for block in blocks:
        shapes[f"{prefix}.{block}.in_proj.weight"], shapes[f"{prefix}.{block}.in_proj.bias"] = (3 * d, d), (3 * d,)
        shapes[f"{prefix}.{block}.out_proj.weight"], shapes[f"{prefix}.{block}.out_proj.bias"] = (d, d), (d,)
    ffns = [f"{prefix}.ffn"]
    if cfg.moe:
        shapes[f"{prefix}.ffn.router.weight"], shapes[f"{prefix}.ffn.router.bias"] = (
            (cfg.n_experts, d),
            (cfg.n_experts,),
        )
        ffns = [f"{prefix}.ffn.experts.{e}" for e in range(cfg.n_experts)]
    for ffn in ffns:
        shapes[f"{ffn}.linear1.weight"], shapes[f"{ffn}.linear1.bias"] = (f, d), (f,)
        shapes[f"{ffn}.linear2.weight"], shapes[f"{ffn}.linear2.bias"] = (d, f), (d,)
    for n in range(1, norms + 1):
        shapes[f"{prefix}.norm{n}.weight"] = shapes[f"{prefix}.norm{n}.bias"] = (d,)


def check_model_size(path: str | Path, cfg: ModelConfig) -> None:
    """Refuse sizes that no stored weight vouches for but that would still be allocated (position tables, layers)."""
    if cfg.max_len > MAX_POSITIONS:
        raise CheckpointError(
            f"{path}: its configuration claims max_len = {cfg.max_len:,} positions, more than this program "
            f"accepts ({MAX_POSITIONS:,}); {DAMAGED}"
        )
    layers = max(cfg.n_encoder_layers, cfg.n_decoder_layers)
    if cfg.n_experts > MAX_EXPERTS:
        raise CheckpointError(
            f"{path}: its configuration claims {cfg.n_experts:,} experts per layer, more than this program accepts "
            f"({MAX_EXPERTS}); {DAMAGED}"
        )
    if layers > MAX_LAYERS:
        raise CheckpointError(
            f"{path}: its configuration claims {layers:,} layers, more than this program accepts ({MAX_LAYERS:,}); "
            f"{DAMAGED}"
        )


def check_weights(path: str | Path, cfg: ModelConfig, weights: Any) -> None:
    """Check stored weights against the model ``cfg`` describes before that model is built.

    Every tensor must be there with the shape the configuration implies (so building the model allocates
    what the file already holds, no more), be floating point, and be finite.
    """
    if not isinstance(weights, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()
    ):
        raise CheckpointError(f"{path}: its weights are not a table of named tensors; {DAMAGED}")
    expected = weight_shapes(cfg)
    missing = [k for k in expected if k not in weights]
    unexpected = [k for k in weights if k not in expected]
    if missing or unexpected:
        parts = [
            f"{label} {_some(names)}" for label, names in (("missing", missing), ("unexpected", unexpected)) if names
        ]
        raise CheckpointError(
            f"{path}: the weights do not fit the model it describes ({'; '.join(parts)}); the file is inconsistent"
        )
    for name, shape in expected.items():
        if tuple(weights[name].shape) != shape:
            raise CheckpointError(
                f"{path}: the weights do not fit the model it describes: {name} is "
                f"{list(weights[name].shape)}, but its configuration ({_describe(cfg)}) needs {list(shape)}; "
                "the file is inconsistent"
            )
    not_float = [k for k, v in weights.items() if not v.is_floating_point()]
    if not_float:
        dtypes = sorted({str(weights[k].dtype).removeprefix("torch.") for k in not_float})
        raise CheckpointError(
            f"{path}: its weights are stored as {', '.join(dtypes)} ({_some(not_float)}), not as floating-point "
            f"numbers; {DAMAGED}"
        )
    not_finite = [k for k, v in weights.items() if not all_finite(v)]
    if not_finite:
        raise CheckpointError(
            f"{path}: its weights contain NaN or infinite values ({_some(not_finite)}), so the model cannot "
            f"compute anything; {DAMAGED}"
        )


def all_finite(t: torch.Tensor) -> bool:
    """Whether every value of a floating-point tensor is finite. A NaN or an infinity makes the sum NaN or
    infinite, so a finite sum says it at once: 25 ms for a 77 M-parameter model's weights, against 310 ms (and
    every core) for ``torch.isfinite(t).all()``, which is asked only when the sum is not finite (a NaN, an
    infinity, or finite values whose sum overflows)."""
    return math.isfinite(t.sum().item()) or bool(torch.isfinite(t).all())


def _some(names: list[str], shown: int = 3) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _describe(cfg: ModelConfig) -> str:
    layers = f"{cfg.n_layers} layers" if cfg.single_stream else f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers"
    experts = f", {cfg.n_experts} experts" if cfg.moe else ""
    return (
        f"{cfg.family.name}, d_model {cfg.d_model}, d_ff {cfg.d_ff}, {layers}{experts}, "
        f"vocabularies {cfg.src_vocab_size}/{cfg.tgt_vocab_size}, max_len {cfg.max_len}, {cfg.positional} positions"
    )
