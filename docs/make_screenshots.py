"""Screenshots of the real window for the README, taken on an X display (run under Xvfb).

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python docs/make_screenshots.py [--seconds 40]
    xvfb-run -a -s "-screen 0 1366x768x24" .venv/bin/python docs/make_screenshots.py --why

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
    ap.add_argument("--checkpoint", help="a trained grammar-en-zh model for the look-inside panels")
    ap.add_argument("--sentence", default="Did you read two interesting books in the library yesterday?")
    ap.add_argument("--first-launch", action="store_true", help="only the first-launch shots (bundled model)")
    ap.add_argument(
        "--real-model",
        metavar="TAG",
        help="a Marian folder of opus-mt-en-zh's architecture and size "
        "(random weights) opened in the window at this X screen's size; TAG names the files",
    )
    ap.add_argument(
        "--classroom",
        metavar="TAG",
        help="the default layout at this X screen's size, presenter "
        "mode and the model map, after a fresh install; TAG names the files (e.g. 1366x768)",
    )
    ap.add_argument(
        "--follow",
        metavar="TAG",
        help="the window following a run that python -m model.train writes in "
        "another process (small preset, grammar, with a probe sentence); TAG names the file",
    )
    ap.add_argument(
        "--why",
        action="store_true",
        help="the Why? panel at this X screen's size (run it on 1366x768): attribution and the logit lens on the "
        "bundled model, attribution on a small random Marian folder",
    )
    args = ap.parse_args()
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from model.training.device import prepare_optimizers

    app = QApplication([])
    app.setStyle("Fusion")
    from explorer.fonts import register_chinese_font

    register_chinese_font(app)  # as the program does at launch: Chinese reads on a machine without a CJK font
    prepare_optimizers()
    from explorer.i18n import language
    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    language.set(args.lang)
    folder = Path(tempfile.mkdtemp())
    if args.first_launch:
        first_launch(app, folder)
        return
    if args.classroom:
        classroom(app, folder, args.classroom, args.sentence)
        return
    if args.real_model:
        real_model(app, folder, args.real_model)
        return
    if args.follow:
        following(app, folder, args.follow, args.seconds)
        return
    if args.why:
        why_bundled(app, folder, args.sentence)
        why_marian(app, folder)
        return
    window = MainWindow(
        engine=Engine("cpu"),
        settings=QSettings(str(folder / "s.ini"), QSettings.IniFormat),
        data_dir=folder,
        start_default=False,
    )
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
    a = window.attention
    window.docks["attention"].setFloating(True)
    window.docks["attention"].resize(1100, 900)
    a.kind.setCurrentIndex(a.kind.findData("cross"))
    a.layer.setValue(a.layer.maximum())
    a.over_training.timeline.setValue(max(0, a.over_training.timeline.maximum() // 2))
    a.tabs.setCurrentIndex(0)
    pump(app, 0.8)
    a.grab().save(str(OUT / f"panel-attention-over-training{suffix}.png"))
    a.tabs.setCurrentIndex(1)
    pump(app, 0.8)
    a.grab().save(str(OUT / f"panel-attention-entropy{suffix}.png"))
    window.docks["training"].raise_()
    window.close()
    if args.checkpoint:
        inside(app, args, folder, suffix)
    print("saved screenshots in", OUT)


def first_launch(app, folder: Path) -> None:
    """The window as it opens: the bundled model, a sample sentence and its cross-attention."""
    from PySide6.QtCore import QSettings

    from explorer.i18n import language
    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    shots = (("window-zh", "zh", "light"), ("window-dark", "en", "dark"))
    for name, lang, theme in shots:
        language.set(lang)
        settings = QSettings(str(folder / f"{name}.ini"), QSettings.IniFormat)
        settings.setValue("theme", theme)
        window = MainWindow(engine=Engine("cpu"), settings=settings, data_dir=folder / name)
        window.resize(1600, 1000)
        window.show()
        wait_for(app, lambda: window.decoding.view is not None)  # noqa: B023 — used at once
        window.grab().save(str(OUT / f"{name}.png"))
        window.close()
    language.set("en")


def wait_for(app, done, seconds: float = 30) -> None:
    deadline = time.perf_counter() + seconds
    while not done() and time.perf_counter() < deadline:
        pump(app, 0.1)
    pump(app, 1.0)


def classroom(app, folder: Path, tag: str, sentence: str) -> None:
    """What a person sees after a fresh install, in the window as it opens on this screen: the first
    launch; a beam search they typed, run to its end; the model map; presenter mode's tree and map."""
    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtTest import QTest

    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    window = MainWindow(
        engine=Engine("cpu"),
        settings=QSettings(str(folder / "c.ini"), QSettings.IniFormat),
        data_dir=folder / "classroom",
    )
    window.show()
    d = window.decoding
    wait_for(app, lambda: d.view is not None)
    window.grab().save(str(OUT / f"first-launch-{tag}.png"))
    d.mode.setCurrentIndex(d.mode.findData("beam"))
    d.input.setText(sentence)
    d.translate_button.click()
    wait_for(app, lambda: d.view is not None and d.view.settings.text == sentence and not d.waiting)
    d.run_button.click()
    wait_for(app, lambda: d.view.at_end and not d.waiting)
    window.grab().save(str(OUT / f"window-beam-{tag}.png"))
    window.docks["map"].raise_()
    pump(app, 1.0)
    window.grab().save(str(OUT / f"model-map-{tag}.png"))
    window.docks["attention"].raise_()
    d.reset_button.click()
    wait_for(app, lambda: not d.waiting and d.view.position == 0)
    window.set_presenter(True)
    for _ in range(8):
        QTest.keyClick(window, Qt.Key.Key_PageDown)
        wait_for(app, lambda: not d.waiting, 10)
    for key, name in ((Qt.Key.Key_2, "tree"), (Qt.Key.Key_3, "attention"), (Qt.Key.Key_1, "decoding")):
        QTest.keyClick(window, key)
        pump(app, 1.5)
        window.grab().save(str(OUT / f"presenter-{name}-{tag}.png"))
    window.set_presenter(False)
    window.close()


