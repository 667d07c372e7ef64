"""Build the self-contained bundle and its release archive; check that it starts here and in a fresh Debian root
without Python (Linux).

    pip install pyinstaller
    python -m bench.build_bundle [--launches 3] [--clean-launches 2] [--no-build] [--no-clean-root]

1. Builds packaging/transformer-explorer.spec into build/bundle/dist and packs it with packaging/make_archive.py,
   the code the release workflow runs: the build time, the archive's size.
2. Launches the built program here as a first launch several times, taking turns with a bare
   ``python -c "import torch"`` (bench.gui_responsiveness's ``startup``): the medians to the window and to the
   bundled model's attention map.
3. The clean root (needs root and debootstrap): a minimal Debian root file system of this machine's release
   (``debootstrap --variant=minbase``, cached in build/clean-root/) given only the desktop libraries the INSTALL note
   names (make_archive.LINUX_PACKAGES) — no Python, which is checked. The archive is unpacked in its /opt as the
   note says; then which system libraries the bundle's files link against (ldd in the root, with the
   bundle's own folder on the library path as its launcher sets it); then the program is started in the root by
   chroot, in a private mount namespace (unshare: /proc, /dev and /sys mounted, nothing else of this machine), on an
   X server (an Xvfb run here, of which only the socket is shared with the root: Qt's xcb plugin and its libraries
   are the root's) or offscreen, each time as a first launch, until it prints that the attention map is shown.

Too slow for CI (minutes), so it lives here.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

from bench.gui_responsiveness import launch, startup

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
APP = "transformer-explorer"
OPT_APP = f"/opt/{APP}"  # where the archive is unpacked in the clean root, as INSTALL.txt says
MIRROR = "http://deb.debian.org/debian"
ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# run by unshare in a private mount namespace (the mounts end with it): this machine's /proc, /dev, /sys and the X
# socket folder, then the program in the root with an empty environment and fresh settings
IN_ROOT = r"""
set -e
root=$1; shift
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t sysfs sys "$root/sys"
if [ -d /tmp/.X11-unix ]; then mkdir -p "$root/tmp/.X11-unix"; mount --bind /tmp/.X11-unix "$root/tmp/.X11-unix"; fi
exec chroot "$root" "$@"
"""
FIRST_LAUNCH = 'd=$(mktemp -d) && XDG_CONFIG_HOME=$d XDG_DATA_HOME=$d exec "$0" "$@"'


def size_of(folder: Path) -> int:
    """The size of the files in ``folder`` (bytes), each hard-linked file once (Mesa's drivers are many links)."""
    files = {
        (s.st_dev, s.st_ino): s.st_size
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink()
        for s in [p.lstat()]
    }
    return sum(files.values())


def load_make_archive() -> ModuleType:
    """packaging/make_archive.py, by path (the folder's name is taken by the PyPI package ``packaging``)."""
    spec = importlib.util.spec_from_file_location("make_archive", ROOT / "packaging" / "make_archive.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_archive"] = module  # dataclasses and the like look their module up by name
    spec.loader.exec_module(module)
    return module


def build(dist: Path) -> float:
    """PyInstaller with the spec into ``dist``; → seconds."""
    t0 = time.perf_counter()
    spec = ROOT / "packaging" / f"{APP}.spec"
    work = dist.parent / "work"
    command = [sys.executable, "-m", "PyInstaller", str(spec), "--noconfirm", "--distpath", str(dist)]
    subprocess.run([*command, "--workpath", str(work)], check=True, cwd=ROOT)
    return time.perf_counter() - t0


def missing_package_data(app: Path) -> tuple[int, list[str]]:
    """The files pyproject.toml ships as package data (the model, the font, the lessons…), and those of them the
    bundle in ``app`` lacks."""
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as f:
        package_data = tomllib.load(f)["tool"]["setuptools"]["package-data"]
    files = [p for package, patterns in package_data.items() for g in patterns for p in (ROOT / package).glob(g)]
    files = [p for p in files if p.is_file()]
    internal = app / "_internal"  # PyInstaller's folder of everything but the executable
    return len(files), [str(p.relative_to(ROOT)) for p in files if not (internal / p.relative_to(ROOT)).is_file()]


def debian_release() -> str:
    """This machine's Debian release (bookworm…), which the clean root copies."""
    fields = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
    return fields.get("VERSION_CODENAME", "").strip('"') or "stable"


def chroot(root: Path, script: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by the root's sh, with an empty environment but for ``env`` and PATH."""
    assigned = [f"{k}={v}" for k, v in {"PATH": ROOT_PATH, "LANG": "C.UTF-8", **env}.items()]
    command = ["chroot", str(root), "/usr/bin/env", "-i", *assigned, "/bin/sh", "-c", script]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def clean_root(release: str, packages: list[str]) -> Path:
    """A minbase Debian root with ``packages`` added, cached under build/clean-root/ (a second run reuses it; another
    list of packages makes a fresh one, so that nothing added before stays)."""
    root = BUILD / "clean-root" / release
    marker = root / ".packages-added"
    if marker.exists() and marker.read_text().split() == packages:
        return root
    partial = root.with_name(release + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run(["debootstrap", "--variant=minbase", release, str(partial), MIRROR], check=True)
    print(f"== debootstrap --variant=minbase {release}: {time.perf_counter() - t0:.0f} s")
    install = f"apt-get install -y -q --no-install-recommends {' '.join(packages)} && apt-get clean"
    done = chroot(partial, install, DEBIAN_FRONTEND="noninteractive")
    if done.returncode:
        raise SystemExit(f"apt-get in the clean root failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    (partial / marker.name).write_text(" ".join(packages))
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    return root


def python_in(root: Path) -> str:
    """Any Python in the root (a command, a library, a module folder); empty when there is none."""
    found = chroot(
        root,
        "for p in python3 python python2; do command -v $p; done; ls -d /usr/lib/python* /usr/local/lib/python* "
        "/usr/bin/python* 2>/dev/null; ldconfig -p | grep -i libpython; true",
    )
    return found.stdout.strip()


def unpack(root: Path, archive: Path) -> float:
    """The archive unpacked in the root's /opt by the root's own tar, as INSTALL.txt says; → seconds."""
    shutil.rmtree(root / OPT_APP.lstrip("/"), ignore_errors=True)
    shutil.copy(archive, root / "tmp" / archive.name)
    t0 = time.perf_counter()
    done = chroot(root, f"tar -C /opt -xzf /tmp/{archive.name} && rm /tmp/{archive.name}")
    if done.returncode:
        raise SystemExit(f"unpacking in the clean root failed: {done.stderr}")
    return time.perf_counter() - t0


def linked_libraries(root: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """What the bundle's files link against from outside it, by ldd in the root: {soname: Debian package}, and
    {soname not found: the bundle's files that need it}."""
    internal = f"{OPT_APP}/_internal"
    listing = chroot(
        root,
        f"find {OPT_APP} -type f \\( -name '*.so' -o -name '*.so.*' -o -path {OPT_APP}/{APP} \\) "
        "-exec ldd {} + 2>/dev/null; true",
        LD_LIBRARY_PATH=internal,  # as the bundle's launcher sets it
    ).stdout
    system: dict[str, str] = {}
    missing: dict[str, list[str]] = {}
    current = ""
    for line in listing.splitlines():
        if line.startswith("/") and line.endswith(":"):
            current = line[:-1].removeprefix(internal + "/")
        elif m := re.match(r"\s+(\S+) => not found", line):
            missing.setdefault(m[1], []).append(current)
        elif (m := re.match(r"\s+(\S+) => (/\S+)", line)) and not m[2].startswith(OPT_APP):
            system[m[1]] = m[2]
    return {soname: _owner(root, path) for soname, path in sorted(system.items())}, missing


def _owner(root: Path, path: str) -> str:
    """The Debian package that ships ``path`` in the root (merged /usr: tried with and without /usr)."""
    other = path.removeprefix("/usr") if path.startswith("/usr/") else "/usr" + path
    found = chroot(root, f"dpkg -S {path} {other} 2>/dev/null | head -1").stdout
    return found.split(":")[0] if found else "?"


def start_x_server() -> tuple[subprocess.Popen[bytes], str] | None:
    """An Xvfb at 1366x768 here (its socket is what the root sees), or None when there is none."""
    if not shutil.which("Xvfb"):
        return None
    for n in range(90, 100):
        if not Path(f"/tmp/.X11-unix/X{n}").exists():
            server = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1366x768x24", "-nolisten", "tcp"])
            for _ in range(100):
                if Path(f"/tmp/.X11-unix/X{n}").exists():
                    return server, f":{n}"
                time.sleep(0.05)
            server.terminate()
    return None


def root_launch_command(root: Path, display: str | None) -> list[str]:
    """The command that starts the unpacked program in the root (``launch`` adds ``--measure-startup``)."""
    platform = [f"DISPLAY={display}", "QT_QPA_PLATFORM=xcb"] if display else ["QT_QPA_PLATFORM=offscreen"]
    env = ["/usr/bin/env", "-i", "HOME=/root", f"PATH={ROOT_PATH}", "LANG=C.UTF-8", *platform]
    inner = [*env, "/bin/sh", "-c", FIRST_LAUNCH, f"{OPT_APP}/{APP}"]
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", IN_ROOT, "sh", str(root), *inner]


def check_clean_root(archive: Path, packages: list[str], launches: int) -> None:
    """Section 3 of the module's docstring; prints what it found."""
    release = debian_release()
    root = clean_root(release, packages)
    python = python_in(root)
    print(f"== clean root: Debian {release} minbase + {' '.join(packages)} (and what they depend on), in {root}")
    print(f"  Python in the root: {python.replace(chr(10), ', ') if python else 'none (checked: commands, libraries)'}")
    if python:
        raise SystemExit("the clean root has a Python: it proves nothing about the bundle")
    seconds = unpack(root, archive)
    size = size_of(root / OPT_APP.lstrip("/"))
    print(f"  unpacked in {OPT_APP} by the root's tar in {seconds:.1f} s: {size / 2**20:.0f} MiB")
    system, missing = linked_libraries(root)
    owners = sorted(set(system.values()))
    print(f"  the bundle links against {len(system)} system libraries, from: {' '.join(owners)}")
    count = chroot(root, "dpkg-query -W | wc -l").stdout.strip()
    print(f"  the root: {count} Debian packages, {(size_of(root) - size) / 2**20:.0f} MiB without the bundle")
    for soname, files in sorted(missing.items()):
        print(f"  not found: {soname}, needed by {len(files)} file(s), e.g. {files[0]}")
    _time_root_launches(root, launches)


def _time_root_launches(root: Path, launches: int) -> None:
    x = start_x_server()
    display = x[1] if x else None
    try:
        runs = [launch(root_launch_command(root, display)) for _ in range(launches)]
    finally:
        if x:
            x[0].terminate()
            x[0].wait()
    where = f"on Xvfb {display} (Qt's xcb plugin)" if display else "offscreen"
    for i, r in enumerate(runs, 1):
        shown = f"{r['map']:.1f} s" if "map" in r else "NOT SHOWN"
        print(f"  first launch {i} in the root, {where}: window {r['window']:.1f} s, first attention map {shown}")
    if runs and all("map" in r for r in runs):
        window, first_map = (statistics.median(r[k] for r in runs) for k in ("window", "map"))
        print(f"  median of {len(runs)}: window {window:.1f} s, first attention map {first_map:.1f} s")
    else:
        raise SystemExit("the bundle did not show the attention map in the clean root")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launches", type=int, default=3, help="first launches here to time (0: none)")
    ap.add_argument("--clean-launches", type=int, default=2, help="first launches in the clean root (0: no root)")
    ap.add_argument("--no-build", action="store_true", help="pack and check the build already in build/bundle")
    args = ap.parse_args()
    if not args.no_build and importlib.util.find_spec("PyInstaller") is None:
        raise SystemExit("PyInstaller is not installed: pip install pyinstaller")
    dist = BUILD / "bundle" / "dist"
    if not args.no_build:
        built = build(dist)
        print(f"== built {dist / APP} in {built / 60:.1f} min; {size_of(dist / APP) / 2**20:.0f} MiB")
    count, missing = missing_package_data(dist / APP)
    print(f"== package data in the bundle: {count - len(missing)} of the {count} files of pyproject.toml's")
    if missing:
        raise SystemExit(f"the bundle lacks package data (add it to the spec's datas): {', '.join(missing)}")
    make_archive = load_make_archive()
    t0 = time.perf_counter()
    archive = make_archive.make_tarball(dist, BUILD / "release", make_archive.project_version())
    print(f"== {archive.name}: {archive.stat().st_size / 2**20:.0f} MiB, packed in {time.perf_counter() - t0:.0f} s")
    if args.launches:
        if not os.environ.get("DISPLAY"):
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
        startup(args.launches, [str(dist / APP / APP)], "the bundle's launch here")
    if not args.clean_launches:
        return
    if os.geteuid() != 0 or not shutil.which("debootstrap"):
        print("== clean root skipped: it needs root and debootstrap (apt-get install debootstrap)")
        return
    check_clean_root(archive, list(make_archive.LINUX_PACKAGES), args.clean_launches)


if __name__ == "__main__":
    main()
