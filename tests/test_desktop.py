"""Desktop integration on Linux (explorer/desktop.py): the menu entry, its icons and the checkpoint's MIME type
written for one user, and the checks a desktop entry must pass."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from explorer import desktop
from explorer.desktop import check_desktop_entry, data_home, desktop_entry, install_desktop_entry, launch_command
from resources import resource_path

ROOT = Path(__file__).resolve().parents[1]
GOOD = "[Desktop Entry]\nType=Application\nName=X\nExec={exec} %f\nIcon=x\n"


def test_the_data_folder_is_xdg_data_home_or_the_home_s_own(monkeypatch, tmp_path):
    assert data_home(tmp_path) == tmp_path / ".local" / "share"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_home() == tmp_path / "xdg"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    assert data_home() == tmp_path / "me" / ".local" / "share"


def test_the_entry_launches_this_installation(monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)  # a bundle: its own executable
    monkeypatch.setattr(sys, "executable", "/opt/Transformer Explorer/explorer")
    assert launch_command() == "'/opt/Transformer Explorer/explorer'"
    monkeypatch.delattr(sys, "frozen")
    monkeypatch.setattr(shutil, "which", lambda name: "/home/me/.local/bin/transformer-explorer")
    assert launch_command() == "/home/me/.local/bin/transformer-explorer"  # the console script
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert launch_command() == f"{shlex.quote(sys.executable)} -m explorer.app"


def test_the_entry_is_the_shipped_one_with_its_command():
    shipped = resource_path("transformer-explorer.desktop").read_text(encoding="utf-8").splitlines()
    written = desktop_entry("/usr/bin/python3 -m explorer.app").splitlines()
    assert [line for line in written if line.startswith("Exec=")] == ["Exec=/usr/bin/python3 -m explorer.app %f"]
    assert [a for a, b in zip(shipped, written) if a != b] == ["Exec=transformer-explorer %f"]


def test_installing_writes_the_entry_the_icons_and_the_type(tmp_path, monkeypatch):
    monkeypatch.setattr(desktop, "launch_command", lambda: shlex.quote(sys.executable) + " -m explorer.app")
    written = install_desktop_entry(home=tmp_path, refresh=False)
    share = tmp_path / ".local" / "share"
    assert sorted(p.relative_to(share).as_posix() for p in written) == [
        "applications/transformer-explorer.desktop",
        "icons/hicolor/256x256/apps/transformer-explorer.png",
        "icons/hicolor/scalable/apps/transformer-explorer.svg",
        "mime/packages/transformer-explorer.xml",
    ]
    assert check_desktop_entry(share / "applications" / "transformer-explorer.desktop") == []
    icon = share / "icons/hicolor/256x256/apps/transformer-explorer.png"
    assert icon.read_bytes() == resource_path("icons/transformer-explorer.png").read_bytes()
    assert not [p for p in share.rglob("*.tmp")]  # each file put in place whole
    assert install_desktop_entry(home=tmp_path, refresh=False) == written  # again: the same files, replaced


def test_each_broken_rule_is_named(tmp_path):
    entry = tmp_path / "x.desktop"

    def problems(text: str) -> list[str]:
        entry.write_text(text, encoding="utf-8")
        return check_desktop_entry(entry)

    assert problems(GOOD.format(exec=shlex.quote(sys.executable))) == []
    assert problems("Type=Application\n")[0].startswith("not a valid key file")
    assert problems("[Other]\nType=Application\n") == ["the first group must be [Desktop Entry]"]
    assert problems("[Desktop Entry]\nType=Link\nName=X\nIcon=x\n") == ["missing Exec", "Type must be Application"]
    assert problems(GOOD.format(exec=sys.executable) + "Categories=Education\n") == ["Categories must end with ;"]


def test_install_desktop_entry_into_a_temporary_home(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("XDG_DATA_HOME", None)
    out = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "--install-desktop-entry"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    share = tmp_path / ".local" / "share"
    entry = share / "applications" / "transformer-explorer.desktop"
    assert entry.is_file()
    assert check_desktop_entry(entry) == []
    text = entry.read_text(encoding="utf-8")
    assert "Icon=transformer-explorer" in text and "MimeType=application/x-transformer-explorer-checkpoint;" in text
    assert (share / "icons/hicolor/scalable/apps/transformer-explorer.svg").is_file()
    assert (share / "icons/hicolor/256x256/apps/transformer-explorer.png").is_file()
    assert "*.ckpt" in (share / "mime/packages/transformer-explorer.xml").read_text(encoding="utf-8")
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(entry)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


def test_check_desktop_entry_catches_broken_entries(tmp_path):
    bad = tmp_path / "bad.desktop"
    bad.write_text("[Desktop Entry]\nType=Application\nName=X\nExec=/nonexistent/prog\nIcon=x\n", encoding="utf-8")
    problems = check_desktop_entry(bad)
    assert any("existing program" in p for p in problems) and any("double-click" in p for p in problems)
