"""model/core/masks.py: the project's masks (True = may attend) against hand-written boolean tables, and against
PyTorch's own causal mask ``torch.nn.Transformer.generate_square_subsequent_mask`` (a float mask, −inf where a
key may not be attended), both directly and through ``F.scaled_dot_product_attention``.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from model.core.masks import causal_mask, decoder_self_mask, padding_mask, target_tokens

Y, N = True, False  # may attend / may not: the hand-written tables


# -- padding_mask -----------------------------------------------------------------------------------------------
def test_padding_mask_marks_real_tokens_as_keys():
    tokens = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0], [4, 0, 0, 0]])
    mask = padding_mask(tokens, pad_id=0)
    assert mask.dtype == torch.bool
    assert mask.shape == (3, 1, 1, 4)  # [B, 1, 1, L]: the same keys for every head and query
    assert mask[:, 0, 0].tolist() == [[Y, Y, Y, N], [Y, Y, N, N], [Y, N, N, N]]


def test_padding_mask_uses_the_given_pad_id_wherever_it_stands():
    # pad id 3, and 0 is an ordinary token here; a pad in the middle is masked too
    tokens = torch.tensor([[0, 3, 5, 3], [3, 3, 3, 3]])
    mask = padding_mask(tokens, pad_id=3)
    assert mask[:, 0, 0].tolist() == [[Y, N, Y, N], [N, N, N, N]]


def test_padding_mask_is_the_opposite_of_torch_key_padding_mask():
    tokens = torch.tensor([[5, 6, 7, 0], [8, 0, 0, 0]])
    torch_style = tokens == 0  # nn.MultiheadAttention's key_padding_mask: True = ignore
    assert torch.equal(padding_mask(tokens, 0)[:, 0, 0], ~torch_style)


# -- causal_mask --------------------------------------------------------------------------------------------------
def test_causal_mask_by_hand():
    mask = causal_mask(4)
    assert mask.dtype == torch.bool
    assert mask.shape == (1, 1, 4, 4)
    assert mask[0, 0].tolist() == [
        [Y, N, N, N],
        [Y, Y, N, N],
        [Y, Y, Y, N],
        [Y, Y, Y, Y],
    ]


def test_causal_mask_of_one_position():
    assert causal_mask(1).tolist() == [[[[True]]]]


def test_causal_mask_on_a_named_device():
    assert causal_mask(3, "cpu").device.type == "cpu"
    assert causal_mask(3, torch.device("cpu")).device.type == "cpu"


@pytest.mark.parametrize("length", [1, 2, 5, 9])
def test_causal_mask_agrees_with_generate_square_subsequent_mask(length):
    theirs = nn.Transformer.generate_square_subsequent_mask(length)  # 0 = attend, −inf = masked
    ours = causal_mask(length)[0, 0]
    assert theirs.shape == ours.shape
    assert torch.equal(torch.isneginf(theirs), ~ours)
    assert (theirs[ours] == 0).all()


def test_causal_mask_gives_the_same_attention_as_torch_float_mask():
    """The convention, checked where it matters: a boolean mask in which True = may attend does in
    ``F.scaled_dot_product_attention`` what torch's −inf float mask does."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, 5, 4, generator=g) for _ in range(3))
    with_ours = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(5))
    with_theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=nn.Transformer.generate_square_subsequent_mask(5))
    assert torch.allclose(with_ours, with_theirs, atol=1e-6)
    # and the first position attended only to itself: its output is its own value
    assert torch.allclose(with_ours[:, :, 0], v[:, :, 0], atol=1e-6)


# -- target_tokens and decoder_self_mask --------------------------------------------------------------------------
def test_target_tokens_keeps_the_first_position_even_when_it_is_the_pad_id():
    tgt = torch.tensor([[1, 5, 6, 0], [0, 7, 0, 0]])  # second row: Marian, start token = pad id 0
    before = tgt.clone()
    assert target_tokens(tgt, 0).tolist() == [[Y, Y, Y, N], [Y, Y, N, N]]
    assert torch.equal(tgt, before)  # the input is left alone


def test_decoder_self_mask_by_hand():
    tgt = torch.tensor([[1, 5, 6, 0], [1, 7, 0, 0]])  # right-padded, BOS = 1, pad = 0
    mask = decoder_self_mask(tgt, pad_id=0)
    assert mask.dtype == torch.bool
    assert mask.shape == (2, 1, 4, 4)
    assert mask[0, 0].tolist() == [
        [Y, N, N, N],
        [Y, Y, N, N],
        [Y, Y, Y, N],
        [Y, Y, Y, N],  # the padding query sees the real tokens, never the padding key
    ]
    assert mask[1, 0].tolist() == [
        [Y, N, N, N],
        [Y, Y, N, N],
        [Y, Y, N, N],
        [Y, Y, N, N],
    ]


def test_decoder_self_mask_start_token_equal_to_pad_stays_a_key():
    tgt = torch.tensor([[0, 4, 5, 0, 0]])  # Marian: the decoder starts with the pad id
    mask = decoder_self_mask(tgt, pad_id=0)
    assert mask[0, 0].tolist() == [
        [Y, N, N, N, N],
        [Y, Y, N, N, N],
        [Y, Y, Y, N, N],
        [Y, Y, Y, N, N],
        [Y, Y, Y, N, N],
    ]


def test_decoder_self_mask_never_leaves_a_query_without_keys():
    tgt = torch.tensor([[0, 0, 0], [1, 0, 0]])  # even an all-padding row keeps its first key
    mask = decoder_self_mask(tgt, pad_id=0)
    assert mask.any(dim=-1).all()


def test_decoder_self_mask_is_torch_causal_and_key_padding_combined():
    tgt = torch.tensor([[1, 5, 6, 7, 0, 0], [1, 8, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6]])
    L = tgt.shape[1]
    blocked_causal = torch.isneginf(nn.Transformer.generate_square_subsequent_mask(L))  # [L, L], True = blocked
    blocked_pad = tgt == 0  # tgt_key_padding_mask, True = blocked
    blocked = blocked_causal[None] | blocked_pad[:, None, :]  # [B, L, L]
    assert torch.equal(decoder_self_mask(tgt, 0)[:, 0], ~blocked)
