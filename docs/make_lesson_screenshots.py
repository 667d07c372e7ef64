"""Screenshots of the bundled lessons in presenter mode, and of the Lanes tab, as a class sees them.

    xvfb-run -a -s "-screen 0 1366x768x24" .venv/bin/python docs/make_lesson_screenshots.py

Opens the window on the bundled model, runs each lesson to a slide that shows what it teaches (lesson 2: the lanes
run to their end; lesson 3: its first experiment, both runs compared after 300 updates), enters presenter mode, and
saves docs/images/lesson-<n>-presenter-<W>x<H>.png; then docs/images/lanes-<W>x<H>.png, the Decoding panel beside the
Lanes tab in the default layout, a sentence stepped a few steps, the beam lane's tree under the lanes. <W>x<H> is
the screen's size. Xvfb has no window manager: the window is put on the screen (full, or its available part) as
one would.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "images"
SHOWN = {0: 4, 1: 7, 2: 2}  # lesson → the slide (0-based) shown (lesson 3: its first experiment, side by side)
EXPERIMENT_STEPS = 300  # updates of each run of lesson 3's experiment before the shot
LANES_STEPS = 4  # the lanes shot: steps of every lane


def pump(app, seconds: float, until=None) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end and not (until is not None and until()):
        app.processEvents()
        time.sleep(0.01)
    for _ in range(30):
        app.processEvents()
        time.sleep(0.01)


def settled(lanes) -> bool:
    """The lanes have the step asked for, and their beam tree is drawn."""
    return lanes.waiting is None and not lanes.tree.pending


def main() -> None:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv)
    from explorer.fonts import register_chinese_font
    from explorer.lessons import bundled_lessons
    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    register_chinese_font(app)
    screen = app.primaryScreen()
    size = f"{screen.geometry().width()}x{screen.geometry().height()}"
    tmp = Path(tempfile.mkdtemp())
    window = MainWindow(
        engine=Engine("cpu", None, wait_for_window=True),
        settings=QSettings(str(tmp / "s.ini"), QSettings.IniFormat),
        data_dir=tmp / "data",
        start_default=False,
    )
    window.show()
    window.engine.release()
    pump(app, 2)
    runner, lanes = window.lessons, window.lanes
    runner.experiment_steps = EXPERIMENT_STEPS
    experiment = window.experiment

    def compared() -> bool:  # an experiment slide: both runs compared where they paused
        shown = runner.slide is not None and runner.slide.scene.view == "experiment"
        return not shown or (experiment.compared is not None and experiment.compared.step >= EXPERIMENT_STEPS)

    for number, slide in SHOWN.items():
        runner.open(bundled_lessons()[number])
        pump(app, 20, lambda: runner.pending is None)
        for _ in range(slide):
            runner.index += 1
        runner.show_slide()
        if runner.slide is not None and runner.slide.question is not None:
            runner.next()  # the answer revealed
        window.presenter.set_on(True)
        window.setGeometry(screen.geometry())  # full screen, as a window manager makes it
        pump(app, 20, lambda: runner.pending is None and not window.decoding.waiting and settled(lanes))
        pump(app, 300, compared)
        pump(app, 3)
        window.grab().save(str(OUT / f"lesson-{number + 1}-presenter-{size}.png"))
        window.presenter.set_on(False)
        runner.close()
        pump(app, 1)
    window.setGeometry(screen.availableGeometry())  # maximised
    window.docks["decoding"].raise_()
    window.docks["lanes"].raise_()
    window.decoding.input.setText("I read a book yesterday.")
    window.decoding.start()
    pump(app, 10, lambda: not window.decoding.waiting)
    window.lanes.temperature.setValue(1.5)
    window.lanes.start()
    window.lanes.advance(LANES_STEPS)
    for _ in range(LANES_STEPS):  # the Decoding panel beside them at the same step (greedy: the first lane)
        window.decoding.press("step")
        pump(app, 10, lambda: not window.decoding.waiting)
    pump(app, 20, lambda: lanes.view is not None and settled(lanes))
    pump(app, 2)
    window.grab().save(str(OUT / f"lanes-{size}.png"))
    window.close()


if __name__ == "__main__":
    main()
