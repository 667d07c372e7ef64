"""The decoding panel's stepping page (explorer/panels/decoding_page.py): its settings and buttons, the model's
length limit, the step label, the view state read back whole, and a new input that never stands over the last
one's results — nor a late answer over a newer sentence."""

import dataclasses
from types import SimpleNamespace

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QObject, Qt, QTimer, Signal  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from explorer.answers import (  # noqa: E402
    AblationChanged,
    DecodeStepped,
    InspectionReady,
    Int8Changed,
    MaskFilled,
    SentenceSampled,
)
from explorer.commands import Decode  # noqa: E402
from explorer.engine_client import EngineClient  # noqa: E402
from explorer.panels.decoding_page import SteppingControls  # noqa: E402
from explorer.panels.decoding_state import DecodingViewState  # noqa: E402
from model.decoding.stepping import DecodeDriver  # noqa: E402
from model.io.snapshots import DecodeSettings  # noqa: E402
from tests.decoding_panels import panel_for, run_info, visible  # noqa: E402


@pytest.fixture(scope="module")
def session(copy_session_factory):
    return copy_session_factory()  # untrained: what it writes does not matter, only that it is shown as written


class SyncEngine(QObject):
    """The engine's decoding answers, computed at once from the session and delivered from the event loop (as the
    engine thread's queued signals arrive); every command sent is kept in ``sent``."""

    decode_stepped = Signal(DecodeStepped)
    mask_filled = Signal(MaskFilled)
    inspection_ready = Signal(InspectionReady)
    sentence_sampled = Signal(SentenceSampled)
    engine_failed = Signal(int, str)
    ablation_changed = Signal(AblationChanged)
    int8_changed = Signal(Int8Changed)

    def __init__(self, session) -> None:
        super().__init__()
        self.driver = DecodeDriver(session)
        self.sent: list[object] = []

    def submit(self, c) -> int:
        self.sent.append(c)
        assert isinstance(c, Decode), f"not expected here: {c}"
        view = self.driver.start(c.settings) if c.action == "start" else self.driver.act(c.action, c.position)
        QTimer.singleShot(0, lambda: self.decode_stepped.emit(DecodeStepped(c.request_id, view)))
        return c.request_id


