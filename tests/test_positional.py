import math

import pytest
import torch

from model.core.positional import RotaryEmbedding, relative_shift_matrix, sinusoidal_table


def test_sinusoidal_values_equal_the_formula():
    pe = sinusoidal_table(50, 16)
    for pos in (0, 1, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_shift_by_k_is_one_matrix_for_every_position(k):
    d = 32
    pe = sinusoidal_table(100, d).double()
    m = relative_shift_matrix(k, d)
    shifted = pe[: 100 - k] @ m.T  # rows: M_k · PE(pos)
    assert torch.allclose(shifted, pe[k:], atol=1e-5)
    # M_k is a rotation: orthogonal, and M_a M_b = M_{a+b}
    assert torch.allclose(m @ m.T, torch.eye(d, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(relative_shift_matrix(2, d) @ m, relative_shift_matrix(k + 2, d), atol=1e-12)


def test_rope_scores_depend_only_on_offset():
    torch.manual_seed(0)
    rope = RotaryEmbedding(head_dim=8, max_len=64)
    q, k = torch.randn(8), torch.randn(8)

    def score(m, n):
        qs = q.expand(1, 1, 64, 8)
        rq = rope(qs.contiguous())[0, 0, m]
        rk = rope(k.expand(1, 1, 64, 8).contiguous())[0, 0, n]
        return torch.dot(rq, rk).item()

    for offset in (-3, 0, 5):
        base = score(10, 10 + offset)
        for shift in (1, 7, 30):
            assert score(10 + shift, 10 + offset + shift) == pytest.approx(base, abs=1e-4)
    assert score(10, 13) != pytest.approx(score(10, 12), abs=1e-3)  # different offsets differ


def test_rope_rotates_pairs_by_position_times_frequency():
    rope = RotaryEmbedding(head_dim=4, max_len=10)
    x = torch.tensor([1.0, 0.0, 1.0, 0.0]).expand(1, 1, 10, 4).contiguous()
    out = rope(x)[0, 0]
    for p in range(10):
        for i, omega in enumerate([1.0, 1 / 100]):
            assert out[p, 2 * i].item() == pytest.approx(math.cos(p * omega), abs=1e-5)
            assert out[p, 2 * i + 1].item() == pytest.approx(math.sin(p * omega), abs=1e-5)
