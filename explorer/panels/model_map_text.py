"""The words of the model map (:mod:`explorer.panels.model_map`): what each part is called, its tooltip,
and its equation as in the paper with the current model's numbers filled in.

The three families share the parts: a decoder-only model (GPT) is the "decoder" stack without cross-attention,
an encoder-only model (BERT) the "encoder" stack with a masked-LM head; a Mixture-of-Experts layer's
feed-forward part is its router and experts.

Everything here is plain text or HTML built from a :class:`ModelPart`, the model's configuration and
its parameter counts; nothing is drawn here.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from explorer.answers import RunInfo
from explorer.i18n import N_, mark, tr
from explorer.panels.model_info import family_title, parameters_text, stacks_text
from model.core.config import ModelConfig

STACKS = ("encoder", "decoder")
ATTENTION_KINDS = ("encoder_self_attention", "decoder_self_attention", "cross_attention")
SUBLAYER_KINDS = (*ATTENTION_KINDS, "feed_forward")
STACK_SUBLAYERS = {  # bottom to top, as data flows
    "encoder": ("encoder_self_attention", "feed_forward"),
    "decoder": ("decoder_self_attention", "cross_attention", "feed_forward"),
}
KINDS = (
    *SUBLAYER_KINDS,
    "add_norm",
    "layer_norm",
    "residual_add",
    "final_norm",
    "layer",
    "embedding",
    "positional",
    "mlm_head",
    "output_linear",
    "softmax",
)


# the attention kind of the family specs (model.families.registry) that each attention part is
ATTENTION_OF = {
    "encoder_self_attention": "encoder",
    "decoder_self_attention": "decoder_self",
    "cross_attention": "cross",
}


def stack_sublayers(cfg: ModelConfig, stack: str) -> tuple[str, ...]:
    """A layer's sublayers, bottom to top: those of the attention kinds the family has (a decoder-only model's,
    GPT's, have no cross-attention)."""
    kinds = cfg.family.attention
    return tuple(k for k in STACK_SUBLAYERS[stack] if k not in ATTENTION_OF or ATTENTION_OF[k] in kinds)


def model_stacks(cfg: ModelConfig) -> dict[str, int]:
    """The stacks the model has, each with its number of layers."""
    return {stack: layer_count(cfg, stack) for stack in cfg.family.stacks}


def has_mlm_head(cfg: ModelConfig) -> bool:
    """The family scores its output through a masked-LM head (BERT's), not straight from the last layer."""
    return "masked_lm_head" in cfg.family.parameter_groups


def has_segments(cfg: ModelConfig) -> bool:
    """The family adds a segment embedding (BERT's sentence A or B) to each token's."""
    return "segment_embedding" in cfg.family.parameter_groups


@dataclass(frozen=True)
class ModelPart:
    """One part of the drawn model.

    ``kind`` is one of :data:`KINDS`; ``stack`` is "encoder", "decoder" or None (the output layer and the
    softmax); ``layer`` is the 0-based layer (shown as layer + 1) or None outside the layers; ``wraps``
    says, for a norm or a residual add, which sublayer it belongs to (e.g. "feed_forward").
    """

    kind: str
    stack: str | None = None
    layer: int | None = None
    wraps: str | None = None


# -- names -------------------------------------------------------------------------------------------

