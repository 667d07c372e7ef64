"""The family registry: what differs between the three model families and the options they combine with.

A :class:`FamilySpec` per value of ``ModelConfig.arch`` — the encoder–decoder of the paper (and T5), the
decoder-only model (GPT) and the encoder-only model (BERT) — and an :class:`OptionSpec` per option that any of
them may have: sparse experts (Mixture-of-Experts) and T5's relative-position bias. They hold plain data: which
stacks and attention kinds exist, the parameter groups (ids), the objective, the data kind, the decoding modes,
the evaluation scores and plots, English labels (the window translates them) and help keys. No torch, no Qt:
the configuration, the engine and every panel ask them, and nothing else tests which family a model is.

How each family's extra modules are built is in the family's own module (:mod:`model.families.gpt`,
:mod:`model.families.bert`, :mod:`model.families.moe`, :mod:`model.families.t5`), gathered by
:func:`model.families.parts.parts_of` for the Transformer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

Stack = Literal["encoder", "decoder"]
AttentionKind = Literal["encoder", "decoder_self", "cross"]  # the fields of AttentionMaps (and Inspection)
Objective = Literal["translation", "lm", "mlm"]  # what a batch teaches (model.families.objectives)
DataKind = Literal["pairs", "text"]  # sentence pairs, or one stream of text
DecodingMode = Literal["translate", "step", "generate", "fill_mask"]


class FamilyConfig(Protocol):
    """The fields of a model configuration the registry reads (a :class:`~model.core.config.ModelConfig`)."""

    @property
    def arch(self) -> str: ...
    @property
    def n_experts(self) -> int: ...
    @property
    def positional(self) -> str: ...
    @property
    def norm(self) -> str: ...
    @property
    def embed_norm(self) -> bool: ...
    @property
    def n_classes(self) -> int: ...
    @property
    def shared_vocab(self) -> bool: ...


# the parameter groups, by id: every parameter of a model belongs to exactly one (see parameter_group)
GROUP_LABELS: dict[str, str] = {
    "source_embedding": "source embedding",
    "target_embedding": "target embedding",
    "segment_embedding": "segment embedding",
    "embedding_norm": "embedding norm",
    "source_positions": "source positions (learned)",
    "target_positions": "target positions (learned)",
    "encoder_relative_bias": "encoder relative bias (T5)",
    "decoder_relative_bias": "decoder relative bias (T5)",
    "encoder_self_attention": "encoder self-attention",
    "encoder_feed_forward": "encoder feed-forward",
    "encoder_norms": "encoder norms",
    "encoder_final_norm": "encoder final norm",
    "decoder_self_attention": "decoder self-attention",
    "decoder_cross_attention": "decoder cross-attention",
    "decoder_feed_forward": "decoder feed-forward",
    "decoder_norms": "decoder norms",
    "decoder_final_norm": "decoder final norm",
    "masked_lm_head": "masked-LM head",
    "classification_head": "classification head",
    "output_projection": "output projection",
}
# the group of each top-level module of the Transformer (its attribute name, the first part of a parameter's name)
_MODULE_GROUPS = {
    "src_embed": "source_embedding",
    "tgt_embed": "target_embedding",
    "segment_embed": "segment_embedding",
    "embed_norm": "embedding_norm",
    "src_pos": "source_positions",
    "tgt_pos": "target_positions",
    "encoder_bias": "encoder_relative_bias",
    "decoder_bias": "decoder_relative_bias",
    "encoder_norm": "encoder_final_norm",
    "decoder_norm": "decoder_final_norm",
    "mlm_transform": "masked_lm_head",
    "pooler": "classification_head",
    "classifier": "classification_head",
    "generator": "output_projection",
}
_SUBLAYER_GROUPS = {"self_attn": "self_attention", "cross_attn": "cross_attention", "ffn": "feed_forward"}


def parameter_group(name: str) -> str:
    """The group id of the parameter ``name``, a ``state_dict`` name (``decoder_layers.0.cross_attn.in_proj.weight``
    → ``decoder_cross_attention``)."""
    parts = name.split(".")
    if parts[0] in ("encoder_layers", "decoder_layers"):
        stack = parts[0].removesuffix("_layers")
        return f"{stack}_{_SUBLAYER_GROUPS.get(parts[2], 'norms')}"
    return _MODULE_GROUPS[parts[0]]


@dataclass(frozen=True, eq=False)
class FamilySpec:
    """What one family is made of and what the program does with it."""

    arch: str  # the value of ModelConfig.arch
    name: str  # how the command line and messages write it
    stacks: tuple[Stack, ...]  # the layer stacks it has
    attention: tuple[AttentionKind, ...]  # the attention kinds it has (the others' AttentionMaps lists are empty)
    inputs: tuple[str, ...]  # the token tensors Transformer.forward takes
    objective: Objective
    data: DataKind
    decoding: tuple[DecodingMode, ...]  # what the decoding panel and the command line do with it
    scores: tuple[str, ...]  # what its evaluations score besides the loss
    plots: tuple[str, ...]  # the training panel's plots that show its scores
    parameter_groups: tuple[str, ...]  # the groups a model of this family may have (options add theirs)
    cli: str  # the command-line tool that uses it
    shared_specials: bool = False  # its end token may also be its start and padding token (GPT-2's <|endoftext|>)
    text_specials: int = 0  # the special tokens each text of a single-stream family is read with (BOS; BOS and EOS)
    quality_range: tuple[float, float] | None = None  # the evaluation plot's scale (None: from zero, growing)
    output_probability: str = ""  # what its output's probability is conditioned on, as the model map writes it (HTML)
    labels: Mapping[str, str] = field(default_factory=dict)  # English labels by place (the window translates)
    help_keys: Mapping[str, str] = field(default_factory=dict)  # help topic by panel

    @property
    def single_stream(self) -> bool:
        """One token stream and one vocabulary (decoder-only, encoder-only)."""
        return len(self.inputs) == 1

    @property
    def layers_field(self) -> str:
        """The configuration field holding the number of layers of a single-stream model's one stack."""
        return f"n_{self.stacks[-1]}_layers"

    def group_label(self, group: str) -> str:
        """The English label of a parameter group, as this family names it."""
        return self.labels.get(f"group:{group}", GROUP_LABELS[group])


