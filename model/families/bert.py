"""The encoder-only family (BERT): the paper's encoder, predicting masked tokens from both sides.

What BERT adds to the encoder: a segment (token type) embedding that marks sentence A or B of a pair, a
LayerNorm over the summed embeddings, a masked-LM head that transforms each state (dense, GELU, LayerNorm) before
the output projection, and for next-sentence prediction a pooler, tanh(W h_<cls> + b), and a classifier on the
first position (``<cls>``, here ``<bos>``). The modules are the Transformer's (``segment_embed``, ``embed_norm``,
``mlm_transform``, ``pooler``, ``classifier``: the names its checkpoints store); this module builds them and reads
the heads out.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn

from model.core.config import ModelConfig


class Heads(NamedTuple):
    """What sits between the last layer and the output projection (BERT's; None where a family has none)."""

    mlm_transform: nn.Sequential | None  # dense, GELU, LayerNorm over each state
    pooler: nn.Linear | None  # tanh(W h_<cls> + b)
    classifier: nn.Linear | None  # the pooled state → n_classes logits


NO_HEADS = Heads(None, None, None)


def segment_embedding(cfg: ModelConfig) -> nn.Embedding:
    """BERT's segment (token type) embedding: one vector for sentence A, one for sentence B."""
    return nn.Embedding(2, cfg.d_model)


def embedding_norm(cfg: ModelConfig) -> nn.LayerNorm | None:
    """BERT's LayerNorm over the summed embeddings, when ``cfg.embed_norm`` asks for it (models opened from a
    Hugging Face folder set it)."""
    return nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.embed_norm else None


def heads(cfg: ModelConfig) -> Heads:
    """The masked-LM transform, and with ``cfg.n_classes`` the pooler and the classifier (built in this order)."""
    d = cfg.d_model
    transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d, eps=cfg.layer_norm_eps))
    pooler = nn.Linear(d, d) if cfg.n_classes else None
    classifier = nn.Linear(d, cfg.n_classes) if cfg.n_classes else None
    return Heads(transform, pooler, classifier)


def read_out(hidden: Tensor, heads: Heads) -> tuple[Tensor, Tensor | None]:
    """The states the output projection reads, ``[B, T, d]``, and the classification logits ``[B, n_classes]``
    (None without a classifier)."""
    cls_logits = None
    if heads.pooler is not None and heads.classifier is not None:
        cls_logits = heads.classifier(torch.tanh(heads.pooler(hidden[:, 0])))  # the first position: <cls>
    assert heads.mlm_transform is not None  # an encoder-only model has its masked-LM head
    return heads.mlm_transform(hidden), cls_logits
