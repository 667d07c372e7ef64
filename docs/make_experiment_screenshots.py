"""Screenshots of an experiment run from the window, as a person sees it after a fresh install.

    xvfb-run -a -s "-screen 0 1366x768x24" .venv/bin/python docs/make_experiment_screenshots.py [STEPS]

Opens the window on the bundled model, runs "No √d_k scaling" from the Experiments menu, pauses both runs at STEPS
(default 300) and saves docs/images/experiment-1366x768.png (the Experiment panel: the prediction, the figure of
each run, their attention side by side, the same sentences' outputs) and docs/images/experiment-curves-1366x768.png
(the Training panel: both runs' curves overlaid).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "images"


def main() -> None:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv)
    from docs.make_lesson_screenshots import pump
    from explorer import commands as cmd
    from explorer.fonts import register_chinese_font
    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    register_chinese_font(app)
    tmp = Path(tempfile.mkdtemp())
    window = MainWindow(
        engine=Engine("cpu", None, wait_for_window=True),
        settings=QSettings(str(tmp / "s.ini"), QSettings.IniFormat),
        data_dir=tmp / "data",
    )
    window.show()
    window.engine.release()
    pump(app, 10, lambda: window.training.current is not None)
    window.menus.actions["experiment_no_scaling"].trigger()
    pump(app, 30, lambda: window.experiment.experiment is not None)
    window.client.send(cmd.PauseAt(step=steps))
    status = window.window_status
    pump(app, 600, lambda: status.status.state == "paused" and status.status.step >= steps)
    pump(app, 30, lambda: window.experiment.compared is not None and window.experiment.compared.step >= steps)
    panel = window.experiment
    panel.kind.setCurrentIndex(panel.kind.findData("encoder"))
    pump(app, 2)
    window.grab().save(str(OUT / "experiment-1366x768.png"))
    window.docks["training"].raise_()
    pump(app, 3)
    window.grab().save(str(OUT / "experiment-curves-1366x768.png"))
    window.close()


if __name__ == "__main__":
    main()
