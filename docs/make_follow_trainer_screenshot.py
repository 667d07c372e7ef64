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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "images"
PROBE = "the cat eats fish"


def run_trainer(tmp: Path) -> None:
    from tests.trainer_runs import seq2seq_trainer

    trainer = seq2seq_trainer(tmp / "models", tmp / "opus-mt-finetune", max_steps=60, save_steps=20)
    trainer.args.eval_steps = 4
    trainer.train()


def main() -> None:
    from docs.make_follow_scalars_screenshot import fresh_window, pump

    app, window, size, tmp = fresh_window(run_trainer)
    out = tmp / "opus-mt-finetune"
    window.files.follow_run(str(out), PROBE)
    pump(app, 60, lambda: window.status.step == 60 and bool(window.attention.over_training.snapshots))
    window.docks["training"].raise_()
    pump(app, 3)
    path = OUT / f"follow-trainer-{size}.png"
    window.grab().save(str(path))
    print(f"saved {path}")
    window.close()
    window.engine.wait()  # the engine thread ends before Qt's objects go
    app.processEvents()


if __name__ == "__main__":
    main()
