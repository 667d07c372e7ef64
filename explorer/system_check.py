"""Before Qt starts on Linux: are the system libraries that Qt needs installed?

The PySide6 wheel ships Qt but not the system libraries it links against: QtGui's own (OpenGL, EGL, fontconfig,
FreeType, GLib, X11, xkbcommon), whatever the platform, and those of the X11 (``xcb``) platform plugin. When one of
the plugin's is missing, Qt aborts with a core dump and names only ``libxcb-cursor0``, whatever was actually
missing; when one of QtGui's is missing, importing PySide6 fails with an ImportError traceback. This module
tries to load each library first (the same lookup the dynamic loader will do, no subprocess) and turns the
missing ones into the install commands to run. No Qt is imported here.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping

# soname → (Debian/Ubuntu package, Fedora package): the libraries that PySide6's
# plugins/platforms/libqxcb.so, lib/libQt6XcbQpa.so.6 and lib/libQt6Gui.so.6 need and the wheel does not ship
XCB_LIBRARIES: dict[str, tuple[str, str]] = {
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libgthread-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
}


def uses_xcb(env: Mapping[str, str], platform: str | None = None) -> bool:
    """Whether Qt will start on its X11 (xcb) platform plugin: on Linux, unless another platform was asked
    for (``QT_QPA_PLATFORM``) or a Wayland session will be tried first."""
    if not (platform or sys.platform).startswith("linux"):
        return False
    asked = env.get("QT_QPA_PLATFORM", "")
    if asked:
        return re.match(r"xcb(\Z|[:;])", asked) is not None
    return not env.get("WAYLAND_DISPLAY") and env.get("XDG_SESSION_TYPE") != "wayland"


def loadable(soname: str) -> bool:
    """Whether the dynamic loader finds ``soname`` (it is loaded, as Qt would load it a moment later)."""
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def missing_libraries(find: Callable[[str], bool] | None = None) -> list[str]:
    """The sonames of :data:`XCB_LIBRARIES` that cannot be loaded (``find``: :func:`loadable` by default)."""
    find = find or loadable
    return [soname for soname in XCB_LIBRARIES if not find(soname)]


def install_message(missing: Iterable[str]) -> str:
    """What to tell a person whose system lacks ``missing``: the libraries, and the commands that add them."""
    missing = list(missing)
    apt = dict.fromkeys(XCB_LIBRARIES[s][0] for s in missing)  # dict: unique, in order
    dnf = dict.fromkeys(XCB_LIBRARIES[s][1] for s in missing)
    return (
        "Transformer Explorer cannot open its window: Qt's X11 platform plugin (xcb) needs system libraries "
        f"that are not installed: {', '.join(missing)}.\n"
        "Install them, then start the program again:\n"
        f"  Debian, Ubuntu:  sudo apt install {' '.join(apt)}\n"
        f"  Fedora:          sudo dnf install {' '.join(dnf)}\n"
    )


# what PySide6's lib/libQt6Gui.so.6 and lib/libQt6Widgets.so.6 need on any platform (offscreen, Wayland, xcb)
QT_LIBRARIES = (
    "libGL.so.1",
    "libEGL.so.1",
    "libfontconfig.so.1",
    "libfreetype.so.6",
    "libglib-2.0.so.0",
    "libgthread-2.0.so.0",
    "libX11.so.6",
    "libxkbcommon.so.0",
)


def qt_problem(
    env: Mapping[str, str] | None = None, find: Callable[[str], bool] | None = None, platform: str | None = None
) -> str | None:
    """The message to print instead of starting Qt, or None when Qt can start (or this is not Linux): on the xcb
    platform every library of :data:`XCB_LIBRARIES`, on another one (offscreen, Wayland) QtGui's own."""
    env = os.environ if env is None else env
    if not (platform or sys.platform).startswith("linux"):
        return None
    find = find or loadable
    if uses_xcb(env, platform):
        missing = missing_libraries(find)
        return install_message(missing) if missing else None
    missing = [soname for soname in QT_LIBRARIES if not find(soname)]
    if not missing:
        return None
    platform_name = env.get("QT_QPA_PLATFORM", "") or "wayland"
    return install_message(missing).replace(
        "Qt's X11 platform plugin (xcb) needs", f"Qt (on its {platform_name} platform) needs", 1
    )
