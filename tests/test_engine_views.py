"""The engine's handlers that look inside the current model (explorer/engine_views.py): attention for a sentence, one
head spelled out, the positional tables, step-through decoding and lanes, a random sentence of the corpus; each
answer carries its request's id. First driven directly on this thread, then in the window while it trains."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.answers import (  # noqa: E402
    DecodeStepped,
    Explained,
    InspectionReady,
    LanesStepped,
    PositionalReady,
    SentenceSampled,
)
from explorer.commands import (  # noqa: E402
    Decode,
    DecodeLanes,
    Explain,
    ExplainWorkedExample,
    Inspect,
    Positional,
    SampleSentence,
)
from explorer.engine_views import ViewHandlers  # noqa: E402
from explorer.failures import NO_LANES, NO_MODEL, RefusedRequest  # noqa: E402
from model.io.snapshots import DecodeSettings  # noqa: E402
from tests.copy_task_window import click, small_copy_task  # noqa: E402


class Views:
    """The view handlers on this thread (their signals arrive at once), and every answer they sent."""

    def __init__(self, session=None) -> None:
        self.engine = ViewHandlers()
        self.engine.session = session
        self.got: list[object] = []
        e = self.engine
        for signal in (
            e.inspection_ready,
            e.explained,
            e.positional_ready,
            e.decode_stepped,
            e.lanes_stepped,
            e.sentence_sampled,
        ):
            signal.connect(self.got.append)

    def answer(self, command):
        """Hand ``command`` to its handler; → the one answer it sent."""
        before = len(self.got)
        handler = {
            Inspect: self.engine._inspect,
            Explain: self.engine._explain,
            ExplainWorkedExample: self.engine._explain_worked_example,
            Positional: self.engine._positional,
            Decode: self.engine._decode,
            DecodeLanes: self.engine._decode_lanes,
            SampleSentence: self.engine._sample_sentence,
        }[type(command)]
        handler(command)
        [answer] = self.got[before:]
        assert answer.request_id == command.request_id
        return answer


@pytest.fixture
def views(qtbot, copy_session_factory):
    return Views(copy_session_factory())


def test_attention_of_a_sentence_and_one_head_spelled_out(views):
    inspected = views.answer(Inspect(source="1 2 3", target="1 2 3"))
    assert isinstance(inspected, InspectionReady) and inspected.inspection.teacher_forced
    assert inspected.inspection.cross.shape[-2:] == (4, 4)  # <bos> + 3 queries; 3 tokens + <eos>
    explained = views.answer(Explain(source="1 2", target_ids=None, kind="encoder", layer=0, head=0))
    assert isinstance(explained, Explained) and explained.explanation.weights.shape == (3, 3)
    assert np.allclose(explained.explanation.weights.sum(-1), 1.0)  # each row a softmax


def test_the_worked_example_and_the_positional_tables(views):
    worked = views.answer(ExplainWorkedExample()).explanation
    # Q = K = [[1,0],[0,1],[1,1]]: scores Q·Kᵀ/√2; the first query attends most to keys 1 and 3 equally
    scores = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 2]]) / np.sqrt(2)
    expected = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    assert np.allclose(worked.weights, expected, atol=1e-5)
    tables = views.answer(Positional())
    assert isinstance(tables, PositionalReady) and tables.tables.kind == "sinusoidal"


def test_step_through_decoding_keeps_its_sentence_between_requests(views):
    with pytest.raises(ValueError, match="needs its settings"):
        views.engine._decode(Decode(action="start"))
    start = views.answer(Decode(action="start", settings=DecodeSettings("1 2 3")))
    assert isinstance(start, DecodeStepped) and start.view.position == 0 and start.view.settings.text == "1 2 3"
    assert views.answer(Decode(action="step")).view.position == 1
    assert views.answer(Decode(action="step")).view.position == 2
    assert views.answer(Decode(action="back")).view.position == 1
    assert views.answer(Decode(action="goto", position=0)).view.position == 0


def test_lanes_are_started_before_they_step(views):
    with pytest.raises(RefusedRequest) as refused:
        views.engine._decode_lanes(DecodeLanes(action="step"))
    assert refused.value.message.text == NO_LANES
    settings = (DecodeSettings("1 2 3"), DecodeSettings("1 2 3", beam_size=2))
    started = views.answer(DecodeLanes(action="start", settings=settings))
    assert isinstance(started, LanesStepped) and len(started.view.lanes) == 2 and started.view.position == 0
    assert views.answer(DecodeLanes(action="step")).view.position == 1


def test_a_random_sentence_of_the_corpus_or_why_there_is_none(views, monkeypatch):
    views.engine._run_id = 3
    views.engine._rng = random.Random(1)
    sampled = views.answer(SampleSentence(split="test"))
    assert isinstance(sampled, SentenceSampled) and (sampled.run_id, sampled.asked, sampled.split) == (
        3,
        "test",
        "test",
    )
    assert (sampled.source, sampled.reference) in views.engine.session.corpus.test and sampled.error is None

    def moved(split, rng):
        raise OSError("pairs.tsv: No such file or directory")

    monkeypatch.setattr(views.engine.session, "sample_source", moved)
    failed = views.answer(SampleSentence(split="valid"))
    assert (failed.asked, failed.split, failed.source, failed.error) == (
        "valid",
        None,
        "",
        "pairs.tsv: No such file or directory",
    )


def test_a_view_without_a_model_is_refused(qtbot):
    views = Views()
    for command in (Inspect(source="1 2"), Positional(), Decode(action="step"), SampleSentence()):
        with pytest.raises(RefusedRequest) as refused:
            views.answer(command)
        assert refused.value.message.text == NO_MODEL
    assert views.got == []


# -- in the window, while it trains ---------------------------------------------------------------------------------
def test_view_requests_during_training_use_current_weights(make_window, qtbot):
    from model.io.snapshots import DecodeSettings

    window = make_window()
    small_copy_task(window)
    click(qtbot, window, "train_start_button")
    qtbot.waitUntil(lambda: window.status.step > 5, timeout=20000)
    engine = window.engine
    with qtbot.waitSignal(engine.inspection_ready, timeout=5000) as got:
        before = engine.session.step
        rid = engine.submit(Inspect(source="1 2 3"))
    answered, inspection = got.args[0].request_id, got.args[0].inspection
    assert answered == rid and 0 <= inspection.step - before <= 1  # answered within one step
    assert inspection.cross.shape[-1] == 4 and inspection.teacher_forced is False
    with qtbot.waitSignal(engine.decode_stepped, timeout=5000) as got:
        before = engine.session.step
        engine.submit(Decode(action="start", settings=DecodeSettings("1 2 3")))
    view = got.args[0].view
    assert 0 <= view.weights_step - before <= 1 and view.position == 0
    with qtbot.waitSignal(engine.decode_stepped, timeout=5000) as got:
        engine.submit(Decode(action="step"))
    assert got.args[0].view.position == 1 and window.status.state == "training"
    click(qtbot, window, "train_stop_button")
