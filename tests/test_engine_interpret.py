"""The engine's interpretation handlers (explorer/engine_interpret.py), driven without a window: attribution and
the logit lens answer with the session's own numbers, switched-off heads apply to every view and never to
training, a head that does not exist is refused without changing anything, and the importance sweep reports
progress and stops on Cancel."""

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer import commands as cmd  # noqa: E402
from explorer.answers import (  # noqa: E402
    AblationChanged,
    Attributed,
    EngineStatus,
    ImportanceReady,
    InspectionReady,
    LensReady,
    SweepProgress,
)
from explorer.worker import Engine  # noqa: E402
from tests.test_worker import _copy_spec  # noqa: E402


class Seen:
    def __init__(self, engine: Engine) -> None:
        self.got: list[object] = []
        for signal in (
            engine.status_changed,
            engine.inspection_ready,
            engine.attributed,
            engine.lens_ready,
            engine.ablation_changed,
            engine.sweep_progressed,
            engine.importance_ready,
        ):
            signal.connect(self.got.append)
        self.failed: list[int] = []
        engine.engine_failed.connect(lambda rid, message: self.failed.append(rid))

    def answer(self, kind, request_id: int):
        found = [g for g in self.got if isinstance(g, kind) and g.request_id == request_id]
        return found[-1] if found else None


@pytest.fixture
def engine(qtbot):
    engine = Engine("cpu", threads=1)
    seen = Seen(engine)
    engine.start()
    engine.submit(cmd.NewModel(_copy_spec()))
    engine.submit(cmd.Step(n=60))
    qtbot.waitUntil(lambda: any(isinstance(s, EngineStatus) and s.step == 60 for s in seen.got), timeout=60000)
    qtbot.waitUntil(lambda: any(isinstance(s, EngineStatus) and s.state == "paused" for s in seen.got), timeout=9000)
    try:
        yield engine, seen
    finally:
        engine.shutdown(None, timeout_ms=30000)


def ask(qtbot, engine, seen, command, kind, timeout=30000):
    rid = engine.submit(command)
    qtbot.waitUntil(lambda: seen.answer(kind, rid) is not None or rid in seen.failed, timeout=timeout)
    return seen.answer(kind, rid)


def test_attribution_and_lens_answer_with_the_sessions_numbers(qtbot, engine):
    engine, seen = engine
    got = ask(qtbot, engine, seen, cmd.Attribute(source="1 2 3", steps=16), Attributed).attribution
    lens = ask(qtbot, engine, seen, cmd.LogitLensOf(source="1 2 3", top_k=3), LensReady).table
    session = engine.session  # the engine is paused: nothing else touches the session now
    want = session.attribute("1 2 3", steps=16)
    assert got.target_tokens == want.target_tokens and got.source_tokens == want.source_tokens
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-5, atol=1e-6)
    full = session.logit_lens("1 2 3")
    assert lens.targets == full.targets and lens.top_probs.shape == (full.probs.shape[0], len(full.targets), 3)
    np.testing.assert_allclose(lens.top_probs[..., 0], full.probs.max(-1), rtol=1e-6)
    np.testing.assert_array_equal(lens.first_layer, full.first_layer())


