"""model/core/feedforward.py: the position-wise FFN of the paper (§3.3), FFN(x) = max(0, xW₁ + b₁)W₂ + b₂.

Checked against numbers worked out by hand for tiny hand-set weights, and against the formula computed here from
the module's own weights for each non-linearity the configuration offers (relu; gelu with erf; silu; gelu's tanh
approximation, written out from their definitions). Dropout (on the hidden layer) acts in train mode only. The
plain-tensor form a decoding step uses computes the same and holds the module's tensors, not copies.
"""

import math

import pytest
import torch

from model.core.config import ACTIVATIONS as CONFIG_ACTIVATIONS
from model.core.feedforward import ACTIVATIONS, FeedForward


def hand_set_ffn(activation: str = "relu") -> FeedForward:
    """d_model 2, d_ff 3, with weights chosen so every product is easy to do in one's head."""
    ffn = FeedForward(d_model=2, d_ff=3, dropout=0.0, activation=activation).eval()
    with torch.no_grad():
        # nn.Linear stores W as [out, in]: hidden_j = Σ_i W1[j, i] x_i + b1[j]
        ffn.linear1.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]]))
        ffn.linear1.bias.copy_(torch.tensor([0.0, -1.0, 0.5]))
        ffn.linear2.weight.copy_(torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]]))
        ffn.linear2.bias.copy_(torch.tensor([0.25, -0.5]))
    return ffn


def test_relu_ffn_by_hand():
    ffn = hand_set_ffn()
    x = torch.tensor([[[2.0, 3.0], [-1.0, 0.5]]])  # [B=1, L=2, d=2]
    # position 0: xW1 + b1 = (2, 3 - 1, 2 - 3 + 0.5) = (2, 2, -0.5) → relu (2, 2, 0)
    #             out = (2 + 4 + 0 + 0.25, -2 + 0 + 0 - 0.5) = (6.25, -2.5)
    # position 1: xW1 + b1 = (-1, 0.5 - 1, -1 - 0.5 + 0.5) = (-1, -0.5, -1) → relu (0, 0, 0)
    #             out = b2 = (0.25, -0.5)
    want = torch.tensor([[[6.25, -2.5], [0.25, -0.5]]])
    with torch.no_grad():
        assert torch.allclose(ffn(x), want, atol=1e-6)


def test_gelu_ffn_by_hand():
    ffn = hand_set_ffn("gelu")
    x = torch.tensor([[2.0, 3.0]])
    # hidden before the non-linearity (2, 2, -0.5), as above; gelu(z) = z · Φ(z)
    phi = lambda z: 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))  # noqa: E731
    h = [2.0 * phi(2.0), 2.0 * phi(2.0), -0.5 * phi(-0.5)]
    want = torch.tensor([[h[0] + 2 * h[1] + 3 * h[2] + 0.25, -h[0] + h[2] - 0.5]])
    with torch.no_grad():
        assert torch.allclose(ffn(x), want, atol=1e-6)


# the non-linearities from their definitions, on float64 tensors
BY_DEFINITION = {
    "relu": lambda z: torch.maximum(z, torch.zeros_like(z)),  # max(0, z): the paper
    "gelu": lambda z: 0.5 * z * (1.0 + torch.erf(z / math.sqrt(2.0))),
    "silu": lambda z: z / (1.0 + torch.exp(-z)),
    "gelu_tanh": lambda z: 0.5 * z * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3))),
}


def test_every_configurable_activation_is_offered():
    assert set(ACTIVATIONS) == set(CONFIG_ACTIVATIONS) == set(BY_DEFINITION)


