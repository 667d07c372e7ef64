"""Screenshot of the Training panel following a run whose loop logs scalars of its own, beside the metrics the
training plots draw.

    xvfb-run -a -s "-screen 0 1366x768x24" .venv/bin/python docs/make_follow_scalars_screenshot.py

A tiny real loop — the tiny preset learning grammar-en-zh for 300 updates, evaluated every 25 — writes its run folder
as ``python -m model.train`` does (``metrics.jsonl``, ``model.ckpt``). At each evaluation it also scores 40 valid
sentences with chrF and chrF++ (sacrebleu) and their length against the references: numbers an engineer's loop logs
under tags of its own (``eval/chrF``, ``eval/chrF++``, ``eval/length_ratio``, ``train/epoch``), which no training
plot draws; they go into the log as a line of their own, as a RunWriter loop's ``w.log(step, **numbers)`` writes them.
The window follows the folder and reads them from the log like every other line. The tag filter then picks the chrF
family (type chrF, Enter). Saves
docs/images/follow-scalars-<W>x<H>.png, <W>x<H> the screen's size.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "images"

from docs.make_lesson_screenshots import pump  # noqa: E402

STEPS, EVAL_EVERY, SCORED = 300, 25, 40  # updates, updates between evaluations, valid sentences scored with chrF


def train(run: Path) -> dict[str, tuple[list[int], list[float]]]:
    """The loop: the run folder written as the command-line trainer writes it; → its own scalars, per tag."""
    import sacrebleu

    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.io.follow import ending_note
    from model.session import Session
    from model.training.trainer import train_config_for

    config = train_config_for("tiny", eval_every=EVAL_EVERY, eval_sentences=100, warmup_steps=100)
    session = Session.create(DataSpec(task="grammar-en-zh"), "tiny", config, TokenizerSpec("word"), device="cpu")
    valid = session.corpus.split("valid")[:SCORED]
    chrf, chrf_pp = sacrebleu.metrics.CHRF(), sacrebleu.metrics.CHRF(word_order=2)
    tags: dict[str, tuple[list[int], list[float]]] = {
        t: ([], []) for t in ("train/epoch", "eval/chrF", "eval/chrF++", "eval/length_ratio")
    }
    run.mkdir(parents=True)
    with open(run / "metrics.jsonl", "w", encoding="utf-8") as log:
        while session.step < STEPS:
            for done in session.train_steps(EVAL_EVERY):
                record = {k: v for k, v in done.to_dict().items() if k not in ("aux_loss", "expert_load")}
                log.write(json.dumps(record) + "\n")
                if done.evaluation is not None:
                    log.write(json.dumps(done.evaluation) + "\n")
            hypotheses = [session.translate(source, with_reference=False).text for source, _ in valid]
            references = [[target for _, target in valid]]
            length = sum(map(len, hypotheses)) / max(1, sum(len(t) for _, t in valid))
            epoch = session.step * config.batch_size / session.corpus.n_train
            for tag, value in zip(
                tags,
                (
                    epoch,
                    chrf.corpus_score(hypotheses, references).score,
                    chrf_pp.corpus_score(hypotheses, references).score,
                    length,
                ),
            ):
                tags[tag][0].append(session.step)
                tags[tag][1].append(float(value))
            log.write(json.dumps({"step": session.step, **{t: v[1][-1] for t, v in tags.items()}}) + "\n")
            print(f"step {session.step}: " + ", ".join(f"{t} {v[1][-1]:.3g}" for t, v in tags.items()), flush=True)
    session.notes["ended"] = ending_note(session.step, 0)
    session.save(run / "model.ckpt")
    return tags


def fresh_window(before: Callable[[Path], object] = lambda tmp: None):
    """The application as a fresh install starts it, maximised on this screen, with no model; ``before(tmp)`` runs
    first (a run to follow written into the temporary folder). → (app, window, "WxH", tmp)."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv)
    from explorer.fonts import register_chinese_font
    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    register_chinese_font(app)
    screen = app.primaryScreen()
    size = f"{screen.geometry().width()}x{screen.geometry().height()}"
    tmp = Path(tempfile.mkdtemp())
    before(tmp)
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
    return app, window, size, tmp


def main() -> None:
    app, window, size, tmp = fresh_window(lambda tmp: train(tmp / "grammar-run"))
    run = tmp / "grammar-run"
    window.follow_run(str(run))
    pump(app, 60, lambda: window.training.current is not None)
    window.docks["training"].raise_()
    pump(app, 3)
    pump(app, 10, lambda: window.training.scalars_plot.has_points)
    chooser = window.training.scalars_plot.chooser
    chooser.filter.setText("chrF")
    chooser.filter.returnPressed.emit()
    chooser.filter.clear()  # every tag listed again, the chrF family drawn
    pump(app, 3)
    path = OUT / f"follow-scalars-{size}.png"
    window.grab().save(str(path))
    print(f"saved {path}")
    window.close()
    window.engine.wait()  # the engine thread ends before Qt's objects go
    app.processEvents()


if __name__ == "__main__":
    main()