NAMES = {
    "encoder_self_attention": N_("Multi-head self-attention"),
    "decoder_self_attention": N_("Masked multi-head self-attention"),
    "cross_attention": N_("Encoder–decoder attention (cross-attention)"),
    "feed_forward": N_("Position-wise feed-forward network"),
    "add_norm": N_("Add & Norm: residual connection, then LayerNorm"),
    "layer_norm": N_("LayerNorm (before the sublayer)"),
    "residual_add": N_("Residual connection (add)"),
    "final_norm": N_("Final LayerNorm"),
    "positional": N_("Positional encoding"),
    "output_linear": N_("Linear output layer"),
    "softmax": N_("Softmax over the vocabulary"),
    "mlm_head": N_("Masked-LM head: dense, GELU, LayerNorm"),
}
MOE_NAME = N_("Mixture of experts: a router and N expert FFNs")
MOE_LABEL = N_("Experts (MoE)")
BOX_LABELS = {
    "encoder_self_attention": N_("Self-attention"),
    "decoder_self_attention": N_("Masked self-attention"),
    "cross_attention": N_("Cross-attention"),
    "feed_forward": N_("Feed forward"),
    "add_norm": N_("Add & Norm"),
    "layer_norm": N_("LayerNorm"),
    "residual_add": "+",
    "final_norm": N_("Final LayerNorm"),
    "positional": N_("Positional encoding"),
    "output_linear": N_("Linear"),
    "softmax": N_("Softmax"),
    "mlm_head": N_("MLM head"),
}
EMBEDDING_NAMES = {"encoder": N_("Input embedding"), "decoder": N_("Output embedding")}
TOKEN_EMBEDDING = N_("Token embedding")  # the one embedding of a single-stream model
LAYER_NAMES = {"encoder": N_("Encoder layer {n}"), "decoder": N_("Decoder layer {n}")}
NO_RESIDUAL_NAMES = {  # a model with residual off: the sublayer's output replaces its input
    "add_norm": N_("Norm: LayerNorm of the sublayer's output (no residual connection in this model)"),
    "residual_add": N_("No residual connection: the sublayer's output replaces its input"),
}
POSITIONAL_KINDS = {
    "none": N_("none: the model is not told where tokens are"),
    "sinusoidal": N_("sinusoidal"),
    "learned": N_("learned table"),
    "rope": N_("RoPE, in self-attention"),
    "t5_relative": N_("T5 relative bias, in attention"),
}
ACTIVATION_NAMES = {"relu": "ReLU", "gelu": "GELU", "silu": "SiLU", "gelu_tanh": "GELU (tanh)"}
# each sublayer as a function of its input {x}; m is the encoder's output (the "memory")
SUBLAYER_SYMBOLS = {
    "encoder_self_attention": "MultiHead({x}, {x}, {x})",
    "decoder_self_attention": "MaskedMultiHead({x}, {x}, {x})",
    "cross_attention": "MultiHead({x}, m, m)",
    "feed_forward": "FFN({x})",
}
TOOLTIPS = {
    "encoder_self_attention": N_("Every source position looks at every source position."),
    "decoder_self_attention": N_("Every target position looks at itself and the positions before it, never ahead."),
    "cross_attention": N_("Every target position looks at the encoder's output: where the translation comes from."),
    "feed_forward": N_("The same two-layer network applied to each position on its own."),
    "add_norm": N_("Adds the sublayer's input back (residual) and normalises the sum."),
    "layer_norm": N_("Normalises the sublayer's input; the residual path skips it."),
    "residual_add": N_("Adds the sublayer's output to the residual stream."),
    "final_norm": N_("Pre-LN leaves the residual stream unnormalised, so each stack ends with one LayerNorm."),
    "layer": N_("Click to open this layer."),
    "embedding": N_("Turns each token id into a vector of d_model numbers."),
    "positional": N_("Tells the model where each token is."),
    "output_linear": N_("Turns the decoder's vector into one score (logit) per target piece."),
    "softmax": N_("Turns the scores into probabilities for the next token."),
    "mlm_head": N_("Transforms each position's vector before the output layer guesses the masked token."),
}
MOE_TOOLTIP = N_("A router sends each token to k of the N expert FFNs and mixes their outputs by its probabilities.")


def part_name(part: ModelPart, cfg: ModelConfig | None = None) -> str:
    """The part's full name in the interface language (``cfg``: of that model's family and experts)."""
    if part.kind == "embedding":
        if cfg is not None and cfg.single_stream:
            return tr(TOKEN_EMBEDDING)
        return tr(EMBEDDING_NAMES.get(part.stack or "", "Input embedding"))
    if part.kind == "feed_forward" and cfg is not None and cfg.moe:
        return tr(MOE_NAME)
    if part.kind == "layer":
        return tr(LAYER_NAMES.get(part.stack or "", "Encoder layer {n}")).format(n=(part.layer or 0) + 1)
    if part.kind in ("add_norm", "residual_add") and cfg is not None and not cfg.residual:
        return tr(NO_RESIDUAL_NAMES[part.kind])  # the experiment "no_residual": no skip connection
    return tr(NAMES.get(part.kind, part.kind))


def box_label(part: ModelPart, cfg: ModelConfig | None = None) -> str:
    """The short name written in the part's box."""
    if part.kind in ("embedding", "layer"):
        return part_name(part, cfg)
    if part.kind == "feed_forward" and cfg is not None and cfg.moe:
        return tr(MOE_LABEL)
    return tr(BOX_LABELS.get(part.kind, part.kind))


def box_detail(part: ModelPart, cfg: ModelConfig, vocab: tuple[int, int]) -> str:
    """The numbers written under the name in the part's box ("" for none)."""
    kind = part.kind
    if kind in ATTENTION_KINDS:
        return f"h = {cfg.n_heads} · d_k = {cfg.head_dim}"
    if kind == "feed_forward" and cfg.moe:
        return tr("{n} experts · top-{k} · router").format(n=cfg.n_experts, k=cfg.experts_top_k)
    if kind == "feed_forward":
        return f"d_ff = {cfg.d_ff} · {ACTIVATION_NAMES.get(cfg.activation, cfg.activation)}"
    if kind == "mlm_head":
        return f"{cfg.d_model} → {cfg.d_model} · GELU"
    if kind == "embedding":
        size = vocab[0] if part.stack == "encoder" or cfg.single_stream else vocab[1]
        return f"V = {size:,} · d = {cfg.d_model}" + embedding_note(part, cfg, short=True)
    if kind == "positional":
        return tr(POSITIONAL_KINDS.get(cfg.positional, cfg.positional))
    if kind == "output_linear":
        return f"{cfg.d_model} → {vocab[1]:,}" + (f" · {tr('tied')}" if cfg.tie_embeddings else "")
    if kind == "softmax":
        return tr("over {v} pieces").format(v=f"{vocab[1]:,}")
    return ""


