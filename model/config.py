"""Model configuration: one frozen dataclass, validated on construction, with presets.

The GUI and the CLI change a configuration with ``dataclasses.replace``; every
replacement is validated again, so a configuration that cannot work never
reaches the model.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

POSITIONAL_KINDS = ("sinusoidal", "learned", "rope")
NORM_KINDS = ("post", "pre")
ACTIVATIONS = ("relu", "gelu")

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
    ),
    "small": dict(
        d_model=128,
        n_heads=4,
        n_encoder_layers=3,
        n_decoder_layers=3,
        d_ff=512,
        dropout=0.1,
        max_len=256,
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
    d_model: int = 512  # width of every residual stream
    n_heads: int = 8  # attention heads per attention block; d_model % n_heads == 0
    n_encoder_layers: int = 6  # N in the paper, encoder side
    n_decoder_layers: int = 6  # N in the paper, decoder side
    d_ff: int = 2048  # inner width of the position-wise feed-forward network
    dropout: float = 0.1  # P_drop: residual, embedding, attention and FFN dropout
    max_len: int = 512  # longest sequence (positions) the model accepts, BOS/EOS included
    positional: str = "sinusoidal"  # "sinusoidal" | "learned" | "rope"
    norm: str = "post"  # "post" (paper: x = LN(x + f(x))) | "pre" (x = x + f(LN(x)), final LN)
    activation: str = "relu"  # FFN non-linearity: "relu" (paper) | "gelu"
    shared_vocab: bool = False  # source and target share one vocabulary and embedding table
    tie_embeddings: bool = False  # output projection shares the target embedding's weights
    layer_norm_eps: float = 1e-5  # eps inside the square root of LayerNorm
    pad_id: int = 0  # padding token, never attended to, never emitted
    bos_id: int = 1  # begin-of-sequence token, starts every decoder input
    eos_id: int = 2  # end-of-sequence token, ends every decoder output

    def __post_init__(self) -> None:
        problems = self._problems()
        if problems:
            raise ValueError("Invalid model configuration: " + "; ".join(problems))

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
        if self.positional not in POSITIONAL_KINDS:
            p.append(f"positional must be one of {POSITIONAL_KINDS} (got {self.positional!r})")
        if self.norm not in NORM_KINDS:
            p.append(f"norm must be one of {NORM_KINDS} (got {self.norm!r})")
        if self.activation not in ACTIVATIONS:
            p.append(f"activation must be one of {ACTIVATIONS} (got {self.activation!r})")
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
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Build from a plain dict (e.g. read from a checkpoint), refusing unknown keys."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown model configuration keys: {unknown}")
        return cls(**data)
