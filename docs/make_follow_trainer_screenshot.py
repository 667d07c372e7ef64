"""Screenshot of the window following a Hugging Face Seq2SeqTrainer's output folder.

    xvfb-run -a -s "-screen 0 1366x768x24" .venv/bin/python docs/make_follow_trainer_screenshot.py

A tiny Marian (tests/hf_folders.marian_folder) is fine-tuned by ``transformers.Seq2SeqTrainer`` on a few
English–Chinese pairs (tests/trainer_runs.py: a checkpoint every 20 steps, save_total_limit 2, an evaluation every
4 steps), in this process, before the window starts. The window then follows the Trainer's ``output_dir`` with a
probe sentence, as ``main.py --follow OUT --probe "the cat eats fish"`` would: the curves from the newest
checkpoint's log_history, the Trainer's other numbers in Logged scalars, the probe's attention at each checkpoint.
Saves docs/images/follow-trainer-<W>x<H>.png, <W>x<H> the screen's size.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "images"
PROBE = "the cat eats fish"


def main() -> None:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv)
    from docs.make_follow_scalars_screenshot import pump
    from explorer.fonts import register_chinese_font
    from explorer.main_window import MainWindow
    from explorer.worker import Engine
    from tests.trainer_runs import seq2seq_trainer

    register_chinese_font(app)
    screen = app.primaryScreen()
    size = f"{screen.geometry().width()}x{screen.geometry().height()}"
    tmp = Path(tempfile.mkdtemp())
    out = tmp / "opus-mt-finetune"
    trainer = seq2seq_trainer(tmp / "models", out, max_steps=60, save_steps=20)
    trainer.args.eval_steps = 4
    trainer.train()
    window = MainWindow(
        engine=Engine("cpu", None, wait_for_window=True),
        settings=QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat),
        data_dir=tmp / "data",
        start_default=False,
    )
    window.show()
    window.setGeometry(screen.availableGeometry())  # maximised
    window.engine.release()
    pump(app, 2)
    window.files.follow_run(str(out), PROBE)
    pump(app, 60, lambda: window.status.step == 60 and bool(window.attention.over_training.snapshots))
    window.docks["training"].raise_()
    pump(app, 3)
    path = OUT / f"follow-trainer-{size}.png"
    window.grab().save(str(path))
    print(f"saved {path}")
    window.close()


if __name__ == "__main__":
    main()
