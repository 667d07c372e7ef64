"""The Decoding panel's int8 switch (explorer/panels/int8_switch.py): offered for a translator opened from a folder
only, it turns the engine's int8 fast mode on and off, says what the engine's comparison found, and decodes the
sentence shown again."""

from __future__ import annotations

import re

import pytest

from tests.hf_folders import marian_folder

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    return marian_folder(tmp_path_factory.mktemp("int8"))


def _engine_int8(window) -> bool:
    return window.engine.session is not None and window.engine.session.int8


def test_the_switch_decodes_with_int8_and_says_how_far_it_differs(make_window, qtbot, marian):
    window = make_window()
    switch = window.decoding.decoding_page.int8
    window.files.open_model_folder(str(marian))
    qtbot.waitUntil(lambda: window.training.current is not None, timeout=60000)
    assert switch.box.isVisibleTo(window) and not switch.box.isChecked() and not switch.note.isVisibleTo(window)
    window.decoding.input.setText("The teacher reads a book.")
    window.decoding.input.returnPressed.emit()
    qtbot.waitUntil(lambda: window.decoding.view is not None, timeout=30000)
    first = window.decoding.view
    switch.box.click()
    qtbot.waitUntil(lambda: switch.last is not None and switch.last.on, timeout=60000)
    assert _engine_int8(window) and switch.box.isChecked() and switch.box.isEnabled()
    match = re.search(r"int8: (\d+) of (\d+) check sentences decode as in float32.*≤ ([\d.]+)", switch.note.text())
    assert match and switch.note.isVisibleTo(window)
    assert (int(match[1]), int(match[2])) == (switch.last.same_tokens, switch.last.sentences)
    # the sentence shown was decoded again, in int8, to where it was
    qtbot.waitUntil(
        lambda: window.decoding.view is not first and not window.decoding.decoding_page.waiting, timeout=30000
    )
    assert window.decoding.view.settings == first.settings and window.decoding.view.position == first.position
    switch.box.click()
    qtbot.waitUntil(lambda: switch.last is not None and not switch.last.on, timeout=30000)
    assert not _engine_int8(window) and not switch.note.isVisibleTo(window)


def test_a_model_made_here_does_not_offer_it(make_window, qtbot):
    window = make_window(start_default=True)
    qtbot.waitUntil(lambda: window.training.current is not None, timeout=30000)
    assert not window.decoding.decoding_page.int8.box.isVisibleTo(window)


def test_behind_another_tab_the_switch_comes_a_turn_after_the_rest_of_the_panel(make_window, qtbot, marian):
    """The window hands a new model to a panel behind another tab a step per turn; the switch's first appearance
    took 3-4 ms of the Decoding panel's 8-10, so it is a step of its own, after the panel has taken the model."""
    window = make_window(start_default=True)
    qtbot.waitUntil(lambda: window.training.current is not None, timeout=30000)
    made_here = window.training.current
    switch = window.decoding.decoding_page.int8
    window.files.open_model_folder(str(marian))
    qtbot.waitUntil(lambda: window.training.current is not made_here, timeout=60000)
    assert switch.box.isVisibleTo(window)
    take_model, show_switch = window.decoding.arrival_steps(made_here)
    take_model()
    assert window.decoding.decoding_page.info is made_here and switch.box.isVisibleTo(window)
    show_switch()
    assert not switch.box.isVisibleTo(window)
