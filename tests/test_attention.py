import math

import numpy as np
import pytest
import torch
from torch import nn

from model.core.attention import MultiHeadAttention, attention_steps, scaled_dot_product_attention
from model.core.masks import causal_mask, decoder_self_mask, padding_mask


def test_worked_example_from_the_notes():
    """Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2, worked by hand."""
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    v = torch.tensor([[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]], dtype=torch.float64)
    steps = attention_steps(q, q, v)
    assert steps.scores.tolist() == [[1, 0, 1], [0, 1, 1], [1, 1, 2]]
    r = 1 / math.sqrt(2)
    assert torch.allclose(steps.scaled, torch.tensor([[r, 0, r], [0, r, r], [r, r, 2 * r]], dtype=torch.float64))
    # Row 1 and 2: two keys score 1/√2, one scores 0. Row 3: two score 1/√2, one 2/√2.
    e = math.exp(r)
    a, b = e / (2 * e + 1), 1 / (2 * e + 1)
    c, d = e / (2 * e + math.exp(2 * r)), math.exp(2 * r) / (2 * e + math.exp(2 * r))
    expected_w = torch.tensor([[a, b, a], [b, a, a], [c, c, d]], dtype=torch.float64)
    assert torch.allclose(steps.weights, expected_w, atol=1e-12)
    assert torch.allclose(steps.weights.sum(-1), torch.ones(3, dtype=torch.float64))
    expected_out = torch.tensor(
        [[10 * a + 5 * a, 10 * b + 5 * a], [10 * b + 5 * a, 10 * a + 5 * a], [10 * c + 5 * d, 10 * c + 5 * d]],
        dtype=torch.float64,
    )
    assert torch.allclose(steps.output, expected_out, atol=1e-12)
    # The figures worth remembering: row 1 ≈ [0.401, 0.198, 0.401] → output ≈ [6.02, 3.98].
    assert steps.weights[0].tolist() == pytest.approx([0.4011, 0.1978, 0.4011], abs=1e-4)
    assert steps.output[0].tolist() == pytest.approx([6.017, 3.983], abs=1e-3)


def test_mask_convention_true_means_may_attend():
    tokens = torch.tensor([[5, 6, 0, 0]])
    assert padding_mask(tokens, 0).tolist() == [[[[True, True, False, False]]]]
    assert causal_mask(3)[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    combined = decoder_self_mask(tokens, 0)
    assert combined.shape == (1, 1, 4, 4)
    assert combined[0, 0, 3].tolist() == [True, True, False, False]


@pytest.mark.parametrize("need_weights", [False, True])
def test_fully_masked_row_gives_zeros_not_nan(need_weights):
    q = torch.randn(1, 2, 3, 4)
    mask = torch.tensor([[True, True], [False, False], [True, False]])[None, None]
    k, v = torch.randn(1, 2, 2, 4), torch.randn(1, 2, 2, 4)
    out, w = scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
    assert torch.isfinite(out).all()
    assert torch.equal(out[:, :, 1], torch.zeros_like(out[:, :, 1]))
    if need_weights:
        assert torch.equal(w[:, :, 1], torch.zeros_like(w[:, :, 1]))
        assert w[0, 0, 2, 1] == 0


def test_fast_path_equals_capture_path():
    torch.manual_seed(1)
    q, k, v = torch.randn(3, 4, 6, 8), torch.randn(3, 4, 9, 8), torch.randn(3, 4, 9, 8)
    mask = padding_mask(torch.tensor([[1] * 9, [1] * 5 + [0] * 4, [1] * 2 + [0] * 7]), 0)
    fast, none = scaled_dot_product_attention(q, k, v, mask)
    slow, w = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    assert none is None
    assert torch.allclose(fast, slow, atol=1e-5)
    assert torch.allclose(w.sum(-1), torch.ones(3, 4, 6), atol=1e-6)
    assert (w[1, :, :, 5:] == 0).all()


def test_unscaled_attention_is_the_softmax_of_the_raw_scores():
    """scale=1.0 (a model with scaled_attention off): the worked example's rows by hand, without the 1/√2."""
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    v = torch.tensor([[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]], dtype=torch.float64)
    steps = attention_steps(q, q, v, scale=1.0)
    assert torch.equal(steps.scaled, steps.scores)
    e = math.e
    row1 = [e / (2 * e + 1), 1 / (2 * e + 1), e / (2 * e + 1)]  # scores 1, 0, 1
    row3 = [e / (2 * e + e**2), e / (2 * e + e**2), e**2 / (2 * e + e**2)]  # scores 1, 1, 2
    assert steps.weights[0].tolist() == pytest.approx(row1, abs=1e-12)
    assert steps.weights[2].tolist() == pytest.approx(row3, abs=1e-12)
    assert steps.weights[0].tolist() != pytest.approx(attention_steps(q, q, v).weights[0].tolist(), abs=1e-3)


def test_unscaled_fast_path_equals_capture_path_with_masks_and_bias():
    torch.manual_seed(3)
    q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)
    mask = padding_mask(torch.tensor([[1] * 6, [1] * 3 + [0] * 3]), 0)
    bias = torch.randn(1, 4, 5, 6)
    for b in (None, bias):
        fast, _ = scaled_dot_product_attention(q, k, v, mask, bias=b, scale=1.0)
        slow, w = scaled_dot_product_attention(q, k, v, mask, need_weights=True, bias=b, scale=1.0)
        raw = q @ k.transpose(-1, -2) + (0 if b is None else b)
        want = raw.masked_fill(~mask, float("-inf")).softmax(-1)
        assert torch.allclose(w, want, atol=1e-6) and torch.allclose(fast, slow, atol=1e-5)
        assert torch.allclose(slow, want @ v, atol=1e-5)
        paper, _ = scaled_dot_product_attention(q, k, v, mask, bias=b)
        assert not torch.allclose(fast, paper, atol=1e-3)


