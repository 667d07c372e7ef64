"""Attribution (:mod:`model.interpret.attribution`): integrated gradients checked for completeness on a trained
translator, a GPT and a BERT and against Captum's own ``IntegratedGradients`` (Gauss–Legendre, zero baselines),
the contrastive row against Captum on log P(X) − log P(Y), gradient × input against a hand autograd computation,
and attention rollout against Abnar & Zuidema's formula written out with loops on hand matrices."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from model.data import DataSpec
from model.interpret.attribution import embeddings_replaced, encoder_decoder_rollout, rollout, token_embeddings
from model.session import Session
from model.training.config import TrainConfig

captum_attr = pytest.importorskip("captum.attr")

QUICK = TrainConfig(warmup_steps=20, eval_every=0, batch_size=16)
BUNDLED = "resources/models/grammar-en-zh-small.ckpt"


def _text_session(arch: str, steps: int) -> Session:
    """A tiny GPT or BERT as GPT-2 and BERT are built (Pre-LN, GELU: a smooth path from the baseline), trained a
    little so that it reads its input."""
    torch.manual_seed(0)
    data = DataSpec(task="text-grammar-en", n_train=300, n_valid=20, n_test=20)
    s = Session.create(data, "tiny", QUICK, arch=arch, device="cpu", norm="pre", activation="gelu")
    s.train_steps(steps)
    return s


@pytest.fixture(scope="module")
def copy(copy_session_factory):
    torch.manual_seed(0)
    s = copy_session_factory()
    s.train_steps(150)
    return s, s.src_tok.decode(s.encoded("valid").src[0]), None


@pytest.fixture(scope="module")
def gpt():
    s = _text_session("decoder_only", 30)
    prompt = " ".join(s.src_tok.decode(s.encoded("valid").ids[0]).split()[:3])
    return s, prompt, s.readout(prompt).targets[:4]  # the first four tokens of its own continuation


@pytest.fixture(scope="module")
def bert():
    s = _text_session("encoder_only", 40)
    words = s.src_tok.decode(s.encoded("valid").ids[0]).split()[:6]
    words[2] = "<mask>"
    return s, " ".join(words), None


def _cases(copy, gpt, bert):
    return {"encoder_decoder": copy, "decoder_only": gpt, "encoder_only": bert}


# -- integrated gradients: completeness ---------------------------------------------------------------------------
def _assert_complete(a) -> None:
    """Each row sums to f(input) − f(baseline) within 1% of it (of 0.05 nats for a change smaller than that)."""
    explained = a.logprob - a.baseline_logprob
    assert np.all(np.abs(explained) > 1e-3)  # something to explain
    np.testing.assert_array_less(np.abs(a.total() - explained), 0.01 * np.maximum(np.abs(explained), 0.05))


@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only", "encoder_only"])
def test_integrated_gradients_are_complete_at_64_steps(copy, gpt, bert, arch):
    session, text, target = _cases(copy, gpt, bert)[arch]
    a = session.attribute(text, target=target, steps=64)
    assert a.steps == 64 and a.logprob is not None and a.baseline_logprob is not None
    _assert_complete(a)
    # the explained log-probabilities are the model's own, at the input (checked against a plain forward pass)
    r = session.readout(text, target)
    with torch.no_grad():
        logits = session.model(*r.inputs)[0].float()
    logits[:, session.model_cfg.never_emitted] = float("-inf")
    own = F.log_softmax(logits, -1)[list(r.rows), list(r.targets)].numpy()
    np.testing.assert_allclose(a.logprob, own, atol=1e-5)


def test_integrated_gradients_on_the_trained_translator_converge_with_more_steps(copy):
    session, text, _ = copy
    err = []
    for steps in (8, 256):
        a = session.attribute(text, steps=steps, refine=False)
        err.append(np.abs(a.total() - (a.logprob - a.baseline_logprob)).max())
    assert err[1] < err[0] and err[1] < 0.01


def test_on_the_bundled_model_nearly_hard_attention_needs_the_adaptive_rule():
    """The bundled model's attention is nearly hard: along the path f steps within a ten-thousandth of it, where
    64 fixed points miss it; the adaptive rule makes every row add up."""
    session = Session.load(BUNDLED, device="cpu")
    plain = session.attribute("I read a book yesterday.", steps=64, refine=False)
    explained = plain.logprob - plain.baseline_logprob
    assert np.max(np.abs(plain.total() - explained) / np.abs(explained)) > 0.05
    refined = session.attribute("I read a book yesterday.", steps=64)
    _assert_complete(refined)
    np.testing.assert_array_equal(refined.logprob, plain.logprob)


@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only"])
def test_a_long_texts_points_go_through_in_batches_with_the_same_result_and_progress(
    copy, gpt, bert, arch, monkeypatch
):
    """A long text's points of the path go through the model a few at a time (64 points of a 512-token text
    through GPT-2 small would keep ~25 GB for the backward): the same attributions as in one pass, and progress
    after each batch, up to every point — raising from it stops the computation."""
    from model.interpret import attribution

    session, text, target = _cases(copy, gpt, bert)[arch]
    whole = session.attribute(text, target=target, steps=12, refine=False)
    assert attribution.points_per_pass(session.model, session.readout(text, target)) >= 12  # a short text: one
    r = session.readout(text, target)
    per_point = 4 * 32 * session.model_cfg.d_model * sum(t.shape[-1] for t in r.inputs)
    per_point *= len(session.model.encoder_layers) + len(session.model.decoder_layers)
    monkeypatch.setattr(attribution, "ACTIVATION_BYTES", 5 * per_point)  # 5 points a pass
    told: list[tuple[int, int]] = []
    batched = session.attribute(text, target=target, steps=12, refine=False, progress=lambda *p: told.append(p))
    assert told == [(5, 12), (10, 12), (12, 12)]
    np.testing.assert_allclose(batched.scores, whole.scores, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(batched.prefix_scores, whole.prefix_scores, rtol=1e-4, atol=1e-6)

    class Stop(Exception):
        pass

    def stop(done: int, total: int) -> None:
        raise Stop

    with pytest.raises(Stop):
        session.attribute(text, target=target, steps=12, progress=stop)


# -- integrated gradients: equal to Captum ------------------------------------------------------------------------
def _forward(session: Session, readout, row: int, contrast: int | None = None):
    """f over the embeddings, written here: log P(target at row) (minus log P(contrast)), never-emitted masked."""
    model = session.model
    never = list(session.model_cfg.never_emitted)

    def f(*embedded: torch.Tensor) -> torch.Tensor:
        n = embedded[0].shape[0]
        ids = [t.expand(n, -1) for t in readout.inputs]
        with embeddings_replaced(model, ids, embedded):
            logits = model(*ids).float()[:, readout.rows[row]]
        logits[:, never] = float("-inf")
        logp = F.log_softmax(logits, -1)
        out = logp[:, readout.targets[row]]
        return out if contrast is None else out - logp[:, contrast]

    return f


def _captum(session: Session, readout, row: int, steps: int, contrast: int | None = None):
    """Captum's per-token integrated gradients of one target row: (source columns, prefix columns)."""
    x = tuple(token_embeddings(readout))
    ig = captum_attr.IntegratedGradients(_forward(session, readout, row, contrast))
    with torch.enable_grad():
        got = ig.attribute(x, baselines=tuple(torch.zeros_like(e) for e in x), n_steps=steps, method="gausslegendre")
    summed = [g[0].sum(-1).detach().numpy() for g in got]
    i, positions = readout.source
    source = summed[i][list(positions)]
    if readout.prefix is None:
        return source, np.zeros(0)
    j, positions = readout.prefix
    return source, summed[j][list(positions)]


