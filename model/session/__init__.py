"""One facade over data, tokenizers, model, training and decoding.

The explorer's engine thread and the command-line tools both drive a :class:`Session`; nothing else reaches into
the model. Results leave it as plain Python values, frozen dataclasses and numpy arrays.

A session is one object made of parts, one module each, all over the fields of :class:`SessionState`:

- :mod:`~model.session.data`: the corpus and its splits as token ids;
- :mod:`~model.session.training`: the trainer, updates (:class:`TrainStep`), evaluations;
- :mod:`~model.session.decoding`: translating and decoding step by step;
- :mod:`~model.session.inspection`: attention maps, routing, filled masks, one head spelled out, positions;
- :mod:`~model.session.interpret`: attribution, the logit lens, heads switched off, head importance;
- :mod:`~model.session.files`: building one for data, opening a checkpoint or a Hugging Face folder, saving
  (:mod:`~model.session.saved_state` checks what a checkpoint holds).
"""

from model.io.snapshots import (  # torch-free; still importable from here
    TRAIN_METRICS,
    AttentionExplanation,
    FillMaskView,
    History,
    Inspection,
    MaskPrediction,
    PositionalTables,
    RouterView,
    Translation,
)
from model.session.data import SplitName, whole_words
from model.session.decoding import GENERATE_TOKENS, DecodeSession
from model.session.files import VERSION, SessionFiles, check_family
from model.session.inspection import attention_masks, explain, notes_example
from model.session.interpret import SessionInterpret
from model.session.state import SessionState
from model.session.training import TrainStep

__all__ = [
    "GENERATE_TOKENS",
    "TRAIN_METRICS",
    "VERSION",
    "AttentionExplanation",
    "DecodeSession",
    "FillMaskView",
    "History",
    "Inspection",
    "MaskPrediction",
    "PositionalTables",
    "RouterView",
    "Session",
    "SessionState",
    "SplitName",
    "TrainStep",
    "Translation",
    "attention_masks",
    "check_family",
    "explain",
    "notes_example",
    "whole_words",
]


class Session(SessionFiles, SessionInterpret):
    """A model with its tokenizers, data and training state."""
