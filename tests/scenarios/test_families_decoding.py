"""The decoding panel for the other two model families: a decoder-only model continues a prompt (greedy, sampled
or beam), an encoder-only model fills masks. What the panel shows is compared with the engine's own numbers,
computed directly on the same model."""

from __future__ import annotations

import html
import random

import numpy as np
import pytest
import torch

pytest.importorskip("pytestqt")

from PySide6.QtCore import QObject, QPoint, Qt, QTimer, Signal  # noqa: E402
from PySide6.QtGui import QColor  # noqa: E402

from explorer.answers import (  # noqa: E402
    AblationChanged,
    DecodeStepped,
    InspectionReady,
    Int8Changed,
    MaskFilled,
    SentenceSampled,
)
from explorer.commands import Decode, FillMask, Inspect, Load, SampleSentence  # noqa: E402
from explorer.engine_client import EngineClient  # noqa: E402
from explorer.panels.decoding import DecodingPanel, joined, prompt_of  # noqa: E402
from explorer.widgets.candidates import cut_colour  # noqa: E402
from model.data import DataSpec  # noqa: E402
from model.decoding.search import GreedyStepper, SampleStepper, Sampling, fill_mask  # noqa: E402
from model.decoding.stepping import DecodeDriver  # noqa: E402
from model.session import Session  # noqa: E402
from model.training.config import TrainConfig  # noqa: E402

PROMPT = "我昨天"


def small_session(arch: str) -> Session:
    session = Session.create(
        DataSpec(task="text-hsk-zh"), "tiny", TrainConfig(warmup_steps=50, eval_every=0), arch=arch, device="cpu"
    )
    torch.manual_seed(0)
    session.train_steps(3)
    return session


@pytest.fixture(scope="module")
def gpt() -> Session:
    return small_session("decoder_only")


@pytest.fixture(scope="module")
def bert() -> Session:
    return small_session("encoder_only")


class SyncEngine(QObject):
    """The engine's commands answered from a session on this thread, each answer a turn of the event loop
    later (as the engine thread's queued signals arrive): the panel's route without a thread."""

    decode_stepped = Signal(DecodeStepped)
    mask_filled = Signal(MaskFilled)
    inspection_ready = Signal(InspectionReady)
    sentence_sampled = Signal(SentenceSampled)
    engine_failed = Signal(int, str)
    ablation_changed = Signal(AblationChanged)  # heads switched off (the decoding panel decodes again)
    int8_changed = Signal(Int8Changed)  # the int8 fast mode (offered for folders only)

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.driver = DecodeDriver(session)
        self.sent: list[object] = []

    def submit(self, c) -> int:
        self.sent.append(c)
        try:
            signal, reply = self._answer(c)
        except ValueError as exc:
            message = str(exc)
            QTimer.singleShot(0, lambda: self.engine_failed.emit(c.request_id, message))
            return c.request_id
        QTimer.singleShot(0, lambda: signal.emit(reply))
        return c.request_id

    def _answer(self, c):
        s = self.session
        if isinstance(c, Decode):
            view = self.driver.start(c.settings) if c.action == "start" else self.driver.act(c.action, c.position)
            return self.decode_stepped, DecodeStepped(c.request_id, view)
        if isinstance(c, FillMask):
            return self.mask_filled, MaskFilled(c.request_id, s.fill_mask(c.text, c.mask_positions, c.top_k))
        if isinstance(c, Inspect):
            return self.inspection_ready, InspectionReady(c.request_id, s.inspect(c.source))
        if isinstance(c, SampleSentence):
            source, _, split = s.sample_source("test", random.Random(1))
            return self.sentence_sampled, SentenceSampled(c.request_id, id(s), c.split, split, source, None)
        raise AssertionError(f"not expected here: {c}")


def run_info(session: Session):
    from types import SimpleNamespace

    tok = session.tgt_tok
    mask = None if session.src_tok.mask_id is None else session.src_tok.id_to_token(session.src_tok.mask_id)
    return SimpleNamespace(
        run_id=id(session),
        model_config=session.model_cfg,
        src_words=session.source_words(),
        weights_step=session.step,
        mask_token=mask,
        model_origin=None,
        tgt_pieces=tuple(tok.display_token(i) for i in range(tok.vocab_size)),
    )


def panel_on(qtbot, session: Session) -> tuple[DecodingPanel, SyncEngine]:
    panel = DecodingPanel()
    qtbot.addWidget(panel)
    engine = SyncEngine(session)
    panel.attach(EngineClient(engine))
    panel.on_run(run_info(session))
    panel.resize(700, 600)
    panel.show()
    return panel, engine