@dataclass(frozen=True, eq=False)
class OptionSpec:
    """An option any family may combine with: what it adds."""

    name: str
    applies: Callable[[FamilyConfig], bool]  # whether a configuration has it
    parameter_groups: tuple[str, ...]  # the groups it adds (those of stacks the family has)
    scores: tuple[str, ...]  # what evaluations add with it
    plots: tuple[str, ...]
    labels: Mapping[str, str] = field(default_factory=dict)
    help_keys: Mapping[str, str] = field(default_factory=dict)


_EMBEDDINGS = ("source_embedding", "source_positions", "embedding_norm", "output_projection")
_ENCODER = ("encoder_self_attention", "encoder_feed_forward", "encoder_norms", "encoder_final_norm")
_DECODER = ("decoder_self_attention", "decoder_feed_forward", "decoder_norms", "decoder_final_norm")
_ONE_STREAM = {"group:source_embedding": "token embedding", "group:source_positions": "positions (learned)"}
# What the Attention, Settings and Model panels say of a single-stream family where the paper's model is spoken of
# (their keys: rows:<kind> what a map's rows and columns are; hint:<source> what to do for a map to appear;
# source:<source> a map source's name; pair:source / pair:target / pair:placeholder the typed pair's fields;
# note:greedy a map of the model's own continuation; note:previous_sentence a map of the sentence before the one
# typed; probe:target the probe's second field; subject the family as a sentence's subject; stacks its layers,
# with {n}). A family without one of them reads the panel's own words, which are the encoder–decoder's.
_DECODER_ONLY_TEXTS = {
    "rows:decoder_self": (
        "Rows: positions of the text, labelled “read → predicts”; columns: the tokens read (keys); each "
        "row sums to 1. Hatched cells are masked: a position may not look at later ones, because the "
        "next token, the one it must predict, is there."
    ),
    "hint:pair": "Type a prompt (and, if you like, its continuation) and press Show.",
    "source:pair": "A prompt and its continuation",
    "pair:source": "Prompt",
    "pair:target": "Continuation",
    "pair:placeholder": "empty: the model's own continuation",
    "note:greedy": "continuation: the model's own greedy one",
    "probe:target": "continuation (empty: the model's own)",
    "subject": "A decoder-only model",
    "stacks": "N = {n} decoder layers: masked self-attention and feed-forward, no encoder and no cross-attention",
}
_ENCODER_ONLY_TEXTS = {
    "rows:encoder": (
        "Rows: positions (queries); columns: positions (keys); each row sums to 1. No cell is hatched: "
        "the attention mask hides no position, every token sees the whole text, both ways. A <mask> "
        "token is another thing: a word hidden from the input, which the model guesses from what its "
        "row gathers."
    ),
    "hint:pair": "Type a text (write <mask> where a word is hidden) and press Show.",
    "hint:decoding": "Type a sentence in the fill-mask panel; its attention appears here.",
    "source:pair": "A text of your own",
    "source:decoding": "Following the fill-mask panel",
    "pair:source": "Text",
    "pair:target": "",  # one text: no second field
    "pair:placeholder": "",
    "note:previous_sentence": "previous sentence: the one typed now is read at Fill the mask",
    "subject": "An encoder-only model",
    "stacks": "N = {n} encoder layers: self-attention that looks both ways, no decoder",
}

