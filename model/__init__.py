"""The Transformer Explorer engine: model, decoding, data and training. Never imports Qt.

``model.generate`` and ``model.fill_mask`` are the command-line tools; the functions of those names are in
:mod:`model.decoding`. The names below are imported on first use: the window imports parts of this package
(settings, tasks) before the engine has loaded PyTorch."""

from typing import TYPE_CHECKING, Any

from model.config import ModelConfig

if TYPE_CHECKING:
    from model.decoding import (
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
    from model.transformer import AttentionMaps, Transformer

_LAZY = {
    "BeamStepper": "model.decoding",
    "DecodeStep": "model.decoding",
    "GreedyStepper": "model.decoding",
    "Hypothesis": "model.decoding",
    "beam_search": "model.decoding",
    "MaskFill": "model.decoding",
    "SampleStepper": "model.decoding",
    "Sampling": "model.decoding",
    "greedy_decode": "model.decoding",
    "AttentionMaps": "model.transformer",
    "Transformer": "model.transformer",
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