def test_switched_off_heads_apply_to_views_and_are_refused_when_missing(qtbot, engine):
    engine, seen = engine
    before = ask(qtbot, engine, seen, cmd.Inspect(source="1 2 3 4"), InspectionReady).inspection
    cfg = engine.session.model_cfg
    every_cross = tuple(("cross", layer, h) for layer in range(cfg.n_decoder_layers) for h in range(cfg.n_heads))
    changed = ask(qtbot, engine, seen, cmd.SetAblation(every_cross, source="1 2 3 4"), AblationChanged)
    assert changed.heads == every_cross and changed.diff is not None
    assert changed.diff.before == tuple(before.out_tokens)
    after = ask(qtbot, engine, seen, cmd.Inspect(source="1 2 3 4"), InspectionReady).inspection
    other = ask(qtbot, engine, seen, cmd.Inspect(source="4 4 2"), InspectionReady).inspection
    assert after.out_tokens == other.out_tokens  # without cross-attention the source no longer matters
    assert tuple(after.out_tokens) == changed.diff.after

    bad = engine.submit(cmd.SetAblation((("cross", 99, 0),), source="1 2 3 4"))
    qtbot.waitUntil(lambda: bad in seen.failed, timeout=10000)
    still = ask(qtbot, engine, seen, cmd.Inspect(source="4 4 2"), InspectionReady).inspection
    assert still.out_tokens == other.out_tokens  # the refused change changed nothing

    ask(qtbot, engine, seen, cmd.SetAblation(()), AblationChanged)
    again = ask(qtbot, engine, seen, cmd.Inspect(source="1 2 3 4"), InspectionReady).inspection
    np.testing.assert_array_equal(again.cross, before.cross)  # all heads on: exactly as before


def test_training_is_never_ablated(qtbot, engine):
    engine, seen = engine
    cfg = engine.session.model_cfg
    ask(qtbot, engine, seen, cmd.SetAblation((("encoder", 0, 0),)), AblationChanged)
    weight = engine.session.model.encoder_layers[0].self_attn.out_proj.weight
    assert float(weight.detach()[:, : cfg.head_dim].abs().sum()) > 0  # the weights stay whole between views


def test_the_sweep_reports_progress_and_stops_on_cancel(qtbot, engine):
    engine, seen = engine
    rid = engine.submit(cmd.HeadImportanceOf(sentences=8))
    qtbot.waitUntil(lambda: any(isinstance(g, SweepProgress) and g.request_id == rid for g in seen.got), timeout=20000)
    engine.cancel_sweep()
    qtbot.waitUntil(lambda: seen.answer(ImportanceReady, rid) is not None, timeout=20000)
    found = seen.answer(ImportanceReady, rid).importance
    progress = [g for g in seen.got if isinstance(g, SweepProgress) and g.request_id == rid]
    total = progress[0].total
    assert total == sum(m.size for m in found.delta_loss.values())
    if len(progress) < total:  # cancelled part-way: the heads not reached are NaN
        assert not found.complete
        assert sum(int(np.isnan(m).sum()) for m in found.delta_loss.values()) == total - len(progress)