# What the model map says of each family's parts (keys: input:<stack> what comes in under a stack;
# sources:<attention kind> where that attention's Q, K and V come from; output_use what the program does with the
# output probabilities).
_ENCODER_DECODER_MAP = {
    "input:encoder": "Inputs",
    "input:decoder": "Outputs (shifted right)",
    "sources:encoder": "Q, K and V all come from this layer's input: the source sentence as the layer below left it.",
    "sources:decoder_self": (
        "Q, K and V all come from the target prefix: the words written so far, shifted right behind the start token."
    ),
    "sources:cross": (
        "Q comes from the decoder; K and V come from the encoder's output m, the same for every decoder layer."
    ),
    "output_use": "Greedy decoding takes the most likely piece; beam search keeps the best prefixes.",
}
_DECODER_ONLY_MAP = {
    "input:decoder": "Inputs (the text so far)",
    "sources:decoder_self": (
        "Q, K and V all come from the text so far, as the layer below left it: each token looks at itself "
        "and the tokens before it."
    ),
    "output_use": "Generation takes the most likely piece, or draws one at random, and feeds it back in.",
}
_ENCODER_ONLY_MAP = {
    "input:encoder": "Inputs (some tokens masked)",
    "sources:encoder": (
        "Q, K and V all come from this layer's input: the whole text, masked tokens included, as the layer "
        "below left it; every position looks at every other."
    ),
    "output_use": "At each masked position: the model's guess of the hidden piece.",
}

ENCODER_DECODER = FamilySpec(
    arch="encoder_decoder",
    name="encoder-decoder",
    stacks=("encoder", "decoder"),
    attention=("encoder", "decoder_self", "cross"),
    inputs=("src", "tgt_in"),
    objective="translation",
    data="pairs",
    decoding=("translate", "step"),
    scores=("exact_match", "bleu"),
    plots=("quality_plot",),
    parameter_groups=(
        *_EMBEDDINGS,
        "target_embedding",
        "target_positions",
        *_ENCODER,
        *_DECODER,
        "decoder_cross_attention",
    ),
    cli="model.cli.translate",
    quality_range=(0.0, 100.0),
    output_probability="P(y<sub>t</sub> = w | y<sub>&lt;t</sub>, x)",
    labels={
        "family": "Encoder–decoder (the paper)",
        "family_tip": "Encoder–decoder (the paper)",
        "title": "Encoder–decoder Transformer",
        "attention": "Encoder–decoder",
        "output": "Output probabilities",
        "decoding_dock": "Decoding",
        "quality_plot": "Exact match and BLEU (valid)",
        "quality_axis": "%",
        **_ENCODER_DECODER_MAP,
    },
    help_keys={"training": "training", "map": "map", "decoding": "decoding", "family": "family_encoder_decoder"},
)
DECODER_ONLY = FamilySpec(
    arch="decoder_only",
    name="decoder-only",
    stacks=("decoder",),
    attention=("decoder_self",),
    inputs=("ids",),
    objective="lm",
    data="text",
    decoding=("generate",),
    scores=("perplexity",),
    plots=("quality_plot",),
    parameter_groups=(*_EMBEDDINGS, *_DECODER),
    cli="model.cli.generate",
    shared_specials=True,
    text_specials=1,  # BOS before the input (EOS after the target)
    output_probability="P(x<sub>t</sub> = w | x<sub>&lt;t</sub>)",
    labels={
        **_ONE_STREAM,
        "family": "GPT (decoder-only)",
        "family_tip": "GPT: decoder-only, next token",
        "title": "Decoder-only Transformer (GPT: predicts the next token)",
        "attention": "Decoder-only (GPT)",
        "attention:decoder_self": "Self-attention (causal)",
        "output": "Next-token probabilities",
        "decoding_dock": "Decoding",
        "quality_plot": "Perplexity (valid)",
        "quality_axis": "perplexity",
        "badge": "GPT · ",
        **_DECODER_ONLY_TEXTS,
        **_DECODER_ONLY_MAP,
    },
    help_keys={
        "training": "training_decoder_only",
        "map": "map_decoder_only",
        "decoding": "generation",
        "family": "family_decoder_only",
    },
)
ENCODER_ONLY = FamilySpec(
    arch="encoder_only",
    name="encoder-only",
    stacks=("encoder",),
    attention=("encoder",),
    inputs=("ids",),
    objective="mlm",
    data="text",
    decoding=("fill_mask",),
    scores=("mlm_accuracy",),
    plots=("quality_plot",),
    parameter_groups=(*_EMBEDDINGS, "segment_embedding", *_ENCODER, "masked_lm_head", "classification_head"),
    cli="model.cli.fill_mask",
    text_specials=2,  # BOS text EOS
    quality_range=(0.0, 100.0),
    output_probability="P(x<sub>i</sub> = w | x<sub>∖i</sub>)",
    labels={
        **_ONE_STREAM,
        "family": "BERT (encoder-only)",
        "family_tip": "BERT: encoder-only, masked tokens",
        "title": "Encoder-only Transformer (BERT: fills in masked tokens)",
        "attention": "Encoder-only (BERT)",
        "attention:encoder": "Self-attention (both ways)",
        "output": "Masked-token probabilities",
        "decoding_dock": "Fill the mask",
        "quality_plot": "Masked-token accuracy (valid)",
        "quality_plot:nsp": "Masked-token and next-sentence accuracy (valid)",
        "quality_axis": "%",
        "badge": "BERT · ",
        **_ENCODER_ONLY_TEXTS,
        **_ENCODER_ONLY_MAP,
    },
    help_keys={
        "training": "training_encoder_only",
        "map": "map_encoder_only",
        "decoding": "family_encoder_only",
        "family": "family_encoder_only",
    },
)
FAMILIES: dict[str, FamilySpec] = {spec.arch: spec for spec in (ENCODER_DECODER, DECODER_ONLY, ENCODER_ONLY)}


