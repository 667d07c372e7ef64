"""Model configuration: one frozen dataclass, validated on construction, with presets.

The GUI and the CLI change a configuration with ``dataclasses.replace``; every
replacement is validated again, so a configuration that cannot work never
reaches the model. The fields a person sets carry their label, help and range
(:mod:`model.plain_data`), from which the command line and the settings form are made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from model.plain_data import ConfigError, choice_problems, from_plain, setting, to_plain

Positional = Literal["sinusoidal", "learned", "rope"]
Norm = Literal["post", "pre"]
Activation = Literal["relu", "gelu"]
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
    """Shape and options of an encoder–decoder Transformer."""

    src_vocab_size: int  # source vocabulary size, specials included
    tgt_vocab_size: int  # target vocabulary size, specials included
    d_model: int = setting(512, "d_model", "width of every residual stream", form=True, low=4, high=4096, step=8)
    n_heads: int = setting(
        8, "Heads", "attention heads per attention block; d_model % n_heads == 0", flag="heads", form=True, low=1,
        high=64,
    )  # fmt: skip
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
        0.1, "Dropout", "P_drop: residual, embedding, attention and FFN dropout", form=True, low=0.0, high=0.95,
        step=0.05, decimals=2,
    )  # fmt: skip
    max_len: int = setting(512, "Longest sequence", "longest sequence (positions) the model accepts, BOS/EOS included")
    positional: Positional = setting(
        "sinusoidal", "Positions", "positions: sinusoidal (the paper), a learned table, or rotary (RoPE)", form=True
    )
    norm: Norm = setting(
        "post", "Normalisation", "post (the paper: x = LN(x + f(x))) or pre (x = x + f(LN(x)), final LN)", form=True
    )
    activation: Activation = setting("relu", "Activation", "FFN non-linearity: relu (the paper) or gelu", form=True)
    shared_vocab: bool = False  # source and target share one vocabulary and embedding table
    tie_embeddings: bool = setting(
        False, "Tied embeddings", "output projection shares the target embedding's weights (paper presets tie)",
        form=True,
    )  # fmt: skip
    layer_norm_eps: float = 1e-5  # eps inside the square root of LayerNorm
    pad_id: int = 0  # padding token, never attended to, never emitted
    bos_id: int = 1  # begin-of-sequence token, starts every decoder input
    eos_id: int = 2  # end-of-sequence token, ends every decoder output

    def __post_init__(self) -> None:
        problems = self._problems()
        if problems:
            raise ConfigError("Invalid model configuration", problems)

    def _problems(self) -> list[str]:
        p: list[str] = []
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                p.append(f"{name} must be a positive integer (got {value!r})")
        for name in ("n_encoder_layers", "n_decoder_layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                p.append(f"{name} must be at least 1 (got {value!r})")
        if p:
            return p
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
        if len(set(specials.values())) != 3:
            p.append(f"pad_id, bos_id and eos_id must differ (got {specials})")
        smallest = min(self.src_vocab_size, self.tgt_vocab_size)
        for name, value in specials.items():
            if not 0 <= value < smallest:
                p.append(f"{name} ({value}) must lie inside both vocabularies (size {smallest})")
        if self.max_len < 2:
            p.append("max_len must be at least 2 (BOS plus one token)")
        return p

    @property
    def head_dim(self) -> int:
        """d_k = d_v = d_model / n_heads."""
        return self.d_model // self.n_heads

    @classmethod
    def preset(cls, name: str, *, src_vocab_size: int, tgt_vocab_size: int, **overrides: Any) -> ModelConfig:
        """A named architecture ("tiny", "small", "paper_base", "paper_big") for given vocabularies.

        Any field may be overridden, e.g. ``preset("small", ..., norm="pre")``.
        """
        if name not in PRESETS:
            raise ValueError(f"Unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        fields = {**PRESETS[name], **overrides}
        return cls(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, **fields)

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelConfig:
        """Build from plain data (e.g. read from a checkpoint): unknown keys are refused, missing ones take
        the defaults (see :func:`model.plain_data.from_plain`)."""
        return from_plain(cls, data, "model configuration")
