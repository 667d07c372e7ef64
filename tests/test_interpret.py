"""Asking a session's model why (:mod:`model.session.interpret`), for the three families: what is explained (the
source and output prefix, a GPT's prompt and continuation, a BERT's masks), the shapes and labels of what comes
back, the logit lens (:mod:`model.interpret.lens`) checked on a Hugging Face GPT-2 folder against
``transformers``' hidden states read through ``ln_f`` and the LM head, and the errors a user can cause."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from model.data import DataSpec
from model.interpret.results import LogitLens
from model.session import Session
from model.training.config import TrainConfig

QUICK = TrainConfig(warmup_steps=20, eval_every=0, batch_size=16)


def _text_session(arch: str) -> Session:
    torch.manual_seed(0)
    data = DataSpec(task="text-grammar-en", n_train=200, n_valid=20, n_test=20)
    return Session.create(data, "tiny", QUICK, arch=arch, device="cpu")


@pytest.fixture(scope="module")
def sessions(copy_session_factory):
    torch.manual_seed(0)
    return {
        "encoder_decoder": copy_session_factory(),
        **{a: _text_session(a) for a in ("decoder_only", "encoder_only")},
    }


TEXTS = {"encoder_decoder": "3 1 4 1 5", "decoder_only": "Li Hua is", "encoder_only": "Li Hua is a <mask> ."}


def _own_probs(session: Session, readout) -> np.ndarray:
    """The model's own distribution at the readout's rows, never-emitted ids masked: one plain forward pass."""
    with torch.no_grad():
        logits = session.model(*readout.inputs)[0, list(readout.rows)].double()
    logits[:, session.model_cfg.never_emitted] = float("-inf")
    return logits.softmax(-1).numpy()


# -- attribution through the session ------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only", "encoder_only"])
@pytest.mark.parametrize("method", ["integrated_gradients", "gradient_x_input", "attention_rollout"])
def test_attribution_explains_what_each_family_reads(sessions, arch, method):
    session = sessions[arch]
    text = TEXTS[arch]
    a = session.attribute(text, method=method, steps=8)
    T = len(a.target_tokens)
    assert a.method == method and a.source == text and a.step == session.step
    assert a.scores.shape == (T, len(a.source_tokens)) and a.prefix_scores.shape == (T, T)
    assert len(a.prefix_tokens) == T and np.isfinite(a.scores).all()
    if arch == "encoder_decoder":  # the source as the encoder reads it; the output read before each target
        translation = session.translate(text)
        assert a.source_tokens == tuple(session.src_tok.display_token(i) for i in translation.source_ids)
        assert a.target_tokens == tuple(session.tgt_tok.display_token(i) for i in translation.tokens)
        assert a.prefix_tokens[0] == session.tgt_tok.display_token(session.model_cfg.bos_id)
        assert a.prefix_tokens[1:] == a.target_tokens[:-1]
    elif arch == "decoder_only":  # the prompt after <bos>, and the continuation generate gives
        ids = session.src_tok.encode_ids(text)
        assert a.source_tokens == tuple(session.src_tok.display_token(i) for i in [session.model_cfg.bos_id, *ids])
        continuation = session.readout(text).targets
        assert a.target_tokens == tuple(session.tgt_tok.display_token(i) for i in continuation)
        assert a.prefix_tokens == a.target_tokens
    else:  # one target: the model's fill for the mask; no prefix
        assert T == 1 and "<mask>" in " ".join(a.source_tokens)
        assert not a.prefix_scores.any()
    if method == "integrated_gradients":
        assert a.steps == 8 and a.logprob.shape == a.baseline_logprob.shape == (T,)
        np.testing.assert_allclose(np.exp(a.logprob), _own_probs(session, session.readout(text)).max(-1), rtol=1e-4)
    else:
        assert a.logprob is None and a.steps == 0
    if method == "attention_rollout":  # rollout rows are shares of one unit
        assert (a.scores >= 0).all() and (a.total() <= 1 + 1e-5).all()


def test_a_given_target_and_a_contrast_are_what_is_explained(sessions):
    session = sessions["encoder_decoder"]
    a = session.attribute("3 1 4", target="3 1 5", contrast="4", steps=8)
    show = session.tgt_tok.display_token
    assert a.target_tokens == ("3", "1", "5", "<eos>") and a.contrast == "4"  # a text target ends the sentence
    assert a.contrast == show(session.tgt_tok.encode_ids("4")[0])
    bert = sessions["encoder_only"]
    b = bert.attribute("Li <mask> is a <mask> .", target="Hua teacher", method="gradient_x_input")
    assert b.target_tokens == ("Hua", "teacher") and b.scores.shape[0] == 2


def test_user_errors_are_refused_with_a_message_to_act_on(sessions):
    gpt, bert, translator = sessions["decoder_only"], sessions["encoder_only"], sessions["encoder_decoder"]
    with pytest.raises(ValueError, match="unknown attribution method 'saliency'; one of integrated_gradients"):
        translator.attribute("3 1", method="saliency")
    with pytest.raises(ValueError, match="at least one step"):
        translator.attribute("3 1", steps=0)
    with pytest.raises(ValueError, match="Write <mask> where the model should fill a word in"):
        bert.attribute("Li Hua is a teacher .")
    with pytest.raises(ValueError, match="Write <mask>"):
        bert.logit_lens("Li Hua is a teacher .")
    with pytest.raises(ValueError, match="2 mask\\(s\\) to explain but 1 target token\\(s\\) given"):
        bert.attribute("Li <mask> is a <mask> .", target="Hua")
    with pytest.raises(ValueError, match="no continuation to explain"):
        gpt.attribute("Li Hua is", target="")
    with pytest.raises(ValueError, match="is no token of this model's vocabulary"):
        gpt.attribute("Li Hua is", contrast="")
    with pytest.raises(ValueError, match="unknown metric"):
        gpt.head_importance(n_sentences=2, metric="perplexity")


# -- the logit lens -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only", "encoder_only"])
def test_the_logit_lens_has_a_row_per_layer_and_ends_at_the_models_own_distribution(sessions, arch):
    session = sessions[arch]
    text = TEXTS[arch]
    lens = session.logit_lens(text)
    readout = session.readout(text)
    cfg = session.model_cfg
    n_layers = cfg.n_encoder_layers if arch == "encoder_only" else cfg.n_decoder_layers
    T = len(readout.rows)
    assert lens.probs.shape == (n_layers, T, session.model.generator.out_features)
    assert len(lens.positions) == len(lens.targets) == len(lens.target_ids) == T
    assert lens.target_ids == tuple(readout.targets)
    np.testing.assert_allclose(lens.probs.sum(-1), 1.0, atol=1e-5)
    assert not lens.probs[..., cfg.never_emitted].any()
    np.testing.assert_allclose(lens.probs[-1], _own_probs(session, readout), atol=1e-6)
    if arch == "encoder_decoder":  # the decoder reads <bos> then its own output
        assert lens.positions[0] == session.tgt_tok.display_token(cfg.bos_id)
        assert lens.positions[1:] == lens.targets[:-1]
    if arch == "encoder_only":
        assert lens.positions == ("<mask>",)


def test_first_layer_is_where_the_final_top_token_takes_over_for_good():
    probs = np.zeros((4, 4, 3))
    tops = [  # per position, the top token at each of the 4 layers
        [2, 1, 0, 0],  # settles at layer 2
        [0, 0, 0, 0],  # at layer 0
        [1, 0, 1, 0],  # only the last layer
        [0, 2, 0, 2],  # the same as the end at layer 1, lost at 2: layer 3
    ]
    for t, per_layer in enumerate(tops):
        for layer, token in enumerate(per_layer):
            probs[layer, t] = 0.1
            probs[layer, t, token] = 0.8
    lens = LogitLens("x", ("a",) * 4, ("b",) * 4, (0,) * 4, probs)
    assert lens.first_layer().tolist() == [2, 0, 3, 3]


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory) -> Path:
    pytest.importorskip("transformers")
    from tests.hf_folders import gpt2_folder

    return gpt2_folder(tmp_path_factory.mktemp("hf"))


def test_the_logit_lens_of_a_gpt2_folder_equals_transformers_hidden_states_through_ln_f(gpt2):
    import transformers

    session = Session.load(gpt2, device="cpu")
    reference = transformers.GPT2LMHeadModel.from_pretrained(gpt2, attn_implementation="eager").eval()
    text = "My cat is cute."
    lens = session.logit_lens(text)
    readout = session.readout(text)
    rows = list(readout.rows)
    never = session.model_cfg.never_emitted
    with torch.no_grad():
        out = reference(input_ids=readout.inputs[0], output_hidden_states=True)
        hidden = out.hidden_states  # embeddings, then after each block; the last one already through ln_f
        assert len(hidden) == lens.probs.shape[0] + 1 == 3
        for layer in range(lens.probs.shape[0]):
            h = hidden[layer + 1][0, rows]
            if layer < lens.probs.shape[0] - 1:
                h = reference.transformer.ln_f(h)
            logits = reference.lm_head(h)
            logits[:, never] = float("-inf")
            np.testing.assert_allclose(lens.probs[layer], logits.softmax(-1).numpy(), atol=1e-5)
        final = out.logits[0, rows]
        final[:, never] = float("-inf")
    np.testing.assert_allclose(lens.probs[-1], final.softmax(-1).numpy(), atol=1e-5)
    np.testing.assert_allclose(lens.probs[-1], _own_probs(session, readout), atol=1e-6)
    # the layers do differ (a freshly initialised GPT-2 is near uniform: compare log-probabilities)
    assert np.abs(np.log(lens.probs[0]) - np.log(lens.probs[-1])).max() > 0.01
    assert lens.targets == tuple(session.tgt_tok.display_token(t) for t in readout.targets)
