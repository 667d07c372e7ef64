"""In front of a class: presenter mode driven by a clicker's keys, scenes, and the first launch."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from explorer.presenter import VIEWS, Scene, Scenes  # noqa: E402

SENTENCE = "Did you read two interesting books in the library yesterday?"


def arrangement(window):
    """Where each panel is: shown or not, its dock area, the panels tabbed with it."""
    return {
        key: (
            dock.isVisible(),
            window.dockWidgetArea(dock),
            sorted(o.objectName() for o in window.tabifiedDockWidgets(dock)),
        )
        for key, dock in window.docks.items()
    }


def bundled_window(make_window, qtbot):
    window = make_window(start_default=True)
    shown(window, qtbot)
    qtbot.waitUntil(lambda: window.decoding.view is not None, timeout=20000)
    return window


def shown(window, qtbot):
    """On screen and active: the keys a presenter presses go to the active window."""
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)


def decode(window, qtbot, mode="greedy"):
    d = window.decoding
    d.mode.setCurrentIndex(d.mode.findData(mode))
    d.input.setText(SENTENCE)
    d.start()
    qtbot.waitUntil(lambda: d.view is not None and d.view.settings.text == SENTENCE and not d.waiting, timeout=10000)


def press(window, qtbot, key):
    QTest.keyClick(window, key)
    qtbot.waitUntil(lambda: not window.decoding.waiting, timeout=10000)


def test_the_clicker_steps_and_goes_back(make_window, qtbot):
    window = bundled_window(make_window, qtbot)
    decode(window, qtbot, "beam")
    window.set_presenter(True)
    assert window.presenter.on and window.isFullScreen() and not window.menu_bar.isVisible()
    d = window.decoding
    for expected, key in enumerate((Qt.Key_PageDown, Qt.Key_Right, Qt.Key_Space, Qt.Key_PageDown), 1):
        press(window, qtbot, key)
        assert d.view.position == expected
    press(window, qtbot, Qt.Key_PageUp)
    press(window, qtbot, Qt.Key_Left)
    assert d.view.position == 2
    press(window, qtbot, Qt.Key_Home)
    assert d.view.position == 0
    press(window, qtbot, Qt.Key_PageDown)
    assert d.view.position == 1 and d.step_label.text() == "Step 1"


def test_one_view_at_a_time_and_esc_gives_the_window_back(make_window, qtbot):
    window = bundled_window(make_window, qtbot)
    decode(window, qtbot, "beam")
    before = arrangement(window)
    size = window.size()
    window.set_presenter(True)
    for number, view in enumerate(VIEWS, 1):
        QTest.keyClick(window, Qt.Key(Qt.Key_0 + number))
        assert window.presenter.view == view.key
        shown = [k for k, dock in window.docks.items() if dock.isVisible()]
        assert shown == [view.dock], view.key
        dock = window.docks[view.dock]
        # the view has the screen: its panel fills the window between the presenter bar and the bottom
        assert dock.width() >= window.width() - 20 and dock.height() >= window.height() - 150
    QTest.keyClick(window, Qt.Key_2)
    d = window.decoding
    assert d.tree.isVisible() and not d.candidates.isVisible()
    QTest.keyClick(window, Qt.Key_1)
    assert d.candidates.isVisible() and not d.tree.isVisible()
    QTest.keyClick(window, Qt.Key_6)
    assert window.attention.tabs.currentWidget() is window.attention.explainer
    QTest.keyClick(window, Qt.Key_Escape)
    assert not window.presenter.on and not window.isFullScreen() and window.menu_bar.isVisible()
    qtbot.waitUntil(lambda: window.size() == size, timeout=3000)
    assert arrangement(window) == before
    # outside presenter mode the clicker's keys do nothing
    position = d.view.position
    QTest.keyClick(window, Qt.Key_PageDown)
    qtbot.wait(200)
    assert d.view.position == position


def test_autoplay_speed_keys(make_window, qtbot):
    window = bundled_window(make_window, qtbot)
    window.set_presenter(True)
    speed = window.decoding.speed
    speed.setValue(speed.minimum())
    QTest.keyClick(window, Qt.Key_Plus)
    assert speed.value() > speed.minimum()
    QTest.keyClick(window, Qt.Key_Minus)
    assert speed.value() == speed.minimum()
    QTest.keyClick(window, Qt.Key_P)
    assert window.decoding.play_button.isChecked()
    QTest.keyClick(window, Qt.Key_P)
    assert not window.decoding.play_button.isChecked()


def test_scenes_are_saved_recalled_and_kept(make_window, qtbot, tmp_path):
    window = bundled_window(make_window, qtbot)
    decode(window, qtbot, "beam")
    a = window.attention
    a.kind.setCurrentIndex(a.kind.findData("decoder_self"))
    a.layer.setValue(2)
    window.set_presenter(True)
    QTest.keyClick(window, Qt.Key_3)
    window.presenter.save_scene("self-attention, layer 2")
    QTest.keyClick(window, Qt.Key_1)
    d = window.decoding
    d.mode.setCurrentIndex(d.mode.findData("greedy"))
    d.input.setText("I will buy a book.")
    a.layer.setValue(1)
    window.presenter.apply_scene("self-attention, layer 2")
    assert window.presenter.view == "attention" and window.docks["attention"].isVisible()
    assert d.input.text() == SENTENCE and d.mode.currentData() == "beam"
    assert a.kind.currentData() == "decoder_self" and a.layer.value() == 2
    qtbot.waitUntil(lambda: d.view is not None and d.view.settings.text == SENTENCE, timeout=10000)
    # kept in the settings, for the next lecture
    window.settings.sync()
    names = Scenes(window.settings).names()
    assert names == ["self-attention, layer 2"]
    window.presenter.delete_scene(names[0])
    assert Scenes(window.settings).names() == []


def test_a_scene_from_an_edited_settings_file_is_skipped(tmp_path):
    from PySide6.QtCore import QSettings

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat)
    settings.setValue(Scenes.KEY, '[{"name": "a", "view": "nowhere"}, {"name": "b", "view": "tree"}, 3]')
    assert Scenes(settings).names() == ["b"]
    settings.setValue(Scenes.KEY, "not json")
    assert Scenes(settings).all() == []
    assert Scene.from_plain({"name": "c", "view": "tree", "layer": 2}).layer == 2


def test_closing_while_presenting_keeps_the_normal_layout(make_window, qtbot):
    window = make_window()
    shown(window, qtbot)
    before = arrangement(window)
    window.set_presenter(True)
    QTest.keyClick(window, Qt.Key_4)
    window.close()
    assert not window.isFullScreen()
    later = make_window()
    later.restoreState(window.settings.value("window/state"))
    shown(later, qtbot)
    assert arrangement(later) == before


def test_training_from_scratch_can_be_undone(make_window, qtbot, monkeypatch):
    from explorer import dialogs

    asked = []
    monkeypatch.setattr(dialogs, "ask", lambda *a: asked.append(a[1]) or dialogs.DISCARD)
    window = bundled_window(make_window, qtbot)
    bundled_run = window.status.run_id
    assert "bundled model" in window.windowTitle()
    form = window.training.form
    form.task_combo.setCurrentIndex(form.task_combo.findData("copy"))
    form.preset_combo.setCurrentText("tiny")
    window.train_from_scratch()
    qtbot.waitUntil(lambda: window.status.run_id > bundled_run, timeout=20000)
    assert "bundled model" not in window.windowTitle()
    bar = window.message_bar
    back = [b for b in bar.buttons if b.text() == "Open the bundled model"]
    assert bar.showing and back
    qtbot.waitUntil(lambda: window.status.step > 0, timeout=20000)
    window.training.stop_button.click()
    qtbot.waitUntil(lambda: window.status.state != "training", timeout=10000)
    back[0].click()
    assert asked == ["Unsaved work"]  # the new model has trained: bringing the bundled one back asks first
    qtbot.waitUntil(
        lambda: window.training.current is not None and window.training.current.data.task == "grammar-en-zh",
        timeout=20000,
    )
    qtbot.waitUntil(lambda: "bundled model" in window.windowTitle(), timeout=5000)
    # and its sample sentence is ready to step again
    qtbot.waitUntil(lambda: window.decoding.view is not None and window.decoding.view.position == 1, timeout=10000)


def test_open_the_bundled_model_from_the_file_menu(make_window, qtbot):
    window = make_window()  # started without the bundled model
    assert window.training.current is None and "bundled" not in window.windowTitle()
    window.menu_actions["open_bundled"].trigger()
    qtbot.waitUntil(lambda: "bundled model" in window.windowTitle(), timeout=20000)
    assert window.training.current.data.task == "grammar-en-zh"


def test_the_model_map_opens_the_view_of_a_part(make_window, qtbot):
    from explorer.panels.model_map import ModelPart

    window = bundled_window(make_window, qtbot)
    a = window.attention
    window.model_map.part_chosen.emit(ModelPart("encoder_self_attention", "encoder", 1))
    assert a.kind.currentData() == "encoder" and a.layer.value() == 2
    assert window.docks["attention"].isVisible() and a.tabs.currentIndex() == 0
    window.model_map.part_chosen.emit(ModelPart("positional", "encoder"))
    assert not window.docks["positional"].visibleRegion().isEmpty()
    window.model_map.part_chosen.emit(ModelPart("softmax"))
    assert not window.docks["decoding"].visibleRegion().isEmpty() and window.decoding.candidates.isVisible()


def test_presenter_tree_view_gives_the_tree_most_of_the_height(make_window, qtbot):
    window = bundled_window(make_window, qtbot)
    decode(window, qtbot, "beam")
    window.decoding.run_button.click()
    qtbot.waitUntil(lambda: window.decoding.view.at_end and not window.decoding.waiting, timeout=20000)
    window.set_presenter(True)
    QTest.keyClick(window, Qt.Key_2)
    qtbot.wait(100)
    d = window.decoding
    rows = min(d.nbest.rowCount(), 3) * d.nbest.verticalHeader().defaultSectionSize()  # the hypotheses listed
    assert d.tree.height() > 2 * d.nbest.height() and d.nbest.viewport().height() >= rows


def test_the_panel_in_front_follows_what_the_program_starts_with(make_window, qtbot):
    with_model = bundled_window(make_window, qtbot)  # the bundled model: its translation and attention
    assert not with_model.docks["decoding"].visibleRegion().isEmpty()
    assert with_model.docks["training"].visibleRegion().isEmpty()
    without = make_window(settings_name="new.ini")  # --new: nothing to look into yet, so training first
    shown(without, qtbot)
    assert not without.docks["training"].visibleRegion().isEmpty()
    assert without.docks["decoding"].visibleRegion().isEmpty()
