"""Desktop integration on Linux: a menu entry with an icon, and checkpoints that open by double-click.

``transformer-explorer --install-desktop-entry`` writes, for the current user
(under $XDG_DATA_HOME, by default ~/.local/share):

- applications/transformer-explorer.desktop — the menu entry, launching this
  very installation, with ``%f`` so a double-clicked checkpoint opens;
- icons/hicolor/{scalable,256x256}/apps/transformer-explorer.{svg,png};
- mime/packages/transformer-explorer.xml — ``*.ckpt`` as a Transformer
  Explorer checkpoint, opened by the entry above.

It then refreshes the desktop and MIME databases when their tools are there.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from configparser import ConfigParser
from pathlib import Path

from resources import resource_path

APP_ID = "transformer-explorer"


def data_home(home: Path | None = None) -> Path:
    if home is not None:
        return home / ".local" / "share"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def launch_command() -> str:
    """How the menu entry starts this installation: a frozen bundle's own executable, the console
    script, or this Python with -m."""
    if getattr(sys, "frozen", False):  # a PyInstaller bundle
        return shlex.quote(sys.executable)
    script = shutil.which(APP_ID)
    if script:
        return shlex.quote(script)
    return f"{shlex.quote(sys.executable)} -m explorer.app"


def desktop_entry(command: str) -> str:
    template = resource_path(f"{APP_ID}.desktop").read_text(encoding="utf-8")
    return template.replace(f"Exec={APP_ID} %f", f"Exec={command} %f")


def install_desktop_entry(home: Path | None = None, refresh: bool = True) -> list[Path]:
    """Write the entry, icons and MIME type for this user; returns the files written."""
    share = data_home(home)
    written = []
    targets = {
        share / "applications" / f"{APP_ID}.desktop": desktop_entry(launch_command()).encode("utf-8"),
        share / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg": resource_path(
            f"icons/{APP_ID}.svg"
        ).read_bytes(),
        share / "icons" / "hicolor" / "256x256" / "apps" / f"{APP_ID}.png": resource_path(
            f"icons/{APP_ID}.png"
        ).read_bytes(),
        share / "mime" / "packages" / f"{APP_ID}.xml": resource_path(f"{APP_ID}-mime.xml").read_bytes(),
    }
    for path, data in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        written.append(path)
    if refresh:
        for tool, folder in (("update-desktop-database", "applications"), ("update-mime-database", "mime")):
            if shutil.which(tool):
                subprocess.run([tool, str(share / folder)], capture_output=True, check=False)
    return written


class _CaseSensitiveParser(ConfigParser):
    """A key file parser that keeps keys as written: desktop entry keys are case-sensitive."""

    def optionxform(self, optionstr: str) -> str:
        return optionstr


def check_desktop_entry(path: Path) -> list[str]:
    """Problems with a desktop entry, by the Desktop Entry Specification's rules that matter here."""
    parser = _CaseSensitiveParser(interpolation=None, strict=True)
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
    except Exception as exc:  # noqa: BLE001 — any parse error is a problem to report
        return [f"not a valid key file: {exc}"]
    if parser.sections()[:1] != ["Desktop Entry"]:
        return ["the first group must be [Desktop Entry]"]
    entry = parser["Desktop Entry"]
    problems = [f"missing {key}" for key in ("Type", "Name", "Exec", "Icon") if key not in entry]
    if entry.get("Type") != "Application":
        problems.append("Type must be Application")
    if "Exec" in entry:
        argv = shlex.split(entry["Exec"])
        if not argv or not (Path(argv[0]).is_file() or shutil.which(argv[0])):
            problems.append(f"Exec does not start an existing program: {entry['Exec']}")
        if "%f" not in argv and "%F" not in argv:
            problems.append("Exec takes no file, so checkpoints cannot open by double-click")
    categories = entry.get("Categories", "")
    if categories and not categories.endswith(";"):
        problems.append("Categories must end with ;")
    return problems
