"""Step-through decoding (model/decoding/stepping.py) costs one pass of the model per step in every family: an
encoder–decoder reads the source once per sentence and calls its decoder once per step, a decoder-only model
reads its prompt once (a call per token, as generation does) and calls its decoder once per step, an encoder-only
model fills masks with one pass per request. A decoder-only model's views are put together from the steps' own
calls, and equal what a whole teacher-forced pass over BOS + prompt + output gives (as each view computed before).

The Qt-free driver the engine thread runs: the attention maps of the prefix in focus, put together from the steps'
decoder calls, equal a teacher-forced forward pass."""

import itertools

import numpy as np
import pytest
import torch

from model.data import DataSpec
from model.data.tokenization import EOS_ID
from model.decoding import stepping
from model.decoding.search import BeamStepper, beam_search, generate, greedy_decode
from model.decoding.stepping import DecodeDriver, DecodeError
from model.io.snapshots import DecodeSettings
from model.session import Session
from model.training.config import TrainConfig


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


PROMPT = "我昨天"


class Calls:
    """Counts the model's passes: encoder, decoder steps, a prompt's blocks, and whole teacher-forced ones."""

    def __init__(self, model, monkeypatch):
        self.counts = {"encode": 0, "decode_step": 0, "prefill": 0, "decode": 0, "forward": 0}
        for name in self.counts:
            monkeypatch.setattr(model, name, self.counting(name, getattr(model, name)))

    def counting(self, name, method):
        def call(*args, **kwargs):
            self.counts[name] += 1
            return method(*args, **kwargs)

        return call

    def take(self):
        counts, self.counts = self.counts, dict.fromkeys(self.counts, 0)
        return counts


def passes(encode=0, decode_step=0, forward=0, prefill=0):
    return {"encode": encode, "decode_step": decode_step, "prefill": prefill, "decode": 0, "forward": forward}


def text_session(arch, eos_bias=None, **model):
    """An untrained session of a text family (Chinese teaching sentences); ``eos_bias`` varies its outputs (a
    random output bias, EOS made likelier by that much: some outputs end, others run to max_len)."""
    torch.manual_seed(0)
    train = TrainConfig(warmup_steps=50, eval_every=0)
    session = Session.create(DataSpec(task="text-hsk-zh"), "tiny", train, arch=arch, device="cpu", **model)
    if eos_bias is not None:
        with torch.no_grad():
            bias = session.model.generator.bias
            bias.copy_(torch.randn_like(bias))
            bias[session.model_cfg.eos_id] += eos_bias
    return session


# -- one pass per step, every family ----------------------------------------------------------------------------
STEPPED = {
    "translation, greedy": ("encoder_decoder", DecodeSettings(SENTENCE, max_len=20)),
    "translation, beam": ("encoder_decoder", DecodeSettings(SENTENCE, beam_size=4, max_len=20)),
    "generation, greedy": ("decoder_only", DecodeSettings(PROMPT, max_len=20)),
    "generation, beam": ("decoder_only", DecodeSettings(PROMPT, beam_size=3, max_len=20)),
    "generation, sampled": ("decoder_only", DecodeSettings(PROMPT, temperature=1.2, sample_top_k=20, max_len=20)),
}


@pytest.mark.parametrize("case", STEPPED)
def test_one_decoder_pass_per_new_step_and_none_to_go_back(case, monkeypatch):
    family, settings = STEPPED[case]
    session = varied_session() if family == "encoder_decoder" else text_session(family)
    with torch.no_grad():
        session.model.generator.bias[session.model_cfg.eos_id] -= 1e4  # no output ends: ten steps all live
    calls = Calls(session.model, monkeypatch)
    driver = DecodeDriver(session)
    views = [driver.start(settings)]
    if family == "encoder_decoder":  # the source once; position 0: BOS's row
        start = passes(encode=1, decode_step=1)
    else:  # BOS and the prompt but its last token in one block; the last one's row is position 0
        start = passes(prefill=1, decode_step=1)
    assert calls.take() == start
    for n in range(1, 11):
        views.append(driver.act("step"))
        assert views[-1].position == n and not views[-1].at_end
        assert calls.take() == passes(decode_step=1), n
    for n in range(9, 4, -1):
        assert driver.act("back") is views[n]
    assert driver.act("show") is views[5] and driver.act("goto", 10) is views[10]
    assert driver.act("reset") is views[0] and driver.act("step") is views[1]
    assert calls.take() == passes()
    session.train_steps(1)  # new weights: the stepper is rebuilt and replayed to where it was
    calls.take()
    view = driver.act("show")
    assert view.position == 1 and view.weights_step == session.step and view is not views[1]
    assert calls.take() == {**start, "decode_step": start["decode_step"] + 1}  # the start, the step and its row


