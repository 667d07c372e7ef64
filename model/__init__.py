"""The Transformer Explorer engine: model, decoding, data and training. Never imports Qt."""

from model.config import ModelConfig
from model.decoding import BeamStepper, DecodeStep, GreedyStepper, Hypothesis, beam_search, greedy_decode
from model.transformer import AttentionMaps, Transformer

__all__ = [
    "AttentionMaps",
    "BeamStepper",
    "DecodeStep",
    "GreedyStepper",
    "Hypothesis",
    "ModelConfig",
    "Transformer",
    "beam_search",
    "greedy_decode",
]