def embedding_note(part: ModelPart, cfg: ModelConfig, short: bool = False) -> str:
    """What the embedding shares with other parts ("" when nothing)."""
    notes = []
    if cfg.shared_vocab and not cfg.single_stream:  # (a single-stream model has one vocabulary anyway)
        notes.append(tr("shared") if short else tr("one table for source and target (shared vocabulary)"))
    if cfg.tie_embeddings and (part.stack == "decoder" or cfg.single_stream):
        notes.append(tr("tied") if short else tr("the output layer uses the same matrix (tied weights)"))
    if not notes:
        return ""
    return " · " + " · ".join(notes) if short else "; ".join(notes)


def tooltip(part: ModelPart, cfg: ModelConfig | None = None) -> str:
    if part.kind == "feed_forward" and cfg is not None and cfg.moe:
        return f"{part_name(part, cfg)}\n{tr(MOE_TOOLTIP)}"
    return f"{part_name(part, cfg)}\n{tr(TOOLTIPS.get(part.kind, ''))}"


# -- equations -----------------------------------------------------------------------------------------


def where(part: ModelPart, cfg: ModelConfig) -> str:
    """Which stack and layer the part is in."""
    if part.stack is None:
        top = cfg.family.stacks[-1]  # the output layer and the softmax sit on the family's last stack
        return tr("on top of the encoder") if top == "encoder" else tr("on top of the decoder")
    total = layer_count(cfg, part.stack)
    stack = tr("Encoder") if part.stack == "encoder" else tr("Decoder")
    if part.layer is None:
        return stack
    return stack + mark(", ") + tr("layer {n} of {total}").format(n=part.layer + 1, total=total)


def params_line(count: int | None, all_layers: int | None = None, n: int = 1) -> str:
    """``Parameters: …`` (with the total over all ``n`` layers when there are several)."""
    if count is None:
        return f"<p>{tr('No parameters: nothing here is learned.')}</p>"
    text = f"<p><b>{tr('Parameters')}{mark(': ')}{count:,}</b>"
    if all_layers is not None and n > 1:
        text += mark(" ") + tr("(all {n} layers: {total})").format(n=n, total=f"{all_layers:,}")
    return text + "</p>"


def formula(text: str) -> str:
    """A displayed equation, centred (the panel's style sheet sets its face and size: class "formula")."""
    return f'<p align="center" class="formula">{text}</p>'


def equation_html(part: ModelPart, info: RunInfo) -> str:
    """The part's name, where it is, its formula with this model's numbers, and its parameters."""
    body = BODIES[part.kind](part, info) if part.kind in BODIES else ""
    m = info.model_config
    head = f"<h3>{html.escape(part_name(part, m))}</h3><p><i>{html.escape(where(part, m))}</i></p>"
    return head + body


def overview_html(info: RunInfo) -> str:
    """What the side area shows before a part is chosen."""
    m = info.model_config
    norm = tr("Post-LN (as in the paper)") if m.norm == "post" else tr("Pre-LN (final norms)")
    rows = [
        f"<h3>{family_title(m)}</h3>",
        f"<p>{stacks_text(m)}; "
        f"d<sub>model</sub> = {m.d_model}, h = {m.n_heads}, d<sub>k</sub> = {m.head_dim}, "
        f"d<sub>ff</sub> = {m.d_ff}</p>",
        f"<p>{norm}{mark('; ')}{tr('positional encoding')}{mark(': ')}"
        f"{tr(POSITIONAL_KINDS.get(m.positional, m.positional))}</p>",
        f"<p>{parameters_text(info)}</p>",
        f"<p>{tr('Point at a part of the drawing to see its equation; click it to keep it here.')}</p>",
    ]
    return "".join(rows)


def sqrt_text(value: int) -> str:
    """√value, written with two decimals (or exactly, when it is a whole number)."""
    root = math.sqrt(value)
    return f"{root:.0f}" if root.is_integer() else f"{root:.2f}"


# -- the formula of each kind ----------------------------------------------------------------------------

PARAMETER_GROUPS = {  # the parameter group (model.families.registry) of each attention kind
    "encoder_self_attention": "encoder_self_attention",
    "decoder_self_attention": "decoder_self_attention",
    "cross_attention": "decoder_cross_attention",
}
LAYER_NORM = "LayerNorm(x) = γ ⊙ (x − μ) / √(σ<sup>2</sup> + ε) + β"


def layer_count(cfg: ModelConfig, stack: str | None) -> int:
    return cfg.n_encoder_layers if stack == "encoder" else cfg.n_decoder_layers


def per_layer(info: RunInfo, group: str, n: int, share: int = 1) -> tuple[int | None, int | None]:
    """One part's parameters and all layers' together, from the run's per-group counts."""
    total = info.parameters.get(group)
    if total is None:
        return None, None
    return total // (n * share), total


