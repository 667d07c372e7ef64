"""Looking inside a session's model: attention maps, routing, filled masks, one head spelled out, positions."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from model.core.attention import NOTES_EXAMPLE, MultiHeadAttention, attention_steps
from model.core.masks import decoder_self_mask, padding_mask
from model.core.positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding
from model.core.transformer import AttentionMaps
from model.data.tokenization import MASK, normalize_text
from model.decoding.search import fill_mask_with_attention, generate, greedy_decode
from model.io.snapshots import (
    AttentionExplanation,
    FillMaskView,
    Inspection,
    MaskPrediction,
    PositionalTables,
    RouterView,
)
from model.session.decoding import SessionDecoding

# exp(x) overflows float64 beyond ~709; a row whose largest scaled score passes this is shifted by it
# (softmax does not change when a constant is subtracted from a row).
EXP_LIMIT = 700.0


def explain(
    q,
    k,
    v,
    mask,
    title: str,
    query_tokens: list[str],
    key_tokens: list[str],
    kind: str = "example",
    layer: int = -1,
    head: int = -1,
    bias=None,
    positional: str = "",
    scale: float | None = None,
) -> AttentionExplanation:
    """Spell out attention for given Q, K, V (tensors or nested lists) with the engine's own code; ``bias``
    (T5's relative bias, ``[Lq, Lk]``) is part of the scaled scores, as in the model; ``positional``: what the
    model's positions did inside this attention (:attr:`AttentionExplanation.positional`); ``scale``: the
    model's factor of QKᵀ (None: 1/√d_k, the paper's; 1.0: a model whose attention is unscaled)."""
    q, k, v = (torch.as_tensor(x, dtype=torch.float64) for x in (q, k, v))
    mask = None if mask is None else torch.as_tensor(mask, dtype=torch.bool)
    bias = None if bias is None else torch.as_tensor(bias, dtype=torch.float64)
    steps = attention_steps(q, k, v, mask, bias, scale)
    n = lambda t: t.detach().cpu().numpy()  # noqa: E731
    top = steps.masked.amax(dim=-1, keepdim=True)  # [Lq, 1]; −inf for a fully masked row
    shift = torch.where(top > EXP_LIMIT, top, torch.zeros_like(top))
    exp = (steps.masked - shift).exp()  # exp(−inf) = 0 where masked
    return AttentionExplanation(
        title,
        query_tokens,
        key_tokens,
        n(steps.query),
        n(steps.keys),
        n(steps.values),
        n(steps.scores),
        n(steps.scaled),
        n(steps.mask),
        n(steps.weights),
        n(steps.output),
        n(exp),
        n(shift[..., 0]),
        kind,
        layer,
        head,
        positional,
        root_scaled=scale is None,
    )


def notes_example() -> AttentionExplanation:
    """The worked example Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2 (also in study notes)."""
    ex = NOTES_EXAMPLE
    labels = ["x1", "x2", "x3"]
    title = "worked example: Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2"
    return explain(ex["Q"], ex["K"], ex["V"], None, title, labels, labels)


def attention_masks(src: torch.Tensor, tgt_in: torch.Tensor, pad_id: int, causal: bool = True) -> dict[str, np.ndarray]:
    """The masks the model applies to one pair ``src [1, S]`` → ``tgt_in [1, T]``, per kind of attention, as
    numpy: "encoder" ``[S, S]``, "decoder_self" ``[T, T]``, "cross" ``[T, S]``; True = may attend. ``causal``:
    the model's ``causal`` (False: its decoder's self-attention sees later positions too)."""
    S, T = src.shape[1], tgt_in.shape[1]
    keys = padding_mask(src, pad_id)[0, 0]  # [1, S]
    return {
        "encoder": keys.expand(S, S).cpu().numpy().copy(),
        "decoder_self": decoder_self_mask(tgt_in, pad_id, causal)[0, 0].cpu().numpy().copy(),
        "cross": keys.expand(T, S).cpu().numpy().copy(),
    }


class SessionInspection(SessionDecoding):
    """What a session's model does with one input, as numpy arrays for the window's plots."""

    @torch.inference_mode()
    def inspect(self, src_text: str, tgt_text: str | None = None, tgt_ids: list[int] | None = None) -> Inspection:
        """All attention maps for ``src_text`` → ``tgt_text`` (or target ids), teacher-forced;
        with neither, for the model's own greedy translation. A decoder-only model: the prompt ``src_text``
        and its continuation (given, or the model's own greedy one); an encoder-only model: the text."""
        decoding = self.model_cfg.family.decoding
        if "generate" in decoding:
            return self._inspect_generation(src_text, tgt_text, tgt_ids)
        if "fill_mask" in decoding:
            return self._inspect_ids(self._masked_input(src_text, ())[0], src_text)
        _, ids, _ = self._source(src_text)
        src = torch.tensor([ids], device=self.device)
        target_given = tgt_ids is not None
        if tgt_ids is None:
            tgt_ids = (
                greedy_decode(self.model, src, self.default_max_len(len(ids)))[0]
                if tgt_text is None
                else self.tgt_tok.encode_ids(tgt_text)
            )
        # the decoder reads BOS + y, so y may use all positions but one
        cfg = self.model_cfg
        y = [t for t in tgt_ids if t != cfg.eos_id][: cfg.max_len - 1]
        tgt_in = torch.tensor([[cfg.bos_id, *y]], device=self.device)
        out = [*y, cfg.eos_id]
        self.model.eval()
        logits, maps = self.model(src, tgt_in, return_attention=True)
        logits = logits[0].float()
        logits[:, cfg.never_emitted] = float("-inf")  # as in decoding: PAD and BOS are never emitted
        probs = logits.softmax(-1)[torch.arange(len(out)), torch.tensor(out, device=self.device)]

        def stack(ws: list[torch.Tensor]) -> np.ndarray:
            return torch.stack([w[0] for w in ws]).float().cpu().numpy()

        show = self.tgt_tok.display_token
        return Inspection(
            src_tokens=[self.src_tok.display_token(i) for i in ids],
            tgt_tokens=[show(i) for i in [cfg.bos_id, *y]],
            out_tokens=[show(i) for i in out],
            encoder=stack(maps.encoder),
            decoder_self=stack(maps.decoder_self),
            cross=stack(maps.cross),
            target_probs=probs.cpu().numpy(),
            teacher_forced=tgt_text is not None or target_given,
            step=self.step,
            source=src_text,
            target_ids=tuple(y),
            masks=attention_masks(src, tgt_in, cfg.pad_id, cfg.causal),
            routing=self._routing(
                maps, [self.src_tok.display_token(i) for i in ids], [show(i) for i in [cfg.bos_id, *y]]
            ),
        )

    def _routing(self, maps: AttentionMaps, enc_tokens: list[str], dec_tokens: list[str]) -> tuple[RouterView, ...]:
        """The routing of one input (batch row 0) per MoE layer, as numpy."""
        n = lambda t: t[0].float().cpu().numpy()  # noqa: E731
        views = [
            RouterView("encoder", i, enc_tokens, n(r.probs), n(r.chosen), n(r.weights))
            for i, r in enumerate(maps.encoder_routing)
        ]
        views += [
            RouterView("decoder", i, dec_tokens, n(r.probs), n(r.chosen), n(r.weights))
            for i, r in enumerate(maps.decoder_routing)
        ]
        return tuple(views)

    def _inspect_generation(self, prompt: str, tgt_text: str | None, tgt_ids: list[int] | None) -> Inspection:
        """A decoder-only model over BOS + prompt + continuation: its causal self-attention, and at each
        position the probability of the token that follows."""
        cfg = self.model_cfg
        _, ids, _ = self._source(prompt)
        given = tgt_ids is not None or tgt_text is not None
        if tgt_ids is None:
            tgt_ids = (
                self.tgt_tok.encode_ids(tgt_text)
                if tgt_text is not None
                else generate(self.model, ids, self.default_max_len(len(ids)))
            )
        y = [t for t in tgt_ids if t != cfg.eos_id][: cfg.max_len - 1 - len(ids)]
        seq = [cfg.bos_id, *ids, *y]
        out = [*ids, *y, cfg.eos_id]
        x = torch.tensor([seq], device=self.device)
        self.model.eval()
        logits, maps = self.model(x, return_attention=True)
        logits = logits[0].float()
        logits[:, cfg.never_emitted] = float("-inf")
        probs = logits.softmax(-1)[torch.arange(len(out)), torch.tensor(out, device=self.device)]
        show = self.tgt_tok.display_token
        tokens = [show(i) for i in seq]
        L, H, T = cfg.n_layers, cfg.n_heads, len(seq)
        return Inspection(
            src_tokens=[],
            tgt_tokens=tokens,
            out_tokens=[show(i) for i in out],
            encoder=np.zeros((0, H, 0, 0), np.float32),
            decoder_self=torch.stack([w[0] for w in maps.decoder_self]).float().cpu().numpy(),
            cross=np.zeros((L, H, T, 0), np.float32),
            target_probs=probs.cpu().numpy(),
            teacher_forced=given,
            step=self.step,
            source=prompt,
            target_ids=tuple(y),
            masks={"decoder_self": decoder_self_mask(x, cfg.pad_id, cfg.causal)[0, 0].cpu().numpy().copy()},
            routing=self._routing(maps, [], tokens),
            arch="decoder_only",
        )

    def _masked_input(self, text: str, mask_positions: tuple[int, ...]) -> tuple[list[int], list[str | None]]:
        """An encoder-only model's input for ``text``: BOS, the pieces (those at ``mask_positions`` — indexes
        into the input — replaced by <mask>), EOS; and the pieces that were replaced."""
        if not normalize_text(text):
            raise ValueError("Type a sentence; write <mask> where the model should fill a word in.")
        cfg = self.model_cfg
        mask_id = self.src_tok.mask_id
        if mask_id is not None and self.src_tok.id_to_token(mask_id) != MASK:  # BERT's [MASK]: <mask> works too
            text = text.replace(MASK, f" {self.src_tok.id_to_token(mask_id)} ")
        ids = [cfg.bos_id, *self.src_tok.encode_ids(text)[: cfg.max_len - 2], cfg.eos_id]
        originals: list[str | None] = [None] * len(ids)
        for p in mask_positions:
            if 0 < p < len(ids) - 1 and mask_id is not None and ids[p] != mask_id:
                originals[p] = self.src_tok.display_token(ids[p])
                ids[p] = mask_id
        return ids, originals

    @torch.inference_mode()
    def _inspect_ids(self, ids: list[int], text: str, maps: AttentionMaps | None = None) -> Inspection:
        """An encoder-only model over ``ids``: its bidirectional self-attention (and routing); ``maps``: those
        of a pass already made over ``ids``."""
        cfg = self.model_cfg
        x = torch.tensor([ids], device=self.device)
        if maps is None:
            self.model.eval()
            _, maps = self.model(x, return_attention=True)
        tokens = [self.src_tok.display_token(i) for i in ids]
        H, S = cfg.n_heads, len(ids)
        return Inspection(
            src_tokens=tokens,
            tgt_tokens=[],
            out_tokens=[],
            encoder=torch.stack([w[0] for w in maps.encoder]).float().cpu().numpy(),
            decoder_self=np.zeros((0, H, 0, 0), np.float32),
            cross=np.zeros((0, H, 0, S), np.float32),
            target_probs=np.zeros(0, np.float32),
            teacher_forced=True,
            step=self.step,
            source=text,
            masks={"encoder": padding_mask(x, cfg.pad_id)[0, 0].expand(S, S).cpu().numpy().copy()},
            routing=self._routing(maps, tokens, []),
            arch="encoder_only",
        )

    @torch.inference_mode()
    def fill_mask(self, text: str, mask_positions: tuple[int, ...] = (), top_k: int = 5) -> FillMaskView:
        """An encoder-only model's predictions for each <mask> of ``text`` (typed as ``<mask>``, or the input
        positions ``mask_positions`` masked: 1 is the first piece after BOS)."""
        if "fill_mask" not in self.model_cfg.family.decoding:
            raise ValueError("Filling masks needs an encoder-only (BERT) model; this one is " + self.model_cfg.arch)
        mask_id = self.src_tok.mask_id
        if mask_id is None:
            raise ValueError("this model's tokenizer has no <mask> token, so it cannot fill masks")
        ids, originals = self._masked_input(text, mask_positions)
        shown = self._with_masks_written(text, [p for p, o in enumerate(originals) if o is not None])
        if mask_id not in ids:
            raise ValueError("Write <mask> where the model should fill a word in, or click a token to mask it.")
        show = self.src_tok.display_token
        fills, maps = fill_mask_with_attention(self.model, ids, mask_id, top_k)  # one pass: guesses and maps
        predictions = [
            MaskPrediction(f.position, [show(t) for t in f.tokens], f.probs, originals[f.position]) for f in fills
        ]
        tokens = [show(i) for i in ids]
        return FillMaskView(text, tokens, predictions, self._inspect_ids(ids, shown, maps), self.step)

    def _with_masks_written(self, text: str, positions: list[int]) -> str:
        """``text`` (normalised) with the pieces at input ``positions`` (1 = the first after BOS) written as
        <mask>: the text the inspection names, so that asking about it again (the Q·K explainer) reads the
        same masked input."""
        encoded = self.src_tok.encode(text)
        out = encoded.text
        for p in sorted(positions, reverse=True):  # right to left: earlier spans stay where they are
            a, b = encoded.spans[p - 1]
            out = out[:a] + MASK + out[b:]
        return out

    def attention_masks(self, src_ids: list[int], tgt_in: list[int]) -> dict[str, np.ndarray]:
        """Where each attention of this model may look for one pair (True = may attend); ``tgt_in`` = BOS + y."""
        cfg = self.model_cfg
        return attention_masks(torch.tensor([src_ids]), torch.tensor([tgt_in]), cfg.pad_id, cfg.causal)

    @torch.inference_mode()
    def explain_attention(
        self, src_text: str, tgt_ids: list[int] | None, kind: str, layer: int, head: int
    ) -> AttentionExplanation:
        """One head of one attention block for ``src_text`` → ``tgt_ids`` (teacher-forced), spelled out.

        ``kind`` is "encoder", "decoder_self" or "cross". The block's inputs are caught
        during a normal forward pass; its own projections then give q, k and v.
        """
        cfg = self.model_cfg
        layers = self.model.encoder_layers if kind == "encoder" else self.model.decoder_layers
        if kind not in ("encoder", "decoder_self", "cross") or (kind == "cross" and cfg.single_stream):
            raise ValueError(f"no attention of kind {kind!r} in a {cfg.arch} model")
        if not (0 <= layer < len(layers) and 0 <= head < cfg.n_heads):
            raise ValueError(f"no layer {layer} / head {head} in this model")
        block = layers[layer].cross_attn if kind == "cross" else layers[layer].self_attn
        assert isinstance(block, MultiHeadAttention)  # nn.ModuleList items are typed as modules
        inputs, src_tokens, tgt_tokens = self._explain_inputs(src_text, tgt_ids)
        caught: dict[str, Any] = {}

        def catch(module, args, kwargs):
            caught["x"] = args[0]
            caught["memory"] = args[1] if len(args) > 1 else kwargs.get("memory")
            caught["mask"] = args[2] if len(args) > 2 else kwargs.get("mask")
            caught["bias"] = kwargs.get("bias")

        hook = block.register_forward_pre_hook(catch, with_kwargs=True)
        try:
            self.model.eval()
            self.model(*inputs)
        finally:
            hook.remove()
        x, memory, mask = caught["x"], caught["memory"], caught["mask"]
        if memory is None:
            q, k, v = block.project_qkv(x)
        else:
            q = block.project_query(x)
            k, v = block.project_memory(memory)
        q, k, v = q[0, head], k[0, head], v[0, head]  # [L, d_k]
        full_mask = None if mask is None else mask[0, 0].expand(q.shape[0], k.shape[0])
        queries = src_tokens if kind == "encoder" else tgt_tokens
        keys = tgt_tokens if kind == "decoder_self" else src_tokens
        names = {
            "encoder": "encoder self-attention",
            "decoder_self": "decoder self-attention",
            "cross": "cross-attention",
        }
        title = f"{names[kind]}, layer {layer + 1}, head {head + 1}"
        bias = caught.get("bias")
        if bias is not None:  # T5: each head's relative bias is part of its scaled scores
            bias = bias[0, head]
            title += " (scaled scores include T5's relative position bias)"
        if block.scale is not None:
            title += " (scores not divided by √d_k: this model's attention is unscaled)"
        inside = cfg.positional if cfg.positional in ("rope", "t5_relative") and memory is None else ""
        return explain(q, k, v, full_mask, title, queries, keys, kind, layer, head, bias, inside, block.scale)

    def _explain_inputs(
        self, src_text: str, tgt_ids: list[int] | None
    ) -> tuple[list[torch.Tensor], list[str], list[str]]:
        """The forward pass :meth:`explain_attention` watches, for each family as :meth:`inspect` reads it, and
        the tokens of its encoder and decoder positions (an encoder-only model has no decoder's, a decoder-only
        one no encoder's: there the prompt and ``tgt_ids`` are one stream after BOS)."""
        cfg, show_src, show_tgt = self.model_cfg, self.src_tok.display_token, self.tgt_tok.display_token
        if "fill_mask" in cfg.family.decoding:  # the text, as inspect reads it
            ids = self._masked_input(src_text, ())[0]
            return [torch.tensor([ids], device=self.device)], [show_src(i) for i in ids], []
        _, ids, _ = self._source(src_text)
        y = [t for t in (tgt_ids or []) if t != cfg.eos_id]
        if "generate" in cfg.family.decoding:
            seq = [cfg.bos_id, *ids, *y[: cfg.max_len - 1 - len(ids)]]
            return [torch.tensor([seq], device=self.device)], [], [show_tgt(i) for i in seq]
        tgt_in = [cfg.bos_id, *y[: cfg.max_len - 1]]
        src, tgt = torch.tensor([ids], device=self.device), torch.tensor([tgt_in], device=self.device)
        return [src, tgt], [show_src(i) for i in ids], [show_tgt(i) for i in tgt_in]

    def positional_tables(self) -> PositionalTables:
        """What the positional-encoding lab shows of this model: its kind, sizes, and its tables."""
        cfg = self.model_cfg

        def numpy(table: torch.Tensor) -> np.ndarray:
            return table.detach().float().cpu().numpy().copy()

        src_pos, tgt_pos = self.model.src_pos, self.model.tgt_pos
        learned = isinstance(src_pos, LearnedPositionalEncoding) and isinstance(tgt_pos, LearnedPositionalEncoding)
        encoder_bias, decoder_bias = self.model.encoder_bias, self.model.decoder_bias
        return PositionalTables(
            kind=cfg.positional,
            d_model=cfg.d_model,
            max_len=cfg.max_len,
            head_dim=cfg.head_dim,
            step=self.step,
            source=numpy(src_pos.table()) if learned and src_pos is not None else None,
            target=numpy(tgt_pos.table()) if learned and tgt_pos is not None else None,
            # T5: the learned bias of each bucket and head, [buckets, heads]
            t5_encoder=None if encoder_bias is None else numpy(encoder_bias.weight),
            t5_decoder=None if decoder_bias is None else numpy(decoder_bias.weight),
            sinusoids=numpy(src_pos.table()) if isinstance(src_pos, SinusoidalPositionalEncoding) else None,
        )
