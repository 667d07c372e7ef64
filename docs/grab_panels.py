"""Grabs of every dock for the bundled model, a GPT, a BERT and an MoE model, to check that a change of the code
leaves what a person sees exactly as it was (offscreen, fresh settings, one sentence stepped in each).

    python docs/grab_panels.py make-models MODELS      # three small checkpoints (fixed seeds, 30 steps each)
    python docs/grab_panels.py grab MODELS OUT         # the PNGs of this tree into OUT
    python docs/grab_panels.py compare OUT_A OUT_B     # which grabs differ, and in how many pixels

To compare two commits, check the older one out in a git worktree and run ``grab`` there with
``PYTHONPATH=<worktree>`` (the same MODELS), then ``grab`` here, then ``compare``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
MODELS = (
    ("gpt", "text-grammar-en", "decoder_only", {}),
    ("bert", "text-grammar-en", "encoder_only", {}),
    ("moe", "grammar-en-zh", "encoder_decoder", {"n_experts": 4, "experts_top_k": 1}),
)


def make_models(folder: Path) -> None:
    import torch

    from model.data import DataSpec
    from model.session import Session
    from model.training.config import TrainConfig

    folder.mkdir(parents=True, exist_ok=True)
    for name, task, arch, extra in MODELS:
        torch.manual_seed(0)
        session = Session.create(
            DataSpec(task=task), preset="tiny", train=TrainConfig(seed=0), arch=arch, device="cpu", **extra
        )
        session.train_steps(30)
        session.save(folder / f"{name}.ckpt")


def grab(models: Path, out: Path) -> None:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    app.setStyle("Fusion")
    from explorer.fonts import register_chinese_font
    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    register_chinese_font(app)
    out.mkdir(parents=True, exist_ok=True)

    def pump(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            app.processEvents()
            time.sleep(0.01)

    for name in ("bundled", *(m[0] for m in MODELS)):
        path = None if name == "bundled" else str(models / f"{name}.ckpt")
        folder = Path(tempfile.mkdtemp())
        settings = QSettings(str(folder / "s.ini"), QSettings.Format.IniFormat)
        window = MainWindow(engine=Engine("cpu"), settings=settings, data_dir=folder, open_path=path)
        window.resize(1366, 768)
        window.show()
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline and window.status.state not in ("idle", "paused"):
            pump(0.1)
        pump(4)
        drive(window, name, pump)
        window.grab().save(str(out / f"{name}-window.png"))
        for key, dock in window.docks.items():
            dock.raise_()
            pump(0.6)
            dock.widget().grab().save(str(out / f"{name}-{key}.png"))
        window.close()
        pump(0.5)


def drive(window, name: str, pump) -> None:
    """Through the widgets' object names, which a change of the code keeps: a masked sentence for BERT; a
    beam search of three stepped three times for the others."""
    from PySide6.QtWidgets import QComboBox, QLineEdit, QPushButton, QSpinBox

    window.docks["decoding"].raise_()
    pump(0.5)
    if name == "bert":
        window.findChild(QLineEdit, "fill_mask_input").setText("the <mask> is red .")
        window.findChild(QPushButton, "fill_mask_button").click()
        pump(3)
        return
    window.findChild(QLineEdit, "decode_input").setText("the cat" if name == "gpt" else "I read a book yesterday.")
    mode = window.findChild(QComboBox, "decode_mode_combo")
    mode.setCurrentIndex(mode.findData("beam"))
    window.findChild(QSpinBox, "beam_size_spin").setValue(3)
    window.findChild(QPushButton, "decode_start_button").click()
    pump(3)
    for _ in range(3):
        window.findChild(QPushButton, "decode_step_button").click()
        pump(1.5)


def compare(a: Path, b: Path) -> int:
    import numpy as np
    from PySide6.QtGui import QImage

    differ = 0
    for first in sorted(a.glob("*.png")):
        second = b / first.name
        x = QImage(str(first)).convertToFormat(QImage.Format.Format_RGB32)
        y = QImage(str(second)).convertToFormat(QImage.Format.Format_RGB32) if second.exists() else QImage()
        if x.size() != y.size():
            print(f"{first.name}: sizes {x.size().toTuple()} and {y.size().toTuple()}")
            differ += 1
            continue
        pixels = (np.frombuffer(x.constBits(), np.uint8) != np.frombuffer(y.constBits(), np.uint8)).reshape(-1, 4)
        if n := int(pixels.any(axis=1).sum()):
            print(f"{first.name}: {n} pixels differ")
            differ += 1
    print("identical" if not differ else f"{differ} grabs differ")
    return differ


if __name__ == "__main__":
    sys.path.append(str(Path(__file__).resolve().parents[1]))  # after PYTHONPATH: another tree may come first
    command, *paths = sys.argv[1:]
    if command == "make-models":
        make_models(Path(paths[0]))
    elif command == "grab":
        grab(Path(paths[0]), Path(paths[1]))
    else:
        sys.exit(1 if compare(Path(paths[0]), Path(paths[1])) else 0)
