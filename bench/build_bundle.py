"""Build the self-contained bundle with PyInstaller and check that it starts (Linux).

    pip install pyinstaller
    python -m bench.build_bundle

Builds packaging/transformer-explorer.spec into build/bundle/, reports the
build time and the bundle's size, then launches the built program as a first
launch (offscreen, unless $DISPLAY is set) and times it to the window and to the
bundled model's attention map. Too slow for CI (minutes), so it lives here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.gui_responsiveness import launch_times

ROOT = Path(__file__).resolve().parents[1]


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
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
    times = launch_times(3, [str(exe)])
    print(
        "== the bundle, first launch: window shown after "
        + ", ".join(f"{w:.2f}" for w, _ in times)
        + " s; attention map after "
        + ", ".join(f"{m:.2f}" for _, m in times)
        + " s"
    )


if __name__ == "__main__":
    main()
