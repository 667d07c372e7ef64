"""The main window's menus (explorer/window_menus.py): every action named, in English and in Chinese; each bundled
experiment in the Experiments menu, run by one click; the theme and About entries."""

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QApplication  # noqa: E402

from explorer.commands import RunExperiment  # noqa: E402
from explorer.i18n import ZH, language  # noqa: E402
from explorer.main_window import MainWindow  # noqa: E402
from explorer.window_menus import ABOUT, ACTION_NAMES, FOLLOW_TIP  # noqa: E402
from model.experiments.variants import VARIANTS  # noqa: E402


@pytest.fixture(autouse=True)
def _english_light():
    yield
    language.set("en")
    app = QApplication.instance()
    if app is not None:
        app.setPalette(app.style().standardPalette())


def test_the_menus_name_every_action(make_window):
    window = make_window()
    for key, action in window.menu_actions.items():
        assert action.text(), key
    assert [a.objectName() for a in window.file_menu.actions()][:3] == [
        "action_new",
        "action_open",
        "action_open_folder",
    ]
    assert {f"action_show_{key}" for key, _ in MainWindow.PANELS} <= {
        a.objectName() for a in window.menus.view_menu.actions()
    }


def test_the_actions_are_named_in_the_interface_language(make_window):
    window = make_window()
    actions = window.menu_actions
    assert {key: actions[key].text() for key in ACTION_NAMES} == ACTION_NAMES
    assert actions["follow"].toolTip() == FOLLOW_TIP
    window.set_language("zh")
    assert {key: actions[key].text() for key in ACTION_NAMES} == {key: ZH[text] for key, text in ACTION_NAMES.items()}
    assert actions["follow"].toolTip() == ZH[FOLLOW_TIP]
    for v in VARIANTS:  # the experiments by their own Chinese titles and predictions
        assert (actions[f"experiment_{v.name}"].text(), actions[f"experiment_{v.name}"].toolTip()) == (
            v.title_zh,
            v.expect_zh,
        )
    window.set_language("en")
    assert actions[f"experiment_{VARIANTS[0].name}"].text() == VARIANTS[0].title


def test_each_experiment_is_one_click(make_window, monkeypatch):
    window = make_window()
    sent: list = []
    monkeypatch.setattr(window.client, "send", lambda command: sent.append(command) or command.request_id)
    menu_entries = [a.objectName() for a in window.menus.experiments_menu.actions()]
    assert menu_entries == [f"action_experiment_{v.name}" for v in VARIANTS]
    last = VARIANTS[-1].name
    window.menu_actions[f"experiment_{last}"].trigger()  # nothing unsaved: no question first
    assert [(type(c), c.variant, c.steps) for c in sent] == [(RunExperiment, last, None)]


def test_the_theme_and_about_entries(make_window):
    window = make_window()
    window.menu_actions["theme_dark"].trigger()
    assert window.theme == "dark" and window.settings.value("theme") == "dark"
    assert window.menu_actions["theme_dark"].isChecked() and not window.menu_actions["theme_light"].isChecked()
    window.menu_actions["theme_light"].trigger()
    assert window.theme == "light" and not window.menu_actions["theme_dark"].isChecked()
    window.menu_actions["about"].trigger()
    assert window.message_bar.showing and window.message_bar.label.text() == ABOUT
