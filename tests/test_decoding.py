import dataclasses
import itertools

import pytest
import torch

from model.core.config import ModelConfig
from model.core.transformer import Transformer
from model.decoding.search import BeamStepper, GreedyStepper, beam_search, greedy_decode, length_normalized_score


def make_model(vocab=17, seed=0, **changes) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig.preset("tiny", src_vocab_size=vocab, tgt_vocab_size=vocab, dropout=0.0)
    model = Transformer(dataclasses.replace(cfg, **changes)).eval()
    with torch.no_grad():  # sharpen the random model so outputs are varied, not flat
        model.generator.weight.mul_(4.0)
    return model


def sequence_log_prob(model, src, tokens):
    """log P(tokens | src) by one teacher-forced forward pass, PAD and BOS forbidden."""
    cfg = model.cfg
    tgt_in = torch.tensor([[cfg.bos_id] + tokens[:-1]])
    with torch.no_grad():
        logits = model(src[None], tgt_in)[0]
    logits[:, [cfg.pad_id, cfg.bos_id]] = float("-inf")
    lp = logits.log_softmax(-1)
    return sum(lp[i, t].item() for i, t in enumerate(tokens))


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope"])
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_cached_greedy_equals_recomputing_greedy(positional, norm):
    model = make_model(positional=positional, norm=norm)
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 2, 0, 0], [11, 2, 0, 0, 0]])
    cached, lp_cached = greedy_decode(model, src, max_len=12, return_log_probs=True)
    plain, lp_plain = greedy_decode(model, src, max_len=12, use_cache=False, return_log_probs=True)
    assert cached == plain
    for i, tokens in enumerate(cached):  # steps after a sentence ended are not compared
        n = len(tokens)
        assert torch.allclose(lp_cached[i, :n], lp_plain[i, :n], atol=1e-4)
    # batch decoding equals decoding each sentence alone
    for i, row in enumerate(src):
        assert greedy_decode(model, row[row != 0], max_len=12) == [cached[i]]


def test_greedy_output_convention():
    model = make_model()
    src = torch.tensor([5, 6, 7, 2])
    tokens, lp = greedy_decode(model, src, max_len=30, return_log_probs=True)
    tokens = tokens[0]
    assert model.cfg.bos_id not in tokens and model.cfg.pad_id not in tokens
    assert (model.cfg.eos_id not in tokens) or tokens.index(model.cfg.eos_id) == len(tokens) - 1
    assert tokens == lp[0].argmax(-1).tolist()[: len(tokens)]


def test_greedy_equals_argmax_of_teacher_forced_forward():
    model = make_model()
    src = torch.tensor([4, 9, 12, 2])
    tokens = greedy_decode(model, src, max_len=8)[0]
    cfg = model.cfg
    with torch.no_grad():
        logits = model(src[None], torch.tensor([[cfg.bos_id] + tokens[:-1]]))[0]
    logits[:, [cfg.pad_id, cfg.bos_id]] = float("-inf")
    assert logits.argmax(-1).tolist() == tokens


@pytest.mark.parametrize("seed", range(4))
def test_beam_of_one_is_greedy(seed):
    model = make_model(seed=seed)
    src = torch.tensor([3 + seed, 7, 8, 2])
    (best,) = beam_search(model, src, beam_size=1, max_len=15)
    assert best.tokens == greedy_decode(model, src, max_len=15)[0]
    assert best.log_prob == pytest.approx(sequence_log_prob(model, src, best.tokens), abs=1e-4)


def all_complete_sequences(regular, eos, max_len):
    for n in range(0, max_len):
        for body in itertools.product(regular, repeat=n):
            yield list(body) + [eos]
    yield from (list(body) for body in itertools.product(regular, repeat=max_len))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.5])
def test_wide_beam_finds_the_exhaustive_optimum(seed, alpha):
    vocab, max_len = 6, 4  # PAD, BOS, EOS + 3 regular tokens
    model = make_model(vocab=vocab, seed=seed)
    with torch.no_grad():
        model.generator.weight.mul_(0.5)  # keep EOS competitive so lengths vary
    src = torch.tensor([3, 4, 5, 2])
    cfg = model.cfg
    regular = [t for t in range(vocab) if t not in (cfg.pad_id, cfg.bos_id, cfg.eos_id)]
    scored = []
    for seq in all_complete_sequences(regular, cfg.eos_id, max_len):
        lp = sequence_log_prob(model, src, seq)
        scored.append((length_normalized_score(lp, len(seq), alpha), seq))
    scored.sort(key=lambda x: x[0], reverse=True)
    hyps = beam_search(model, src, beam_size=len(scored), max_len=max_len, length_penalty=alpha)
    assert len(hyps) == len(scored)  # nothing pruned: every complete sequence was reached
    assert hyps[0].tokens == scored[0][1]
    assert hyps[0].score == pytest.approx(scored[0][0], abs=1e-4)
    assert [h.tokens for h in hyps[:10]] == [s for _, s in scored[:10]]
    # and a narrow beam never claims a score better than the optimum
    narrow = beam_search(model, src, beam_size=2, max_len=max_len, length_penalty=alpha)
    assert narrow[0].score <= scored[0][0] + 1e-6


