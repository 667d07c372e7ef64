"""Reading a checkpoint's contents besides its weights, each field checked before anything is built."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from model.core.config import ModelConfig
from model.data import DataSpec
from model.data.tokenization import TextTokenizer, TokenizerSpec
from model.families.registry import FAMILIES
from model.hf.tokenizers import tokenizer_from_json
from model.io.checkpoint import DAMAGED, CheckpointError, all_finite
from model.io.snapshots import TRAIN_METRICS
from model.training.trainer import TrainConfig

TRAIN_KEYS = TRAIN_METRICS  # the per-step history's columns (see model.io.snapshots.StepColumns)
NEWER_METRICS = ("aux_loss",)  # columns a checkpoint written before them lacks (read as zeros)


def read_saved_state(path: str | Path, data: dict[str, Any]) -> dict[str, Any]:
    """Everything a checkpoint holds besides weights and optimizer state, read and checked.

    Raises :class:`CheckpointError` naming the file and the field for anything of the wrong kind, so that a
    tampered or damaged file is refused before anything is built or changed.
    """

    def damaged(what: str) -> CheckpointError:
        return CheckpointError(f"{path}: {what}; {DAMAGED}")

    try:
        meta = json.loads(data["meta"])
    except (TypeError, ValueError):
        raise damaged("its settings are not readable (not JSON text)") from None
    if not isinstance(meta, dict):
        raise damaged("its settings are not a table of named values")
    out: dict[str, Any] = {}
    for key, build in (
        ("model_config", ModelConfig.from_dict),
        ("train_config", TrainConfig.from_dict),
        ("data_spec", DataSpec.from_dict),
        ("tokenizer_spec", TokenizerSpec.from_dict),
    ):
        if key not in meta:
            raise damaged(f"its settings lack {key}")
        try:
            out[key.replace("_config", "_cfg")] = build(meta[key])
        except (ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"{path}: its {key} cannot be used ({exc}); {DAMAGED}") from None
    out.update(_read_tokenizers(path, meta, data, out["model_cfg"], damaged))
    out.update(_read_progress(meta, damaged))
    out["history"] = _read_history(data.get("history"), damaged)
    out["rng"] = _read_rng(data, damaged)
    return out


def _read_tokenizers(
    path: str | Path,
    meta: dict[str, Any],
    data: dict[str, Any],
    cfg: ModelConfig,
    damaged: Callable[[str], CheckpointError],
) -> dict[str, Any]:
    shared = meta.get("shared_tokenizer", False)
    if not isinstance(shared, bool):
        raise damaged(f"its shared_tokenizer setting ({shared!r}) is not true or false")
    try:
        src_tok = tokenizer_from_json(data["src_tokenizer"])
        tgt_tok = src_tok if shared else tokenizer_from_json(data["tgt_tokenizer"])
    except Exception as exc:  # noqa: BLE001 — the tokenizers library raises plain Exception for bad JSON
        raise CheckpointError(f"{path}: its tokenizers cannot be read ({exc}); {DAMAGED}") from None
    sizes, rows = (src_tok.vocab_size, tgt_tok.vocab_size), (cfg.src_vocab_size, cfg.tgt_vocab_size)
    # a model opened from elsewhere may have more embedding rows than tokens, never fewer
    own = isinstance(src_tok, TextTokenizer)
    if (sizes != rows) if own else (sizes[0] > rows[0] or sizes[1] > rows[1]):
        raise CheckpointError(f"{path}: its tokenizers do not match its model; the file is inconsistent")
    return {"src_tok": src_tok, "tgt_tok": tgt_tok}


def _read_progress(meta: dict[str, Any], damaged: Callable[[str], CheckpointError]) -> dict[str, Any]:
    """The preset's name, the step, the training time, notes, the data stream's position, the evaluations."""
    out: dict[str, Any] = {"preset": meta.get("preset", "custom")}
    if not isinstance(out["preset"], str):
        raise damaged(f"its preset name ({out['preset']!r}) is not text")
    out["step"] = meta.get("step", 0)
    if not _whole(out["step"]):
        raise damaged(f"its step ({out['step']!r}) is not a whole number ≥ 0")
    elapsed = meta.get("elapsed", 0.0)
    if not (isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) and 0 <= elapsed < math.inf):
        raise damaged(f"its training time ({elapsed!r}) is not a number of seconds")
    out["elapsed"] = float(elapsed)
    out["notes"] = meta.get("notes") or {}
    if not isinstance(out["notes"], dict):
        raise damaged("its notes are not a table of named values")
    stream = meta.get("stream") or {"epoch": 0, "position": 0}
    keys = set(stream) if isinstance(stream, dict) else set()
    if not (keys in ({"epoch", "position"}, {"epoch", "chunk", "position"}) and all(map(_whole, stream.values()))):
        raise damaged(f"its position in the training data ({stream!r}) is not an epoch and a batch number")
    out["stream"] = dict(stream)
    evals = meta.get("evals") or []
    if not (isinstance(evals, list) and all(_is_eval(e) for e in evals)):
        raise damaged("its list of evaluations is not a list of results (step, split, loss and scores)")
    out["evals"] = [dict(e) for e in evals]
    return out


def _read_rng(data: dict[str, Any], damaged: Callable[[str], CheckpointError]) -> dict[str, Any]:
    rng = data.get("rng") or {}
    if not isinstance(rng, dict):
        raise damaged("its random-number state is not a table")
    generator = rng.get("torch")
    if generator is not None and not (
        isinstance(generator, torch.Tensor)
        and generator.dtype == torch.uint8
        and generator.shape == torch.get_rng_state().shape
    ):
        raise damaged("its random-number state is not one this version of PyTorch can use")
    return {k: v for k, v in rng.items() if v is not None}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# what each family's evaluations score (besides the loss); with experts also aux_loss and expert_load
EVAL_SCORES = tuple(spec.scores for spec in FAMILIES.values())


def _is_eval(record: Any) -> bool:
    def number(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    if not (isinstance(record, dict) and _whole(record.get("step")) and isinstance(record.get("split"), str)):
        return False
    scored = any(all(number(record.get(k)) for k in keys) for keys in EVAL_SCORES)
    load = record.get("expert_load", [])
    return number(record.get("loss")) and scored and isinstance(load, list) and all(number(x) for x in load)


def _read_history(history: Any, damaged) -> dict[str, list[float]]:
    """The per-step metric columns: all of TRAIN_KEYS, as equally long 1-D tensors of numbers (or none at all)."""
    if history is None or (isinstance(history, dict) and not history):
        return {}
    if not isinstance(history, dict):
        raise damaged(f"its metric history is a {type(history).__name__}, not a table of columns")
    columns: dict[str, list[Any]] = {}
    for key in TRAIN_KEYS:
        column = history.get(key)
        if column is None and key in NEWER_METRICS and isinstance(history.get("step"), torch.Tensor):
            column = torch.zeros_like(history["step"])  # a file from before this metric: none measured
        if not (isinstance(column, torch.Tensor) and column.dim() == 1 and column.is_floating_point()):
            raise damaged(f"its metric history has no usable column {key!r}")
        columns[key] = [float(x) for x in column.tolist()]
    if len({len(c) for c in columns.values()}) != 1:
        raise damaged("the columns of its metric history differ in length")
    n = len(columns["step"])
    load = history.get("expert_load")
    if load is None:
        columns["expert_load"] = [[] for _ in range(n)]
    elif isinstance(load, torch.Tensor) and load.is_floating_point() and load.dim() in (1, 2) and len(load) == n:
        columns["expert_load"] = load.view(n, -1).tolist() if n else []
    else:
        raise damaged("its experts' load history does not fit its other columns")
    return columns


def check_optimizer_state(optimizer: torch.optim.Optimizer, state: Any) -> None:
    """Load a saved optimizer state into ``optimizer`` (a throwaway one) and check every tensor in it.

    ``load_state_dict`` checks the parameter groups; the moment estimates must also have their
    parameter's shape and be finite, or the first update would fail or spread NaN.
    """
    if not isinstance(state, dict):
        raise TypeError("the optimizer state is not a table")
    optimizer.load_state_dict(state)
    for param, values in optimizer.state.items():
        for name, value in values.items():
            if not isinstance(value, torch.Tensor):
                continue
            if value.dim() > 0 and value.shape != param.shape:
                raise ValueError(f"optimizer {name} of shape {list(value.shape)} for a weight {list(param.shape)}")
            if value.is_floating_point() and not all_finite(value):
                raise ValueError(f"optimizer {name} holds NaN or infinite values")
