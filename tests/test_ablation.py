"""Head ablation (:mod:`model.interpret.ablation`): switching heads off through W^O's columns is the same as zeroing
(or replacing by its mean) the head's slice of the concatenated heads, done here with a hook on the output
projection; every path sees it (cached decoding included); the weights come back exactly; a translator without
cross-attention ignores its source and a GPT without attention sees only its last token. Head importance (Michel
et al. 2019) checked against losses computed here, one sentence at a time."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from model.data import DataSpec
from model.decoding.search import generate, greedy_decode
from model.interpret import ablation
from model.session import Session
from model.training.config import TrainConfig

QUICK = TrainConfig(warmup_steps=20, eval_every=0, batch_size=16)
N_HELD_OUT = 12


@pytest.fixture(scope="module")
def copy(copy_session_factory):
    torch.manual_seed(0)
    s = copy_session_factory()
    s.train_steps(150)
    s.model.eval()
    return s


def _text_session(arch: str) -> Session:
    torch.manual_seed(0)
    data = DataSpec(task="text-grammar-en", n_train=200, n_valid=20, n_test=20)
    s = Session.create(data, "tiny", QUICK, arch=arch, device="cpu")
    s.model.eval()
    return s


@pytest.fixture(scope="module")
def gpt():
    return _text_session("decoder_only")


def _attention(model, kind: str, layer: int):
    """The attention block of a head, found here (not through the code under test)."""
    block = (model.encoder_layers if kind == "encoder" else model.decoder_layers)[layer]
    return block.cross_attn if kind == "cross" else block.self_attn


def _all_heads(model, kind: str) -> list[tuple[str, int, int]]:
    stack = model.encoder_layers if kind == "encoder" else model.decoder_layers
    return [(kind, layer, h) for layer in range(len(stack)) for h in range(model.cfg.n_heads)]


def _pair(session: Session, n: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """Source and decoder input of the first ``n`` held-out pairs of equal length, as one batch."""
    data = session.encoded("valid")
    by_length: dict[int, list[int]] = {}
    for i, (s, t) in enumerate(zip(data.src, data.tgt)):
        by_length.setdefault((len(s), len(t)), []).append(i)
    rows = next(v for v in by_length.values() if len(v) >= n)[:n]
    bos = session.model_cfg.bos_id
    return torch.tensor([data.src[i] for i in rows]), torch.tensor([[bos, *data.tgt[i]] for i in rows])


def _state(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _same_state(model, before: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


# -- what an ablated model computes -------------------------------------------------------------------------------
def test_with_every_cross_head_off_the_translator_ignores_its_source(copy):
    a, b = "1 2 3 4 5", "6 0 7 3 2"
    assert copy.translate(a).tokens != copy.translate(b).tokens  # it copies
    with copy.ablated(_all_heads(copy.model, "cross")):
        assert copy.translate(a).tokens == copy.translate(b).tokens
        assert copy.translate(a).tokens == copy.translate("4 4 0 1 6").tokens


def test_with_every_head_off_a_gpt_sees_only_its_last_token(gpt):
    model = gpt.model
    first = gpt.src_tok.first_regular_id
    bos = gpt.model_cfg.bos_id
    one = torch.tensor([[bos, first + 3, first + 5, first + 7]])
    two = torch.tensor([[bos, first + 9, first + 1, first + 7]])
    with torch.no_grad():
        assert not torch.allclose(model(one)[0, -1], model(two)[0, -1], atol=1e-4)
        with gpt.ablated(_all_heads(model, "decoder")):
            p1, p2 = model(one)[0, -1].softmax(-1), model(two)[0, -1].softmax(-1)
            other = model(torch.tensor([[bos, first + 9, first + 1, first + 8]]))[0, -1].softmax(-1)
    torch.testing.assert_close(p1, p2, atol=1e-6, rtol=0)
    assert not torch.allclose(p1, other, atol=1e-4)  # the last token still matters


def test_ablating_nothing_changes_nothing(copy):
    src, tgt_in = _pair(copy)
    before = _state(copy.model)
    with torch.no_grad():
        plain = copy.model(src, tgt_in)
        with copy.ablated([]):
            inside = copy.model(src, tgt_in)
            assert _same_state(copy.model, before)
    assert torch.equal(plain, inside)


def _zeroing_hook(cols: slice, value: torch.Tensor | None = None):
    """A forward pre-hook on W^O that zeroes (or sets to ``value``) a head's slice of the concatenated heads."""

    def hook(module, args):
        x = args[0].clone()
        x[..., cols] = 0.0 if value is None else value
        return (x,)

    return hook


@pytest.mark.parametrize("head", [("encoder", 1, 2), ("decoder", 0, 1), ("cross", 1, 3)])
def test_a_single_head_ablated_equals_zeroing_its_slice_by_hand(copy, head):
    kind, layer, h = head
    src, tgt_in = _pair(copy)
    attn = _attention(copy.model, kind, layer)
    width = copy.model_cfg.d_model // copy.model_cfg.n_heads
    with torch.no_grad():
        plain = copy.model(src, tgt_in)
        with copy.ablated([head]):
            ours = copy.model(src, tgt_in)
        handle = attn.out_proj.register_forward_pre_hook(_zeroing_hook(slice(h * width, (h + 1) * width)))
        try:
            theirs = copy.model(src, tgt_in)
        finally:
            handle.remove()
    torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=0)
    assert (ours - plain).abs().max() > 1e-3  # the head mattered