def following(app, folder: Path, tag: str, seconds: float) -> None:
    """The command-line trainer in another process (grammar, small preset, a probe every 25 steps) and the
    window following its folder, in the default layout; shot after ``seconds`` of its training."""
    import subprocess
    import sys

    from PySide6.QtCore import QSettings

    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    run = folder / "grammar-run"
    trainer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "model.cli.train",
            "--task",
            "grammar-en-zh",
            "--preset",
            "small",
            "--steps",
            "100000",
            "--eval-every",
            "100",
            "--save-every",
            "100",
            "--threads",
            "1",
            "--probe",
            "I read a book in the library yesterday.",
            "--probe-every",
            "25",
            "--out",
            str(run),
        ],
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(app, lambda: (run / "model.ckpt").exists(), 120)
        window = MainWindow(
            engine=Engine("cpu", threads=1),
            settings=QSettings(str(folder / "f.ini"), QSettings.IniFormat),
            data_dir=folder / "f",
            start_default=False,
        )
        window.show()
        window.follow_run(str(run))
        wait_for(app, lambda: window.training.current is not None, 60)
        window.docks["training"].raise_()
        pump(app, seconds)
        window.grab().save(str(OUT / f"follow-run-{tag}.png"))
        window.close()
    finally:
        trainer.terminate()
        trainer.wait()


