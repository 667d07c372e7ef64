"""Decoding lanes (model/decoding/lanes.py): on one step cursor, the greedy lane is greedy_decode's output so far,
the beam lane ends with beam_search's hypotheses, a sampling lane with a seed is the sampler with that seed, at
every step; each lane's log-probability is the model's own for its prefix, and the lanes say where they part."""

import numpy as np
import pytest
import torch

from model.data import DataSpec
from model.decoding.lanes import LanesDriver, focus_log_prob, lane_label, parted, standard_lanes
from model.decoding.search import beam_search, generate, greedy_decode
from model.io.snapshots import DecodeSettings
from model.session import Session
from model.training.config import TrainConfig

SENTENCE = "2 7 1 8 3"
PROMPT = "我昨天"


@pytest.fixture(scope="module")
def trained(copy_session_factory):
    session = copy_session_factory()
    session.train_steps(120)
    return session


@pytest.fixture(scope="module")
def gpt():
    torch.manual_seed(0)
    train = TrainConfig(warmup_steps=50, eval_every=0)
    return Session.create(DataSpec(task="text-hsk-zh"), "tiny", train, arch="decoder_only", device="cpu")


def test_greedy_and_beam_lanes_are_greedy_decoding_and_beam_search_at_every_step(trained):
    lanes = LanesDriver(trained)
    view = lanes.start([DecodeSettings(SENTENCE, max_len=12), DecodeSettings(SENTENCE, beam_size=3, max_len=12)])
    assert view.position == 0 and [lane.label for lane in view.lanes] == ["greedy", "beam 3"]
    src = torch.tensor(trained._source(SENTENCE)[1])
    greedy = greedy_decode(trained.model, src, 12)[0]
    while not view.at_end:
        view = lanes.act("step")
        shown = list(view.lanes[0].view.focus_tokens)
        assert shown == greedy[: view.position] or (view.lanes[0].view.at_end and shown == greedy)
    found = beam_search(trained.model, src, 3, 12)
    end = view.lanes[1].view
    assert [list(h[3]) for h in end.hypotheses] == [h.tokens for h in found]
    assert end.focus_tokens == tuple(found[0].tokens)


def test_sampling_lanes_are_the_sampler_with_their_seeds_at_every_step(gpt):
    settings = [DecodeSettings(PROMPT, max_len=10, temperature=1.3, seed=s) for s in (1, 2, 3)]
    lanes = LanesDriver(gpt)
    view = lanes.start(settings)
    ids = gpt._source(PROMPT)[1]
    drawn = [generate(gpt.model, ids, 10, temperature=1.3, seed=s) for s in (1, 2, 3)]
    assert len({tuple(d) for d in drawn}) > 1  # the seeds draw different texts: the lanes part somewhere
    while not view.at_end:
        view = lanes.act("step")
        for lane, want in zip(view.lanes, drawn):
            shown = list(lane.view.focus_tokens)
            assert shown == want[: min(view.position, len(want))] or (lane.view.at_end and shown == want)
    for lane, want in zip(view.lanes[1:], drawn[1:]):
        assert lane.parted_at == parted(tuple(want), tuple(drawn[0]))
    assert any(lane.parted_at is not None for lane in view.lanes[1:])


def test_one_cursor_moves_every_lane_and_a_finished_lane_stays_at_its_end(trained):
    lanes = LanesDriver(trained)
    lanes.start(standard_lanes(SENTENCE, beam=2, seeds=(1,)))
    for _ in range(3):
        view = lanes.act("step")
    assert view.position == 3 and all(lane.view.position == 3 for lane in view.lanes)
    view = lanes.act("back")
    assert view.position == 2 and all(lane.view.position == 2 for lane in view.lanes)
    end = lanes.act("run")
    assert end.at_end and all(lane.view.at_end for lane in end.lanes)
    assert all(lane.view.position <= end.position for lane in end.lanes)
    assert lanes.act("reset").position == 0


def test_each_lanes_log_probability_is_the_models_own_for_its_prefix(trained):
    lanes = LanesDriver(trained)
    lanes.start(
        [
            DecodeSettings(SENTENCE),
            DecodeSettings(SENTENCE, beam_size=3),
            DecodeSettings(SENTENCE, temperature=2.0, seed=4),
        ]
    )
    for _ in range(3):
        view = lanes.act("step")
    for lane in view.lanes:
        focus = list(lane.view.focus_tokens)
        probs = trained.inspect(SENTENCE, tgt_ids=focus).target_probs[: len(focus)]  # P(y_t | y_<t, source)
        assert lane.log_prob == pytest.approx(float(np.log(probs).sum()), abs=1e-4), lane.label
        assert lane.log_prob == focus_log_prob(lane.view)


def test_labels_and_parting():
    assert lane_label(DecodeSettings("x")) == "greedy"
    assert lane_label(DecodeSettings("x", beam_size=4)) == "beam 4"
    assert lane_label(DecodeSettings("x", temperature=0.8, sample_top_k=20, top_p=0.9, seed=2)) == (
        "sampling T 0.8, top-k 20, top-p 0.9, seed 2"
    )
    assert parted((1, 2, 3), (1, 2, 3)) is None
    assert parted((1, 5, 3), (1, 2, 3)) == 1
    assert parted((1, 2), (1, 2, 3)) == 2
    with pytest.raises(ValueError, match="at least one"):
        LanesDriver(None).start([])
