"""The int8 fast mode of decoding (model/decoding/int8.py, Session.set_int8): close to float32, made again when
the weights change, float32 exact again when turned off, and a true account of how far it differs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from model.decoding.int8 import Int8Linears
from model.decoding.search import greedy_decode
from model.session import Session
from resources import default_model


@pytest.fixture(scope="module")
def bundled() -> Session:
    path = default_model()
    if path is None:
        pytest.skip("no bundled model")
    return Session.load(path, device="cpu")


def test_an_int8_linear_is_within_its_rounding_of_float32():
    torch.manual_seed(0)
    w, b, x = torch.randn(300, 64) * 0.05, torch.randn(300) * 0.01, torch.randn(3, 1, 64)
    int8 = Int8Linears()
    exact, fast = F.linear(x, w, b), int8(x, w, b)
    assert fast.shape == exact.shape
    # per-row 8-bit weights and 8-bit activations: an error of a few hundredths of the output's size, not zero
    err = (fast - exact).abs().max() / exact.abs().max()
    assert 0 < err < 0.03
    with torch.no_grad():
        w.mul_(-1)  # training writes the weight in place: the int8 copy is made again
    assert torch.allclose(int8(x, w, b), F.linear(x, w, b), atol=0.03 * exact.abs().max().item())


def test_set_int8_reports_what_an_independent_comparison_finds(bundled: Session):
    sentences = [s for s, _ in bundled.corpus.test[:8]]
    sources = [torch.tensor(bundled._source(s)[1]) for s in sentences]
    exact = [greedy_decode(bundled.model, src, 40)[0] for src in sources]
    report = bundled.set_int8(True)
    try:
        assert report is not None and bundled.int8
        fast = [greedy_decode(bundled.model, src, 40)[0] for src in sources]
        assert report.sentences == 8
        # the same count as this comparison, made apart (once in a full run on CI they differed by one sentence:
        # a near tie decided the other way, which the int8 kernels' rounding allows; never by more)
        assert abs(report.same_tokens - sum(a == b for a, b in zip(exact, fast))) <= 1
        assert report.same_tokens >= 6  # a trained model's choices barely move
        assert 0 < report.max_logprob_change < 0.5
        translated = bundled.translate(sentences[0], beam_size=4, with_reference=False)
        assert translated.tokens and translated.tokens[-1] == bundled.model_cfg.eos_id  # beam search runs in int8
    finally:
        assert bundled.set_int8(False) is None
    assert not bundled.int8
    assert [greedy_decode(bundled.model, src, 40)[0] for src in sources] == exact  # float32 exactly as before


def test_int8_is_refused_for_a_model_that_does_not_translate():
    from model.core.config import ModelConfig
    from model.core.transformer import Transformer

    gpt = Session.__new__(Session)
    gpt.model = Transformer(ModelConfig.preset("tiny", vocab_size=50, arch="decoder_only"))
    gpt.model_cfg = gpt.model.cfg
    gpt.device = torch.device("cpu")
    with pytest.raises(ValueError, match="for translation models"):
        gpt.set_int8(True)
