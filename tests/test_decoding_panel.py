"""The decoding panel shows exactly what the model produced, says what it did to the input, and never leaves
one sentence's results under another."""

import dataclasses
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import Qt as GuiQt  # noqa: E402 — QtGui's Qt namespace has mightBeRichText
from PySide6.QtGui import QTextDocument  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from explorer.answers import DecodeStepped  # noqa: E402
from explorer.commands import Decode  # noqa: E402
from explorer.engine_client import EngineClient  # noqa: E402
from explorer.panels.decoding import DecodingPanel  # noqa: E402
from explorer.panels.decoding_state import DecodingViewState  # noqa: E402
from explorer.widgets.beam_tree import node_tooltip  # noqa: E402
from explorer.widgets.token_strip import shown_piece  # noqa: E402
from model.data.tokenization import UNK_ID  # noqa: E402
from model.decoding.stepping import DecodeDriver  # noqa: E402
from model.io.snapshots import DecodeSettings  # noqa: E402

TRICKY = "<b>bold?</b> & <unk> &amp; <i>"  # what a char or BPE model can write, and a person can type


def rendered(text: str, fmt=Qt.AutoText) -> str:
    """What Qt draws for ``text`` in a label or tooltip of format ``fmt``: markup interpreted where Qt would."""
    if fmt == Qt.RichText or (fmt == Qt.AutoText and GuiQt.mightBeRichText(text)):
        doc = QTextDocument()
        doc.setHtml(text)
        return doc.toPlainText()
    return text


def visible(label) -> str:
    return rendered(label.text(), label.textFormat())


@pytest.fixture(scope="module")
def session(copy_session_factory):
    return copy_session_factory()  # untrained: what it writes does not matter, only that it is shown as written


def run_info(session, pieces=None):
    """What the panel reads of a run (the engine's RunInfo carries more)."""
    tok = session.tgt_tok
    return SimpleNamespace(
        run_id=id(session),
        model_config=session.model_cfg,
        src_words=session.source_words(),
        weights_step=session.step,
        model_origin=None,
        tgt_pieces=pieces or tuple(tok.display_token(i) for i in range(tok.vocab_size)),
    )


def panel_for(qtbot, session, pieces=None) -> DecodingPanel:
    panel = DecodingPanel()
    qtbot.addWidget(panel)
    panel.on_run(run_info(session, pieces))
    return panel


def decode_to_end(session, settings: DecodeSettings):
    driver = DecodeDriver(session)
    driver.start(settings)
    return driver, driver.act("run")


def test_an_unk_the_model_writes_is_on_screen(qtbot, session):
    bias = session.model.generator.bias
    with torch.no_grad():
        saved = bias[UNK_ID].item()
        bias[UNK_ID] += 1e4  # the model now writes <unk> at every step
    try:
        _, view = decode_to_end(session, DecodeSettings("3 1 4", max_len=3))
    finally:
        with torch.no_grad():
            bias[UNK_ID] = saved
    written = session.tgt_tok.decode(view.hypotheses[0][3])
    assert written.count("<unk>") == 3  # the engine's own text, independently of the panel
    panel = panel_for(qtbot, session)
    panel.show_view(view)
    assert visible(panel.output) == f"Translation: {written}"
    panel.decoding_page.views.selected = (2, 0)
    panel.decoding_page.views.show_candidates()
    assert visible(panel.candidates.title).endswith("“<unk> <unk>”")


def test_markup_in_model_text_and_input_is_shown_literally(qtbot, session):
    pieces = list(run_info(session).tgt_pieces)
    _, view = decode_to_end(session, DecodeSettings("3 1 4", beam_size=2, max_len=4))
    for step in view.steps:  # every token the search considered is named by tricky text
        for c in step.kept + step.pruned:
            pieces[c.token] = TRICKY
    view = dataclasses.replace(
        view,
        reference=TRICKY,
        source_tokens=("<b>", "&amp;", "<unk>", "<eos>"),
        hypotheses=tuple((TRICKY, *h[1:]) for h in view.hypotheses),
    )
    panel = panel_for(qtbot, session, tuple(pieces))
    panel.mode.setCurrentIndex(panel.mode.findData("beam"))
    panel.show_view(view)
    assert visible(panel.output) == f"Translation: {TRICKY}"
    assert visible(panel.reference) == f"Reference (from the corpus): {TRICKY}"
    assert rendered(panel.chips.toolTip()) == "[<b>] [&amp;] [<unk>] [<eos>]"
    assert panel.nbest.item(0, 0).text() == TRICKY
    panel.decoding_page.views._on_node(1, 0)
    assert visible(panel.candidates.title).endswith(f"“{shown_piece(TRICKY)}”")  # its spaces as the chips write them
    qtbot.waitUntil(lambda: not panel.tree.pending)
    node = next(n for n in panel.tree.nodes if n.level == 1 and n.token != session.model_cfg.eos_id)
    assert node.piece == shown_piece(TRICKY)
    assert rendered(node_tooltip(node)).startswith(shown_piece(TRICKY) + "  ")
    panel.show_view(dataclasses.replace(view, at_end=False, focus_text="a  &lt;  b"))  # spaces kept too
    assert visible(panel.output) == "Output so far: a  &lt;  b"