def click_step(qtbot, panel: DecodingPanel, n: int) -> None:
    """Press Step and wait for its answer."""
    qtbot.mouseClick(panel.step_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not panel.waiting and panel.view is not None and panel.view.position == n, timeout=10000)


def shown_pieces(session: Session, ids) -> list[str]:
    return [session.tgt_tok.display_token(int(t)) for t in ids]


def stepper_for(session: Session, sampling: Sampling | None = None):
    """The engine's stepper for PROMPT, built directly (not through the driver the panel's engine uses)."""
    _, ids, _ = session._source(PROMPT)
    src = torch.tensor(ids)
    max_len = session.default_max_len(len(ids))
    if sampling is None:
        return GreedyStepper(session.model, src, max_len, top_k=10)
    return SampleStepper(session.model, src, max_len, sampling, top_k=10)


def test_a_prompt_is_continued_greedily_with_the_engines_candidates(qtbot, gpt):
    panel, _ = panel_on(qtbot, gpt)
    assert panel.pages.currentWidget() is panel.decoding_page and panel.prompt_label.isVisible()
    assert [panel.mode.itemData(i) for i in range(panel.mode.count())] == ["greedy", "sample", "beam"]
    assert panel.sampling_box.isVisible() and not panel.temperature_spin.isEnabled()  # greedy: no sampling
    panel.input.setText(PROMPT)
    qtbot.keyClick(panel.input, Qt.Key_Return)
    qtbot.waitUntil(lambda: panel.view is not None and not panel.waiting, timeout=10000)
    assert panel.chips.tokens == list(PROMPT)  # the prompt's pieces, no <eos>
    stepper = stepper_for(gpt)
    for n in range(1, 4):
        click_step(qtbot, panel, n)
        step = stepper.step()
        assert panel.candidates.tokens == shown_pieces(gpt, step.top_tokens[0])
        assert panel.candidates.probs == pytest.approx(step.top_probs[0], abs=1e-6)
        assert panel.candidates.chosen == {0} and panel.candidates.cut == set() and panel.candidates.drawn is None
        assert panel.candidates.note.isHidden()
        if step.kept[0].token == gpt.model_cfg.eos_id:
            break
    written = gpt.tgt_tok.decode(stepper.output)  # the continuation, after the prompt as typed
    more = "" if panel.view.at_end else "…"
    shown = f": {PROMPT}{joined(PROMPT, written)}<b>{html.escape(written)}</b>{more}</span>"
    assert panel.output.text().endswith(shown)
    assert not panel.beside.isVisible() and panel.reference.isHidden()  # no cross-attention, no reference
    assert panel.candidates.plot.getAxis("bottom").labelText == "P(token | text so far)"


def test_a_prompt_and_its_continuation_are_joined_as_the_tokenizers_write_text():
    assert joined("The cat", "sat down") == " " and joined(PROMPT, "去了商店。") == ""
    assert joined("Hello", ", world") == "" and joined("", "x") == ""
    assert prompt_of("The cat sat on the mat") == "The cat sat" and prompt_of("我昨天去了商店。") == "我昨天去"


def test_sampling_with_a_seed_shows_the_draw_and_the_cuts(qtbot, gpt):
    panel, engine = panel_on(qtbot, gpt)
    panel.mode.setCurrentIndex(panel.mode.findData("sample"))
    assert all(s.isEnabled() for s in panel.sampling_spins) and not panel.beam_size.isEnabled()
    panel.temperature_spin.setValue(1.5)
    panel.top_k_spin.setValue(6)
    panel.top_p_spin.setValue(0.9)
    panel.seed_spin.setValue(7)
    panel.input.setText(PROMPT)
    stepper = stepper_for(gpt, Sampling(1.5, 6, 0.9, 7))
    drawn_tokens = []
    for n in range(1, 5):
        click_step(qtbot, panel, n)  # the first Step starts the prompt, then steps
        step = stepper.step()
        if step is None:
            break
        bars = panel.candidates
        assert step.sampled and bars.tokens == shown_pieces(gpt, step.top_tokens[0])
        assert bars.probs == pytest.approx(step.top_probs[0], abs=1e-6)  # at the sampling temperature
        cut = {i for i, c in enumerate(step.cut[0]) if c}
        assert cut >= set(range(6, 10))  # top-k 6 of the 10 shown: at least the last four are cut
        assert bars.cut == cut
        colours = [QColor(b.color()).rgba() for b in bars.bars.opts["brushes"]]
        assert [i for i, c in enumerate(colours) if c == cut_colour().rgba()] == sorted(cut)  # greyed exactly there
        drawn = [int(t) for t in step.top_tokens[0]].index(step.kept[0].token)
        assert bars.drawn == drawn and drawn not in cut
        pens = bars.bars.opts["pens"]
        assert [i for i, p in enumerate(pens) if p.widthF() > 1] == [drawn]  # the drawn bar alone is outlined
        assert "drawn at random" in bars.value_labels[drawn].text()
        assert bars.note.isVisibleTo(panel) and "top-k 6 · top-p 0.9" in bars.note.text()
        drawn_tokens.append(step.kept[0].token)
    sent = [c for c in engine.sent if isinstance(c, Decode) and c.action == "start"][-1].settings
    assert (sent.temperature, sent.sample_top_k, sent.top_p, sent.seed, sent.beam_size) == (1.5, 6, 0.9, 7, 1)
    assert list(panel.view.focus_tokens) == drawn_tokens  # the continuation is the tokens drawn
    assert "at temperature 1.5" in panel.candidates.plot.getAxis("bottom").labelText