def test_max_length_offers_what_the_model_can_write(qtbot, session):
    panel = panel_for(qtbot, session)
    limit = session.model_cfg.max_len
    assert panel.max_len.maximum() == limit
    DecodeDriver(session).start(DecodeSettings("1 2", max_len=limit))  # the largest offered is accepted
    with pytest.raises(ValueError, match="max_len"):
        DecodeDriver(session).start(DecodeSettings("1 2", max_len=limit + 1))
    panel.max_len.setValue(limit)
    panel.show_view(DecodeDriver(session).start(DecodeSettings("1 2")))
    panel.on_run(run_info(session))  # new training settings of the same model: the sentence stays
    assert panel.view is not None and visible(panel.output)
    shorter = run_info(session)
    shorter.run_id, shorter.model_config = -1, dataclasses.replace(shorter.model_config, max_len=limit // 2)
    panel.on_run(shorter)  # another model: the bound follows it
    assert panel.max_len.maximum() == panel.max_len.value() == limit // 2
    assert panel.view is None and visible(panel.output) == ""  # nothing of the old model's sentence
    assert str(limit // 2) in panel.max_len.toolTip()


@pytest.fixture
def copy_window(make_window, qtbot, tmp_path, copy_session_factory):
    path = tmp_path / "copy.ckpt"
    copy_session_factory().save(path)
    window = make_window(open_path=str(path))
    qtbot.waitUntil(lambda: window.training.current is not None, timeout=15000)
    return window


def send(qtbot, panel, text):
    panel.input.setText(text)
    qtbot.keyClick(panel.input, Qt.Key_Return)


def test_a_new_input_never_stands_over_the_last_ones_results(copy_window, qtbot, monkeypatch):
    window, d = copy_window, copy_window.decoding
    build = DecodeDriver._build

    def refuse_boom(self, position):
        if self.settings.text == "boom":
            raise ValueError("this sentence cannot be decoded")
        build(self, position)

    monkeypatch.setattr(DecodeDriver, "_build", refuse_boom)  # the engine thread calls it too
    failures = []
    window.engine.engine_failed.connect(lambda _, message: failures.append(message))
    d.mode.setCurrentIndex(d.mode.findData("beam"))
    d.beam_size.setValue(2)
    with qtbot.waitSignal(d.view_shown, timeout=10000):
        send(qtbot, d, "3 1 4")
    with qtbot.waitSignal(d.view_shown, timeout=10000):
        qtbot.mouseClick(d.findChild(QPushButton, "decode_run_button"), Qt.LeftButton)
    old = d.view
    assert old.at_end and visible(d.step_label).endswith("finished") and visible(d.output)
    assert d.nbest.rowCount() and d.candidates.tokens

    def nothing_shown():
        assert d.view is None
        assert visible(d.output) == visible(d.step_label) == visible(d.reference) == ""
        assert d.nbest.rowCount() == 0 and d.candidates.tokens == [] and d.chips.tokens == []
        assert d.cross.values.size == 0 and len(d.tree.nodes) == 1  # the tree is back to its start

    send(qtbot, d, "boom")
    nothing_shown()  # at once, before the engine answers
    qtbot.waitUntil(lambda: len(failures) == 1 and not d.waiting, timeout=10000)
    nothing_shown()
    assert "cannot be decoded" in window.message_bar.label.text()
    # a late answer to an earlier request: not shown under the new input
    d.decoding_page._on_decode_stepped(DecodeStepped(0, old))
    nothing_shown()
    qtbot.mouseClick(d.findChild(QPushButton, "decode_step_button"), Qt.LeftButton)  # tries the sentence again
    qtbot.waitUntil(lambda: len(failures) == 3, timeout=10000)  # its start, and the step: each says why
    assert all("cannot be decoded" in m for m in failures)
    nothing_shown()

    d.mode.setCurrentIndex(d.mode.findData("greedy"))
    with qtbot.waitSignal(d.view_shown, timeout=10000):
        send(qtbot, d, "5 6")
    with qtbot.waitSignal(d.view_shown, timeout=10000):
        qtbot.mouseClick(d.findChild(QPushButton, "decode_step_button"), Qt.LeftButton)
    assert d.view.settings.text == "5 6" and d.view.position == 1
    d.input.setText("7 7 7")  # edited, not submitted: Step starts the new sentence rather than going on
    qtbot.mouseClick(d.findChild(QPushButton, "decode_step_button"), Qt.LeftButton)
    qtbot.waitUntil(lambda: d.view is not None and d.view.settings.text == "7 7 7", timeout=10000)
    qtbot.waitUntil(lambda: d.view.position == 1, timeout=10000)
    assert d.chips.tokens == ["7", "7", "7", "<eos>"]


def test_an_answer_about_a_replaced_sentence_reaches_neither_panel(make_window, session):
    window = make_window()
    driver = DecodeDriver(session)
    first = driver.start(DecodeSettings("1 2 3"))
    window.decoding.decoding_page._on_decode_stepped(DecodeStepped(0, first))
    window.decoding.input.setText("4 4 2")
    window.decoding.start()  # the person submits another sentence; its answer is on its way
    late = driver.act("step", None)  # an answer about the first sentence, sent before the new one arrived
    window.decoding.decoding_page._on_decode_stepped(DecodeStepped(0, late))
    assert window.decoding.view is not late
    assert window.attention.inspections["decoding"] is first.inspection


def test_a_view_state_shown_is_on_screen_and_read_back_whole(qtbot, session):
    panel = panel_for(qtbot, session)
    panel.resize(800, 700)
    panel.show()
    limit = session.model_cfg.max_len
    state = DecodingViewState(
        sentence="3 1 4",
        mode="beam",
        beam_size=3,
        length_penalty=1.2,
        max_len=min(7, limit),
        temperature=0.7,
        top_k=5,
        top_p=0.8,
        seed=11,
        cross_layer=1,
        focus="tree",
        speed=5.0,
    )
    assert panel.view_state() != state  # nothing of it was shown before
    panel.show_view_state(state)
    assert panel.view_state() == state
    # what a person sees: the box, the settings, the speed and the part enlarged
    assert panel.input.text() == "3 1 4" and panel.mode.currentData() == "beam" and panel.beam_size.value() == 3
    assert panel.alpha.value() == pytest.approx(1.2) and panel.max_len.value() == min(7, limit)
    assert (panel.top_k_spin.value(), panel.seed_spin.value()) == (5, 11)
    assert 1000 / panel.play_timer.interval() == pytest.approx(5.0)
    assert panel.beam_box.isVisible() and not panel.candidates.isVisible()  # the tree's focus
    again = dataclasses.replace(state, focus=None, mode="sample")  # a translator offers no Sample mode: greedy
    panel.show_view_state(again)
    assert panel.view_state() == dataclasses.replace(again, mode="greedy") and panel.candidates.isVisible()


def test_a_view_states_step_is_gone_to_on_the_sentence_shown(qtbot, session):
    panel = panel_for(qtbot, session)
    engine = SyncEngine(session)
    panel.attach(EngineClient(engine))
    panel.show_view_state(DecodingViewState(sentence="3 1 4 1 5"))
    panel.start()
    qtbot.waitUntil(lambda: panel.view is not None and not panel.waiting, timeout=10000)
    assert panel.view_state().step == 0
    panel.show_view_state(dataclasses.replace(panel.view_state(), step=3))
    qtbot.waitUntil(lambda: not panel.waiting, timeout=10000)
    driver = DecodeDriver(session)  # the engine's own answer, asked directly
    driver.start(panel.settings())
    expected = driver.act("goto", 3)
    assert panel.view.position == expected.position > 0 and panel.view_state().step == expected.position
    assert panel.candidates.tokens == [panel.piece(int(t)) for t in expected.steps[-1].top_tokens[0]]
    sent = [c for c in engine.sent if isinstance(c, Decode)]
    assert [(c.action, c.position) for c in sent] == [("start", None), ("goto", 3)]
    # a state of another sentence puts it in the box, and steps nothing: the sentence shown is not that one
    panel.show_view_state(dataclasses.replace(panel.view_state(), sentence="5 6", step=1))
    assert len(engine.sent) == 2 and panel.view.position == expected.position
    assert panel.step_label.text().endswith("previous sentence")


# -- the settings, the buttons and the step label ------------------------------------------------------------------
def test_the_buttons_follow_the_step_shown_and_a_busy_step_counts_the_clicks_queued(qtbot):
    parent = QObject()  # (the auto-play timer's)
    controls = SteppingControls(parent)
    buttons = (controls.back_button, controls.step_button, controls.run_button, controls.reset_button)

    def enabled() -> list[bool]:
        return [b.isEnabled() for b in buttons]

    controls.update_buttons(None, busy=False, queued=0)  # nothing decoded: Step and Run start the sentence
    assert enabled() == [False, True, True, False]
    middle = SimpleNamespace(position=2, at_end=False)
    controls.update_buttons(middle, busy=False, queued=0)
    assert enabled() == [True, True, True, True] and controls.step_button.text() == "Step ▶"
    controls.update_buttons(middle, busy=True, queued=2)  # a step computing: Step queues, the others wait
    assert enabled() == [False, True, False, False] and controls.step_button.text() == "Step ▶ (+2)"
    controls.update_buttons(SimpleNamespace(position=5, at_end=True), busy=False, queued=0)
    assert enabled() == [True, False, False, True]  # finished: no step or run left, Back and Reset are


def test_sample_mode_is_offered_second_and_taken_away_to_greedy(qtbot):
    parent = QObject()  # (the auto-play timer's)
    controls = SteppingControls(parent)
    modes = lambda: [controls.mode.itemData(i) for i in range(controls.mode.count())]  # noqa: E731
    assert modes() == ["greedy", "beam"]
    controls.offer_sampling(True)
    controls.offer_sampling(True)  # offered once
    assert modes() == ["greedy", "sample", "beam"]
    controls.mode.setCurrentIndex(controls.mode.findData("sample"))
    controls.offer_sampling(False)
    assert modes() == ["greedy", "beam"] and controls.mode.currentData() == "greedy"  # not beam: nobody chose it


def test_the_settings_sent_are_the_modes_greedy_has_no_beam_and_no_length_penalty(qtbot, session):
    page = panel_for(qtbot, session).decoding_page
    c = page.controls
    page.sentence.input.setText("3 1 4")
    c.beam_size.setValue(5)
    c.alpha.setValue(1.1)
    c.max_len.setValue(0)  # auto
    assert page.settings() == DecodeSettings("3 1 4", beam_size=1, length_penalty=0.0, max_len=None)
    c.mode.setCurrentIndex(c.mode.findData("beam"))
    c.max_len.setValue(6)
    assert page.settings() == DecodeSettings("3 1 4", beam_size=5, length_penalty=pytest.approx(1.1), max_len=6)
    assert not page.sampling.isVisible() and not page.sampling.temperature_spin.isEnabled()  # a translator's page


def test_the_step_label_counts_the_steps_and_marks_the_previous_sentence(qtbot, session):
    panel = panel_for(qtbot, session)
    page = panel.decoding_page
    page.sentence.input.setText("")
    page.start()
    assert visible(panel.output) == "Type a sentence first." and page.requested is None
    page.sentence.input.setText("3 1 4")
    driver = DecodeDriver(session)
    driver.start(page.settings())
    view = driver.act("step")
    page.show_view(view)
    assert visible(panel.step_label) == "Step 1"
    page.show_view(driver.act("run"))
    assert visible(panel.step_label) == f"Step {len(page.view.steps)}, finished"
    edited = []
    page.sentence_edited.connect(edited.append)
    qtbot.keyClicks(page.sentence.input, " 1")  # typed: what is shown is the previous sentence's
    assert visible(panel.step_label).endswith(", finished · previous sentence") and edited == [True]
    assert panel.chips.faded and "not decoded yet" in panel.step_label.toolTip()
