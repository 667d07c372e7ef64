"""Step-through decoding as the engine thread runs it (no Qt involved): the attention maps of the prefix in focus,
put together from the steps' decoder calls, equal a teacher-forced forward pass (tests/test_stepping.py counts the
calls, for every family)."""

import itertools

import numpy as np
import pytest

from model.data.tokenization import EOS_ID
from model.decoding.search import beam_search, greedy_decode
from model.decoding.stepping import DecodeDriver, DecodeError
from model.io.snapshots import DecodeSettings


@pytest.fixture(scope="module")
def trained(copy_session_factory):
    session = copy_session_factory()
    session.train_steps(150)
    return session


def test_greedy_stepping_matches_greedy_decoding(trained):
    import torch

    driver = DecodeDriver(trained)
    view = driver.start(DecodeSettings("3 1 4 1 5"))
    assert view.position == 0 and view.steps == () and view.source_tokens[-1] == "<eos>"
    expected = greedy_decode(trained.model, torch.tensor(trained._source("3 1 4 1 5")[1]), 20)[0]
    view = driver.act("step")
    assert view.position == 1 and list(view.focus_tokens) == expected[:1]
    view = driver.act("step")
    assert list(view.focus_tokens) == expected[:2]
    assert view.inspection.cross.shape[2] == 3  # BOS + two tokens: one query row each
    back = driver.act("back")
    assert back.position == 1 and back.steps == view.steps[:1]
    end = driver.act("run")
    assert end.at_end and list(end.hypotheses[0][3]) == expected
    assert end.hypotheses[0][0] == trained.tgt_tok.decode(expected)


def test_beam_stepping_and_rebuild_on_new_weights(trained):
    import torch

    driver = DecodeDriver(trained)
    driver.start(DecodeSettings("2 7 1 8", beam_size=3))
    view = driver.act("run")
    src = torch.tensor(trained._source("2 7 1 8")[1])
    expected = beam_search(trained.model, src, 3, trained.default_max_len(len(src)))
    assert [list(h[3]) for h in view.hypotheses] == [h.tokens for h in expected]
    driver.act("reset")
    driver.act("step")
    trained.train_steps(1)  # the weights change under the stepper
    view = driver.act("step")
    assert view.position == 2 and view.weights_step == trained.step
    with pytest.raises(ValueError, match="unknown decoding action"):
        driver.act("sideways")


def test_a_sentence_that_cannot_start_replaces_the_last_one(trained):
    driver = DecodeDriver(trained)
    with pytest.raises(DecodeError) as nothing_yet:  # a step before any sentence: the window words the code
        driver.act("step")
    assert nothing_yet.value.code == "no_sentence"
    old = driver.start(DecodeSettings("3 1 4"))
    driver.act("step")
    with pytest.raises(ValueError, match="Type a sentence"):
        driver.start(DecodeSettings("   "))
    with pytest.raises(ValueError, match="Type a sentence"):  # no step of the old sentence under the new one
        driver.act("step")
    view = driver.start(DecodeSettings("5 6"))
    assert view.decode_id > old.decode_id and view.source_tokens == ("5", "6", "<eos>")
    assert (view.source_length, view.source_read) == (2, 2)


# -- the maps of the prefix in focus, from the steps' own decoder calls ---------------------------------------------
SENTENCE = "5 6 7 8"
MAP_FIELDS = ("encoder", "decoder_self", "cross", "target_probs")


def varied_session(**model):
    """An untrained copy-task session whose outputs vary (sharpened) and sometimes end (EOS made likelier)."""
    import torch

    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.session import Session
    from model.training.trainer import train_config_for

    data = DataSpec(task="copy", n_train=200, n_valid=10, n_test=10, length=6, min_length=2, alphabet=8)
    session = Session.create(
        data, "tiny", train_config_for("tiny", eval_every=0), TokenizerSpec("word"), device="cpu", **model
    )
    with torch.no_grad():
        session.model.generator.weight.mul_(3.0)
        session.model.generator.bias[EOS_ID] += 0.5
    return session


def assert_same_maps(got, want, what):
    assert (got.src_tokens, got.tgt_tokens, got.out_tokens) == (want.src_tokens, want.tgt_tokens, want.out_tokens)
    assert got.target_ids == want.target_ids and got.teacher_forced and got.step == want.step
    for name in MAP_FIELDS:
        a, b = getattr(got, name), getattr(want, name)
        assert a.shape == b.shape and np.abs(a - b).max() < 1e-5, f"{what}: {name}"
    assert set(got.masks) == {"encoder", "decoder_self", "cross"} and got.masks.keys() == want.masks.keys()
    for kind, allowed in got.masks.items():
        assert np.array_equal(allowed, want.masks[kind]), f"{what}: mask {kind}"
    assert not got.decoder_self[:, :, ~got.masks["decoder_self"]].any()  # nothing where the model may not look


def teacher_forced(session, tokens, text=SENTENCE):
    return session.inspect(text, tgt_ids=list(tokens))


@pytest.mark.parametrize(
    "positional, norm", list(itertools.product(("sinusoidal", "learned", "rope"), ("post", "pre")))
)
@pytest.mark.parametrize("beam", [1, 4])
def test_stepped_maps_equal_a_teacher_forced_pass(positional, norm, beam):
    session = varied_session(positional=positional, norm=norm)
    driver = DecodeDriver(session)
    view = driver.start(DecodeSettings(SENTENCE, beam_size=beam, length_penalty=0.6, max_len=8))
    views = [view]
    while not view.at_end:
        view = driver.act("step")
        views.append(view)
    assert len(views) > 4
    for view in views:  # the focus: the output so far, the best live beam, or the best finished hypothesis
        assert_same_maps(view.inspection, teacher_forced(session, view.focus_tokens), f"position {view.position}")
    # every beam, not only the best, follows its own back-pointers through the earlier steps' rows
    stepper = driver._decode.stepper
    for position in range(len(stepper.history) + 1):
        prefixes = stepper.history[position].prefixes if position < len(stepper.history) else []
        for row, prefix in enumerate(prefixes):
            got = driver._inspection(prefix, (position, row))
            assert_same_maps(got, teacher_forced(session, prefix), f"position {position}, beam {row}")
    for t, step in enumerate(stepper.history):  # and so does every hypothesis that ended with EOS
        done = [c for c in step.kept if c.status == "finished"]
        for hyp, candidate in zip(step.finished, done):
            if hyp.tokens[-1] == EOS_ID:
                got = driver._inspection(hyp.tokens, (t, candidate.parent))
                assert_same_maps(got, teacher_forced(session, hyp.tokens), f"finished at step {t}")
    back = driver.act("goto", 2)
    assert back is views[2]  # kept, not made again


@pytest.mark.parametrize("beam", [1, 3])
def test_a_finished_translation_has_the_maps_of_a_teacher_forced_pass(trained, beam):
    driver = DecodeDriver(trained)
    driver.start(DecodeSettings("2 7 1 8", beam_size=beam))
    end = driver.act("run")
    assert end.at_end and end.focus_tokens[-1] == EOS_ID and len(end.focus_tokens) > 2
    assert_same_maps(end.inspection, teacher_forced(trained, end.focus_tokens, "2 7 1 8"), "the translation")
    assert end.inspection.target_probs[-1] > 0.5  # the trained model is sure the copy ends there