def test_a_draw_outside_the_bars_shown_is_said(qtbot, gpt):
    panel, _ = panel_on(qtbot, gpt)
    panel.mode.setCurrentIndex(panel.mode.findData("sample"))
    panel.temperature_spin.setValue(5.0)  # nearly uniform: the draw is rarely among the ten most probable
    panel.top_p_spin.setValue(1.0)
    panel.input.setText(PROMPT)
    for seed in range(40):
        panel.seed_spin.setValue(seed)
        panel.start()
        qtbot.waitUntil(lambda: not panel.waiting, timeout=10000)
        click_step(qtbot, panel, 1)
        if panel.candidates.drawn is None:
            break
    else:
        pytest.fail("every draw was among the ten shown")
    token = panel.piece(panel.view.steps[0].kept[0].token)
    assert f"The token drawn, “{token}”, is not among the 10 shown." in panel.candidates.note.text()
    assert panel.candidates.cut == set()  # top-k off, top-p 1: nothing cut


def test_a_decoder_only_beam_search_and_back_to_a_translator(qtbot, gpt, copy_session_factory):
    panel, _ = panel_on(qtbot, gpt)
    panel.mode.setCurrentIndex(panel.mode.findData("beam"))
    panel.beam_size.setValue(3)
    panel.input.setText(PROMPT)
    click_step(qtbot, panel, 1)
    assert panel.view.settings.temperature == 0 and panel.view.settings.beam_size == 3
    assert panel.beam_box.isVisible() and panel.beside.isVisible() and panel.nbest.isVisible()
    assert panel.nbest.horizontalHeaderItem(0).text() == "Continuation"
    translator = copy_session_factory()
    panel.on_run(run_info(translator))  # an encoder–decoder model: everything as for a translator
    assert [panel.mode.itemData(i) for i in range(panel.mode.count())] == ["greedy", "beam"]
    assert not panel.prompt_label.isVisible() and not panel.sampling_box.isVisible()
    assert panel.translate_button.text() == "Decode" and panel.settings().temperature == 0
    assert panel.nbest.horizontalHeaderItem(0).text() == "Translation"


def test_fill_mask_shows_the_models_guesses(qtbot, bert):
    panel, engine = panel_on(qtbot, bert)
    view = panel.fill_view
    assert panel.pages.currentWidget() is view and view.isVisible() and not panel.step_button.isVisible()
    text = "我昨天<mask>了一本书"
    view.input.setText(text)
    with qtbot.waitSignal(panel.inspection_shown, timeout=10000) as shown:
        qtbot.keyClick(view.input, Qt.Key_Return)
    expected = bert.fill_mask(text)
    assert shown.args[0].arch == "encoder_only" and shown.args[0].encoder.shape[-1] == len(expected.tokens)
    assert view.chips.tokens == expected.tokens and view.chips.marked == {4}
    # the model's own numbers, straight from the decoding module
    ids = [bert.model_cfg.bos_id, *bert.src_tok.encode_ids(text), bert.model_cfg.eos_id]
    direct = fill_mask(bert.model, ids, bert.src_tok.mask_id, 5)
    assert [f.position for f in direct] == [p.position for p in expected.predictions] == [4]
    chart = view.charts[0]
    assert chart.isVisible() and chart.tokens == [bert.src_tok.display_token(t) for t in direct[0].tokens]
    assert chart.probs == pytest.approx(direct[0].probs, abs=1e-6)
    assert chart.tokens == expected.predictions[0].tokens and chart.chosen == set()  # nothing to compare with
    assert view.message.isHidden()
    view.top_k.setValue(8)  # more guesses, asked again
    qtbot.keyClick(view.input, Qt.Key_Return)
    qtbot.waitUntil(lambda: len(view.charts[0].tokens) == 8, timeout=10000)
    assert engine.sent[-1] == FillMask(text, (), 8, request_id=engine.sent[-1].request_id)


