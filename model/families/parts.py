"""What each family adds to the paper's model: the builders and the read-out the Transformer calls at its hooks.

The paper's encoder–decoder adds nothing; the decoder-only model gives its decoder stack a block without
cross-attention (:mod:`model.families.gpt`); the encoder-only model adds BERT's segment embedding and heads
(:mod:`model.families.bert`). The options fill their hooks whatever the family: sparse experts the feed-forward
sublayer (:mod:`model.families.moe`), T5's relative positions a bias table per stack (:mod:`model.families.t5`),
and a LayerNorm over the embeddings (BERT's) where the configuration asks for one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor, nn

from model.core.config import ModelConfig
from model.core.layers import DecoderLayer, FeedForwardFactory
from model.core.positional import RotaryEmbedding
from model.families import bert, gpt
from model.families.bert import NO_HEADS, Heads
from model.families.moe import make_feed_forward
from model.families.registry import DECODER_ONLY, ENCODER_DECODER, ENCODER_ONLY, FamilySpec, family_of
from model.families.t5 import T5RelativeBias, relative_bias

BlockFactory = Callable[[ModelConfig, RotaryEmbedding | None, FeedForwardFactory], nn.Module]


def _no_segments(cfg: ModelConfig) -> None:
    return None


def _no_heads(cfg: ModelConfig) -> Heads:
    return NO_HEADS


def _states_as_they_are(hidden: Tensor, heads: Heads) -> tuple[Tensor, Tensor | None]:
    return hidden, None


@dataclass(frozen=True)
class FamilyParts:
    """A family's spec and the builders of what it adds (each called at its place in ``Transformer.__init__``)."""

    spec: FamilySpec
    decoder_block: BlockFactory = DecoderLayer  # the layer of the decoder stack (the paper's: with cross-attention)
    segment_embedding: Callable[[ModelConfig], nn.Embedding | None] = _no_segments
    heads: Callable[[ModelConfig], Heads] = _no_heads  # between the last layer and the output projection
    read_out: Callable[[Tensor, Heads], tuple[Tensor, Tensor | None]] = _states_as_they_are  # → states, class logits
    # the options, whatever the family
    embedding_norm: Callable[[ModelConfig], nn.LayerNorm | None] = bert.embedding_norm
    feed_forward: FeedForwardFactory = make_feed_forward
    relative_bias: Callable[[ModelConfig, bool], T5RelativeBias | None] = relative_bias


PARTS: dict[str, FamilyParts] = {
    "encoder_decoder": FamilyParts(ENCODER_DECODER),
    "decoder_only": FamilyParts(DECODER_ONLY, decoder_block=gpt.decoder_block),
    "encoder_only": FamilyParts(
        ENCODER_ONLY, segment_embedding=bert.segment_embedding, heads=bert.heads, read_out=bert.read_out
    ),
}


def parts_of(cfg: ModelConfig) -> FamilyParts:
    """The parts of the family of ``cfg``."""
    return PARTS[family_of(cfg).arch]
