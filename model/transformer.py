"""The encoder–decoder Transformer of "Attention Is All You Need".

``logits = model(src, tgt_in)``; with ``return_attention=True`` the per-layer
attention probabilities come back explicitly as an :class:`AttentionMaps`
(nothing is stashed on modules). Incremental decoding goes through
:meth:`Transformer.start_decoding` and :meth:`Transformer.decode_step`, with a
preallocated key/value cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, cast, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from model.config import ModelConfig
from model.layers import DecoderLayer, DecoderStepWeights, EncoderLayer, decoder_step
from model.masks import decoder_self_mask, padding_mask
from model.positional import LearnedPositionalEncoding, RotaryEmbedding, SinusoidalPositionalEncoding


@dataclass(frozen=True)
class AttentionMaps:
    """Attention probabilities per layer, each ``[B, H, Lq, Lk]``."""

    encoder: list[Tensor]  # encoder self-attention, [B, H, S, S]
    decoder_self: list[Tensor]  # masked decoder self-attention, [B, H, T, T]
    cross: list[Tensor]  # decoder → encoder attention, [B, H, T, S]


@dataclass
class DecoderState:
    """What incremental decoding keeps between steps, for a batch of prefixes.

    Cross-attention keys/values are computed once from the encoder output; they
    may have batch 1 and be shared by every beam of one source. Self-attention
    keys/values live in buffers preallocated to the longest output and written
    in place, one position per step.
    """

    memory_k: list[Tensor]  # per decoder layer, [Bm, H, S, Dh], Bm = batch or 1
    memory_v: list[Tensor]
    memory_mask: Tensor | None  # [Bm, 1, 1, S], True = real source token; None: no padding
    cache: Tensor  # self-attention keys and values of all layers, [layers, 2, B, H, capacity, Dh]
    weights: list[DecoderStepWeights]  # per decoder layer, gathered once
    length: int = 0  # positions already in the cache

    @property
    def capacity(self) -> int:
        return self.cache.shape[4]

    def reorder(self, parents: list[int]) -> None:
        """Keep cache rows ``parents`` (beam parents, possibly repeated) as rows 0..len(parents)-1.

        Only rows whose parent is another row are copied; a beam that extends
        its own prefix keeps its keys and values where they are.
        """
        t = self.length
        moved = [row for row, parent in enumerate(parents) if parent != row]
        if moved:  # the source rows are gathered (copied) before any row is overwritten
            self.cache[:, :, moved, :, :t] = self.cache[:, :, [parents[row] for row in moved], :, :t]


class Transformer(nn.Module):
    """Encoder–decoder Transformer.

    Args:
        cfg: a validated :class:`~model.config.ModelConfig`.

    Shape:
        src ``[B, S]`` and tgt_in ``[B, T]`` token ids (right-padded with ``cfg.pad_id``)
        → logits ``[B, T, tgt_vocab_size]``.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed_scale = math.sqrt(d)  # the paper multiplies embeddings by √d_model
        self.src_embed = nn.Embedding(cfg.src_vocab_size, d)
        self.tgt_embed = self.src_embed if cfg.shared_vocab else nn.Embedding(cfg.tgt_vocab_size, d)

        self.rope = RotaryEmbedding(cfg.head_dim, cfg.max_len) if cfg.positional == "rope" else None
        self.src_pos: SinusoidalPositionalEncoding | LearnedPositionalEncoding | None
        self.tgt_pos: SinusoidalPositionalEncoding | LearnedPositionalEncoding | None
        if cfg.positional == "sinusoidal":
            self.src_pos = self.tgt_pos = SinusoidalPositionalEncoding(d, cfg.max_len)
        elif cfg.positional == "learned":
            self.src_pos = LearnedPositionalEncoding(d, cfg.max_len)
            self.tgt_pos = LearnedPositionalEncoding(d, cfg.max_len)
        else:
            self.src_pos = self.tgt_pos = None
        self.dropout = nn.Dropout(cfg.dropout)

        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg, self.rope) for _ in range(cfg.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg, self.rope) for _ in range(cfg.n_decoder_layers))
        pre = cfg.norm == "pre"
        self.encoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if pre else None
        self.decoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if pre else None

        self.generator = nn.Linear(d, cfg.tgt_vocab_size)  # output projection to logits
        self._reset_parameters()
        if cfg.tie_embeddings:
            self.generator.weight = self.tgt_embed.weight

    def _reset_parameters(self) -> None:
        """Xavier-uniform weight matrices, zero biases, N(0, d^-1/2) embeddings."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=self.cfg.d_model**-0.5)

    @property
    def device(self) -> torch.device:
        return self.generator.weight.device

    # -- embeddings ------------------------------------------------------------
    def _embed(self, tokens: Tensor, embed: nn.Embedding, pos: nn.Module | None, offset: int = 0) -> Tensor:
        if offset + tokens.shape[1] > self.cfg.max_len:
            raise ValueError(
                f"sequence of {offset + tokens.shape[1]} positions is longer than the model's "
                f"max_len ({self.cfg.max_len}); shorten the input or use a model with a larger max_len"
            )
        x = embed(tokens) * self.embed_scale  # [B, L, d]
        if pos is not None:
            x = pos(x, offset)
        return self.dropout(x)

    # -- encoder ---------------------------------------------------------------
    @overload
    def encode(
        self, src: Tensor, src_mask: Tensor | None = None, return_attention: Literal[False] = False
    ) -> Tensor: ...
    @overload
    def encode(
        self, src: Tensor, src_mask: Tensor | None = None, *, return_attention: Literal[True]
    ) -> tuple[Tensor, list[Tensor]]: ...
    @overload
    def encode(
        self, src: Tensor, src_mask: Tensor | None = None, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor]]: ...
    def encode(
        self, src: Tensor, src_mask: Tensor | None = None, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        """Encoder stack. ``src [B, S]`` → memory ``[B, S, d]`` (and per-layer ``[B, H, S, S]`` maps)."""
        if src_mask is None:
            src_mask = padding_mask(src, self.cfg.pad_id)
        x = self._embed(src, self.src_embed, self.src_pos)
        maps: list[Tensor] = []
        for layer in self.encoder_layers:
            x, weights = layer(x, src_mask, return_attention)
            maps.append(weights)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        return (x, maps) if return_attention else x

    # -- decoder (whole target, teacher forcing) -------------------------------
    @overload
    def decode(
        self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor | None, return_attention: Literal[False] = False
    ) -> Tensor: ...
    @overload
    def decode(
        self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor | None, return_attention: Literal[True]
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]: ...
    @overload
    def decode(
        self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor | None, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor], list[Tensor]]: ...
    def decode(
        self,
        tgt_in: Tensor,
        memory: Tensor,
        src_mask: Tensor | None,
        return_attention: bool = False,
    ) -> Tensor | tuple[Tensor, list[Tensor], list[Tensor]]:
        """Decoder stack. ``tgt_in [B, T]``, memory ``[B, S, d]``, src_mask ``[B, 1, 1, S]``
        → hidden states ``[B, T, d]`` (apply :attr:`generator` for logits), and with
        ``return_attention`` the per-layer self ``[B, H, T, T]`` and cross ``[B, H, T, S]`` maps."""
        self_mask = decoder_self_mask(tgt_in, self.cfg.pad_id)
        x = self._embed(tgt_in, self.tgt_embed, self.tgt_pos)
        self_maps: list[Tensor] = []
        cross_maps: list[Tensor] = []
        for layer in self.decoder_layers:
            x, self_w, cross_w = layer(x, memory, self_mask, src_mask, return_attention)
            self_maps.append(self_w)
            cross_maps.append(cross_w)
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        return (x, self_maps, cross_maps) if return_attention else x

    @overload
    def forward(self, src: Tensor, tgt_in: Tensor, return_attention: Literal[False] = False) -> Tensor: ...
    @overload
    def forward(self, src: Tensor, tgt_in: Tensor, return_attention: Literal[True]) -> tuple[Tensor, AttentionMaps]: ...
    @overload
    def forward(
        self, src: Tensor, tgt_in: Tensor, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, AttentionMaps]: ...
    def forward(
        self, src: Tensor, tgt_in: Tensor, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, AttentionMaps]:
        """Logits for every target position ``[B, T, V]``; padding masks come from ``cfg.pad_id``."""
        src_mask = padding_mask(src, self.cfg.pad_id)
        if not return_attention:
            return self.generator(self.decode(tgt_in, self.encode(src, src_mask), src_mask))
        memory, enc_maps = self.encode(src, src_mask, return_attention=True)
        hidden, self_maps, cross_maps = self.decode(tgt_in, memory, src_mask, return_attention=True)
        return self.generator(hidden), AttentionMaps(enc_maps, self_maps, cross_maps)

    # -- incremental decoding --------------------------------------------------
    def start_decoding(self, memory: Tensor, src_mask: Tensor, batch: int, capacity: int) -> DecoderState:
        """State for decoding ``batch`` prefixes of at most ``capacity`` positions (BOS included).

        ``memory [Bm, S, d]`` with Bm = batch, or Bm = 1 to share one source among beams.
        """
        if capacity > self.cfg.max_len:
            raise ValueError(
                f"an output of up to {capacity} tokens needs {capacity} decoder positions, more than the model's "
                f"max_len ({self.cfg.max_len}); lower the maximum output length"
            )
        layers = cast("list[DecoderLayer]", list(self.decoder_layers))  # to a type checker, plain Modules
        mem_k, mem_v = [], []
        for layer in layers:
            k, v = layer.cross_attn.project_memory(memory)
            mem_k.append(k)
            mem_v.append(v)
        cfg = self.cfg
        cache = memory.new_empty(cfg.n_decoder_layers, 2, batch, cfg.n_heads, capacity, cfg.head_dim)
        # nothing to hide: attention skips the masking work
        memory_mask = None if bool(src_mask.all()) else src_mask
        weights = [layer.step_weights() for layer in layers]
        return DecoderState(mem_k, mem_v, memory_mask, cache, weights, length=0)

    @overload
    def decode_step(
        self, tokens: Tensor, state: DecoderState, need_weights: Literal[False] = False
    ) -> tuple[Tensor, None, None]: ...
    @overload
    def decode_step(
        self, tokens: Tensor, state: DecoderState, need_weights: Literal[True]
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]: ...
    @overload
    def decode_step(
        self, tokens: Tensor, state: DecoderState, need_weights: bool = False
    ) -> tuple[Tensor, list[Tensor] | None, list[Tensor] | None]: ...
    def decode_step(
        self, tokens: Tensor, state: DecoderState, need_weights: bool = False
    ) -> tuple[Tensor, list[Tensor] | None, list[Tensor] | None]:
        """Feed one token per prefix ``tokens [B]`` at position ``state.length``.

        → next-token logits ``[B, V]``; with ``need_weights`` the per-layer self
        ``[B, H, 1, t+1]`` and cross ``[B, H, 1, S]`` attention rows of this position.
        """
        t, B = state.length, tokens.shape[0]
        if t >= state.capacity:
            raise ValueError("the decoder state is full; start decoding with a larger capacity")
        x = F.embedding(tokens[:, None], self.tgt_embed.weight) * self.embed_scale  # [B, 1, d]
        if self.tgt_pos is not None:
            x = x + self.tgt_pos.table()[t]
        self_maps: list[Tensor] = []
        cross_maps: list[Tensor] = []
        for i, w in enumerate(state.weights):
            mk, mv = state.memory_k[i], state.memory_v[i]
            if mk.shape[0] != B:  # one source shared by B beams: a broadcast view, no copy
                mk, mv = mk.expand(B, -1, -1, -1), mv.expand(B, -1, -1, -1)
            cache = state.cache[i, :, :B]  # [2, B, H, capacity, Dh]
            x, self_w, cross_w = decoder_step(w, x, cache[0], cache[1], mk, mv, state.memory_mask, t, need_weights)
            if need_weights:
                assert self_w is not None and cross_w is not None  # asked for, so both came back
                self_maps.append(self_w)
                cross_maps.append(cross_w)
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        state.length = t + 1
        logits = F.linear(x[:, 0], self.generator.weight, self.generator.bias)  # [B, V]
        return (logits, self_maps, cross_maps) if need_weights else (logits, None, None)

    # -- sizes -------------------------------------------------------------------
    def num_parameters(self) -> int:
        """Number of distinct parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())

    def parameter_breakdown(self) -> dict[str, int]:
        """Parameters per component, each tied matrix counted once where it first appears."""
        groups = {
            "src_embed": "source embedding",
            "tgt_embed": "target embedding",
            "src_pos": "source positions (learned)",
            "tgt_pos": "target positions (learned)",
            "encoder_layers": "encoder",
            "encoder_norm": "encoder final norm",
            "decoder_layers": "decoder",
            "decoder_norm": "decoder final norm",
            "generator": "output projection",
        }
        sub = {"self_attn": "self-attention", "cross_attn": "cross-attention", "ffn": "feed-forward"}
        counts: dict[str, int] = {}
        for name, p in self.named_parameters():  # each shared tensor reported once, first name
            parts = name.split(".")
            label = groups[parts[0]]
            if parts[0] in ("encoder_layers", "decoder_layers"):
                label += " " + sub.get(parts[2], "norms")
            counts[label] = counts.get(label, 0) + p.numel()
        return counts
