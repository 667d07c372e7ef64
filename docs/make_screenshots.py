"""Screenshots of the real window for the README, taken on an X display (run under Xvfb).

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python docs/make_screenshots.py [--seconds 40]

Opens the window, trains the small preset on the English→Chinese grammar for a
while (so the curves are real), and saves PNGs of the window and of each panel
into docs/images/.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "images"


def pump(app, seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.01)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=40, help="how long to train before the shots")
    ap.add_argument("--lang", default="en")
    args = ap.parse_args()
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from explorer.app import warm_up

    app = QApplication([])
    app.setStyle("Fusion")
    warm_up()
    from explorer.i18n import language
    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    language.set(args.lang)
    folder = Path(tempfile.mkdtemp())
    window = MainWindow(engine=Engine("cpu"), settings=QSettings(str(folder / "s.ini"), QSettings.IniFormat),
                        data_dir=folder, start_default=False)  # fmt: skip
    window.resize(1600, 1000)
    window.show()
    form = window.training.form
    form.task_combo.setCurrentIndex(form.task_combo.findData("grammar-en-zh"))
    form.preset_combo.setCurrentText("small")
    form.eval_every.setValue(100)
    window.training.start_button.click()
    pump(app, args.seconds)
    OUT.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.lang == "en" else f"-{args.lang}"
    window.grab().save(str(OUT / f"window-training{suffix}.png"))
    window.training.grab().save(str(OUT / f"panel-training{suffix}.png"))
    for key in ("model", "data"):
        window.docks[key].raise_()
        pump(app, 0.5)
        window.panels[key].grab().save(str(OUT / f"panel-{key}{suffix}.png"))
    window.docks["training"].raise_()
    window.close()
    print("saved screenshots in", OUT)


if __name__ == "__main__":
    main()