def _attention(part: ModelPart, info: RunInfo) -> str:
    m = info.model_config
    d, h, dk = m.d_model, m.n_heads, m.head_dim
    biased = m.positional == "t5_relative" and part.kind != "cross_attention"  # T5: self-attention only
    scores = "QK<sup>T</sup>" + (" / √d<sub>k</sub>" if m.scaled_attention else "") + (" + B" if biased else "")
    masked = part.kind == "decoder_self_attention" and m.causal
    scores += " + M" if masked else ""
    rows = [
        formula(f"Attention(Q, K, V) = softmax({scores}) V"),
        formula("MultiHead(Q, K, V) = Concat(head<sub>1</sub>, …, head<sub>h</sub>) W<sup>O</sup>"),
        formula(
            "head<sub>i</sub> = Attention(QW<sub>i</sub><sup>Q</sup>, KW<sub>i</sub><sup>K</sup>, "
            "VW<sub>i</sub><sup>V</sup>)"
        ),
        f"<p>h = {h}, d<sub>k</sub> = d<sub>v</sub> = d<sub>model</sub> / h = {d} / {h} = <b>{dk}</b>, "
        f"√d<sub>k</sub> = {sqrt_text(dk)}; W<sub>i</sub><sup>Q</sup>, W<sub>i</sub><sup>K</sup>, "
        f"W<sub>i</sub><sup>V</sup> ∈ ℝ<sup>{d}×{dk}</sup>, W<sup>O</sup> ∈ ℝ<sup>{h * dk}×{d}</sup></p>",
        f"<p>{tr(m.family.labels[f'sources:{ATTENTION_OF[part.kind]}'])}</p>",
    ]
    if masked:
        rows.append(f"<p>{tr(MASK_TEXT)}</p>")
    elif part.kind == "decoder_self_attention":
        rows.append(f"<p>{tr(NO_MASK_TEXT)}</p>")
    if not m.scaled_attention:
        rows.append(f"<p>{tr(UNSCALED_SCORES_TEXT)}</p>")
    if m.positional == "rope" and part.kind != "cross_attention":
        rows.append(f"<p>{tr('RoPE rotates q and k by their positions before the product QKᵀ.')}</p>")
    if biased:
        rows.append(f"<p>{tr(T5_SCORES_TEXT)}</p>")
    n = layer_count(m, part.stack)
    count, total = per_layer(info, PARAMETER_GROUPS[part.kind], n)
    rows.append(params_line(count, total, n))
    if count == 4 * d * d + 4 * d:
        rows.append(
            f"<p>= 4·{d}<sup>2</sup> + 4·{d}: W<sup>Q</sup>, W<sup>K</sup>, W<sup>V</sup>, W<sup>O</sup> "
            f"{tr('and their biases')}</p>"
        )
    return "".join(rows)


T5_SCORES_TEXT = N_(
    "B is T5's relative position bias: a learned number per head for the bucket of each offset key − query "
    "(the positional encoding's part of the map)."
)
MASK_TEXT = N_(
    "M is the causal mask: M<sub>ij</sub> = 0 for j ≤ i and −∞ for j &gt; i, so position i sees only "
    "the words up to itself, never the ones still to be written."
)

NO_MASK_TEXT = N_(
    "This model has no causal mask: position i also sees the words after it — in training, the very word it "
    "is asked to predict (the experiment “no causal mask”)."
)
UNSCALED_SCORES_TEXT = N_(
    "This model does not divide the scores by √d<sub>k</sub> (the experiment “no √d_k scaling”): with "
    "d<sub>k</sub>-dimensional q and k their products grow like √d<sub>k</sub>, and the softmax saturates."
)


def _feed_forward(part: ModelPart, info: RunInfo) -> str:
    m = info.model_config
    if m.moe:
        return _experts(part, info)
    d, dff = m.d_model, m.d_ff
    inner = "xW<sub>1</sub> + b<sub>1</sub>"
    act = f"max(0, {inner})" if m.activation == "relu" else f"{ACTIVATION_SYMBOLS[m.activation]}({inner})"
    rows = [
        formula(f"FFN(x) = {act} W<sub>2</sub> + b<sub>2</sub>"),
        f"<p>W<sub>1</sub> ∈ ℝ<sup>{d}×{dff}</sup>, b<sub>1</sub> ∈ ℝ<sup>{dff}</sup>, "
        f"W<sub>2</sub> ∈ ℝ<sup>{dff}×{d}</sup>, b<sub>2</sub> ∈ ℝ<sup>{d}</sup>; d<sub>ff</sub> = <b>{dff}</b> "
        f"= {dff / d:g} · d<sub>model</sub></p>",
        f"<p>{tr('The same network for every position; every layer has its own.')}</p>",
    ]
    if m.activation in ACTIVATION_TEXTS:
        rows.append(f"<p>{tr(ACTIVATION_TEXTS[m.activation])}</p>")
    n = layer_count(m, part.stack)
    count, total = per_layer(info, f"{part.stack}_feed_forward", n)
    rows.append(params_line(count, total, n))
    if count == 2 * d * dff + dff + d:
        rows.append(f"<p>= 2·{d}·{dff} + {dff} + {d}</p>")
    return "".join(rows)


