"""Build the self-contained bundle with PyInstaller and check that it starts (Linux).

    pip install pyinstaller
    python -m bench.build_bundle [--launches 3]

Builds packaging/transformer-explorer.spec into build/bundle/, reports the
build time and the bundle's size, then launches the built program as a first
launch (offscreen, unless $DISPLAY is set) several times, taking turns with a bare
``python -c "import torch"``, and reports, as bench.gui_responsiveness does for
main.py, the medians to the window and to the bundled model's attention map (as
ratios to the import) and how late a 16 ms timer ran meanwhile. Too slow for CI
(minutes), so it lives here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.gui_responsiveness import startup

ROOT = Path(__file__).resolve().parents[1]


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launches", type=int, default=3, help="first launches of the built program to time")
    args = ap.parse_args()
    if shutil.which("pyinstaller") is None and not (Path(sys.executable).parent / "pyinstaller").exists():
        raise SystemExit("PyInstaller is not installed: pip install pyinstaller")
    out = ROOT / "build" / "bundle"
    t0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "PyInstaller",
            str(ROOT / "packaging" / "transformer-explorer.spec"),
            "--noconfirm",
            "--distpath",
            str(out / "dist"),
            "--workpath",
            str(out / "work"),
        ],
        check=True,
        cwd=ROOT,
    )
    built = time.perf_counter() - t0
    app = out / "dist" / "transformer-explorer"
    exe = app / "transformer-explorer"
    print(f"== built {app} in {built / 60:.1f} min; {size_of(app) / 2**20:.0f} MiB")
    if not os.environ.get("DISPLAY"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    startup(args.launches, [str(exe)], "the bundle's launch")  # as bench.gui_responsiveness times this checkout's


if __name__ == "__main__":
    main()
