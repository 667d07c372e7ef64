"""Application start: command line, QApplication, the main window."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import NoReturn

T0 = time.perf_counter()  # start-up is measured from here (the interpreter started a little earlier)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from explorer.i18n import LANGUAGES
    from model.training.device import DEVICE_CHOICES

    ap = argparse.ArgumentParser(
        prog="transformer-explorer",
        description="Train an encoder–decoder Transformer on this computer and look inside it.",
    )
    ap.add_argument(
        "checkpoint",
        nargs="?",
        metavar="CKPT_OR_DIR",
        help="a checkpoint (.ckpt) to open, or a Hugging Face model folder (a Marian opus-mt "
        "translator, GPT-2 or BERT, as huggingface-cli download NAME --local-dir DIR fetches it)",
    )
    ap.add_argument(
        "--open",
        dest="open_path",
        metavar="CKPT_OR_DIR",
        help="a checkpoint or model folder to open (same as the argument)",
    )
    ap.add_argument(
        "--device",
        choices=DEVICE_CHOICES,
        default="auto",
        help="where the model runs: auto (GPU if there is one), cpu, cuda, mps",
    )
    ap.add_argument("--lang", choices=sorted(LANGUAGES), help="interface language: en (English) or zh (简体中文)")
    ap.add_argument("--threads", type=int, help="CPU threads for training (default: the cores others leave free)")
    ap.add_argument(
        "--install-desktop-entry",
        action="store_true",
        help="add Transformer Explorer to this user's application menu (Linux), with its icon, "
        "and let checkpoints open by double-click; then exit",
    )
    ap.add_argument("--new", action="store_true", help="start with a fresh model instead of the bundled one")
    ap.add_argument(
        "--follow",
        metavar="DIR",
        help="follow a training run that another process writes into DIR: this project's (python -m model.train … "
        "--out DIR), a Hugging Face Trainer's output_dir, TensorBoard event files, or a loop's model.follow.RunWriter: "
        "its curves, its newest checkpoint, its probe snapshots",
    )
    ap.add_argument(
        "--probe",
        metavar="TEXT",
        default="",
        help="with --follow: the sentence whose attention is computed at each checkpoint of a run that writes no "
        "probe snapshots of its own (a Trainer's; default: the sentence in the Decoding panel)",
    )
    ap.add_argument("--measure-startup", action="store_true", help=argparse.SUPPRESS)  # start-up measurement
    return ap.parse_args(argv)


def _file_open_forwarder():
    from PySide6.QtCore import QEvent, QObject

    from explorer.main_window import is_model_path

    class Forwarder(QObject):
        """macOS delivers a double-clicked or dock-dropped document as a FileOpen event, not an argument."""

        def __init__(self, window):
            super().__init__(window)
            self.window = window

        def eventFilter(self, obj, event):  # noqa: N802
            if event.type() == QEvent.Type.FileOpen and is_model_path(event.file()):
                self.window.open_checkpoint(event.file())
                return True
            return False

    return Forwarder


def FileOpenForwarder(window):  # noqa: N802 — built lazily so that --help needs no Qt
    return _file_open_forwarder()(window)


def import_window():
    """Import the window and the engine (most of the launch: torch, pyqtgraph) and take what the imports
    made, which lives as long as the program, out of the garbage collector's walks (see
    :func:`model.training.device.without_collector_pauses`)."""
    from model.training.device import without_collector_pauses

    with without_collector_pauses():
        from explorer.i18n import language
        from explorer.main_window import MainWindow
        from explorer.worker import Engine
    return language, MainWindow, Engine


def _measure_startup(app, window) -> None:
    """Print when the window and the first attention map were shown, then how late a 16 ms timer on
    the window's thread ran: until the map, while the first answers are drawn, and then until the
    engine, idle, has loaded what training will need (the work moved off the launch path)."""
    from PySide6.QtCore import Qt, QTimer

    from explorer.worker import QUIET_S
    from model.training.device import optimizers_prepared

    app.processEvents()
    print(f"window shown after {time.perf_counter() - T0:.2f} s", flush=True)
    stamps: list[float] = []
    probe = QTimer(window, timerType=Qt.TimerType.PreciseTimer, interval=16)
    probe.timeout.connect(lambda: stamps.append(time.perf_counter()))
    probe.start()
    shown = {}

    def on_map(source: str) -> None:
        if source == "decoding" and window.attention.heatmap.values.size and "map" not in shown:
            shown["map"] = time.perf_counter()
            print(f"attention map shown after {shown['map'] - T0:.2f} s", flush=True)

    def check() -> None:
        prepared = optimizers_prepared()
        if prepared and "prepared" not in shown:
            shown["prepared"] = time.perf_counter()
        if "prepared" in shown and time.perf_counter() - shown["prepared"] > 0.5 or time.perf_counter() - T0 > 30:
            after = shown.get("map", T0)
            ticks = [(a, (b - a - 0.016) * 1000) for a, b in zip(stamps, stamps[1:])]
            loading = [ms for a, ms in ticks if a < after]
            print(
                f"timer lateness from the window until the map (the engine loads PyTorch and the model): "
                f"max {max(loading, default=0):.0f} ms over {len(loading)} ticks",
                flush=True,
            )
            # the engine's deferred work (describing the corpus, preparing training) begins once it has had
            # no command for QUIET_S, which is after the first answers have been drawn
            answers = [ms for a, ms in ticks if after <= a < after + QUIET_S]
            print(
                f"timer lateness while the first answers are drawn ({QUIET_S} s after the map): "
                f"max {max(answers, default=0):.0f} ms over {len(answers)} ticks",
                flush=True,
            )
            late = [ms for a, ms in ticks if a >= after + QUIET_S]
            print(
                f"timer lateness from then until idle: max {max(late, default=0):.0f} ms over {len(late)} "
                f"ticks; training prepared: {'yes' if prepared else 'no'}",
                flush=True,
            )
            window.close()
        else:
            QTimer.singleShot(100, check)

    window.attention.map_drawn.connect(on_map)
    check()


def main(argv: list[str] | None = None) -> int:
    """Run the application; once its window has closed the process ends here (see :func:`_leave`)."""
    args = parse_args(argv)
    if args.install_desktop_entry:
        from explorer.desktop import install_desktop_entry

        for path in install_desktop_entry():
            print(f"wrote {path}")
        print("Transformer Explorer is now in your application menu; .ckpt files open with it.")
        return 0
    from explorer.system_check import qt_problem

    problem = qt_problem()  # else Qt aborts with a core dump (or PySide6 fails to import), naming the wrong library
    if problem:
        print(problem, file=sys.stderr)
        return 1
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from explorer.fonts import register_chinese_font

    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)  # nothing here makes a bare QCoreApplication
    register_chinese_font(app)  # only where no installed font has Chinese glyphs
    app.setOrganizationName("transformer-explorer")
    app.setApplicationName("Transformer Explorer")
    app.setStyle("Fusion")
    language, MainWindow, Engine = import_window()  # noqa: N806

    settings = QSettings()
    if args.lang:
        settings.setValue("language", args.lang)  # remembered, like a choice in View → Language
    lang = settings.value("language", "en")
    language.set(lang if lang in ("en", "zh") else "en")
    window = MainWindow(
        engine=Engine(args.device, args.threads, wait_for_window=True),
        settings=settings,
        open_path=args.open_path or args.checkpoint,
        start_default=not (args.new or args.follow),
        follow_path=args.follow,
        follow_probe=args.probe,
    )
    opener = FileOpenForwarder(window)
    app.installEventFilter(opener)
    window.show()
    app.processEvents()  # the first paint, before the engine thread starts importing PyTorch
    if not window.isVisible():  # closed during that first paint: the event loop would wait for no window
        settings.sync()
        _leave(0)
    window.engine.release()
    if args.measure_startup:  # for bench/gui_responsiveness: launch → window → first attention map → idle
        _measure_startup(app, window)
    code = app.exec()
    settings.sync()
    _leave(code)


def _leave(code: int) -> NoReturn:
    """End the process here, without the interpreter's teardown.

    By now the window has closed: the engine thread was joined, unsaved work autosaved, the settings
    written. What the interpreter's teardown would still do is destroy the native objects of Qt,
    pyqtgraph and torch in an order none of them controls — the window's widgets, pyqtgraph's exit
    hook walking every object for orphaned scene items, torch's thread pools — and that crashed about
    once in a hundred launches, in native code after ``main()`` had returned (``bench/exit_crashes.py``
    counts them). Nothing is left that needs it: the output is flushed and the process ends."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