def real_model(app, folder: Path, tag: str) -> None:
    """A Hugging Face folder of opus-mt-en-zh's architecture and size (77.5 M parameters, SentencePiece
    tokenizers trained on the HSK sentences) with random weights, drawn with a larger spread than transformers'
    initialisation so that heads and candidates differ: opened from File → Open model folder…, the model
    panel, then a beam search with the tree and a cross-attention map."""
    import torch
    from PySide6.QtCore import QSettings

    from bench.hf_open import OPUS_MT, write_marian_folder
    from explorer.main_window import MainWindow
    from explorer.worker import Engine
    from model.hf.folders import read_weights

    hf = folder / "opus-mt-en-zh"
    write_marian_folder(hf, OPUS_MT)
    weights = read_weights(hf)
    generator = torch.Generator().manual_seed(0)
    for name, value in weights.items():
        if "embed_positions" not in name:
            value.add_(torch.randn(value.shape, generator=generator) * 0.08)
    torch.save(weights, hf / "pytorch_model.bin")
    (hf / "model.safetensors").unlink()
    window = MainWindow(
        engine=Engine("cpu"),
        settings=QSettings(str(folder / "r.ini"), QSettings.IniFormat),
        data_dir=folder / "real",
        start_default=False,
    )
    window.show()
    wait_for(app, lambda: window.status.device != "")
    window.open_model_folder(str(hf))
    wait_for(app, lambda: window.model_panel.info is not None and window.model_panel.info.model_origin is not None, 120)
    window.docks["model"].raise_()
    pump(app, 1.0)
    window.grab().save(str(OUT / f"real-model-panel-{tag}.png"))
    d = window.decoding
    window.docks["decoding"].raise_()
    d.mode.setCurrentIndex(d.mode.findData("beam"))
    d.beam_size.setValue(4)
    d.max_len.setValue(10)
    d.input.setText("My cat is cute.")
    d.translate_button.click()
    wait_for(app, lambda: d.view is not None and d.view.settings.text == "My cat is cute." and not d.waiting, 60)
    window.attention.follow_cross_attention(6)
    d.run_button.click()
    wait_for(app, lambda: d.view.at_end and not d.waiting, 120)
    window.grab().save(str(OUT / f"real-model-beam-{tag}.png"))
    window.close()


def why_window(app, folder: Path, name: str):
    """A window on this screen, without the welcome bar, the Why panel in front beside the Decoding panel."""
    from PySide6.QtCore import QSettings

    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    window = MainWindow(
        engine=Engine("cpu"),
        settings=QSettings(str(folder / f"{name}.ini"), QSettings.IniFormat),
        data_dir=folder / name,
        start_default=name == "why",
    )
    window.show()
    window.docks["why"].raise_()
    return window


def why_steps(app, window, sentence: str, steps: int) -> None:
    """``sentence`` decoded greedily ``steps`` steps, the Why panel's answer to the last one on screen."""
    d, why = window.decoding, window.why
    d.mode.setCurrentIndex(d.mode.findData("greedy"))
    d.input.setText(sentence)
    d.translate_button.click()
    wait_for(app, lambda: d.view is not None and d.view.settings.text == sentence and not d.waiting, 60)
    for _ in range(steps):
        d.step_button.click()
        wait_for(app, lambda: not d.waiting, 60)
    wait_for(app, lambda: why.attribution is not None and len(why.attribution.target_tokens) == steps, 120)


def why_bundled(app, folder: Path, sentence: str) -> None:
    """The bundled model five steps into ``sentence``: the attribution matrix and the logit lens."""
    window = why_window(app, folder, "why")
    wait_for(app, lambda: window.decoding.view is not None, 60)
    window.message_bar.hide()
    why_steps(app, window, sentence, 5)
    window.grab().save(str(OUT / "why-attribution.png"))
    window.why.tabs.setCurrentIndex(1)
    pump(app, 1.0)
    window.grab().save(str(OUT / "why-logit-lens.png"))
    window.close()


def why_marian(app, folder: Path) -> None:
    """A small random opus-mt-style Marian folder (tests/hf_folders.py) opened in the window: its attribution, the
    last row against the step's second candidate."""
    from tests.hf_folders import marian_folder

    hf = marian_folder(folder, spread=0.5)
    window = why_window(app, folder, "why-marian")
    wait_for(app, lambda: window.status.device != "")
    window.open_model_folder(str(hf))
    wait_for(app, lambda: window.model_panel.info is not None and window.model_panel.info.model_origin is not None, 120)
    window.docks["decoding"].raise_()
    window.docks["why"].raise_()
    why_steps(app, window, "My cat is cute.", 4)
    why = window.why  # "why this token rather than the second candidate?"
    why.contrast.setCurrentIndex(1)
    why.refresh()
    wait_for(app, lambda: why.attribution is not None and why.attribution.contrast is not None, 120)
    window.grab().save(str(OUT / "why-marian.png"))
    why.tabs.setCurrentIndex(1)  # the logit lens at the same step
    wait_for(app, lambda: why.lens.table.rowCount() > 0, 60)
    pump(app, 1.0)
    window.grab().save(str(OUT / "why-marian-lens.png"))
    heads_marian(app, window)
    window.close()


