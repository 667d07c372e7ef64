"""The paper's position-wise feed-forward network (section 3.3), applied to each position alike.

A layer asks its feed-forward sublayer three things (:class:`model.core.layers.FeedForwardSublayer`): its output
with what a router did (nothing, here), the plain-tensor form one decoding step uses, and how many of its
parameters a token skips (none, here). Mixture-of-Experts layers answer the same (:mod:`model.families.moe`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch.nn.functional as F
from torch import Tensor, nn


def _gelu_tanh(x: Tensor) -> Tensor:
    """GELU with the tanh approximation (GPT-2's "gelu_new")."""
    return F.gelu(x, approximate="tanh")


# the FFN non-linearities by configuration name (model.core.config.Activation)
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "silu": F.silu,
    "gelu_tanh": _gelu_tanh,
}


class FeedForward(nn.Module):
    """FFN(x) = W_2 · act(W_1 x + b_1) + b_2, applied to each position alike."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = ACTIVATIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))

    def sublayer(self, x: Tensor, real: Tensor | None = None) -> tuple[Tensor, None]:
        """The sublayer's output, and no routing (``real`` is for layers with a router)."""
        return self(x), None

    def step_function(self) -> Callable[[Tensor, Callable[..., Tensor]], Tensor]:
        """The same FFN on plain tensors, for one decoding step (see :func:`model.core.layers.decoder_step`)."""
        return DenseStep(
            (self.linear1.weight, self.linear1.bias), (self.linear2.weight, self.linear2.bias), self.activation
        )

    def inactive_parameters(self) -> int:
        """Parameters a token does not pass through: none, every token uses the whole FFN."""
        return 0


@dataclass(frozen=True)
class DenseStep:
    """A dense FFN's tensors (the same tensors as the module's, not copies), callable like the module."""

    ff1: tuple[Tensor, Tensor]
    ff2: tuple[Tensor, Tensor]
    activation: Callable[[Tensor], Tensor]

    def __call__(self, h: Tensor, linear: Callable[..., Tensor] = F.linear) -> Tensor:
        return linear(self.activation(linear(h, *self.ff1)), *self.ff2)