def chip_centre(strip, index: int) -> QPoint:
    return strip._layout(strip.width())[index].center().toPoint()


def test_clicking_a_token_masks_it_and_asks_again(qtbot, bert):
    panel, engine = panel_on(qtbot, bert)
    view = panel.fill_view
    text = "我昨天买了一本书"
    view.input.setText(text)
    qtbot.keyClick(view.input, Qt.Key_Return)  # nothing masked: its tokens come back to be clicked
    qtbot.waitUntil(lambda: len(view.chips.tokens) > 0, timeout=10000)
    assert isinstance(engine.sent[-1], Inspect)
    assert view.chips.tokens == ["<bos>", *text, "<eos>"] and not view.charts
    assert view.message.isVisibleTo(view) and "No <mask>" in view.message.text()
    qtbot.mouseClick(view.chips, Qt.LeftButton, pos=chip_centre(view.chips, 4))  # 买
    qtbot.waitUntil(lambda: view.view is not None, timeout=10000)
    assert engine.sent[-1].mask_positions == (4,) and view.view.tokens[4] == "<mask>"
    expected = bert.fill_mask(text, (4,))
    chart = view.charts[0]
    assert chart.tokens == expected.predictions[0].tokens
    assert chart.probs == pytest.approx(expected.predictions[0].probs, abs=1e-6)
    assert "was “买”" in chart.title.text() and "“买”" in chart.note.text()
    if "买" in chart.tokens:  # the original, highlighted where the model guessed it
        assert chart.chosen == {chart.tokens.index("买")}
    assert view.chips.marked == {4} and "买" in view.chips.tips[4]
    qtbot.mouseClick(view.chips, Qt.LeftButton, pos=chip_centre(view.chips, 2))  # 昨: a second mask
    qtbot.waitUntil(lambda: view.view is not None and len(view.view.predictions) == 2, timeout=10000)
    assert engine.sent[-1].mask_positions == (2, 4) and [c.isVisible() for c in view.charts] == [True, True]
    sent = len(engine.sent)
    qtbot.mouseClick(view.chips, Qt.LeftButton, pos=chip_centre(view.chips, 0))  # <bos>: not a word to mask
    assert len(engine.sent) == sent
    qtbot.mouseClick(view.chips, Qt.LeftButton, pos=chip_centre(view.chips, 4))  # 买 again: unmasked
    qtbot.waitUntil(lambda: view.view is not None and len(view.view.predictions) == 1, timeout=10000)
    assert engine.sent[-1].mask_positions == (2,) and view.view.tokens[4] == "买"
    assert [c.isVisible() for c in view.charts] == [True, False]
    view.input.setText("他买了书<mask>")  # another sentence (pasted): the positions clicked were the old one's
    qtbot.keyClick(view.input, Qt.Key_Return)
    qtbot.waitUntil(lambda: view.view is not None and view.view.text == "他买了书<mask>", timeout=10000)
    assert engine.sent[-1].mask_positions == () and view.chips.marked == {5}


def test_fill_mask_errors_and_late_answers(qtbot, bert):
    panel, engine = panel_on(qtbot, bert)
    view = panel.fill_view
    qtbot.keyClick(view.input, Qt.Key_Return)
    assert view.message.text() == "Type a sentence first." and not engine.sent
    view.input.setText("我<mask>天")
    qtbot.keyClick(view.input, Qt.Key_Return)
    qtbot.waitUntil(lambda: view.view is not None, timeout=10000)
    first = view.view
    view.input.setText("我昨天<mask>")
    qtbot.keyClick(view.input, Qt.Key_Return)
    qtbot.waitUntil(lambda: view.view is not first and view.view is not None, timeout=10000)
    newest = view.view
    view._on_mask_filled(MaskFilled(engine.sent[0].request_id, first))  # a late answer to the first request
    assert view.view is newest
    view.input.setText("我昨天")
    view.masked = {40}  # a position the sentence does not have: the engine refuses, and it is said here
    view.ask()
    qtbot.waitUntil(lambda: view.message.isVisibleTo(view), timeout=10000)
    assert "click a token to mask it" in view.message.text() and view.pending is None


