"""The Transformer Explorer engine: model, decoding, data and training. Never imports Qt.

``model.cli.generate`` and ``model.cli.fill_mask`` are the command-line tools; the functions of those names are in
:mod:`model.decoding.search`. The names below are imported on first use: the window imports parts of this package
(settings, tasks) before the engine has loaded PyTorch."""

from typing import TYPE_CHECKING, Any

from model.core.config import ModelConfig

if TYPE_CHECKING:
    from model.core.transformer import AttentionMaps, Transformer
    from model.decoding.search import (
        BeamStepper,
        DecodeStep,
        GreedyStepper,
        Hypothesis,
        MaskFill,
        SampleStepper,
        Sampling,
        beam_search,
        greedy_decode,
    )

_LAZY = {
    "BeamStepper": "model.decoding.search",
    "DecodeStep": "model.decoding.search",
    "GreedyStepper": "model.decoding.search",
    "Hypothesis": "model.decoding.search",
    "beam_search": "model.decoding.search",
    "MaskFill": "model.decoding.search",
    "SampleStepper": "model.decoding.search",
    "Sampling": "model.decoding.search",
    "greedy_decode": "model.decoding.search",
    "AttentionMaps": "model.core.transformer",
    "Transformer": "model.core.transformer",
}

__all__ = [
    "AttentionMaps",
    "BeamStepper",
    "DecodeStep",
    "GreedyStepper",
    "Hypothesis",
    "ModelConfig",
    "Transformer",
    "beam_search",
    "MaskFill",
    "SampleStepper",
    "Sampling",
    "greedy_decode",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'model' has no attribute {name!r}")