def test_beam_search_results_are_consistent():
    model = make_model(seed=5)
    src = torch.tensor([6, 7, 8, 9, 2])
    hyps = beam_search(model, src, beam_size=5, max_len=10, length_penalty=0.6)
    assert len(hyps) == 5
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    for h in hyps:
        assert h.log_prob == pytest.approx(sequence_log_prob(model, src, h.tokens), abs=1e-4)
        assert h.score == pytest.approx(h.log_prob / ((5 + len(h.tokens)) / 6) ** 0.6)
        assert model.cfg.pad_id not in h.tokens and model.cfg.bos_id not in h.tokens
        assert h.tokens[-1] == model.cfg.eos_id or len(h.tokens) == 10
    assert len({tuple(h.tokens) for h in hyps}) == 5


def test_greedy_stepper_records_and_goes_back_without_recomputing():
    model = make_model(seed=2)
    src = torch.tensor([5, 9, 11, 2])
    expected = greedy_decode(model, src, max_len=10)[0]
    stepper = GreedyStepper(model, src, max_len=10, top_k=4)
    first = stepper.step()
    second = stepper.step()
    assert stepper.output == expected[:2]
    assert first.top_tokens.shape == (1, 4) and first.top_tokens[0, 0] == expected[0]
    assert first.top_probs[0, 0] >= first.top_probs[0, 1]
    assert first.cross_attention.shape == (1, model.cfg.n_decoder_layers, model.cfg.n_heads, 4)
    assert second.self_attention.shape == (1, model.cfg.n_decoder_layers, model.cfg.n_heads, 2)
    assert abs(first.cross_attention.sum(-1) - 1).max() < 1e-5

    calls = []
    original = model.decode_step
    model.decode_step = lambda *a, **k: calls.append(1) or original(*a, **k)
    assert stepper.back() is first and stepper.output == expected[:1]
    assert stepper.step() is second  # replayed, not recomputed
    assert calls == []
    stepper.run()
    assert stepper.hypotheses()[0].tokens == expected


def test_stepper_attention_equals_teacher_forced_attention():
    model = make_model(seed=4)
    src = torch.tensor([5, 9, 11, 12, 2])
    stepper = GreedyStepper(model, src, max_len=6)
    stepper.run()
    tokens = stepper.hypotheses()[0].tokens
    with torch.no_grad():
        _, maps = model(src[None], torch.tensor([[model.cfg.bos_id] + tokens[:-1]]), return_attention=True)
    for step in stepper.history:
        for layer in range(model.cfg.n_decoder_layers):
            cross = maps.cross[layer][0, :, step.index].numpy()
            selfw = maps.decoder_self[layer][0, :, step.index, : step.index + 1].numpy()
            assert abs(step.cross_attention[0, layer] - cross).max() < 1e-5
            assert abs(step.self_attention[0, layer] - selfw).max() < 1e-5


def test_beam_stepper_tree_bookkeeping():
    model = make_model(seed=6)
    src = torch.tensor([4, 5, 6, 2])
    stepper = BeamStepper(model, src, beam_size=3, max_len=8, top_k=5)
    hyps = stepper.run()
    assert [h.tokens for h in hyps] == [h.tokens for h in beam_search(model, src, 3, 8)]
    for step in stepper.history:
        live = [c for c in step.kept if c.status == "live"]
        assert len(live) + sum(len(s.finished) for s in stepper.history[: step.index + 1]) <= 3
        assert len(step.prefixes) == step.top_tokens.shape[0] == step.cross_attention.shape[0]
        for c in step.kept + step.pruned:
            expected = (
                step.prefix_log_probs[c.parent]
                + float(torch.tensor(step.top_probs[c.parent]).log()[list(step.top_tokens[c.parent]).index(c.token)])
                if c.token in step.top_tokens[c.parent]
                else None
            )
            if expected is not None:
                assert c.log_prob == pytest.approx(expected, abs=1e-4)
        # nothing pruned beats the worst kept continuation
        if step.pruned and step.kept:
            assert max(c.log_prob for c in step.pruned) <= min(c.log_prob for c in step.kept) + 1e-6
    assert stepper.at_end and stepper.step() is None
    stepper.reset()
    assert stepper.current is None and stepper.step() is stepper.history[0]


def test_bad_decoding_requests_are_refused():
    model = make_model()
    with pytest.raises(ValueError, match="at least one token"):
        greedy_decode(model, torch.tensor([], dtype=torch.long), max_len=5)
    with pytest.raises(ValueError, match="max_len"):
        greedy_decode(model, torch.tensor([4, 2]), max_len=0)
    with pytest.raises(ValueError, match="lower the maximum output length"):
        greedy_decode(model, torch.tensor([4, 2]), max_len=model.cfg.max_len + 1)
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(model, torch.tensor([4, 2]), beam_size=0, max_len=5)