def test_a_longer_prefix_reuses_the_rows_already_explained(qtbot, engine, monkeypatch):
    """Stepping on costs one new row: the rows of the shorter prefix are kept, and the whole equals a computation
    from scratch."""
    engine, seen = engine
    from model.session import Session

    asked: list[object] = []
    original = Session.attribute

    def counting(self, *args, **kwargs):
        asked.append(kwargs.get("rows"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Session, "attribute", counting)
    ids = engine.session.readout("1 2 3 4 5").targets  # the greedy output and <eos>
    assert len(ids) >= 4
    first = ask(qtbot, engine, seen, cmd.Attribute("1 2 3 4 5", target_ids=tuple(ids[:2]), steps=16), Attributed)
    longer = ask(qtbot, engine, seen, cmd.Attribute("1 2 3 4 5", target_ids=tuple(ids[:4]), steps=16), Attributed)
    assert asked == [None, [2, 3]]
    want = original(engine.session, "1 2 3 4 5", target=list(ids[:4]), steps=16)
    np.testing.assert_allclose(longer.attribution.scores, want.scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(longer.attribution.prefix_scores, want.prefix_scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(longer.attribution.scores[:2], first.attribution.scores)


def test_a_lens_watched_mid_sentence_comes_with_the_next_steps_under_switched_off_heads(qtbot, engine):
    """WatchLens from the middle of a decoding: the views from then on carry the current step's lens, read out
    of the steps' own calls with the switched-off heads off, equal to Session.logit_lens under the same heads."""
    from explorer.answers import DecodeStepped
    from model.io.snapshots import DecodeSettings

    engine, seen = engine
    engine.decode_stepped.connect(seen.got.append)
    off = tuple(("cross", 0, h) for h in range(engine.session.model_cfg.n_heads))
    ask(qtbot, engine, seen, cmd.SetAblation(off), AblationChanged)
    ask(qtbot, engine, seen, cmd.Decode("start", DecodeSettings("1 2 3 4", beam_size=2)), DecodeStepped)
    view = ask(qtbot, engine, seen, cmd.Decode("step"), DecodeStepped).view
    assert view.lens is None
    engine.submit(cmd.WatchLens(True))
    for position in (1, 2):
        view = ask(qtbot, engine, seen, cmd.Decode("show" if position == 1 else "step"), DecodeStepped).view
        assert view.position == position and view.lens is not None
        session = engine.session  # paused: nothing else touches it
        with session.ablated(off):
            want = session.logit_lens("1 2 3 4", list(view.focus_tokens))
        np.testing.assert_allclose(view.lens.top_probs[:, 0], want.top(5)[1][:, -1], atol=2e-5)
        np.testing.assert_allclose(view.lens.target_probs[:, 0], want.target_probs()[:, -1], atol=2e-5)


def _held_at_first_batch(engine, monkeypatch):
    """The engine's attribution progress, held at its first report until ``go`` is set (``inside`` then set)."""
    import threading

    inside, go = threading.Event(), threading.Event()
    original = engine._attribution_goes_on

    def held(c, done, total):
        if not inside.is_set():
            inside.set()
            go.wait(20)
        original(c, done, total)

    monkeypatch.setattr(engine, "_attribution_goes_on", held)
    return inside, go


def test_a_long_attribution_says_how_far_and_steps_aside_for_what_is_asked_meanwhile(qtbot, engine, monkeypatch):
    """Integrated gradients of a 512-token text take minutes on a CPU: they report each batch of the path's points
    (by request id), and what the person asks meanwhile (a map) is answered first, the attribution after it."""
    engine, seen = engine
    from model.interpret import attribution

    monkeypatch.setattr(attribution, "points_per_pass", lambda model, readout: 4)  # 16 points: 4 batches
    inside, go = _held_at_first_batch(engine, monkeypatch)
    rid = engine.submit(cmd.Attribute(source="1 2 3", steps=16))
    assert inside.wait(20)
    pair = engine.submit(cmd.Inspect(source="1 2 3"))
    go.set()
    qtbot.waitUntil(lambda: seen.answer(Attributed, rid) is not None, timeout=30000)
    answered = [g.request_id for g in seen.got if isinstance(g, (Attributed, InspectionReady))]
    assert answered == [pair, rid]  # the map first, though asked after
    progress = [(g.done, g.total) for g in seen.got if isinstance(g, SweepProgress) and g.request_id == rid]
    assert progress[0] == (4, 16) and progress[-1] == (16, 16)  # begun again after the map, to the end
    want = engine.session.attribute("1 2 3", steps=16)
    np.testing.assert_allclose(seen.answer(Attributed, rid).attribution.scores, want.scores, rtol=1e-5, atol=1e-6)


def test_a_newer_attribution_replaces_a_long_one_under_way(qtbot, engine, monkeypatch):
    engine, seen = engine
    inside, go = _held_at_first_batch(engine, monkeypatch)
    from model.interpret import attribution

    monkeypatch.setattr(attribution, "points_per_pass", lambda model, readout: 4)
    old = engine.submit(cmd.Attribute(source="1 2 3", steps=16))
    assert inside.wait(20)
    new = engine.submit(cmd.Attribute(source="1 2 3", method="gradient_x_input"))
    go.set()
    qtbot.waitUntil(lambda: seen.answer(Attributed, new) is not None, timeout=30000)
    qtbot.wait(300)
    assert seen.answer(Attributed, old) is None and old not in seen.failed  # dropped, not failed
    assert engine._queue.empty()