ACTIVATION_SYMBOLS = {"relu": "ReLU", "gelu": "GELU", "silu": "SiLU", "gelu_tanh": "GELU"}
ACTIVATION_TEXTS = {  # what each non-linearity other than the paper's ReLU computes
    "gelu": N_("GELU(x) = x · Φ(x), a smooth ReLU; the paper uses ReLU = max(0, x)."),
    "gelu_tanh": N_(
        "GELU(x) ≈ 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))), the tanh approximation of x · Φ(x) (GPT-2); "
        "the paper uses ReLU = max(0, x)."
    ),
    "silu": N_("SiLU(x) = x · σ(x), also called swish (Marian); the paper uses ReLU = max(0, x)."),
}


def _experts(part: ModelPart, info: RunInfo) -> str:
    """A Mixture-of-Experts feed-forward sublayer: the router, the top-k experts, the balancing loss."""
    m = info.model_config
    d, dff, n, k = m.d_model, m.d_ff, m.n_experts, m.experts_top_k
    if k == 1:  # Switch Transformer: the expert's own probability, which lets the task loss train the router
        mix = formula("y = p<sub>i</sub>(x) · FFN<sub>i</sub>(x), i = argmax<sub>j</sub> p<sub>j</sub>(x)")
    else:  # GShard, Mixtral: the k chosen probabilities renormalised
        mix = formula(
            "y = Σ<sub>i ∈ TopK(p(x))</sub> g<sub>i</sub>(x) · FFN<sub>i</sub>(x), "
            "g<sub>i</sub> = p<sub>i</sub>(x) / Σ<sub>j ∈ TopK</sub> p<sub>j</sub>(x)"
        )
    rows = [
        formula("p(x) = softmax(x W<sub>r</sub> + b<sub>r</sub>)"),
        mix,
        f"<p>N = <b>{n}</b> {tr('experts')}{mark(', ')}k = <b>{k}</b>{mark('; ')}W<sub>r</sub> ∈ ℝ<sup>{d}×{n}</sup>, "
        f"b<sub>r</sub> ∈ ℝ<sup>{n}</sup>{mark('; ')}"
        + tr(EXPERTS_TEXT).format(dff=dff, k=k)
        + " "
        + tr(WEIGHTS_TOP1 if k == 1 else WEIGHTS_TOPK)
        + "</p>",
        formula("aux = N · Σ<sub>i</sub> f<sub>i</sub> · P<sub>i</sub>"),
        f"<p>{tr(BALANCE_TEXT)} " + tr("Its weight here: {w:g}.").format(w=m.aux_loss_coef) + "</p>",
    ]
    layers = layer_count(m, part.stack)
    count, total = per_layer(info, f"{part.stack}_feed_forward", layers)
    rows.append(params_line(count, total, layers))
    if count is not None and count == n * (2 * d * dff + dff + d) + d * n + n:
        rows.append(
            f"<p>= {n}·(2·{d}·{dff} + {dff} + {d}) + {d}·{n} + {n}{mark(': ')}{tr('the experts and the router')}</p>"
        )
    return "".join(rows)


EXPERTS_TEXT = N_("every expert is the paper's FFN (d_ff = {dff}); each token is computed by {k} of them.")
WEIGHTS_TOP1 = N_(
    "With k = 1 the expert's output is weighted by its own probability (Switch Transformer): the weight depends "
    "on the router, so the task loss trains it."
)
WEIGHTS_TOPK = N_("With k ≥ 2 the k chosen probabilities are renormalised to sum to 1 (GShard, Mixtral).")
BALANCE_TEXT = N_(
    "f<sub>i</sub> is the share of the tokens sent to expert i and P<sub>i</sub> its mean router probability; "
    "the balance loss is 1 when the tokens (or the probabilities) are spread evenly and grows when tokens and "
    "probability pile on the same experts. Training adds its mean over the MoE layers, times its weight, to the loss."
)


def sublayer_text(wraps: str | None, x: str) -> str:
    return SUBLAYER_SYMBOLS.get(wraps or "", "Sublayer({x})").format(x=x)