def test_weights_come_back_exactly_also_after_an_exception(copy):
    heads = [("encoder", 0, 0), ("decoder", 1, 3), ("cross", 0, 2), ("cross", 0, 2)]
    before = _state(copy.model)
    with copy.ablated(heads):
        assert not _same_state(copy.model, before)
        cols = _attention(copy.model, "cross", 0).out_proj.weight[:, 32:48]
        assert not cols.any()
    assert _same_state(copy.model, before)
    with pytest.raises(RuntimeError, match="inside"):
        with copy.ablated(heads, mode="mean", sentences=N_HELD_OUT):
            assert not _same_state(copy.model, before)
            raise RuntimeError("raised inside")
    assert _same_state(copy.model, before)


def test_the_cached_decoding_path_sees_the_ablation(copy, gpt):
    src = torch.tensor([copy.encoded("valid").src[0]])
    heads = [("decoder", 0, 0), ("decoder", 1, 2), ("cross", 0, 1), ("cross", 1, 0)]
    plain, plain_lp = greedy_decode(copy.model, src, 12, use_cache=True, return_log_probs=True)
    with copy.ablated(heads):
        cached, cached_lp = greedy_decode(copy.model, src, 12, use_cache=True, return_log_probs=True)
        full, full_lp = greedy_decode(copy.model, src, 12, use_cache=False, return_log_probs=True)
    assert cached == full
    torch.testing.assert_close(cached_lp, full_lp, atol=1e-5, rtol=0)
    assert not torch.allclose(plain_lp, cached_lp, atol=1e-3) or plain != cached
    prompt = [gpt.src_tok.first_regular_id + k for k in (2, 5, 3)]
    heads = [("decoder", 0, 1), ("decoder", 1, 3)]
    ids = torch.tensor([[gpt.model_cfg.bos_id, *prompt]])
    with torch.no_grad():
        before = gpt.model(ids)
        with gpt.ablated(heads):
            assert generate(gpt.model, prompt, 10, use_cache=True) == generate(gpt.model, prompt, 10, use_cache=False)
            assert not torch.allclose(before, gpt.model(ids), atol=1e-4)


def _hand_means(session: Session, n: int) -> dict[tuple[str, int], torch.Tensor]:
    """Each block's concatenated head outputs averaged over the first ``n`` held-out pairs, one pair at a time
    (no padding anywhere)."""
    model = session.model
    data = session.encoded("valid")
    sums: dict[tuple[str, int], torch.Tensor] = {}
    counts: dict[tuple[str, int], int] = {}
    handles = []
    for kind in ("encoder", "decoder", "cross"):
        for layer in range(2):

            def catch(module, args, key=(kind, layer)):
                rows = args[0].reshape(-1, args[0].shape[-1])
                sums[key] = sums.get(key, 0) + rows.double().sum(0)
                counts[key] = counts.get(key, 0) + rows.shape[0]

            handles.append(_attention(model, kind, layer).out_proj.register_forward_pre_hook(catch))
    try:
        with torch.no_grad():
            for s, t in zip(data.src[:n], data.tgt[:n]):
                model(torch.tensor([s]), torch.tensor([[session.model_cfg.bos_id, *t]]))
    finally:
        for handle in handles:
            handle.remove()
    return {k: (v / counts[k]).float() for k, v in sums.items()}


@pytest.mark.parametrize("head", [("encoder", 0, 1), ("cross", 1, 2)])
def test_mean_ablation_equals_replacing_the_slice_by_its_mean_by_hand(copy, head):
    kind, layer, h = head
    means = _hand_means(copy, N_HELD_OUT)
    width = copy.model_cfg.d_model // copy.model_cfg.n_heads
    cols = slice(h * width, (h + 1) * width)
    src, tgt_in = _pair(copy)
    with torch.no_grad():
        with copy.ablated([head], mode="mean", sentences=N_HELD_OUT):
            ours = copy.model(src, tgt_in)
        hook = _zeroing_hook(cols, means[(kind, layer)][cols])
        handle = _attention(copy.model, kind, layer).out_proj.register_forward_pre_hook(hook)
        try:
            theirs = copy.model(src, tgt_in)
        finally:
            handle.remove()
        with copy.ablated([head]):
            zeroed = copy.model(src, tgt_in)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)
    assert (ours - zeroed).abs().max() > 1e-3  # the mean is not zero
    got = ablation.head_means(copy.model, ablation.first_batches(copy.encoded("valid"), N_HELD_OUT, "", {}))
    for key, value in means.items():
        torch.testing.assert_close(got[key], value, atol=1e-5, rtol=0)