def _has_experts(cfg: FamilyConfig) -> bool:
    return cfg.n_experts > 1


def _has_relative_bias(cfg: FamilyConfig) -> bool:
    return cfg.positional == "t5_relative"


MOE = OptionSpec(
    name="moe",
    applies=_has_experts,
    parameter_groups=(),  # the router and the experts are the layers' feed-forward groups
    scores=("aux_loss", "expert_load"),
    plots=("expert_load_plot",),
    labels={"loss_plot": "Loss (balance loss: 1 = even)"},  # the balance loss, its layers' mean, beside the loss
    help_keys={"training": "training_moe", "map": "map_moe"},
)
T5_BIAS = OptionSpec(
    name="t5_bias",
    applies=_has_relative_bias,
    parameter_groups=("encoder_relative_bias", "decoder_relative_bias"),
    scores=(),
    plots=("pe_t5_buckets",),
    help_keys={"map": "map_t5"},  # its training is the family's
)
OPTIONS: tuple[OptionSpec, ...] = (MOE, T5_BIAS)


def family_of(cfg: FamilyConfig) -> FamilySpec:
    """The spec of the family of ``cfg``."""
    return FAMILIES[cfg.arch]


def options_of(cfg: FamilyConfig) -> tuple[OptionSpec, ...]:
    """The options ``cfg`` combines with its family (in the order of :data:`OPTIONS`)."""
    return tuple(option for option in OPTIONS if option.applies(cfg))


def scores(cfg: FamilyConfig) -> tuple[str, ...]:
    """What evaluations of a model of ``cfg`` report besides the loss: its family's scores, then its options'."""
    return family_of(cfg).scores + tuple(score for option in options_of(cfg) for score in option.scores)


def help_keys(cfg: FamilyConfig, panel: str) -> tuple[str, ...]:
    """The help topics of ``panel`` for ``cfg``: its family's, then those of its options that have one."""
    found = [family_of(cfg).help_keys.get(panel, panel)]
    found += [option.help_keys[panel] for option in options_of(cfg) if panel in option.help_keys]
    return tuple(found)


def parameter_groups(cfg: FamilyConfig) -> tuple[str, ...]:
    """The parameter groups a model of ``cfg`` has, each with at least one parameter (ids, in GROUP_LABELS' order).

    From the family and its options, and what the configuration turns on: learned positions, Pre-LN's final norms,
    BERT's embedding norm and classification head, a target embedding of its own.
    """
    spec = family_of(cfg)
    possible = set(spec.parameter_groups)
    for option in options_of(cfg):
        possible.update(g for g in option.parameter_groups if g.split("_")[0] in spec.stacks)
    absent = set()
    if cfg.positional != "learned":
        absent |= {"source_positions", "target_positions"}
    if cfg.norm != "pre":
        absent |= {"encoder_final_norm", "decoder_final_norm"}
    if not cfg.embed_norm:
        absent.add("embedding_norm")
    if not cfg.n_classes:
        absent.add("classification_head")
    if cfg.shared_vocab:
        absent.add("target_embedding")  # one table serves both
    return tuple(g for g in GROUP_LABELS if g in possible - absent)