def _norm(part: ModelPart, info: RunInfo) -> str:
    m = info.model_config
    if part.kind == "add_norm":
        rows = [formula("LayerNorm(x + Sublayer(x))"), formula(f"LayerNorm(x + {sublayer_text(part.wraps, 'x')})")]
        rows.append(f"<p>{tr('Post-LN, as in the paper: the norm comes after the residual add.')}</p>")
    elif part.kind == "layer_norm":
        rows = [
            formula("x + Sublayer(LayerNorm(x))"),
            formula(f"x + {sublayer_text(part.wraps, '<b>LayerNorm(x)</b>')}"),
        ]
        rows.append(f"<p>{tr(PRE_LN_TEXT)}</p>")
    else:  # final_norm
        rows = [formula("y = LayerNorm(x<sub>N</sub>)"), f"<p>N = {layer_count(m, part.stack)}</p>"]
    rows.append(formula(LAYER_NORM))
    rows.append(
        f"<p>{tr('μ and σ² are the mean and variance of one position’s features')}{mark(' ')}{mark('(')}"
        f"d<sub>model</sub> = {m.d_model}{mark(')')}{mark('; ')}"
        f"γ, β ∈ ℝ<sup>{m.d_model}</sup>; ε = {m.layer_norm_eps:g}</p>"
    )
    if part.kind == "add_norm":
        rows.append(
            f"<p>{tr('Dropout (P_drop = {p}) acts on the sublayer’s output before the add.')}</p>".format(
                p=f"{m.dropout:g}"
            )
        )
    if part.kind == "final_norm":
        n, (count, total) = 1, per_layer(info, f"{part.stack}_final_norm", 1)
    else:  # one of the layer's norms (one per sublayer): this norm in each of the n layers
        n = layer_count(m, part.stack)
        count, _ = per_layer(info, f"{part.stack}_norms", n, len(stack_sublayers(m, part.stack or "encoder")))
        total = None if count is None else count * n
    return "".join(rows) + params_line(count, total, n)


PRE_LN_TEXT = N_(
    "Pre-LN: the norm comes before the sublayer and the residual path x is never normalised; "
    "each stack ends with a final LayerNorm."
)


def _residual(part: ModelPart, info: RunInfo) -> str:
    m = info.model_config
    rows = [
        formula("x + Sublayer(LayerNorm(x))"),
        formula(f"<b>x +</b> Dropout({sublayer_text(part.wraps, 'LayerNorm(x)')})"),
        f"<p>{tr('The residual stream carries x past the sublayer, so every layer only adds a change to it.')}"
        f"{mark(' ')}P<sub>drop</sub> = {m.dropout:g}</p>",
    ]
    return "".join(rows) + params_line(None)


def embedded(cfg: ModelConfig) -> str:
    """A token's embedding as this model takes it: × √d_model where it scales it (the paper, Marian)."""
    return "Embedding(token)" + (" · √d<sub>model</sub>" if cfg.scale_embedding else "")


def position_term(cfg: ModelConfig) -> str:
    """What is added to the embedding for the position ("" where positions act inside the attention)."""
    return {"sinusoidal": "PE<sub>pos</sub>", "learned": "P<sub>pos</sub>"}.get(cfg.positional, "")


def input_formula(cfg: ModelConfig) -> str:
    """x, the first layer's input, as this model computes it: the embedding, the position's vector, BERT's segment
    embedding, and the LayerNorm over their sum where the model has one (BERT)."""
    terms = [embedded(cfg), position_term(cfg)]
    if has_segments(cfg):
        terms.append("S<sub>segment</sub>")
    total = " + ".join(t for t in terms if t)
    return "x = " + (f"LayerNorm({total})" if cfg.embed_norm else total)


def scaling_text(cfg: ModelConfig) -> str:
    """√d_model with its value, and that the paper gives no reason for it; or that this model does not scale."""
    if not cfg.scale_embedding:
        return f"<p>{tr(UNSCALED_TEXT)}</p>"
    return f"<p>√d<sub>model</sub> = √{cfg.d_model} = {sqrt_text(cfg.d_model)}</p><p>{tr(SCALED_TEXT)}</p>"


SCALED_TEXT = N_("The paper multiplies the embedding weights by √d_model (§3.4); it does not say why.")
UNSCALED_TEXT = N_(
    "This model does not multiply its embeddings by √d_model (the paper does, §3.4; GPT-2 and BERT do not)."
)
EMBED_NORM_TEXT = N_(
    "The sum is normalised by a LayerNorm of its own (BERT's embedding norm; γ, β ∈ ℝ<sup>{d}</sup>) before the "
    "first layer."
)


def _embedding(part: ModelPart, info: RunInfo) -> str:
    m = info.model_config
    source = part.stack == "encoder" or m.single_stream
    size = info.vocab_sizes[0] if source else info.vocab_sizes[1]
    if m.single_stream:
        return _token_embedding(part, info, size)
    rows = [
        formula(embedded(m)),
        f"<p>E ∈ ℝ<sup>{size:,}×{m.d_model}</sup>{mark(': ')}"
        + tr("one row of d_model numbers per piece of the vocabulary (V = {v}).").format(v=f"{size:,}")
        + "</p>",
        scaling_text(m),
    ]
    note = embedding_note(part, m)
    if note:
        rows.append(f"<p><b>{note}</b></p>")
    group = "source_embedding" if source else "target_embedding"
    if group not in info.parameters and m.shared_vocab:
        count = info.parameters.get("source_embedding")
        rows.append(f"<p>{tr('Counted once, with the input embedding.')}</p>")
    else:
        count = info.parameters.get(group)
    return "".join(rows) + params_line(count)


