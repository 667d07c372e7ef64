"""The Transformer of "Attention Is All You Need": embeddings and positions, an encoder stack, a decoder stack
with cross-attention over the encoder's output, and the output projection.

The families that followed it keep this model and change parts of it, each in its own module under
:mod:`model.families` (:func:`~model.families.parts.parts_of` hands them to the hooks here):

- encoder–decoder (the paper; T5): ``logits = model(src, tgt_in)``;
- decoder-only (GPT): ``logits = model(ids)``, the decoder stack alone, its block without cross-attention;
- encoder-only (BERT): ``logits = model(ids)``, the encoder stack alone, with BERT's embeddings and heads.

Its spec (:mod:`model.families.registry`, ``model.family``) says which stacks and attention kinds exist.

With ``return_attention=True`` the per-layer attention probabilities come back explicitly as an
:class:`AttentionMaps` (nothing is stashed on modules), with what the routers of Mixture-of-Experts layers
did. With ``return_extras=True`` the :class:`Extras` that training needs come back: the load-balancing loss
and the classification logits. Incremental decoding goes through :meth:`Transformer.start_decoding` (or
:meth:`Transformer.start_generation` for decoder-only models) and :meth:`Transformer.decode_step`, with a
preallocated key/value cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, cast, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from model.core.config import ModelConfig
from model.core.layers import (
    LARGE_WEIGHT,
    DecoderLayer,
    DecoderStepWeights,
    EncoderLayer,
    LinearFn,
    StepLinear,
    block_prefill,
    decoder_step,
)
from model.core.masks import decoder_self_mask, padding_mask, target_tokens
from model.core.positional import LearnedPositionalEncoding, RotaryEmbedding, SinusoidalPositionalEncoding
from model.families.bert import Heads
from model.families.moe import Routing
from model.families.parts import parts_of
from model.families.registry import GROUP_LABELS, FamilySpec, parameter_group


@dataclass(frozen=True)
class AttentionMaps:
    """Attention probabilities per layer, each ``[B, H, Lq, Lk]``, and the routing of MoE layers.

    A decoder-only model's maps are in ``decoder_self`` (causal), an encoder-only model's in ``encoder``
    (bidirectional); the kinds a family does not have are empty lists.
    """

    encoder: list[Tensor]  # encoder self-attention, [B, H, S, S]
    decoder_self: list[Tensor]  # masked decoder self-attention, [B, H, T, T]
    cross: list[Tensor]  # decoder → encoder attention, [B, H, T, S]
    encoder_routing: list[Routing] = field(default_factory=list)  # per encoder layer, when it has experts
    decoder_routing: list[Routing] = field(default_factory=list)  # per decoder layer, when it has experts


@dataclass(frozen=True)
class Extras:
    """What training needs besides the token logits."""

    aux_loss: Tensor  # mean over MoE layers of N · Σ_i f_i · P_i: 1 at balance (a zero scalar without experts)
    load: list[Tensor]  # per MoE layer (encoder first), [N]: the share of assignments each expert received
    cls_logits: Tensor | None  # encoder-only with a head: [B, n_classes] from the first position; else None


class _Pass:
    """What one pass through a stack collected: attention maps and routing per layer."""

    def __init__(self) -> None:
        self.maps: list[Tensor] = []
        self.cross: list[Tensor] = []
        self.routing: list[Routing] = []


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
    linear: LinearFn = F.linear  # computes each projection of a step (the int8 fast mode's, when it is on)

    _views: tuple[int, list[tuple[Tensor, Tensor, Tensor | None, Tensor | None]]] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def capacity(self) -> int:
        return self.cache.shape[4]

    def views(self, batch: int) -> list[tuple[Tensor, Tensor, Tensor | None, Tensor | None]]:
        """Per decoder layer, for the first ``batch`` prefixes: the self-attention key and value cache
        ``[batch, H, capacity, Dh]`` and the memory's keys and values (one source shared by every prefix: a
        broadcast view, no copy), made once per batch size rather than at every layer of every step."""
        if self._views is None or self._views[0] != batch:
            views = []
            for i in range(self.cache.shape[0]):
                mk = mv = None
                if self.memory_k:  # encoder–decoder: the encoder's keys and values
                    mk, mv = self.memory_k[i], self.memory_v[i]
                    if mk.shape[0] != batch:
                        mk, mv = mk.expand(batch, -1, -1, -1), mv.expand(batch, -1, -1, -1)
                views.append((self.cache[i, 0, :batch], self.cache[i, 1, :batch], mk, mv))
            self._views = (batch, views)
        return self._views[1]

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
    """A Transformer of the family ``cfg.arch``.

    Args:
        cfg: a validated :class:`~model.core.config.ModelConfig`.

    Shape:
        encoder–decoder: src ``[B, S]`` and tgt_in ``[B, T]`` token ids (right-padded with ``cfg.pad_id``)
        → logits ``[B, T, tgt_vocab_size]``; decoder-only and encoder-only: ids ``[B, T]`` → ``[B, T, V]``.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.parts = parts = parts_of(cfg)  # what the family and its options add (model/families/)
        d, stacks = cfg.d_model, parts.spec.stacks
        # 1. embeddings (the paper multiplies them by √d_model), BERT's segments and norm
        self.embed_scale = math.sqrt(d) if cfg.scale_embedding else 1.0
        self.src_embed = nn.Embedding(cfg.src_vocab_size, d)
        self.tgt_embed = self.src_embed if cfg.shared_vocab else nn.Embedding(cfg.tgt_vocab_size, d)
        self.segment_embed = parts.segment_embedding(cfg)
        self.embed_norm = parts.embedding_norm(cfg)

        # 2. positions: added to the embeddings, rotating q and k (RoPE), a bias on the scores (T5), or none at all
        self.rope = RotaryEmbedding(cfg.head_dim, cfg.max_len) if cfg.positional == "rope" else None
        self.src_pos: SinusoidalPositionalEncoding | LearnedPositionalEncoding | None = None
        self.tgt_pos: SinusoidalPositionalEncoding | LearnedPositionalEncoding | None = None
        if cfg.positional == "sinusoidal":
            self.src_pos = self.tgt_pos = SinusoidalPositionalEncoding(d, cfg.max_len, cfg.sinusoid_layout)
        elif cfg.positional == "learned":
            self.src_pos = LearnedPositionalEncoding(d, cfg.max_len)
            self.tgt_pos = LearnedPositionalEncoding(d, cfg.max_len) if len(stacks) == 2 else self.src_pos
        self.encoder_bias = parts.relative_bias(cfg, True) if "encoder" in stacks else None
        self.decoder_bias = parts.relative_bias(cfg, False) if "decoder" in stacks else None
        self.dropout = nn.Dropout(cfg.dropout)

        # 3. the stacks: N encoder layers, N decoder layers (a family may have one stack only)
        n_enc = cfg.n_encoder_layers if "encoder" in stacks else 0
        n_dec = cfg.n_decoder_layers if "decoder" in stacks else 0
        ffn = parts.feed_forward  # the paper's FFN, or sparse experts
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg, self.rope, ffn) for _ in range(n_enc))
        self.decoder_layers = nn.ModuleList(parts.decoder_block(cfg, self.rope, ffn) for _ in range(n_dec))
        pre = cfg.norm == "pre"
        self.encoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if pre and n_enc else None
        self.decoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if pre and n_dec else None

        # 4. the family's heads (BERT's masked-LM transform, pooler and classifier), the output projection
        self.mlm_transform, self.pooler, self.classifier = parts.heads(cfg)
        self.generator = nn.Linear(d, cfg.tgt_vocab_size)  # output projection to logits
        # what computes the projections of a cached decoding step: float32's (on packed weights), or the int8 mode's
        self.float_linear = StepLinear()
        self.step_linear: LinearFn = self.float_linear
        self._reset_parameters()
        self.tie_weights()

    @property
    def family(self) -> FamilySpec:
        """What this model's family is made of (:mod:`model.families.registry`)."""
        return self.parts.spec

    def tie_weights(self) -> None:
        """Make the output projection share the target embedding's matrix (``tie_embeddings``), again after
        weights were assigned rather than copied."""
        if self.cfg.tie_embeddings:
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
    def _embed(
        self,
        tokens: Tensor,
        embed: nn.Embedding,
        pos: nn.Module | None,
        offset: int = 0,
        segments: Tensor | None = None,
    ) -> Tensor:
        if offset + tokens.shape[1] > self.cfg.max_len:
            raise ValueError(
                f"sequence of {offset + tokens.shape[1]} positions is longer than the model's "
                f"max_len ({self.cfg.max_len}); shorten the input or use a model with a larger max_len"
            )
        x = embed(tokens) * self.embed_scale  # [B, L, d]
        if pos is not None:
            x = pos(x, offset)
        if self.segment_embed is not None:
            x = x + self.segment_embed(torch.zeros_like(tokens) if segments is None else segments)
        if self.embed_norm is not None:
            x = self.embed_norm(x)
        return self.dropout(x)

    # -- the stacks ------------------------------------------------------------
    def _encoder_pass(
        self, src: Tensor, src_mask: Tensor, need_weights: bool, segments: Tensor | None = None
    ) -> tuple[Tensor, _Pass]:
        x = self._embed(src, self.src_embed, self.src_pos, segments=segments)
        S = src.shape[1]
        bias = None if self.encoder_bias is None else self.encoder_bias(S, S)
        real = src != self.cfg.pad_id
        found = _Pass()
        for layer in self.encoder_layers:
            x, weights, routing = layer(x, src_mask, need_weights, bias, real)
            found.maps.append(weights)
            if routing is not None:
                found.routing.append(routing)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        return x, found

    def _decoder_pass(
        self, tgt_in: Tensor, memory: Tensor | None, src_mask: Tensor | None, need_weights: bool
    ) -> tuple[Tensor, _Pass]:
        """The decoder stack over a whole target (teacher forcing); without memory, a decoder-only stack."""
        self_mask = decoder_self_mask(tgt_in, self.cfg.pad_id, self.cfg.causal)
        x = self._embed(tgt_in, self.tgt_embed, self.tgt_pos)
        T = tgt_in.shape[1]
        bias = None if self.decoder_bias is None else self.decoder_bias(T, T)
        real = target_tokens(tgt_in, self.cfg.pad_id)
        found = _Pass()
        for layer in self.decoder_layers:
            if memory is None:  # a decoder-only block
                x, self_w, routing = layer(x, self_mask, need_weights, bias, real)
            else:
                x, self_w, cross_w, routing = layer(x, memory, self_mask, src_mask, need_weights, bias, real)
                found.cross.append(cross_w)
            found.maps.append(self_w)
            if routing is not None:
                found.routing.append(routing)
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        return x, found

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
        x, found = self._encoder_pass(src, src_mask, return_attention)
        return (x, found.maps) if return_attention else x

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
        x, found = self._decoder_pass(tgt_in, memory, src_mask, return_attention)
        return (x, found.maps, found.cross) if return_attention else x

    # -- the whole model -----------------------------------------------------------
    @overload
    def forward(
        self,
        *inputs: Tensor,
        return_attention: Literal[False] = False,
        return_extras: Literal[False] = False,
        segments: Tensor | None = None,
    ) -> Tensor: ...
    @overload
    def forward(
        self,
        *inputs: Tensor,
        return_attention: Literal[True],
        return_extras: Literal[False] = False,
        segments: Tensor | None = None,
    ) -> tuple[Tensor, AttentionMaps]: ...
    @overload
    def forward(
        self,
        *inputs: Tensor,
        return_attention: Literal[False] = False,
        return_extras: Literal[True],
        segments: Tensor | None = None,
    ) -> tuple[Tensor, Extras]: ...
    @overload
    def forward(
        self,
        *inputs: Tensor,
        return_attention: Literal[True],
        return_extras: Literal[True],
        segments: Tensor | None = None,
    ) -> tuple[Tensor, AttentionMaps, Extras]: ...
    def forward(
        self,
        *inputs: Tensor,
        return_attention: bool = False,
        return_extras: bool = False,
        segments: Tensor | None = None,
    ) -> Tensor | tuple:
        """Logits for every position ``[B, T, V]``; padding masks come from ``cfg.pad_id``.

        Inputs: encoder–decoder ``(src, tgt_in)``; decoder-only and encoder-only ``(ids,)``, and for an
        encoder-only model optionally ``segments [B, T]`` (0 = sentence A, 1 = sentence B).
        """
        family = self.family
        if len(inputs) != len(family.inputs):
            raise TypeError(
                f"a {family.arch} model takes {len(family.inputs)} tensor(s) of token ids, got {len(inputs)}"
            )
        enc = dec = _Pass()
        hidden = src_mask = None
        if self.encoder_layers:  # 1. the encoder reads the source (an encoder-only model: its text)
            src = inputs[0]
            src_mask = padding_mask(src, self.cfg.pad_id)
            hidden, enc = self._encoder_pass(src, src_mask, return_attention, segments)
        if self.decoder_layers:  # 2. the decoder, attending to the encoder's output when there is one
            hidden, dec = self._decoder_pass(inputs[-1], hidden, src_mask, return_attention)
        assert hidden is not None  # a family has at least one stack
        heads = Heads(self.mlm_transform, self.pooler, self.classifier)
        hidden, cls_logits = self.parts.read_out(hidden, heads)  # 3. the family's heads, if any
        logits = self.generator(hidden)
        out: tuple = (logits,)
        if return_attention:
            out += (AttentionMaps(enc.maps, dec.maps, dec.cross, enc.routing, dec.routing),)
        if return_extras:
            routing = enc.routing + dec.routing
            aux = torch.stack([r.aux_loss for r in routing]).mean() if routing else logits.new_zeros(())
            out += (Extras(aux, [r.load for r in routing], cls_logits),)
        return out[0] if len(out) == 1 else out

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
        self.float_linear.pack_for(batch)
        return DecoderState(mem_k, mem_v, memory_mask, cache, weights, length=0, linear=_step_linear(self))

    def start_generation(self, batch: int, capacity: int) -> DecoderState:
        """State for a decoder-only model generating ``batch`` sequences of at most ``capacity`` positions
        (prompt included): the key/value cache, and no encoder memory."""
        if "generate" not in self.family.decoding:
            raise ValueError(f"start_generation is for decoder-only models; this one is {self.cfg.arch}")
        if capacity > self.cfg.max_len:
            raise ValueError(
                f"a prompt and its continuation of up to {capacity} tokens are longer than the model's max_len "
                f"({self.cfg.max_len}); shorten the prompt or generate fewer tokens"
            )
        cfg = self.cfg
        layers = cast("list[EncoderLayer]", list(self.decoder_layers))
        cache = self.generator.weight.new_empty(cfg.n_decoder_layers, 2, batch, cfg.n_heads, capacity, cfg.head_dim)
        weights = [layer.step_weights() for layer in layers]
        self.float_linear.pack_for(batch)
        return DecoderState([], [], None, cache, weights, length=0, linear=_step_linear(self))

    @overload
    def decode_step(
        self,
        tokens: Tensor,
        state: DecoderState,
        need_weights: Literal[False] = False,
        residuals: list[Tensor] | None = None,
    ) -> tuple[Tensor, None, None]: ...
    @overload
    def decode_step(
        self, tokens: Tensor, state: DecoderState, need_weights: Literal[True], residuals: list[Tensor] | None = None
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]: ...
    @overload
    def decode_step(
        self, tokens: Tensor, state: DecoderState, need_weights: bool = False, residuals: list[Tensor] | None = None
    ) -> tuple[Tensor, list[Tensor] | None, list[Tensor] | None]: ...
    def decode_step(
        self, tokens: Tensor, state: DecoderState, need_weights: bool = False, residuals: list[Tensor] | None = None
    ) -> tuple[Tensor, list[Tensor] | None, list[Tensor] | None]:
        """Feed one token per prefix ``tokens [B]`` at position ``state.length``.

        → next-token logits ``[B, V]``; with ``need_weights`` the per-layer self
        ``[B, H, 1, t+1]`` and cross ``[B, H, 1, S]`` attention rows of this position (no cross rows: an
        empty list, for a decoder-only model). ``residuals``: a list that receives each layer's output at this
        position ``[B, 1, d]`` (the residual stream the logit lens reads).
        """
        t, B = state.length, tokens.shape[0]
        if t >= state.capacity:
            raise ValueError("the decoder state is full; start decoding with a larger capacity")
        x = self._target_input(tokens[:, None], t)  # [B, 1, d]
        bias = None if self.decoder_bias is None else self.decoder_bias(1, t + 1, offset=t)
        self_maps: list[Tensor] = []
        cross_maps: list[Tensor] = []
        linear, mask = state.linear, state.memory_mask
        for w, (ck, cv, mk, mv) in zip(state.weights, state.views(B)):
            x, self_w, cross_w = decoder_step(w, x, ck, cv, mk, mv, mask, t, need_weights, bias, linear)
            if residuals is not None:
                residuals.append(x)
            if need_weights:
                assert self_w is not None  # asked for, so it came back
                self_maps.append(self_w)
                if cross_w is not None:
                    cross_maps.append(cross_w)
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        state.length = t + 1
        logits = state.linear(x[:, 0], self.generator.weight, self.generator.bias)  # [B, V]
        return (logits, self_maps, cross_maps) if need_weights else (logits, None, None)

    def _target_input(self, tokens: Tensor, t: int) -> Tensor:
        """Tokens ``[B, T]`` at positions ``t``.. as a cached decoder reads them: embedded, scaled, positions added."""
        x = F.embedding(tokens, self.tgt_embed.weight) * self.embed_scale
        if self.tgt_pos is not None:
            x = x + self.tgt_pos.table()[t : t + tokens.shape[1]]
        return x if self.embed_norm is None else self.embed_norm(x)

    def prefill(self, tokens: Tensor, state: DecoderState, need_weights: bool = False) -> tuple[Tensor, list[Tensor]]:
        """A decoder-only model reads ``tokens [B, T]`` at positions ``state.length`` on, in one call: the same as
        ``T`` calls of :meth:`decode_step` (their keys and values in the cache, each position attending to the
        ones before it), with the matrix products of a whole block. → logits ``[B, T, V]`` and, with
        ``need_weights``, per layer the attention rows ``[B, H, T, state.length + T]`` (else an empty list)."""
        if "generate" not in self.family.decoding:
            raise ValueError(f"prefill reads a prompt into a decoder-only model's cache; this one is {self.cfg.arch}")
        t, (B, T) = state.length, tokens.shape
        if t + T > state.capacity:
            raise ValueError("the decoder state is full; start decoding with a larger capacity")
        x = self._target_input(tokens, t)  # [B, T, d]
        bias = None if self.decoder_bias is None else self.decoder_bias(T, t + T, offset=t)
        maps: list[Tensor] = []
        for w, (ck, cv, _, _) in zip(state.weights, state.views(B)):
            x, self_w = block_prefill(w, x, ck, cv, t, need_weights, bias, state.linear)
            if self_w is not None:
                maps.append(self_w)
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        state.length = t + T
        return state.linear(x, self.generator.weight, self.generator.bias), maps

    # -- sizes -------------------------------------------------------------------
    def num_parameters(self) -> int:
        """Number of distinct parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())

    def active_parameters(self) -> int:
        """Parameters one token passes through: with experts, only k of each layer's N expert FFNs count."""
        idle = sum(layer.ffn.inactive_parameters() for layer in [*self.encoder_layers, *self.decoder_layers])
        return self.num_parameters() - idle

    def parameter_breakdown(self) -> dict[str, int]:
        """Parameters per group, keyed by group id (:func:`model.families.registry.parameter_group`) in
        :data:`~model.families.registry.GROUP_LABELS`' order, each tied matrix counted once where it first appears.
        The window names a group with ``self.family.group_label(id)``."""
        counts = dict.fromkeys(GROUP_LABELS, 0)
        for name, p in self.named_parameters():  # each shared tensor reported once, first name
            counts[parameter_group(name)] += p.numel()
        return {group: n for group, n in counts.items() if n}


def _step_linear(model: Transformer) -> LinearFn:
    """What computes a cached step's projections: the model's :attr:`~Transformer.step_linear`, or plain
    ``F.linear`` where it would only pass every call on to it (float32 and no weight large enough for
    :class:`StepLinear` to handle otherwise: a small model, whose step its checks slowed by 7 %)."""
    if model.step_linear is not model.float_linear:
        return model.step_linear
    largest = max(p.numel() for p in [model.generator.weight, *model.decoder_layers.parameters()])
    return model.step_linear if largest >= LARGE_WEIGHT else F.linear