def test_multi_head_attention_matches_torch():
    torch.manual_seed(2)
    d, h = 32, 4
    ours = MultiHeadAttention(d, h).eval()
    ref = nn.MultiheadAttention(d, h, batch_first=True).eval()
    with torch.no_grad():
        ours.in_proj.weight.copy_(ref.in_proj_weight)
        ours.in_proj.bias.copy_(ref.in_proj_bias)
        ours.out_proj.weight.copy_(ref.out_proj.weight)
        ours.out_proj.bias.copy_(ref.out_proj.bias)
    x = torch.randn(2, 5, d)
    mem = torch.randn(2, 7, d)
    key_tokens = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])
    # torch's key_padding_mask is True = ignore; ours is True = may attend.
    ref_out, ref_w = ref(x, mem, mem, key_padding_mask=key_tokens == 0, average_attn_weights=False)
    out, w = ours(x, mem, padding_mask(key_tokens, 0), need_weights=True)
    assert torch.allclose(out, ref_out, atol=1e-5)
    assert torch.allclose(w, ref_w, atol=1e-6)
    fast, _ = ours(x, mem, padding_mask(key_tokens, 0))
    assert torch.allclose(fast, ref_out, atol=1e-5)
    # self-attention with a causal mask (torch: True = not allowed)
    ref_out, ref_w = ref(x, x, x, attn_mask=~causal_mask(5)[0, 0], average_attn_weights=False)
    out, w = ours(x, mask=causal_mask(5), need_weights=True)
    assert torch.allclose(out, ref_out, atol=1e-5)
    assert torch.allclose(w, ref_w, atol=1e-6)


# -- the Attention panel's view state (explorer/panels/attention.py, attention_view.py) --------------------------------
def _panel_showing(qtbot, session):
    """An Attention panel (no engine) with ``session``'s model and the maps of one sentence pair."""
    from types import SimpleNamespace

    from explorer.panels.attention import AttentionPanel

    panel = AttentionPanel()
    qtbot.addWidget(panel)
    panel.on_run(SimpleNamespace(run_id=id(session), weights_step=session.step, model_config=session.model_cfg))
    inspection = session.inspect("a b c d", "a b c d")
    panel.on_inspection(inspection)
    return panel, inspection


def test_the_attention_view_round_trips_and_the_map_shows_it(qtbot, copy_session_factory):
    """Every field of the view set at once comes back from view(), and the heatmap draws the head it names."""
    pytest.importorskip("PySide6")
    from explorer.panels.attention_view import AttentionView

    session = copy_session_factory()
    cfg = session.model_cfg
    assert cfg.n_decoder_layers >= 2 and cfg.n_heads >= 2  # otherwise the view below would be clamped
    panel, inspection = _panel_showing(qtbot, session)
    assert panel.view() == AttentionView()  # the panel's defaults are the view's
    one_head = AttentionView("decoding", "decoder_self", layer=2, head=cfg.n_heads, stretch=True)
    panel.show_view(one_head)
    assert panel.view() == one_head
    assert np.array_equal(panel.shown_matrix(), inspection.decoder_self[1, cfg.n_heads - 1])
    grid = AttentionView("pair", "cross", layer=1, head=2, average=True, all_heads=True, stretch=False)
    panel.show_view(grid)
    assert panel.view() == grid
    panel.show_view(AttentionView("decoding", "cross", layer=1, average=True))
    assert np.allclose(panel.shown_matrix(), inspection.cross[0].mean(axis=0))


def test_a_view_is_drawn_once_and_clamped_to_the_model(qtbot, copy_session_factory):
    pytest.importorskip("PySide6")
    from explorer.panels.attention_view import AttentionView

    session = copy_session_factory()
    panel, _ = _panel_showing(qtbot, session)
    drawn = []
    panel.map_drawn.connect(drawn.append)
    panel.show_view(AttentionView(kind="cross", layer=2, head=2, average=True, stretch=True))
    assert drawn == ["decoding"]  # seven choices, one redraw
    panel.show_view(panel.view())
    assert drawn == ["decoding"]  # the view shown already: nothing drawn again
    panel.show_view(AttentionView(kind="no such kind", layer=99, head=99))
    shown, cfg = panel.view(), session.model_cfg
    assert (shown.kind, shown.layer, shown.head) == ("encoder", cfg.n_encoder_layers, cfg.n_heads)


def test_the_attention_view_has_no_qt():
    import subprocess
    import sys

    code = "import sys, explorer.panels.attention_view; assert not any(m.startswith('PySide6') for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)