def test_fill_mask_is_one_pass_per_request(monkeypatch):
    session = text_session("encoder_only")
    calls = Calls(session.model, monkeypatch)
    for text, positions in (("我<mask>天去了", ()), ("我昨天去了", (2,)), ("<mask>昨天<mask>了", ())):
        view = session.fill_mask(text, positions)
        assert view.predictions and view.inspection.encoder.shape[-1] == len(view.tokens)
        assert calls.take() == passes(forward=1), text


def test_views_let_go_are_made_again_from_the_rows_without_the_model(monkeypatch):
    session = varied_session()
    with torch.no_grad():
        session.model.generator.bias[EOS_ID] -= 1e4
    monkeypatch.setattr(stepping, "VIEW_CACHE_BYTES", 1)  # keep only the view shown
    driver = DecodeDriver(session)
    views = [driver.start(DecodeSettings(SENTENCE, beam_size=4, max_len=20))]
    views += [driver.act("step") for _ in range(5)]
    assert len(driver._views) == 1
    calls = Calls(session.model, monkeypatch)
    again = driver.act("goto", 3)
    assert again is not views[3] and again.position == 3 and again.focus_tokens == views[3].focus_tokens
    for name in MAP_FIELDS:
        assert np.array_equal(getattr(again.inspection, name), getattr(views[3].inspection, name)), name
    assert calls.take() == passes()


# -- a decoder-only model's views, from the steps' rows -----------------------------------------------------------
GPT_MODELS = {
    "dense": {},
    "experts": {"n_experts": 4, "experts_top_k": 2},
    "rope, pre-norm": {"positional": "rope", "norm": "pre"},
}
GPT_MODES = {
    "greedy": DecodeSettings(PROMPT, max_len=10),
    "beam": DecodeSettings(PROMPT, beam_size=3, max_len=10),
    "sampled": DecodeSettings(PROMPT, temperature=1.3, sample_top_k=20, top_p=0.9, seed=5, max_len=10),
}


def assert_same_inspection(got, want, what):
    """Everything a view's inspection shows: tokens, maps, probabilities, masks, routing."""
    for name in ("src_tokens", "tgt_tokens", "out_tokens", "target_ids", "teacher_forced", "step", "source", "arch"):
        assert getattr(got, name) == getattr(want, name), f"{what}: {name}"
    for name in MAP_FIELDS + ("cross",):
        a, b = getattr(got, name), getattr(want, name)
        assert a.shape == b.shape and a.dtype == b.dtype, f"{what}: {name}"
        assert a.size == 0 or np.abs(a - b).max() < 1e-5, f"{what}: {name}"
    assert got.masks.keys() == want.masks.keys() == {"decoder_self"}, what
    assert np.array_equal(got.masks["decoder_self"], want.masks["decoder_self"]), what
    assert len(got.routing) == len(want.routing), what
    for mine, theirs in zip(got.routing, want.routing):
        assert (mine.stack, mine.layer, mine.tokens) == (theirs.stack, theirs.layer, theirs.tokens), what
        assert np.array_equal(mine.chosen, theirs.chosen), what
        assert np.abs(mine.probs - theirs.probs).max() < 1e-5 and np.abs(mine.weights - theirs.weights).max() < 1e-5


@pytest.mark.parametrize("mode", GPT_MODES)
@pytest.mark.parametrize("variant", GPT_MODELS)
def test_generation_views_equal_a_whole_teacher_forced_pass(variant, mode):
    """Each view as it was made before (the whole sequence through the model at every step), for outputs that
    end and outputs cut at max_len; and every beam's prefix and every hypothesis that ended, from their rows."""
    settings = GPT_MODES[mode]
    for eos_bias in (3.5, 4.0):
        session = text_session("decoder_only", eos_bias, **GPT_MODELS[variant])
        driver = DecodeDriver(session)
        views = [driver.start(settings)]
        while not views[-1].at_end:
            views.append(driver.act("step"))
        for view in views:
            whole = session.inspect(PROMPT, tgt_ids=list(view.focus_tokens))
            assert_same_inspection(view.inspection, whole, f"position {view.position}")
        stepper = driver._sentence.stepper
        for position, step in enumerate(stepper.history):
            for row, prefix in enumerate(step.prefixes):
                got = driver._inspection(prefix, (position, row))
                assert_same_inspection(got, session.inspect(PROMPT, tgt_ids=prefix), f"{position}, beam {row}")
            for hyp, candidate in zip(step.finished, [c for c in step.kept if c.status == "finished"]):
                if hyp.tokens[-1] == EOS_ID:
                    got = driver._inspection(hyp.tokens, (position, candidate.parent))
                    assert_same_inspection(got, session.inspect(PROMPT, tgt_ids=hyp.tokens), f"ended at {position}")
        assert_same_search(session, settings, views[-1])


