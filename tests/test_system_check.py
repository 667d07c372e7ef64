"""Before Qt starts: missing X11 libraries become the install commands, not Qt's core dump."""

import subprocess
import sys
from pathlib import Path

import pytest

from explorer import system_check
from explorer.system_check import QT_LIBRARIES, XCB_LIBRARIES, install_message, missing_libraries, qt_problem, uses_xcb

ICCCM_AND_KEYSYMS = {"libxcb-icccm.so.4", "libxcb-keysyms.so.1"}  # what a fresh Debian lacked


def without(missing: set[str]):
    return lambda soname: soname not in missing


def test_the_missing_libraries_are_reported_with_their_apt_and_dnf_packages():
    problem = qt_problem({"DISPLAY": ":0"}, find=without(ICCCM_AND_KEYSYMS))
    assert problem is not None
    assert "libxcb-icccm.so.4, libxcb-keysyms.so.1." in problem
    assert "sudo apt install libxcb-icccm4 libxcb-keysyms1\n" in problem
    assert "sudo dnf install xcb-util-wm xcb-util-keysyms\n" in problem
    assert "cursor" not in problem  # Qt's own message names libxcb-cursor0 whatever is missing


def test_packages_shared_by_several_libraries_are_named_once():
    missing = ["libxcb-randr.so.0", "libxcb-shape.so.0", "libglib-2.0.so.0", "libgthread-2.0.so.0"]
    message = install_message(missing)
    assert "sudo apt install libxcb-randr0 libxcb-shape0 libglib2.0-0\n" in message
    assert "sudo dnf install libxcb glib2\n" in message


def test_nothing_is_said_when_every_library_is_there():
    assert missing_libraries(find=lambda soname: True) == []
    assert qt_problem({"DISPLAY": ":0"}, find=lambda soname: True) is None


def test_every_library_is_looked_up():
    asked: list[str] = []
    missing_libraries(find=lambda soname: asked.append(soname) or True)
    assert asked == list(XCB_LIBRARIES)
    assert {"libxcb-cursor.so.0", "libxkbcommon-x11.so.0", "libEGL.so.1"} <= set(asked)


@pytest.mark.parametrize(
    ("env", "platform", "xcb"),
    [
        ({"DISPLAY": ":0"}, "linux", True),
        ({}, "linux", True),  # no display at all: Qt still loads the xcb plugin first
        ({"QT_QPA_PLATFORM": "xcb"}, "linux", True),
        ({"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":0"}, "linux", False),
        ({"QT_QPA_PLATFORM": "wayland;xcb"}, "linux", False),
        ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, "linux", False),
        ({"XDG_SESSION_TYPE": "wayland"}, "linux", False),
        ({"DISPLAY": ":0"}, "darwin", False),
        ({}, "win32", False),
    ],
)
def test_the_check_runs_only_where_qt_will_use_xcb(env, platform, xcb):
    assert uses_xcb(env, platform) is xcb


def test_on_another_platform_qtguis_own_libraries_are_checked():
    """Offscreen (or Wayland), Qt needs no xcb library, but QtGui's own ones: without libGL PySide6 would fail to
    import with a traceback; instead the person is told which package to install."""
    env = {"QT_QPA_PLATFORM": "offscreen"}
    problem = qt_problem(env, find=lambda soname: soname != "libGL.so.1", platform="linux")
    assert problem is not None and "libGL.so.1" in problem and "offscreen" in problem
    assert "sudo apt install libgl1\n" in problem and "sudo dnf install libglvnd-glx\n" in problem
    asked: list[str] = []
    assert qt_problem(env, find=lambda soname: asked.append(soname) or True, platform="linux") is None
    assert asked == list(QT_LIBRARIES) and not any(soname.startswith("libxcb") for soname in asked)
    assert set(QT_LIBRARIES) <= set(XCB_LIBRARIES)  # the xcb platform checks them too
    assert qt_problem(env, find=lambda soname: False, platform="darwin") is None


def test_main_exits_with_the_message_when_an_offscreen_qt_lacks_libgl(monkeypatch, capsys):
    from PySide6 import QtWidgets

    from explorer import app

    class NoQt:
        instance = staticmethod(lambda: None)

        def __init__(self, *args):
            raise AssertionError("a QApplication was created although the check failed")

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    monkeypatch.setattr(system_check, "loadable", lambda soname: soname != "libGL.so.1")
    monkeypatch.setattr(QtWidgets, "QApplication", NoQt)
    assert app.main([]) == 1
    assert "sudo apt install libgl1" in capsys.readouterr().err


def test_main_exits_with_the_message_instead_of_starting_qt(monkeypatch, capsys):
    from PySide6 import QtWidgets

    from explorer import app

    class NoQt:
        instance = staticmethod(lambda: None)  # none yet: main() would have to create one

        def __init__(self, *args):
            raise AssertionError("a QApplication was created although the check failed")

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    monkeypatch.setattr(system_check, "loadable", without(ICCCM_AND_KEYSYMS))
    monkeypatch.setattr(QtWidgets, "QApplication", NoQt)
    assert app.main([]) == 1
    err = capsys.readouterr().err
    assert "sudo apt install libxcb-icccm4 libxcb-keysyms1" in err
    assert "sudo dnf install xcb-util-wm xcb-util-keysyms" in err


def test_the_readme_lists_every_library_package():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    apt = " ".join(dict.fromkeys(debian for debian, _ in XCB_LIBRARIES.values()))
    dnf = " ".join(dict.fromkeys(fedora for _, fedora in XCB_LIBRARIES.values()))
    assert f"    sudo apt install {apt}\n" in readme
    assert f"    sudo dnf install {dnf}\n" in readme


def test_the_check_imports_no_qt():
    code = "import sys, explorer.system_check; assert not [m for m in sys.modules if m.startswith('PySide6')]"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
