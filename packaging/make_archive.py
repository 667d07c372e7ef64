"""Pack a PyInstaller build of Transformer Explorer into the archive a release offers for this system.

    python packaging/make_archive.py DISTPATH [--out DIR] [--version 0.1.0] [--system linux|windows|macos]

DISTPATH is PyInstaller's ``--distpath`` (``dist`` by default). The archive is named
``transformer-explorer-<version>-<system>-<machine>.<ext>`` and its path is printed:

- Linux: a ``.tar.gz`` of the folder ``transformer-explorer/`` as built, plus, in that folder, a desktop
  entry and an icon for an unpacking in ``/opt`` and ``INSTALL.txt`` (run it; add it to the menu).
- Windows: a ``.zip`` of the folder ``transformer-explorer/`` (run ``transformer-explorer.exe`` inside).
- macOS: a ``.zip`` of ``Transformer Explorer.app``, made by ``ditto`` (which keeps the bundle's symlinks
  and its signature, as Finder's own compressing does).

The release workflow (.github/workflows/release.yml) and ``python -m bench.build_bundle`` both run this, so
the archive tested here is the one CI makes. Standard library only.
"""

from __future__ import annotations

import argparse
import io
import platform
import re
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP_ID = "transformer-explorer"
MAC_APP = "Transformer Explorer.app"
OPT = f"/opt/{APP_ID}"  # where INSTALL.txt suggests a system-wide unpacking; the shipped entry points there
MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "arm64": "arm64", "aarch64": "aarch64"}
# what the Linux bundle needs from the system (found in a fresh minbase Debian root by bench.build_bundle): OpenGL and
# EGL, which Qt's GUI library links against (with them come libxcb1 and libx11-6), and fontconfig's configuration with
# a font (libfontconfig1 brings fontconfig-config and fonts-dejavu-core; without a font every letter is a box). Qt's
# X11 plugin libraries (libxcb-*, libxkbcommon…), GLib, D-Bus, FreeType are inside the bundle.
LINUX_PACKAGES = ["libgl1", "libegl1", "libfontconfig1"]

INSTALL_NOTE = """\
Transformer Explorer {version} for Linux ({machine})

This folder holds everything the program needs: Python, PyTorch (CPU), Qt with its
X11 libraries, a Chinese font and the trained model. No Python installation is
needed. From the system it takes only what every desktop has: OpenGL/EGL, X11 and
fonts (on a minimal system: sudo apt install {packages}).
It needs glibc {glibc} or newer (that of the system it was built on).

Run it from where you unpacked it:

    ./transformer-explorer

Add it to your application menu, with its icon, and let .ckpt files open with it
(for you; the entry points at this folder, so run it again after moving the folder):

    ./transformer-explorer --install-desktop-entry

Or install it for everyone in {opt}, with the desktop entry shipped here:

    sudo tar -C /opt -xzf {archive}
    sudo cp {opt}/transformer-explorer.desktop /usr/share/applications/

To remove it, delete the folder (and ~/.local/share/applications/transformer-explorer.desktop
or /usr/share/applications/transformer-explorer.desktop).
"""


def project_version(root: Path = ROOT) -> str:
    """The version in pyproject.toml."""
    import tomllib

    with open(root / "pyproject.toml", "rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def this_system() -> str:
    return {"linux": "linux", "win32": "windows", "darwin": "macos"}[sys.platform]


def archive_name(version: str, system: str, machine: str) -> str:
    """``transformer-explorer-0.1.0-linux-x86_64.tar.gz`` and the like."""
    ext = "tar.gz" if system == "linux" else "zip"
    return f"{APP_ID}-{version}-{system}-{MACHINES.get(machine.lower(), machine.lower())}.{ext}"


def opt_desktop_entry(template: str, folder: str = OPT) -> str:
    """The desktop entry for the bundle unpacked in ``folder``: ``template`` (resources/…desktop) with its
    Exec and Icon pointing into that folder (a menu entry needs absolute paths)."""
    entry = re.sub(r"(?m)^Exec=.*$", f"Exec={folder}/{APP_ID} %f", template)
    return re.sub(r"(?m)^Icon=.*$", f"Icon={folder}/{APP_ID}.png", entry)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = _owned_by_root(tarfile.TarInfo(name))
    info.size, info.mode, info.mtime = len(data), mode, int(time.time())
    tar.addfile(info, io.BytesIO(data))


def _owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def make_tarball(dist: Path, out: Path, version: str, machine: str = "x86_64") -> Path:
    """The Linux archive of ``dist``/transformer-explorer, with the desktop entry, icon and install note."""
    app = dist / APP_ID
    if not (app / APP_ID).is_file():
        raise FileNotFoundError(f"no {APP_ID} executable in {app}: build it first")
    name = archive_name(version, "linux", machine)
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    template = (ROOT / "resources" / f"{APP_ID}.desktop").read_text(encoding="utf-8")
    note = INSTALL_NOTE.format(
        version=version,
        machine=machine,
        packages=" ".join(LINUX_PACKAGES),
        glibc=platform.libc_ver()[1] or "?",  # this machine's, which built the bundle
        opt=OPT,
        archive=name,
    )
    with tarfile.open(path, "w:gz", compresslevel=6) as tar:  # 6: most of 9's saving in half its time
        tar.add(app, arcname=APP_ID, filter=_owned_by_root)  # keeps modes (the executable bit) and symlinks
        _add_bytes(tar, f"{APP_ID}/{APP_ID}.desktop", opt_desktop_entry(template).encode("utf-8"))
        _add_bytes(tar, f"{APP_ID}/{APP_ID}.png", (ROOT / "resources" / "icons" / f"{APP_ID}.png").read_bytes())
        _add_bytes(tar, f"{APP_ID}/INSTALL.txt", note.encode("utf-8"))
    return path


def make_zip(folder: Path, path: Path) -> Path:
    """A zip of ``folder`` (kept as the top folder), with each file's mode kept for unzip on Unix."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(folder.parent).as_posix())
    return path


def make_macos_zip(app: Path, path: Path) -> Path:
    """A zip of the .app by ditto: symlinks, extended attributes and the code signature survive."""
    subprocess.run(["ditto", "-c", "-k", "--sequesterRsrc", "--keepParent", str(app), str(path)], check=True)
    return path


def make_archive(dist: Path, out: Path, version: str, system: str, machine: str) -> Path:
    """The archive for ``system`` of the build in ``dist``, written in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    if system == "linux":
        return make_tarball(dist, out, version, machine)
    if system == "windows":
        return make_zip(dist / APP_ID, out / archive_name(version, system, machine))
    if system == "macos":
        return make_macos_zip(dist / MAC_APP, out / archive_name(version, system, machine))
    raise ValueError(f"unknown system {system!r}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dist", type=Path, help="PyInstaller's --distpath (dist by default)")
    ap.add_argument("--out", type=Path, help="the folder to write the archive in (default: DISTPATH)")
    ap.add_argument("--version", help="default: the version in pyproject.toml (a tag's leading v is dropped)")
    ap.add_argument("--system", choices=("linux", "windows", "macos"), default=None, help="default: this one")
    ap.add_argument("--machine", default=platform.machine(), help="default: this one (%(default)s)")
    args = ap.parse_args(argv)
    version = (args.version or project_version()).removeprefix("v")
    print(make_archive(args.dist, args.out or args.dist, version, args.system or this_system(), args.machine))


if __name__ == "__main__":
    main()