def _token_embedding(part: ModelPart, info: RunInfo, size: int) -> str:
    """The one embedding of a single-stream model (and BERT's segment embedding and embedding norm beside it)."""
    m = info.model_config
    segment = has_segments(m)
    rows = [
        formula(input_formula(m)),
        f"<p>E ∈ ℝ<sup>{size:,}×{m.d_model}</sup>{mark(': ')}"
        + tr("one row of d_model numbers per piece of the vocabulary (V = {v}).").format(v=f"{size:,}")
        + "</p>",
    ]
    if segment:
        rows.append(
            f"<p>S ∈ ℝ<sup>2×{m.d_model}</sup>{mark(': ')}"
            + tr("sentence A or B of a pair (BERT's segments).")
            + "</p>"
        )
    if m.embed_norm:
        rows.append("<p>" + tr(EMBED_NORM_TEXT).format(d=m.d_model) + "</p>")
    rows.append(scaling_text(m))
    note = embedding_note(part, m)
    if note:
        rows.append(f"<p><b>{note}</b></p>")
    count = info.parameters.get("source_embedding")  # the token embedding
    if count is not None:
        count += info.parameters.get("segment_embedding", 0) + info.parameters.get("embedding_norm", 0)
    return "".join(rows) + params_line(count)


def _positional(part: ModelPart, info: RunInfo) -> str:
    m = info.model_config
    if m.positional == "sinusoidal":
        return _sinusoids(m)
    if m.positional == "learned":
        last = m.max_len - 1
        rows = [
            formula(input_formula(m)),
            f"<p>P ∈ ℝ<sup>{m.max_len}×{m.d_model}</sup>, pos = 0 … {last}{mark(': ')}"
            + tr("one learned row per position; longer sequences cannot be represented.")
            + "</p>",
        ]
        group = "source_positions" if part.stack == "encoder" or m.single_stream else "target_positions"
        return "".join(rows) + params_line(info.parameters.get(group))
    if m.positional == "t5_relative":
        return _t5(part, info)
    return _rope(m)


def _sinusoids(m: ModelConfig) -> str:
    """The paper's table, interleaved (sin at 2i, cos at 2i + 1) or laid out as Marian lays it out (the sines in
    the first half of the dimensions, the cosines in the second)."""
    d, angle = m.d_model, "pos / 10000<sup>2i/d<sub>model</sub></sup>"
    split = m.sinusoid_layout == "split"
    sin_at, cos_at = ("i", "d<sub>model</sub>/2 + i") if split else ("2i", "2i+1")
    rows = [
        formula(f"PE<sub>(pos, {sin_at})</sub> = sin({angle})"),
        formula(f"PE<sub>(pos, {cos_at})</sub> = cos({angle})"),
        f"<p>d<sub>model</sub> = {d}, i = 0 … {d // 2 - 1}, pos = 0 … {m.max_len - 1}</p>",
        formula(input_formula(m)),
        f"<p>{tr('A fixed table, the same for the encoder and the decoder; wavelengths from 2π to 10000 · 2π.')}</p>",
    ]
    if split:
        rows.append(f"<p>{tr(SPLIT_TEXT)}</p>")
    return "".join(rows) + params_line(None)


SPLIT_TEXT = N_(
    "Laid out as Marian lays it out: the sines fill the first half of the dimensions, the cosines the second; "
    "the paper interleaves them (sin at 2i, cos at 2i + 1). The values are the same, in another order."
)
T5_TEXT = N_(
    "buckets of offsets, wider for distant positions (the scale set by the distance {d}); one bias per head and "
    "bucket, learned."
)
T5_ORIGINAL_TEXT = N_(
    "T5 itself also computes q·k without dividing by √d_k (the factor is folded into the initialisation of "
    "W<sup>Q</sup>), normalises with an RMS norm (no mean subtracted, no β) and does not scale its embeddings. "
    "This app scales as the paper does: q·k / √d_k, LayerNorm, and embeddings × √d_model where the model scales "
    "them."
)


def _t5(part: ModelPart, info: RunInfo) -> str:
    """T5's relative position bias: a learned number per head and offset bucket, added to the scores."""
    m = info.model_config
    rows = [
        formula(input_formula(m)),
        formula("softmax(QK<sup>T</sup> / √d<sub>k</sub> + B) V"),
        formula("B<sub>ij</sub> = b<sub>h</sub>(bucket(j − i))"),
        f"<p>{m.t5_buckets} " + tr(T5_TEXT).format(d=m.t5_max_distance) + "</p>",
        f"<p>{tr(T5_ORIGINAL_TEXT)}</p>",
    ]
    group = "encoder_relative_bias" if part.stack == "encoder" else "decoder_relative_bias"
    return "".join(rows) + params_line(info.parameters.get(group))


def _rope(m: ModelConfig) -> str:
    c, s = "cos pos·θ<sub>i</sub>", "sin pos·θ<sub>i</sub>"
    q0, q1 = "q<sub>2i</sub>", "q<sub>2i+1</sub>"
    rows = [
        formula(input_formula(m)),
        formula(f"({q0}, {q1}) ↦ ({q0} {c} − {q1} {s}, {q0} {s} + {q1} {c})"),
        formula("θ<sub>i</sub> = 10000<sup>−2i/d<sub>k</sub></sup>"),
        f"<p>d<sub>k</sub> = {m.head_dim}, i = 0 … {m.head_dim // 2 - 1}, pos = 0 … {m.max_len - 1}</p>",
        f"<p>{tr(ROPE_TEXT)}</p>",
    ]
    return "".join(rows) + params_line(None)


