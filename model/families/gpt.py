"""The decoder-only family (GPT): the paper's decoder without cross-attention, predicting the next token.

There is no encoder to attend to, so a decoder-only block is two sublayers, masked self-attention and the
feed-forward network: the encoder's layer (:class:`~model.core.layers.EncoderLayer`) given the decoder's causal
mask. The stack is the Transformer's ``decoder_layers``, its embeddings the target side's.
"""

from __future__ import annotations

from model.core.config import ModelConfig
from model.core.layers import EncoderLayer, FeedForwardFactory, paper_feed_forward
from model.core.positional import RotaryEmbedding


def decoder_block(
    cfg: ModelConfig, rope: RotaryEmbedding | None, feed_forward: FeedForwardFactory = paper_feed_forward
) -> EncoderLayer:
    """One layer of a decoder-only stack: self-attention (causal, by its mask) and the feed-forward sublayer."""
    return EncoderLayer(cfg, rope, feed_forward)