@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only", "encoder_only"])
def test_integrated_gradients_equal_captum(copy, gpt, bert, arch):
    session, text, target = _cases(copy, gpt, bert)[arch]
    steps = 16
    a = session.attribute(text, target=target, steps=steps, refine=False)  # Captum's rule alone
    readout = session.readout(text, target)
    session.model.eval()
    for t in range(len(readout.targets)):
        source, prefix = _captum(session, readout, t, steps)
        np.testing.assert_allclose(a.scores[t], source, atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(a.prefix_scores[t, : len(prefix)], prefix, atol=1e-5, rtol=1e-5)
        assert not a.prefix_scores[t, len(prefix) :].any()
    if readout.prefix is not None:  # a target reads only the output before it: the decoder's input up to its
        # own position (BOS, y₁…y_t), a GPT's continuation tokens before it
        assert not np.triu(a.prefix_scores, 0 if arch == "decoder_only" else 1).any()
        assert np.abs(np.tril(a.prefix_scores)).sum() > 0


@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only"])
def test_the_contrastive_row_equals_captum_on_the_difference_of_log_probabilities(copy, gpt, arch):
    session, text, target = _cases(copy, gpt, None)[arch]
    plain = session.readout(text, target)
    # Y: the runner-up at the last row, a token the model could have said instead
    with torch.no_grad():
        logits = session.model(*plain.inputs)[0, plain.rows[-1]].float()
    logits[session.model_cfg.never_emitted] = float("-inf")
    runner_up = int(logits.topk(2).indices[1])
    assert runner_up != plain.targets[-1]
    steps = 16
    a = session.attribute(text, target=target, contrast=runner_up, steps=steps, refine=False)
    b = session.attribute(text, target=target, steps=steps, refine=False)
    assert a.contrast == session.tgt_tok.display_token(runner_up)
    source, prefix = _captum(session, plain, len(plain.targets) - 1, steps, contrast=runner_up)
    np.testing.assert_allclose(a.scores[-1], source, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(a.prefix_scores[-1, : len(prefix)], prefix, atol=1e-5, rtol=1e-5)
    # the other rows are unchanged, and the last explains log P(X) − log P(Y) at input and baseline
    np.testing.assert_array_equal(a.scores[:-1], b.scores[:-1])
    gap = float(logits.log_softmax(-1)[plain.targets[-1]] - logits.log_softmax(-1)[runner_up])
    assert a.logprob[-1] == pytest.approx(gap, abs=1e-4) and gap > 0
    assert not np.allclose(a.scores[-1], b.scores[-1])


# -- gradient × input -----------------------------------------------------------------------------------------------
def _hand_gradient_x_input(session: Session, readout) -> list[np.ndarray]:
    """x · ∂ log P(target)/∂x per input, summed over the embedding, by plain autograd: each embedding module's
    output replaced by a leaf tensor through a forward hook written here."""
    model = session.model
    leaves = {}
    for emb, ids in zip(readout.embeddings, readout.inputs):
        with torch.no_grad():
            leaves[emb] = emb(ids).clone().requires_grad_(True)
    assert len(leaves) == len(readout.inputs)  # one module per input (no shared vocabulary here)
    handles = [emb.register_forward_hook(lambda m, args, out: leaves[m]) for emb in leaves]
    rows = []
    try:
        for row, target in zip(readout.rows, readout.targets):
            for leaf in leaves.values():
                leaf.grad = None
            with torch.enable_grad():
                logits = model(*readout.inputs)[0, row].float()
                logits[session.model_cfg.never_emitted] = float("-inf")
                F.log_softmax(logits, -1)[target].backward()
            rows.append([(leaf[0] * leaf.grad[0]).sum(-1).detach().numpy() for leaf in leaves.values()])
    finally:
        for h in handles:
            h.remove()
    return rows


@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only", "encoder_only"])
def test_gradient_x_input_equals_a_hand_autograd_computation(copy, gpt, bert, arch):
    session, text, target = _cases(copy, gpt, bert)[arch]
    a = session.attribute(text, method="gradient_x_input", target=target)
    assert a.logprob is None and a.steps == 0
    readout = session.readout(text, target)
    session.model.eval()
    for t, per_input in enumerate(_hand_gradient_x_input(session, readout)):
        i, positions = readout.source
        np.testing.assert_allclose(a.scores[t], per_input[i][list(positions)], atol=1e-5, rtol=1e-5)
        if readout.prefix is not None:
            j, positions = readout.prefix
            expected = per_input[j][list(positions)]
            np.testing.assert_allclose(a.prefix_scores[t, : len(expected)], expected, atol=1e-5, rtol=1e-5)
    assert np.abs(a.scores).sum() > 0


# -- attention rollout ----------------------------------------------------------------------------------------------
A1 = np.array(  # layer 1: [heads, query, key], each row a distribution
    [
        [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]],
        [[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.6, 0.2, 0.2]],
    ]
)
A2 = np.array(
    [
        [[0.4, 0.4, 0.2], [0.1, 0.8, 0.1], [0.0, 0.0, 1.0]],
        [[0.2, 0.6, 0.2], [0.3, 0.3, 0.4], [0.5, 0.25, 0.25]],
    ]
)


def _by_loops(layers: list[np.ndarray]) -> np.ndarray:
    """Abnar & Zuidema (2020), eq. for rollout: Ã(l) = Â(l)·Ã(l−1), Â = ½·mean_h A + ½·I rows renormalised,
    multiplied out with explicit loops (first layer first)."""
    n = layers[0].shape[-1]
    total = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    for layer in layers:
        heads = layer.shape[0]
        hat = [
            [0.5 * sum(layer[h][i][j] for h in range(heads)) / heads + (0.5 if i == j else 0.0) for j in range(n)]
            for i in range(n)
        ]
        hat = [[v / sum(row) for v in row] for row in hat]
        total = [[sum(hat[i][k] * total[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
    return np.array(total)


def test_rollout_equals_the_papers_formula_on_a_hand_example():
    got = rollout([A1, A2])
    np.testing.assert_allclose(got, _by_loops([A1, A2]), atol=1e-12)
    # first entry worked out on paper: Â1[0] = (1, 0, 0); Â2[0] = ½·(0.3, 0.5, 0.2) + ½·(1, 0, 0) = (0.65, 0.25, 0.1)
    # Â1[:, 0] = (½·1 + ½, ½·0.7, ½·0.4) = (1, 0.35, 0.2) → (Â2·Â1)[0, 0] = 0.65 + 0.25·0.35 + 0.1·0.2
    assert got[0, 0] == pytest.approx(0.65 + 0.25 * 0.35 + 0.1 * 0.2)
    np.testing.assert_allclose(got.sum(1), 1.0)
    # the order matters: the first layer is the rightmost factor
    assert not np.allclose(got, rollout([A2, A1]))


def test_encoder_decoder_rollout_rows_sum_to_one_and_reduce_by_hand():
    rng = np.random.default_rng(0)

    def maps(h: int, q: int, k: int) -> np.ndarray:
        m = rng.random((h, q, k))
        return m / m.sum(-1, keepdims=True)

    T, S = 3, 4
    enc = [maps(2, S, S), maps(2, S, S)]
    dec = [maps(2, T, T), maps(2, T, T)]
    cross = [maps(2, T, S), maps(2, T, S)]
    source, own = encoder_decoder_rollout(enc, dec, cross)
    assert source.shape == (T, S) and own.shape == (T, T)
    np.testing.assert_allclose(source.sum(1) + own.sum(1), 1.0)
    assert (source >= 0).all() and (own >= 0).all()
    # decoder self-attention that only looks at itself: Â = I, so each layer halves "own" and adds half of its
    # cross-attention (head mean) times the encoder's rollout M: source = ¼·C₁M + ½·C₂M, own = ¼·I
    eye = np.stack([np.eye(T)] * 2)
    M = _by_loops(enc)
    source, own = encoder_decoder_rollout(enc, [eye, eye], cross)
    c1, c2 = cross[0].mean(0), cross[1].mean(0)
    np.testing.assert_allclose(source, 0.25 * c1 @ M + 0.5 * c2 @ M, atol=1e-12)
    np.testing.assert_allclose(own, 0.25 * np.eye(T), atol=1e-12)
    # no encoder layers: the memory is the source itself; one decoder layer with self-attention D:
    # own = ½·Â, source = ½·C
    source, own = encoder_decoder_rollout([], dec[:1], cross[:1])
    hat = 0.5 * dec[0].mean(0) + 0.5 * np.eye(T)
    np.testing.assert_allclose(own, 0.5 * hat, atol=1e-12)
    np.testing.assert_allclose(source, 0.5 * c1, atol=1e-12)


def test_rollout_through_the_session_equals_rollout_of_its_attention_maps(gpt, bert):
    for session, text, target in (gpt, bert):
        a = session.attribute(text, method="attention_rollout", target=target)
        r = session.readout(text, target)
        with torch.no_grad():
            _, maps = session.model(*r.inputs, return_attention=True)
        stack = maps.decoder_self if session.model_cfg.arch == "decoder_only" else maps.encoder
        rolled = _by_loops([m[0].double().numpy() for m in stack])
        np.testing.assert_allclose(a.scores, rolled[list(r.rows)][:, list(r.source[1])], atol=1e-6)
        # a GPT's continuation columns are the rest of each row; together they sum to 1 (the last position,
        # which reads no continuation token after it, is the only one left out)
        assert (a.total() <= 1 + 1e-6).all()
