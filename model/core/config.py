"""Model configuration: one frozen dataclass, validated on construction, with presets.

The GUI and the CLI change a configuration with ``dataclasses.replace``; every
replacement is validated again, so a configuration that cannot work never
reaches the model. The fields a person sets carry their label, help and range
(:mod:`model.core.settings`), from which the command line and the settings form are made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from model.core.settings import ConfigError, choice_problems, from_plain, setting, to_plain
from model.families.registry import ENCODER_DECODER, FAMILIES, MOE, T5_BIAS, FamilySpec, family_of

Arch = Literal["encoder_decoder", "decoder_only", "encoder_only"]
Positional = Literal["sinusoidal", "learned", "rope", "t5_relative", "none"]
Norm = Literal["post", "pre"]
Activation = Literal["relu", "gelu", "silu", "gelu_tanh"]
SinusoidLayout = Literal["interleaved", "split"]
ARCHS: tuple[str, ...] = get_args(Arch)
SINGLE_STREAM = tuple(arch for arch, spec in FAMILIES.items() if spec.single_stream)
POSITIONAL_KINDS: tuple[str, ...] = get_args(Positional)
NORM_KINDS: tuple[str, ...] = get_args(Norm)
ACTIVATIONS: tuple[str, ...] = get_args(Activation)

# Architecture presets. "paper_base" and "paper_big" are the rows of Table 3 of
# "Attention Is All You Need"; like the paper (§3.4) they tie the output projection
# to the target embedding, and with a shared vocabulary (shared_vocab) one matrix
# serves both embeddings and the output. "tiny" trains a copy task in seconds on a
# laptop CPU, "small" learns the bundled English–Chinese grammar in minutes.
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(
        d_model=64,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_ff=256,
        dropout=0.0,
        max_len=128,
        tie_embeddings=False,
    ),
    "small": dict(
        d_model=128,
        n_heads=4,
        n_encoder_layers=3,
        n_decoder_layers=3,
        d_ff=512,
        dropout=0.1,
        max_len=256,
        tie_embeddings=False,
    ),
    "paper_base": dict(
        d_model=512,
        n_heads=8,
        n_encoder_layers=6,
        n_decoder_layers=6,
        d_ff=2048,
        dropout=0.1,
        max_len=512,
        tie_embeddings=True,
    ),
    "paper_big": dict(
        d_model=1024,
        n_heads=16,
        n_encoder_layers=6,
        n_decoder_layers=6,
        d_ff=4096,
        dropout=0.3,
        max_len=512,
        tie_embeddings=True,
    ),
}


@dataclass(frozen=True)
class ModelConfig:
    """Shape and options of a Transformer of one of three families.

    ``arch`` is the family: "encoder_decoder" (the paper's translator, T5), "decoder_only" (GPT: a causal stack
    that predicts the next token) or "encoder_only" (BERT: a bidirectional stack that predicts masked tokens).
    A single-stream family has one vocabulary, ``vocab_size`` (source and target sizes follow it); a decoder-only
    model's layers are ``n_decoder_layers``, an encoder-only model's ``n_encoder_layers``.
    """

    src_vocab_size: int  # source vocabulary size, specials included (single-stream: 0, or = vocab_size)
    tgt_vocab_size: int  # target vocabulary size, specials included (single-stream: = vocab_size)
    arch: Arch = setting(
        "encoder_decoder",
        "Family",
        "encoder_decoder (the paper, T5), decoder_only (GPT: predicts the next token, looks only back) or "
        "encoder_only (BERT: fills in masked tokens, looks both ways)",
        form=True,
    )
    vocab_size: int = 0  # single-stream families: the one vocabulary's size (0 for encoder–decoder)
    d_model: int = setting(512, "d_model", "width of every residual stream", form=True, low=4, high=4096, step=8)
    n_heads: int = setting(
        8,
        "Heads",
        "attention heads per attention block; d_model % n_heads == 0",
        flag="heads",
        form=True,
        low=1,
        high=64,
    )
    n_encoder_layers: int = setting(
        6, "Encoder layers", "N in the paper, encoder side", flag="encoder-layers", form=True, low=1, high=48
    )
    n_decoder_layers: int = setting(
        6, "Decoder layers", "N in the paper, decoder side", flag="decoder-layers", form=True, low=1, high=48
    )
    d_ff: int = setting(
        2048, "d_ff", "inner width of the position-wise feed-forward network", form=True, low=4, high=32768, step=64
    )
    dropout: float = setting(
        0.1,
        "Dropout",
        "P_drop: residual, embedding, attention and FFN dropout",
        form=True,
        low=0.0,
        high=0.95,
        step=0.05,
        decimals=2,
    )
    max_len: int = setting(512, "Longest sequence", "longest sequence (positions) the model accepts, BOS/EOS included")
    positional: Positional = setting(
        "sinusoidal",
        "Positions",
        "positions: sinusoidal (the paper), a learned table, rotary (RoPE), or T5's relative bias (bucketed "
        "offsets, a learned bias per head added to the attention scores)",
        form=True,
        hidden=("none",),  # no positions at all: an experiment's broken model, set in code
    )
    norm: Norm = setting(
        "post", "Normalisation", "post (the paper: x = LN(x + f(x))) or pre (x = x + f(LN(x)), final LN)", form=True
    )
    activation: Activation = setting(
        "relu",
        "Activation",
        'FFN non-linearity: relu (the paper), gelu (BERT), silu ("swish", Marian) or '
        "gelu_tanh (GPT-2's tanh approximation of gelu)",
        form=True,
    )
    shared_vocab: bool = False  # source and target share one vocabulary and embedding table
    tie_embeddings: bool = setting(
        False,
        "Tied embeddings",
        "output projection shares the target embedding's weights (paper presets tie)",
        form=True,
    )
    n_experts: int = setting(
        1,
        "Experts",
        "Mixture-of-Experts: N expert FFNs per layer, a router sends each token to k of them "
        "(1 = the paper's dense FFN)",
        flag="experts",
        form=True,
        low=1,
        high=64,
    )
    experts_top_k: int = setting(
        1,
        "Experts per token",
        "k: experts each token is sent to, their outputs weighted by the router",
        flag="experts-top-k",
        form=True,
        low=1,
        high=64,
    )
    aux_loss_coef: float = setting(
        0.01,
        "Balance loss",
        "weight of the load-balancing loss N·Σ f_i·P_i (mean over the MoE layers, 1 "
        "when balanced) added to the training loss (0: no balancing)",
        flag="aux-loss",
        form=True,
        low=0.0,
        high=10.0,
        step=0.01,
        decimals=3,
    )
    n_classes: int = 0  # encoder-only: classes of the head on the first (<cls>) position, e.g. 2 for NSP
    t5_buckets: int = 32  # T5 relative bias: offset buckets (bidirectional: half per direction)
    t5_max_distance: int = 128  # T5 relative bias: offsets from here on share the last bucket
    layer_norm_eps: float = 1e-5  # eps inside the square root of LayerNorm
    # What models opened from a Hugging Face folder need (see model/hf/folders.py); the defaults are the paper's:
    sinusoid_layout: SinusoidLayout = "interleaved"  # sin/cos per dimension pair; "split": sines first (Marian)
    scale_embedding: bool = True  # token embeddings × √d_model (the paper, Marian); GPT-2 and BERT do not scale
    embed_norm: bool = False  # a LayerNorm over the summed embeddings before the first layer (BERT)
    pad_id: int = 0  # padding token, never attended to
    bos_id: int = 1  # begin-of-sequence token, starts every decoder input (Marian: the padding token)
    eos_id: int = 2  # end-of-sequence token, ends every decoder output (GPT-2: also its BOS and padding)
    # Switches that break one part of the paper's model for an experiment (model/experiments/); set in code, the
    # defaults are the paper's (older checkpoints, saved without them, read as the paper's):
    residual: bool = True  # x + Sublayer(x) around every sublayer; False: Sublayer(x) alone, no skip connection
    scaled_attention: bool = True  # softmax(QKᵀ/√d_k); False: softmax(QKᵀ), the scores not divided by √d_k
    causal: bool = True  # the decoder's self-attention sees no later position; False: it sees all (padding hidden)

    def __post_init__(self) -> None:
        one_stream = self._family().single_stream
        if one_stream and self.vocab_size == 0 and self.src_vocab_size == self.tgt_vocab_size:
            object.__setattr__(self, "vocab_size", self.src_vocab_size)  # one size given the old way
        if one_stream and isinstance(self.vocab_size, int) and self.vocab_size:
            for name in ("src_vocab_size", "tgt_vocab_size"):  # one vocabulary: both sizes follow it
                if getattr(self, name) in (0, self.vocab_size):
                    object.__setattr__(self, name, self.vocab_size)
            if self.shared_vocab is False:
                object.__setattr__(self, "shared_vocab", True)
        problems = self._problems()
        if problems:
            raise ConfigError("Invalid model configuration", problems)

    def _problems(self) -> list[str]:
        p: list[str] = []
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            value = getattr(self, name)
            if value == 0 and name.endswith("vocab_size"):
                what = "vocab_size" if self._family().single_stream else "src_vocab_size and tgt_vocab_size"
                p.append(f"a {self.arch} ModelConfig needs {what} (the vocabulary size{'s' if 'and' in what else ''})")
                break
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                p.append(f"{name} must be a positive integer (got {value!r})")
        for name in ("n_encoder_layers", "n_decoder_layers", "n_experts", "experts_top_k", "t5_buckets"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                p.append(f"{name} must be at least 1 (got {value!r})")
        if p:
            return p
        p.extend(self._family_problems())
        if self.d_model % self.n_heads:
            divisors = [h for h in range(1, min(self.d_model, 64) + 1) if self.d_model % h == 0]
            p.append(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}); "
                f"choose n_heads from {divisors[-6:]} or change d_model"
            )
        elif self.positional == "rope" and (self.d_model // self.n_heads) % 2:
            p.append(
                f"RoPE rotates pairs of dimensions, so the head size d_model/n_heads "
                f"({self.d_model}/{self.n_heads} = {self.d_model // self.n_heads}) must be even; "
                f"change d_model or n_heads, or use sinusoidal/learned positions"
            )
        p.extend(choice_problems(self))  # positional, norm, activation
        p.extend(
            f"{name} must be True or False (got {getattr(self, name)!r})"
            for name in ("residual", "scaled_attention", "causal")
            if not isinstance(getattr(self, name), bool)
        )
        if not 0.0 <= self.dropout < 1.0:
            p.append(f"dropout must be in [0, 1) (got {self.dropout!r})")
        if not self.layer_norm_eps > 0:
            p.append(f"layer_norm_eps must be positive (got {self.layer_norm_eps!r})")
        if self.shared_vocab and self.src_vocab_size != self.tgt_vocab_size:
            p.append(
                f"shared_vocab needs equal vocabulary sizes (source {self.src_vocab_size}, "
                f"target {self.tgt_vocab_size}); train one shared tokenizer or turn shared_vocab off"
            )
        specials = {"pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id}
        if not self._family().shared_specials and self.eos_id in (self.pad_id, self.bos_id):
            p.append(f"eos_id must differ from pad_id and bos_id (got {specials})")
        smallest = min(self.src_vocab_size, self.tgt_vocab_size)
        for name, value in specials.items():
            if not 0 <= value < smallest:
                p.append(f"{name} ({value}) must lie inside both vocabularies (size {smallest})")
        if self.max_len < 2:
            p.append("max_len must be at least 2 (BOS plus one token)")
        return p

    def _family_problems(self) -> list[str]:
        p: list[str] = []
        family = self._family()
        if family.single_stream:
            if self.vocab_size != self.src_vocab_size or self.vocab_size != self.tgt_vocab_size:
                p.append(
                    f"a {self.arch} model has one vocabulary: give vocab_size (got vocab_size {self.vocab_size}, "
                    f"source {self.src_vocab_size}, target {self.tgt_vocab_size})"
                )
        elif self.vocab_size:
            p.append("vocab_size is for single-stream models; an encoder–decoder model takes src/tgt_vocab_size")
        if self.experts_top_k > self.n_experts:
            p.append(
                f"each token goes to experts_top_k ({self.experts_top_k}) of n_experts ({self.n_experts}) experts; "
                f"lower experts_top_k or add experts"
            )
        if not isinstance(self.aux_loss_coef, (int, float)) or not self.aux_loss_coef >= 0:
            p.append(f"aux_loss_coef must be ≥ 0 (got {self.aux_loss_coef!r})")
        if not isinstance(self.n_classes, int) or self.n_classes < 0 or self.n_classes == 1:
            p.append(f"n_classes must be 0 (no head) or at least 2 (got {self.n_classes!r})")
        elif self.n_classes and "classification_head" not in family.parameter_groups:
            p.append("a classification head (n_classes) belongs to an encoder-only model")
        if T5_BIAS.applies(self) and (self.t5_max_distance < self.t5_buckets or self.t5_buckets < 4):
            p.append(
                f"T5 relative bias needs at least 4 buckets and t5_max_distance ≥ t5_buckets "
                f"(got {self.t5_buckets}, {self.t5_max_distance})"
            )
        return p

    def _family(self) -> FamilySpec:
        """The family's spec; while an unknown ``arch`` waits to be reported, the paper's."""
        return FAMILIES.get(self.arch, ENCODER_DECODER)

    @property
    def family(self) -> FamilySpec:
        """What this model's family is made of (:mod:`model.families.registry`)."""
        return family_of(self)

    @property
    def single_stream(self) -> bool:
        """Decoder-only or encoder-only: one token stream, one vocabulary."""
        return self._family().single_stream

    @property
    def n_layers(self) -> int:
        """Layers of a single-stream model (decoder-only: decoder layers; encoder-only: encoder layers)."""
        return int(getattr(self, self._family().layers_field))

    @property
    def never_emitted(self) -> list[int]:
        """Tokens decoding never chooses: padding and the start token, unless one is also the end token."""
        return sorted({self.pad_id, self.bos_id} - {self.eos_id})

    @property
    def moe(self) -> bool:
        """Sparse experts in place of each layer's FFN."""
        return MOE.applies(self)

    @property
    def head_dim(self) -> int:
        """d_k = d_v = d_model / n_heads."""
        return self.d_model // self.n_heads

    @classmethod
    def preset(
        cls, name: str, *, src_vocab_size: int = 0, tgt_vocab_size: int = 0, vocab_size: int = 0, **overrides: Any
    ) -> ModelConfig:
        """A named architecture ("tiny", "small", "paper_base", "paper_big") for given vocabularies.

        Any field may be overridden, e.g. ``preset("small", ..., norm="pre")``; a single-stream family takes
        ``vocab_size``: ``preset("small", arch="decoder_only", vocab_size=8000)``.
        """
        if name not in PRESETS:
            raise ValueError(f"Unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        fields = {**PRESETS[name], **overrides}
        return cls(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, vocab_size=vocab_size, **fields)

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelConfig:
        """Build from plain data (e.g. read from a checkpoint): unknown keys are refused, missing ones take
        the defaults (see :func:`model.core.settings.from_plain`)."""
        return from_plain(cls, data, "model configuration")
