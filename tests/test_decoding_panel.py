"""The decoding panel (explorer/panels/decoding.py): the page of the model's family, what the pages share (a random
sentence, the source chips' tint, the stepping buttons pressed from outside), and the labels that quote a model's
text or a file's name show it literally. Its stepping page is tested in test_decoding_page.py, the views of a step
in test_decoding_views.py."""

import dataclasses
from types import SimpleNamespace

import pytest

pytest.importorskip("pytestqt")

from explorer.panels.decoding import family_mode  # noqa: E402
from explorer.panels.decoding_generation import GenerationMode  # noqa: E402
from explorer.panels.decoding_state import DecodingViewState  # noqa: E402
from explorer.panels.decoding_translation import TranslationMode  # noqa: E402
from model.decoding.stepping import DecodeDriver  # noqa: E402
from model.io.snapshots import DecodeSettings  # noqa: E402
from tests.decoding_panels import TRICKY, panel_for, visible  # noqa: E402


@pytest.fixture(scope="module")
def session(copy_session_factory):
    return copy_session_factory()  # untrained: what it writes does not matter, only that it is shown as written


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


# -- what the pages share ----------------------------------------------------------------------------------------
def test_a_family_that_generates_gets_the_generation_page_the_others_the_translators():
    assert isinstance(family_mode(SimpleNamespace(decoding=("generate", "sample"))), GenerationMode)
    assert isinstance(family_mode(SimpleNamespace(decoding=("translate",))), TranslationMode)
    assert isinstance(family_mode(SimpleNamespace(decoding=("fill_mask",))), TranslationMode)  # (its page: words)


def test_source_weights_tint_the_shown_pages_chips_aligned_at_the_end(qtbot, session):
    panel = panel_for(qtbot, session)
    panel.chips.set_tokens(["a", "b", "<eos>"])
    panel.show_source_weights([9.0, 1.0, -2.0, 0.5], "attribution")  # one more than chips: a GPT's <bos>
    assert panel.chips.weights == [1.0, -2.0, 0.5] and panel.chips.legend == "attribution"
    assert panel.fill_view.chips.weights is None
    panel.show_source_weights([1.0], "attribution")  # fewer: the chips without a value stay untinted
    assert panel.chips.weights[0] == 1.0 and all(w != w for w in panel.chips.weights[1:])  # NaN
    panel.show_source_weights(None)
    assert panel.chips.weights is None and panel.chips.legend == ""


def test_a_button_pressed_from_outside_works_only_while_enabled_and_its_page_shown(qtbot, session):
    panel = panel_for(qtbot, session)
    panel.input.setText("1 2")
    panel.pages.setCurrentWidget(panel.fill_view)
    panel.press("step")
    assert not panel.waiting  # the fill-mask page is shown: no decoding started
    panel.pages.setCurrentWidget(panel.decoding_page)
    panel.press("back")  # nothing decoded: Back is greyed
    assert not panel.waiting and not panel.back_button.isEnabled()
    panel.press("step")  # Step starts the sentence in the box
    assert panel.waiting and panel.decoding_page.requested == DecodeSettings("1 2", length_penalty=0.0)
    assert panel.sentence_shown() == "1 2"
    panel.pages.setCurrentWidget(panel.fill_view)
    panel.fill_view.input.setText("a <mask> b")
    assert panel.sentence_shown() == "a <mask> b"