ROPE_TEXT = N_(
    "Rotary positions (RoPE) add nothing to the embeddings: every self-attention (not the cross-attention) "
    "rotates each pair of q and k by an angle proportional to the position, so positions enter q·k only through "
    "the offset n − m; what q and k contain still matters."
)


def _output_linear(part: ModelPart, info: RunInfo) -> str:
    m = info.model_config
    v = info.vocab_sizes[1]
    rows = [
        formula("z = x W + b"),
        f"<p>W ∈ ℝ<sup>{m.d_model}×{v:,}</sup>, b ∈ ℝ<sup>{v:,}</sup>{mark(': ')}"
        + tr(LOGITS_TEXT[m.single_stream])
        + "</p>",
    ]
    if has_mlm_head(m):
        rows.append(f"<p>{tr('x is the output of the masked-LM head.')}</p>")
    elif m.norm == "pre":
        rows.append(f"<p>{tr('x is the output of the decoder’s final LayerNorm.')}</p>")
    if m.tie_embeddings:
        rows.append(formula("W = E<sup>T</sup>"))
        rows.append(f"<p>{tr(TIED_TOKEN_TEXT if m.single_stream else TIED_TEXT)}</p>")
    return "".join(rows) + params_line(info.parameters.get("output_projection"))


LOGITS_TEXT = {
    True: N_("one score (logit) per piece of the vocabulary."),
    False: N_("one score (logit) per target piece."),
}
TIED_TEXT = N_(
    "Tied to the output embedding (paper §3.4): the matrix is counted once, with the embedding; "
    "only the bias b is the output layer's own."
)
TIED_TOKEN_TEXT = N_(
    "Tied to the token embedding: the matrix is counted once, with the embedding; only the bias b is the "
    "output layer's own."
)


def _mlm_head(part: ModelPart, info: RunInfo) -> str:
    """BERT's transform of each final state before the output layer."""
    m = info.model_config
    rows = [
        formula("h′ = LayerNorm(GELU(x W + b))"),
        f"<p>W ∈ ℝ<sup>{m.d_model}×{m.d_model}</sup>, b ∈ ℝ<sup>{m.d_model}</sup>{mark('; ')}"
        + tr("the output layer then scores every piece at each masked position.")
        + "</p>",
    ]
    if m.n_classes:
        rows.append(f"<p>{tr('Next-sentence prediction reads the first position through its own classifier.')}</p>")
    return "".join(rows) + params_line(info.parameters.get("masked_lm_head"))


PIECES_TEXT = {
    True: N_("pieces: one probability each, adding up to 1."),
    False: N_("target pieces: one probability each, adding up to 1."),
}


def _softmax(part: ModelPart, info: RunInfo) -> str:
    m = info.model_config
    v = info.vocab_sizes[1]
    pieces = tr(PIECES_TEXT[m.single_stream])
    spec = m.family  # what the probability is conditioned on, and what the program does with it
    rows = [
        formula(f"{spec.output_probability} = exp(z<sub>w</sub>) / Σ<sub>v=1</sub><sup>V</sup> exp(z<sub>v</sub>)"),
        f"<p>V = <b>{v:,}</b> " + pieces + "</p>",
        f"<p>{tr(spec.labels['output_use'])}</p>",
    ]
    return "".join(rows) + params_line(None)


def layer_steps(cfg: ModelConfig, stack: str) -> list[str]:
    """One line per sublayer of a layer: how it changes the residual stream x."""
    kinds, norm = stack_sublayers(cfg, stack), cfg.norm
    if norm == "post":
        return [f"x ← LayerNorm(x + {sublayer_text(k, 'x')})" for k in kinds]
    return [f"x ← x + {sublayer_text(k, 'LayerNorm(x)')}" for k in kinds]


def _layer(part: ModelPart, info: RunInfo) -> str:
    m = info.model_config
    stack = part.stack or "encoder"
    rows = [formula(step) for step in layer_steps(m, stack)]
    rows.append(
        "<p>m = " + tr("the encoder's output") + "</p>" if "cross_attention" in stack_sublayers(m, stack) else ""
    )
    n = layer_count(m, stack)
    groups = [PARAMETER_GROUPS.get(k, f"{stack}_feed_forward") for k in stack_sublayers(m, stack)]
    known = [info.parameters[g] for g in (*groups, f"{stack}_norms") if g in info.parameters]
    total = sum(known)
    return "".join(rows) + params_line(total // n, total, n)


BODIES = {
    **dict.fromkeys(ATTENTION_KINDS, _attention),
    "feed_forward": _feed_forward,
    **dict.fromkeys(("add_norm", "layer_norm", "final_norm"), _norm),
    "residual_add": _residual,
    "embedding": _embedding,
    "positional": _positional,
    "output_linear": _output_linear,
    "mlm_head": _mlm_head,
    "softmax": _softmax,
    "layer": _layer,
}
