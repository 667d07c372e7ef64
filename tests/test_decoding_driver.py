"""Step-through decoding as the engine thread runs it (no Qt involved)."""

import pytest

from explorer.decoding_driver import DecodeDriver, DecodeSettings
from model.decoding import beam_search, greedy_decode


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
    old = driver.start(DecodeSettings("3 1 4"))
    driver.act("step")
    with pytest.raises(ValueError, match="Type a sentence"):
        driver.start(DecodeSettings("   "))
    with pytest.raises(ValueError, match="Type a sentence"):  # no step of the old sentence under the new one
        driver.act("step")
    view = driver.start(DecodeSettings("5 6"))
    assert view.decode_id > old.decode_id and view.source_tokens == ("5", "6", "<eos>")
    assert (view.source_length, view.source_read) == (2, 2)
