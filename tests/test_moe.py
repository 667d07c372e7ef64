"""The Mixture-of-Experts router learns from the task itself, and a loaded session's model computes exactly.

With k = 1 the chosen expert's output is weighted by its router probability p_i(x) (Switch Transformer): were it
weighted by p_i / p_i = 1, the task loss would send the router no gradient, and only the balance loss would
train it. With k ≥ 2 the chosen probabilities are renormalised (GShard, Mixtral), which keeps a gradient.
"""

import pytest
import torch

from model.core.config import ModelConfig
from model.core.transformer import Transformer
from model.data import DataSpec
from model.data.text_batching import IGNORE, LMBatch
from model.families.moe import MoEFeedForward
from model.families.objectives import run_batch
from model.session import Session
from model.training.config import TrainConfig


def _moe_model(top_k: int) -> Transformer:
    torch.manual_seed(0)
    sizes = dict(vocab_size=40, d_model=32, n_heads=4, d_ff=64, n_decoder_layers=2, dropout=0.0, max_len=32)
    moe = dict(n_experts=4, experts_top_k=top_k, aux_loss_coef=0.0)  # the task loss alone
    return Transformer(ModelConfig.preset("tiny", arch="decoder_only", **sizes, **moe))


def router_gradient(top_k: int) -> float:
    """The norm of the routers' gradient from the task loss alone (aux_loss_coef = 0), for one batch."""
    model = _moe_model(top_k).train()
    torch.manual_seed(1)
    ids = torch.randint(4, 40, (4, 12))
    targets = torch.randint(4, 40, (4, 12))
    targets[:, -2:] = IGNORE
    out = run_batch(model, LMBatch(ids, targets, int((targets != IGNORE).sum())), label_smoothing=0.0)
    out.objective.backward()
    routers = [m.router for m in model.modules() if isinstance(m, MoEFeedForward)]
    assert len(routers) == 2
    return torch.cat([r.weight.grad.flatten() for r in routers]).norm().item()


@pytest.mark.parametrize("top_k", [1, 2])
def test_the_router_learns_from_the_task_loss_alone(top_k):
    # before the fix (k = 1 weighted by p/p = 1) this was ~1e-8: no learning signal at all
    assert router_gradient(top_k) > 1e-3


def test_the_balance_loss_is_the_mean_over_layers_and_1_at_balance():
    model = _moe_model(top_k=1).eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, MoEFeedForward):  # uniform router: P_i = 1/N, so N · Σ f_i P_i = 1 in every layer
                m.router.weight.zero_()
                m.router.bias.zero_()
        _, extras = model(torch.randint(4, 40, (2, 9)), return_extras=True)
    assert len(extras.load) == 2 and extras.aux_loss.item() == pytest.approx(1.0, abs=1e-6)  # not 2 (the sum)


# -- a session's model: exact outside training, dropout inside -------------------------------------------------------
def test_a_loaded_model_gives_exact_logits_and_training_still_uses_dropout(tmp_path):
    data = DataSpec(task="grammar-en-zh", n_train=200, n_valid=20, n_test=20)
    train = TrainConfig(warmup_steps=10, eval_every=0, batch_size=8)
    made = Session.create(data, "tiny", train, device="cpu", dropout=0.3)
    made.save(tmp_path / "m.ckpt")
    s = Session.load(tmp_path / "m.ckpt", device="cpu")
    assert not s.model.training
    src_ids = torch.tensor([s.src_tok.encode_ids("I like tea.") + [s.src_tok.eos_id]])
    tgt_in_ids = torch.tensor([[s.tgt_tok.bos_id, *s.tgt_tok.encode_ids("我喜欢茶。")]])
    with torch.no_grad():
        assert torch.equal(s.model(src_ids, tgt_in_ids), s.model(src_ids, tgt_in_ids))
        noisy = s.model.train()(src_ids, tgt_in_ids)  # the same model with dropout on: other logits
        assert not torch.allclose(noisy, s.model.eval()(src_ids, tgt_in_ids))
    modes: list[bool] = []
    s.model.register_forward_pre_hook(lambda module, args: modes.append(module.training))
    s.train_steps(2)
    assert modes == [True, True] and not s.model.training  # dropout in each step, exact again after