def assert_same_search(session, settings, end):
    """The search the views show is the one decoding makes without recording anything."""
    ids = session._source(PROMPT)[1]
    if settings.beam_size > 1:
        src = torch.tensor(ids)
        found = BeamStepper(session.model, src, settings.beam_size, settings.max_len, record=False).run()
        assert [list(h[3]) for h in end.hypotheses] == [h.tokens for h in found]
        assert [h[2] for h in end.hypotheses] == pytest.approx([h.log_prob for h in found], abs=1e-5)
    else:
        temperature = settings.temperature
        cut = {"top_k": settings.sample_top_k or None, "top_p": settings.top_p if settings.top_p < 1 else None}
        found = generate(session.model, ids, settings.max_len, temperature=temperature, seed=settings.seed, **cut)
        assert list(end.hypotheses[0][3]) == found


# -- the logit lens, read out of the steps' own decoder calls -----------------------------------------------------
def assert_lens_of_the_focus(session, view, source):
    """The view's lens is the current step's: the last position of Session.logit_lens of the same prefix (a
    teacher-forced pass of its own)."""
    lens = view.lens
    assert lens is not None and len(lens.targets) == 1
    want = session.logit_lens(source, list(view.focus_tokens))
    ids, probs = want.top(lens.top_probs.shape[-1])
    show = session.tgt_tok.display_token
    assert lens.top_tokens == tuple((tuple(show(int(i)) for i in layer[-1]),) for layer in ids)
    np.testing.assert_allclose(lens.top_probs, probs[:, -1:], atol=2e-5)
    np.testing.assert_allclose(lens.target_probs, want.target_probs()[:, -1:], atol=2e-5)
    np.testing.assert_array_equal(lens.first_layer, want.first_layer()[-1:])
    assert lens.positions == want.positions[-1:] and lens.targets == want.targets[-1:]


@pytest.mark.parametrize(
    "settings",
    [
        DecodeSettings("2 7 1 8"),
        DecodeSettings("2 7 1 8", beam_size=3),
        DecodeSettings("2 7 1 8", temperature=1.5, seed=3),  # drawn tokens, often not the top ones
    ],
)
def test_the_lens_of_a_translation_comes_from_its_steps(trained, settings):
    driver = DecodeDriver(trained, lens=True)
    driver.start(settings)
    driver.act("step")
    view = driver.act("step")
    assert_lens_of_the_focus(trained, view, "2 7 1 8")
    end = driver.act("run")
    assert_lens_of_the_focus(trained, end, "2 7 1 8")


def test_the_lens_of_a_continuation_comes_from_its_steps():
    session = text_session("decoder_only")
    driver = DecodeDriver(session, lens=True)
    driver.start(DecodeSettings(PROMPT, max_len=6))
    driver.act("step")
    view = driver.act("step")
    assert_lens_of_the_focus(session, view, PROMPT)


def test_the_lens_is_read_out_only_while_watched(trained):
    """Unwatched, no step reads the lens out; watched from the middle of a sentence, the sentence is replayed
    once to the same position and every view has it from then on; unwatched again, new steps stop reading it."""
    driver = DecodeDriver(trained)
    driver.start(DecodeSettings("2 7 1 8", beam_size=2))
    driver.act("step")
    view = driver.act("step")
    assert view.lens is None and all(row.residuals is None for row in driver._decode.stepper.rows)
    driver.watch_lens(True)
    shown = driver.act("show")
    assert shown.position == 2 and shown.focus_tokens == view.focus_tokens
    assert_lens_of_the_focus(trained, shown, "2 7 1 8")
    assert_lens_of_the_focus(trained, driver.act("step"), "2 7 1 8")
    driver.watch_lens(False)
    rows = driver._decode.stepper.rows
    read = len(rows)  # the last of them may have been read ahead, while watched
    assert driver.act("step").lens is None
    assert all(row.residuals is None for row in rows[read + 1 :])
    driver.start(DecodeSettings("7 1 8", beam_size=2))  # a new sentence, unwatched
    assert driver.act("step").lens is None and all(row.residuals is None for row in driver._decode.stepper.rows)


def test_reading_the_lens_adds_no_decoder_call(trained, monkeypatch):
    """A step's lens is a read-out of the decoder call it makes anyway: still one decoder call per step."""
    driver = DecodeDriver(trained, lens=True)
    driver.start(DecodeSettings("2 7 1 8"))
    calls = Calls(trained.model, monkeypatch)
    view = driver.act("step")
    assert view.lens is not None
    assert calls.take() == passes(decode_step=1)