def test_a_cut_input_is_announced_with_its_numbers(qtbot, session):
    words = 2500
    text = " ".join(["1"] * words)  # a 5,000-character sentence
    kept = session.model_cfg.max_len - 1  # the encoder reads max_len positions, the last is EOS
    assert kept < words
    driver = DecodeDriver(session)
    view = driver.start(DecodeSettings(text))
    assert (view.source_length, view.source_read) == (words, kept)
    panel = panel_for(qtbot, session)
    panel.show_view(view)
    assert not panel.notice.isHidden()
    assert visible(panel.notice) == (
        f"The input has {words} tokens but the model reads at most {kept}: "
        f"only the first {kept} were translated, the other {words - kept} were ignored."
    )
    panel.show_view(driver.start(DecodeSettings("1 2 3")))
    assert panel.notice.isHidden()


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


def test_other_labels_quoting_tokens_or_files_show_them_literally(qtbot):
    import numpy as np
    from PySide6.QtCore import QPointF

    from explorer.answers import CorpusSummary, RunData
    from explorer.panels.data_view import DataPanel
    from explorer.widgets.heatmap import Heatmap
    from explorer.widgets.message_bar import MessageBar

    bar = MessageBar()
    qtbot.addWidget(bar)
    bar.show_message(f"Could not read {TRICKY}.tsv", "error")
    assert visible(bar.label) == f"Could not read {TRICKY}.tsv"
    heatmap = Heatmap("tricky_heatmap", TRICKY)
    qtbot.addWidget(heatmap)
    heatmap.set_data(np.full((1, 2), 0.5), ["<b>"], ["&amp;", "<unk>"])
    heatmap._on_move(heatmap.image.mapToScene(QPointF(1.5, 0.5)))
    assert "“<b>”" in visible(heatmap.hover_label) and "“<unk>”" in visible(heatmap.hover_label)
    assert visible(heatmap.title) == TRICKY
    data = DataPanel()
    qtbot.addWidget(data)
    name = "<b>pairs & <unk> &amp;.tsv"  # a file name can hold all but the slash
    data.on_run(SimpleNamespace(run_id=1, data=SimpleNamespace(task=None, path=f"/data/{name}")))
    assert visible(data.summary).startswith(f"{name}\n")
    data.on_data(RunData(1, CorpusSummary(name, error=f"line 3: {TRICKY}"), ()))
    assert visible(data.summary) == f"{name}\nline 3: {TRICKY}"


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


def test_a_refused_decoding_request_is_worded_in_the_interface_language(session):
    from explorer.failures import decode_error_message
    from explorer.i18n import language
    from model.decoding.stepping import DecodeError

    with pytest.raises(DecodeError) as refused:
        DecodeDriver(session).act("step")  # nothing to step: no sentence was given
    assert decode_error_message(refused.value) == "Type a sentence and press Enter to start decoding."
    language.set("zh")
    try:
        assert decode_error_message(refused.value) == "输入一个句子并按回车开始解码。"
        assert decode_error_message(ValueError("max_len 99")) == "max_len 99"  # the engine's own words otherwise
    finally:
        language.set("en")


# -- the view state: what the panel shows, as a value ---------------------------------------------------------
def test_the_view_state_module_is_qt_free():
    import subprocess
    import sys

    probe = "import sys, explorer.panels.decoding_state; print(sorted(m for m in sys.modules if 'PySide6' in m))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


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
    from tests.scenarios.test_families_decoding import SyncEngine

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


def test_presenter_mode_reads_and_sets_the_panel_through_its_view_state(make_window, monkeypatch):
    window = make_window()
    d, presenter = window.decoding, window.presenter
    shown = DecodingViewState(
        mode="beam", beam_size=5, length_penalty=0.8, temperature=0.5, top_k=3, top_p=0.7, seed=9, speed=3.0
    )
    monkeypatch.setattr(d, "view_state", lambda: shown)  # what the panel says it shows, whatever its widgets hold
    scene = presenter.current_scene("lecture")
    settings = (scene.mode, scene.beam_size, scene.length_penalty, scene.temperature, scene.top_k, scene.top_p)
    assert settings == ("beam", 5, 0.8, 0.5, 3, 0.7) and scene.seed == 9
    states, pressed = [], []
    monkeypatch.setattr(d, "show_view_state", states.append)
    monkeypatch.setattr(d, "press", pressed.append)
    presenter.change_speed(1)
    presenter.toggle_play()
    assert [(s.speed, s.playing) for s in states] == [(5.0, False), (3.0, True)]
    presenter.step()
    presenter.back()
    presenter.reset()
    assert pressed == ["step", "back", "reset"]
    presenter.scenes.put(dataclasses.replace(scene, name="two beams", beam_size=2, sentence="1 2"))
    monkeypatch.setattr(d, "start", lambda: states.append("started"))
    presenter.apply_scene("two beams")
    assert states[-2:] == [dataclasses.replace(shown, beam_size=2, sentence="1 2"), "started"]
