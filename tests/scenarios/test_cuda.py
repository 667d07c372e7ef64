"""The engine on a CUDA GPU: the same numbers as on the CPU, bf16 training that learns, and
everything the window reads (attention, snapshots, checkpoints) coming back to the CPU.

Skipped where PyTorch sees no CUDA GPU (CI); ``python -m bench.gpu_check`` runs them on a GPU machine."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from model.core.attention import MultiHeadAttention
from model.core.config import ModelConfig
from model.core.masks import causal_mask, padding_mask
from model.core.transformer import Transformer
from model.decoding.search import BeamStepper, beam_search, greedy_decode

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")

CUDA = torch.device("cuda")


def random_model(preset: str = "small", vocab: int = 500, **overrides) -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig.preset(preset, src_vocab_size=vocab, tgt_vocab_size=vocab, dropout=0.0, **overrides)
    return Transformer(cfg).eval()


def batch(vocab: int = 500):
    g = torch.Generator().manual_seed(1)
    src = torch.randint(3, vocab, (4, 15), generator=g)
    src[2:, 10:] = 0  # padded rows, as in real batches
    tgt_in = torch.randint(3, vocab, (4, 12), generator=g)
    tgt_in[:, 0] = 1
    return src, tgt_in


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope"])
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_forward_and_attention_match_the_cpu(positional, norm):
    cpu = random_model(positional=positional, norm=norm)
    gpu = random_model(positional=positional, norm=norm).to(CUDA)
    src, tgt_in = batch()
    with torch.no_grad():
        want, want_maps = cpu(src, tgt_in, return_attention=True)
        got, got_maps = gpu(src.to(CUDA), tgt_in.to(CUDA), return_attention=True)
    assert torch.allclose(got.cpu(), want, atol=2e-4, rtol=1e-4)
    for w, g in zip(want_maps.cross, got_maps.cross):
        assert torch.allclose(g.cpu(), w, atol=1e-5)
    for w, g in zip(want_maps.decoder_self, got_maps.decoder_self):
        assert torch.allclose(g.cpu(), w, atol=1e-5)
        assert (g.cpu().triu(1) == 0).all()  # causal on the GPU too


def test_multi_head_attention_matches_torch_on_cuda():
    torch.manual_seed(2)
    d, h = 64, 8
    ours = MultiHeadAttention(d, h).eval().to(CUDA)
    ref = nn.MultiheadAttention(d, h, batch_first=True).eval().to(CUDA)
    with torch.no_grad():
        ours.in_proj.weight.copy_(ref.in_proj_weight)
        ours.in_proj.bias.copy_(ref.in_proj_bias)
        ours.out_proj.weight.copy_(ref.out_proj.weight)
        ours.out_proj.bias.copy_(ref.out_proj.bias)
    x = torch.randn(2, 5, d, device=CUDA)
    mem = torch.randn(2, 7, d, device=CUDA)
    key_tokens = torch.tensor([[1] * 7, [1] * 4 + [0] * 3], device=CUDA)
    with torch.no_grad():
        ref_out, ref_w = ref(x, mem, mem, key_padding_mask=key_tokens == 0, average_attn_weights=False)
        out, w = ours(x, mem, padding_mask(key_tokens, 0), need_weights=True)
        fast, _ = ours(x, mem, padding_mask(key_tokens, 0))  # the fused kernel, no weights
        causal_ref, _ = ref(x, x, x, attn_mask=~causal_mask(5).to(CUDA)[0, 0])
        causal_ours, _ = ours(x, mask=causal_mask(5).to(CUDA))
    assert torch.allclose(out, ref_out, atol=1e-5)
    assert torch.allclose(w, ref_w, atol=1e-6)
    assert torch.allclose(fast, ref_out, atol=1e-5)
    assert torch.allclose(causal_ours, causal_ref, atol=1e-5)


def test_decoding_on_cuda_matches_the_cpu_and_the_cache_changes_nothing():
    cpu = random_model()
    gpu = random_model().to(CUDA)
    src = torch.tensor([[5, 6, 7, 8, 9, 10, 2], [11, 12, 13, 2, 0, 0, 0]])
    cached = greedy_decode(gpu, src.to(CUDA), 20)
    assert cached == greedy_decode(gpu, src.to(CUDA), 20, use_cache=False)
    assert cached == greedy_decode(cpu, src, 20)
    beams_gpu = beam_search(gpu, src[0].to(CUDA), 4, 20)
    beams_cpu = beam_search(cpu, src[0], 4, 20)
    assert [b.tokens for b in beams_gpu] == [b.tokens for b in beams_cpu]
    for a, b in zip(beams_gpu, beams_cpu):
        assert a.score == pytest.approx(b.score, abs=1e-3)


def test_stepper_records_come_back_to_the_cpu():
    gpu = random_model().to(CUDA)
    stepper = BeamStepper(gpu, torch.tensor([5, 6, 7, 2], device=CUDA), 3, 8, 0.6, 5)
    step = stepper.step()
    assert step is not None
    for value in vars(step).values():
        assert not (isinstance(value, torch.Tensor) and value.is_cuda), "a CUDA tensor reached a view"


def test_bf16_training_on_cuda_learns_and_everything_read_back_is_on_the_cpu(tmp_path):
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.session import Session
    from model.training.trainer import train_config_for

    data = DataSpec(task="copy", n_train=4000, n_valid=50, n_test=50, length=6, min_length=2, alphabet=8)
    session = Session.create(data, "tiny", train_config_for("tiny", eval_every=0), TokenizerSpec("word"), device="cuda")
    assert session.model.device.type == "cuda"
    records = session.train_steps(400)
    first = np.mean([r.loss for r in records[:20]])
    last = np.mean([r.loss for r in records[-20:]])
    assert all(np.isfinite(r.loss) and np.isfinite(r.grad_norm) for r in records)
    assert last < 0.5 * first, (first, last)
    assert next(session.model.parameters()).dtype == torch.float32  # autocast, not a bf16 model
    snapshot = session.trainer.snapshot()
    assert all(not w.is_cuda for w in snapshot.model.values())
    inspection = session.inspect("3 4 5")
    assert isinstance(inspection.cross, np.ndarray) and isinstance(inspection.encoder, np.ndarray)

    path = tmp_path / "gpu.ckpt"
    session.save(path)
    on_cpu = Session.load(path, device="cpu")
    assert on_cpu.model.device.type == "cpu"
    for sentence in ["3 4 5", "7 1 2 6", "5 5 0"]:
        assert on_cpu.translate(sentence).text == session.translate(sentence).text
    on_cpu.train_steps(2)  # the optimizer state moved with it


def test_autocast_runs_the_matmuls_in_bf16():
    from model.training.device import training_autocast

    if not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bf16")
    gpu = random_model().to(CUDA).train()
    src, tgt_in = batch()
    with training_autocast(CUDA):
        logits = gpu(src.to(CUDA), tgt_in.to(CUDA))
    assert logits.dtype == torch.bfloat16