@pytest.mark.parametrize("activation", sorted(BY_DEFINITION))
def test_matches_the_formula_from_its_own_weights(activation):
    torch.manual_seed(4)
    ffn = FeedForward(d_model=8, d_ff=16, dropout=0.3, activation=activation).eval()  # eval: dropout off
    x = torch.randn(3, 5, 8)
    W1, b1 = ffn.linear1.weight.double(), ffn.linear1.bias.double()
    W2, b2 = ffn.linear2.weight.double(), ffn.linear2.bias.double()
    want = BY_DEFINITION[activation](x.double() @ W1.T + b1) @ W2.T + b2
    with torch.no_grad():
        got = ffn(x)
        sub, routing = ffn.sublayer(x)
    assert got.shape == x.shape
    assert torch.allclose(got.double(), want, atol=1e-5)
    assert torch.equal(sub, got) and routing is None


def test_each_position_is_transformed_alike():
    torch.manual_seed(5)
    ffn = FeedForward(d_model=6, d_ff=12, dropout=0.0, activation="relu").eval()
    x = torch.randn(2, 4, 6)
    with torch.no_grad():
        whole = ffn(x)
        one_by_one = torch.stack([ffn(x[:, i]) for i in range(4)], dim=1)
        reversed_positions = ffn(x.flip(1)).flip(1)
    assert torch.allclose(whole, one_by_one, atol=1e-6)
    assert torch.allclose(whole, reversed_positions, atol=1e-6)


def identity_out(p: float) -> FeedForward:
    """d_ff = d_model and W₂ = I, b₂ = 0: the output is the hidden layer itself, after dropout."""
    ffn = FeedForward(d_model=64, d_ff=64, dropout=p, activation="relu")
    with torch.no_grad():
        ffn.linear1.weight.copy_(torch.eye(64))
        ffn.linear1.bias.fill_(1.0)
        ffn.linear2.weight.copy_(torch.eye(64))
        ffn.linear2.bias.zero_()
    return ffn


def test_dropout_only_in_train_mode():
    ffn = identity_out(0.5)
    x = torch.rand(4, 8, 64)  # ≥ 0, so relu(x + 1) = x + 1 > 0 everywhere
    hidden = x + 1.0
    with torch.no_grad():
        ffn.eval()
        assert torch.allclose(ffn(x), hidden, atol=1e-6)
        assert torch.equal(ffn(x), ffn(x))  # deterministic
        ffn.train()
        dropped = ffn(x)
        again = ffn(x)
    # inverted dropout: each hidden unit is either zeroed or scaled by 1 / (1 − p) = 2
    zeroed = dropped == 0
    kept = torch.isclose(dropped, 2.0 * hidden, atol=1e-5)
    assert (zeroed | kept).all()
    assert 0.3 < zeroed.float().mean().item() < 0.7  # about half of 2048 units
    assert not torch.equal(dropped, again)  # a fresh draw each call


def test_zero_dropout_train_equals_eval():
    ffn = identity_out(0.0)
    x = torch.randn(2, 3, 64)
    with torch.no_grad():
        train = ffn.train()(x)
        evaluated = ffn.eval()(x)
    assert torch.equal(train, evaluated)


@pytest.mark.parametrize("activation", sorted(BY_DEFINITION))
def test_step_function_equals_the_module_in_eval(activation):
    torch.manual_seed(6)
    ffn = FeedForward(d_model=8, d_ff=16, dropout=0.5, activation=activation).eval()
    step = ffn.step_function()
    x = torch.randn(2, 1, 8)
    with torch.no_grad():
        assert torch.allclose(step(x), ffn(x), atol=1e-6)


def test_step_function_holds_the_module_tensors_not_copies():
    ffn = hand_set_ffn()
    step = ffn.step_function()
    x = torch.tensor([[2.0, 3.0]])
    with torch.no_grad():
        ffn.linear2.bias.add_(1.0)  # a change to the module is seen by the step
        assert torch.allclose(step(x), torch.tensor([[7.25, -1.5]]), atol=1e-6)


def test_dense_ffn_has_no_inactive_parameters():
    assert FeedForward(4, 8, 0.0, "relu").inactive_parameters() == 0