def test_heads_that_do_not_exist_are_refused_by_name(copy, gpt):
    before = _state(gpt.model)
    for heads, message in (
        ([("cross", 0, 0)], "no 'cross' attention in a decoder_only model; it has decoder"),
        ([("encoder", 0, 0)], "no 'encoder' attention"),
        ([("bogus", 0, 0)], "no 'bogus' attention"),
        ([("decoder", 2, 0)], "no decoder layer 2: the model has 2"),
        ([("decoder", -1, 0)], "no decoder layer -1"),
        ([("decoder", 1, 4)], "no head 4 in decoder layer 1: it has 4"),
        ([("decoder", 0, 0), ("decoder", 0, 9)], "no head 9"),
    ):
        with pytest.raises(ValueError, match=message):
            with gpt.ablated(heads):
                pytest.fail("entered")
    with pytest.raises(ValueError, match="unknown ablation mode 'random'"):
        with gpt.ablated([("decoder", 0, 0)], mode="random"):
            pass
    with pytest.raises(ValueError, match="mean ablation needs"):
        with ablation.ablated(gpt.model, [("decoder", 0, 0)], mode="mean"):
            pass
    assert _same_state(gpt.model, before)
    with pytest.raises(ValueError, match="no cross layer 3"):
        with copy.ablated([("cross", 3, 0)]):
            pass


# -- head importance ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def importance(copy):
    return copy.head_importance(n_sentences=N_HELD_OUT)


def test_head_importance_has_a_map_per_kind_without_gaps(copy, gpt, importance):
    assert importance.complete and importance.sentences == N_HELD_OUT and importance.step == 150
    assert set(importance.delta_loss) == set(importance.delta_accuracy) == {"encoder", "decoder", "cross"}
    for kind in ("encoder", "decoder", "cross"):
        assert importance.delta_loss[kind].shape == importance.delta_accuracy[kind].shape == (2, 4)
        assert not np.isnan(importance.delta_loss[kind]).any() and not np.isnan(importance.delta_accuracy[kind]).any()
    bert = _text_session("encoder_only")
    for session, kinds in ((gpt, {"decoder"}), (bert, {"encoder"})):
        got = session.head_importance(n_sentences=4)
        assert got.complete and set(got.delta_loss) == kinds
        assert all(d.shape == (2, 4) and not np.isnan(d).any() for d in got.delta_loss.values())


def test_the_most_important_head_of_a_trained_copier_hurts_when_ablated(importance):
    worst = max(float(d.max()) for d in importance.delta_loss.values())
    assert worst > 0.05
    assert min(float(d.min()) for d in importance.delta_accuracy.values()) < 0


def _hand_scores(session: Session, n: int) -> tuple[float, float]:
    """Cross-entropy per target token and token accuracy over the first ``n`` held-out pairs, one at a time."""
    model, cfg = session.model, session.model_cfg
    data = session.encoded("valid")
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for s, t in zip(data.src[:n], data.tgt[:n]):
            logits = model(torch.tensor([s]), torch.tensor([[cfg.bos_id, *t]]))[0].double()
            gold = torch.tensor([*t, cfg.eos_id])
            total += float(F.cross_entropy(logits, gold, reduction="sum"))
            correct += int((logits.argmax(-1) == gold).sum())
            count += len(gold)
    return total / count, correct / count


def test_each_delta_is_the_loss_with_that_head_ablated_computed_by_hand(copy, importance):
    base_loss, base_acc = _hand_scores(copy, N_HELD_OUT)
    assert importance.base["loss"] == pytest.approx(base_loss, abs=1e-4)
    assert importance.base["accuracy"] == pytest.approx(base_acc, abs=1e-9)
    kind, layer, h = max(
        (
            (k, int(i), int(j))
            for k, d in importance.delta_loss.items()
            for i, j in [np.unravel_index(d.argmax(), d.shape)]
        ),
        key=lambda head: importance.delta_loss[head[0]][head[1], head[2]],
    )
    for head in ((kind, layer, h), ("encoder", 1, 0), ("decoder", 0, 3)):
        with copy.ablated([head]):
            loss, acc = _hand_scores(copy, N_HELD_OUT)
        k, i, j = head
        assert importance.delta_loss[k][i, j] == pytest.approx(loss - base_loss, abs=1e-4)
        assert importance.delta_accuracy[k][i, j] == pytest.approx(acc - base_acc, abs=1e-9)


def test_returning_false_from_progress_cancels_the_sweep(copy):
    calls = []

    def progress(done: int, total: int) -> bool:
        calls.append((done, total))
        return done < 3

    got = copy.head_importance(n_sentences=4, progress=progress)
    assert calls == [(1, 24), (2, 24), (3, 24)] and not got.complete
    loss = np.concatenate([got.delta_loss[k].ravel() for k in ("encoder", "decoder", "cross")])
    assert (~np.isnan(loss)).sum() == 3 and np.isnan(loss[3:]).all()
    assert not np.isnan(got.delta_loss["encoder"][0, :3]).any()
    with pytest.raises(ValueError, match="unknown metric 'bleu'"):
        copy.head_importance(n_sentences=4, metric="bleu")