def heads_marian(app, window) -> None:
    """The Marian folder with the first layer's cross-attention switched off, then every head's importance."""
    a = window.attention
    window.docks["attention"].raise_()
    a.kind.setCurrentIndex(a.kind.findData("cross"))  # the grid of the heads switched off
    a.heads_off.switch.setChecked(True)
    for head in range(window.engine.session.model_cfg.n_heads):
        a.heads_off.toggle("cross", 0, head)
    wait_for(app, lambda: a.heads_off.diff_label.text() != "" and not window.decoding.waiting, 120)
    pump(app, 1.0)
    window.grab().save(str(OUT / "head-ablation-marian.png"))
    page = a.heads_off.importance
    a.show_tab("importance")
    a.heads_off.all_on.click()  # every head on again while each is measured
    page.sentences.setValue(20)
    page.measure_button.click()
    wait_for(app, lambda: page.importance is not None, 300)
    pump(app, 1.0)
    window.grab().save(str(OUT / "head-importance-marian.png"))


def inside(app, args, folder: Path, suffix: str) -> None:
    """Decoding, attention and positional panels on a trained model."""
    from PySide6.QtCore import QSettings

    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    window = MainWindow(
        engine=Engine("cpu"),
        settings=QSettings(str(folder / "t.ini"), QSettings.IniFormat),
        data_dir=folder / "t",
        open_path=args.checkpoint,
    )
    window.resize(1600, 1000)
    window.show()
    pump(app, 4)
    d = window.decoding
    d.input.setText(args.sentence)
    d.mode.setCurrentIndex(d.mode.findData("beam"))
    d.beam_size.setValue(3)
    d.start()
    pump(app, 1)
    for _ in range(5):
        d.step_button.click()
        pump(app, 0.4)
    for key in ("decoding", "attention"):
        window.docks[key].setFloating(True)
        window.docks[key].resize(1100, 900)
        pump(app, 0.6)
    d.grab().save(str(OUT / f"panel-decoding-beam{suffix}.png"))
    a = window.attention
    a.kind.setCurrentIndex(a.kind.findData("cross"))
    a.layer.setValue(a.layer.maximum())
    a.average.setChecked(True)
    d.run_button.click()
    pump(app, 1.5)
    a.tabs.setCurrentIndex(0)
    pump(app, 0.5)
    a.grab().save(str(OUT / f"panel-attention-cross{suffix}.png"))
    a.explain_worked_example()
    pump(app, 1.0)
    a.grab().save(str(OUT / f"panel-attention-explainer{suffix}.png"))
    a.tabs.setCurrentIndex(0)
    a.average.setChecked(False)
    a.all_heads.setChecked(True)
    pump(app, 0.5)
    a.grab().save(str(OUT / f"panel-attention-grid{suffix}.png"))
    a.all_heads.setChecked(False)
    a.kind.setCurrentIndex(a.kind.findData("decoder_self"))
    pump(app, 0.5)
    a.grab().save(str(OUT / f"panel-attention-decoder-self{suffix}.png"))
    window.docks["positional"].setFloating(True)
    window.docks["positional"].resize(1100, 800)
    pump(app, 0.6)
    p = window.positional
    for i, name in enumerate(("curves", "matrix", "similarity", "shift")):
        p.tabs.setCurrentIndex(i)
        pump(app, 0.4)
        p.grab().save(str(OUT / f"panel-positional-{name}{suffix}.png"))
    window.close()


if __name__ == "__main__":
    main()