def test_a_random_sentence_is_masked_and_filled(qtbot, bert):
    panel, engine = panel_on(qtbot, bert)
    view = panel.fill_view
    qtbot.mouseClick(view.sample_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: view.view is not None, timeout=10000)
    assert view.input.text() and len(view.view.predictions) == 1 and view.view.predictions[0].original is not None
    assert [type(c).__name__ for c in engine.sent] == ["SampleSentence", "Inspect", "FillMask"]


def test_a_decoder_only_and_an_encoder_only_model_in_the_window(make_window, qtbot, tmp_path, gpt, bert):
    """Through the real engine thread: a sampled step equals the engine's, and a fill-mask answer reaches the
    attention panel."""
    path = tmp_path / "gpt.ckpt"
    gpt.save(path)
    window = make_window(open_path=str(path))
    d = window.decoding
    qtbot.waitUntil(lambda: d.info is not None and d.family == "decoder_only", timeout=30000)
    d.mode.setCurrentIndex(d.mode.findData("sample"))
    d.top_k_spin.setValue(4)
    d.seed_spin.setValue(3)
    d.input.setText(PROMPT)
    stepper = stepper_for(gpt, Sampling(1.0, 4, 0.9, 3))
    for n in (1, 2):
        qtbot.mouseClick(d.step_button, Qt.LeftButton)
        qtbot.waitUntil(lambda n=n: d.view is not None and d.view.position == n and not d.waiting, timeout=20000)
        step = stepper.step()
        assert d.candidates.tokens == shown_pieces(gpt, step.top_tokens[0])
        assert d.candidates.probs == pytest.approx(step.top_probs[0], abs=1e-5)
        assert d.candidates.cut == {i for i, c in enumerate(step.cut[0]) if c}
    qtbot.waitUntil(lambda: window.attention.inspections["decoding"] is d.view.inspection, timeout=10000)
    assert d.view.inspection.arch == "decoder_only"

    path = tmp_path / "bert.ckpt"
    bert.save(path)
    window.client.send(Load(str(path)))
    qtbot.waitUntil(lambda: d.family == "encoder_only", timeout=30000)
    assert d.pages.currentWidget() is d.fill_view and d.fill_view.isVisibleTo(window)
    d.fill_view.input.setText("我<mask>天去了")
    qtbot.keyClick(d.fill_view.input, Qt.Key_Return)
    qtbot.waitUntil(lambda: d.fill_view.view is not None, timeout=20000)
    expected = bert.fill_mask("我<mask>天去了")
    assert d.fill_view.charts[0].tokens == expected.predictions[0].tokens
    assert np.allclose(d.fill_view.charts[0].probs, expected.predictions[0].probs, atol=1e-5)
    qtbot.waitUntil(lambda: window.attention.inspections["decoding"] is d.fill_view.view.inspection, timeout=10000)


def test_the_new_views_speak_chinese(qtbot, gpt, bert):
    from explorer.i18n import language

    language.set("zh")
    try:
        panel, _ = panel_on(qtbot, gpt)
        panel.mode.setCurrentIndex(panel.mode.findData("sample"))
        panel.top_k_spin.setValue(3)
        panel.input.setText(PROMPT)
        click_step(qtbot, panel, 1)
        assert panel.prompt_label.text() == "提示词" and panel.translate_button.text() == "生成"
        assert panel.mode.currentText() == "采样" and panel.seed_spin.specialValueText() == "随机"
        assert panel.candidates.note.text().startswith("采样：") and "top-k 3" in panel.candidates.note.text()
        assert panel.output.text().startswith("<span style='white-space:pre-wrap'>目前的文本: ")
        if panel.candidates.drawn is not None:
            assert "随机抽中" in panel.candidates.value_labels[panel.candidates.drawn].text()
        fill, _ = panel_on(qtbot, bert)
        view = fill.fill_view
        assert view.fill_button.text() == "填空" and "<mask>" in view.input.placeholderText()
        view.input.setText("我<mask>天")
        qtbot.keyClick(view.input, Qt.Key_Return)
        qtbot.waitUntil(lambda: view.view is not None, timeout=10000)
        assert view.charts[0].title.text() == "位置 2：写入的 <mask>"
        assert view.charts[0].plot.getAxis("bottom").labelText == "P(词元 | 句子的其余部分)"
    finally:
        language.set("en")
