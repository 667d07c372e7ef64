"""Application start: command line, QApplication, one-time warm-up, the main window."""

from __future__ import annotations

import argparse
import sys
import time

T0 = time.perf_counter()  # start-up is measured from here (the interpreter started a little earlier)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from explorer.i18n import LANGUAGES
    from model.device import DEVICE_CHOICES

    ap = argparse.ArgumentParser(
        prog="transformer-explorer",
        description="Train an encoder–decoder Transformer on this computer and look inside it.",
    )
    ap.add_argument("checkpoint", nargs="?", help="a checkpoint (.ckpt) to open")
    ap.add_argument("--open", dest="open_path", metavar="CKPT", help="a checkpoint to open (same as the argument)")
    ap.add_argument("--device", choices=DEVICE_CHOICES, default="auto",
                    help="where the model runs: auto (GPU if there is one), cpu, cuda, mps")  # fmt: skip
    ap.add_argument("--lang", choices=sorted(LANGUAGES), help="interface language: en (English) or zh (简体中文)")
    ap.add_argument("--threads", type=int, help="CPU threads for training (default: all cores)")
    ap.add_argument("--install-desktop-entry", action="store_true",
                    help="add Transformer Explorer to this user's application menu (Linux), with its icon, "
                         "and let checkpoints open by double-click; then exit")  # fmt: skip
    ap.add_argument("--new", action="store_true", help="start with a fresh model instead of the bundled one")
    ap.add_argument("--measure-startup", action="store_true", help=argparse.SUPPRESS)  # start-up measurement
    return ap.parse_args(argv)


def _file_open_forwarder():
    from PySide6.QtCore import QEvent, QObject

    class Forwarder(QObject):
        """macOS delivers a double-clicked or dock-dropped document as a FileOpen event, not an argument."""

        def __init__(self, window):
            super().__init__(window)
            self.window = window

        def eventFilter(self, obj, event):  # noqa: N802
            if event.type() == QEvent.FileOpen and event.file().lower().endswith(".ckpt"):
                self.window.open_checkpoint(event.file())
                return True
            return False

    return Forwarder


def FileOpenForwarder(window):  # noqa: N802 — built lazily so that --help needs no Qt
    return _file_open_forwarder()(window)


def warm_up() -> None:
    """Slow one-time work, done before the window shows: the first optimizer construction
    imports torch._dynamo (about a second); done later on the engine thread it froze the GUI."""
    import torch

    torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.install_desktop_entry:
        from explorer.desktop import install_desktop_entry

        for path in install_desktop_entry():
            print(f"wrote {path}")
        print("Transformer Explorer is now in your application menu; .ckpt files open with it.")
        return 0
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("transformer-explorer")
    app.setApplicationName("Transformer Explorer")
    app.setStyle("Fusion")
    warm_up()
    from explorer.i18n import language
    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    settings = QSettings()
    if args.lang:
        settings.setValue("language", args.lang)  # remembered, like a choice in View → Language
    lang = settings.value("language", "en")
    language.set(lang if lang in ("en", "zh") else "en")
    window = MainWindow(engine=Engine(args.device, args.threads), settings=settings,
                        open_path=args.open_path or args.checkpoint, start_default=not args.new)  # fmt: skip
    opener = FileOpenForwarder(window)
    app.installEventFilter(opener)
    window.show()
    if args.measure_startup:  # for bench/gui_responsiveness: launch → window → first attention map
        app.processEvents()
        print(f"window shown after {time.perf_counter() - T0:.2f} s", flush=True)

        def on_map(source: str) -> None:
            if source == "decoding" and window.attention.heatmap.values.size:
                window.attention.map_drawn.disconnect(on_map)
                print(f"attention map shown after {time.perf_counter() - T0:.2f} s", flush=True)
                QTimer.singleShot(0, window.close)

        window.attention.map_drawn.connect(on_map)
        QTimer.singleShot(30000, window.close)  # give up after 30 s
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
