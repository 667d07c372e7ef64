"""The arithmetic behind published benchmark figures, against PyTorch's own counter."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from bench.train_step import training_flops
from model.core.config import ModelConfig
from model.core.transformer import Transformer


@pytest.mark.parametrize("preset,src_len,tgt_len", [("tiny", 12, 9), ("small", 7, 15)])
def test_the_mfu_flop_count_matches_torch_flop_counter(preset, src_len, tgt_len):
    cfg = ModelConfig.preset(preset, src_vocab_size=700, tgt_vocab_size=900, dropout=0.0)
    model = Transformer(cfg)
    src = torch.randint(3, 700, (3, src_len))
    tgt = torch.randint(3, 900, (3, tgt_len))
    with FlopCounterMode(display=False) as counter:
        model(src, tgt).float().sum().backward()
    # an estimate of the model's work, not of what autograd ran: within 3% of the counted operations
    assert counter.get_total_flops() / training_flops(cfg, 3, src_len, tgt_len) == pytest.approx(1.0, abs=0.03)
