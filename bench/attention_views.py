"""Speed of the look-inside views.

    python -m bench.attention_views [--checkpoint CKPT]

1. All-heads grid: redrawing 6 layers × 8 heads of 64 × 64 attention maps
   (new data and a synchronous repaint). Goal: ≤ 50 ms.
2. Step latency: from a click on Step ▶ to the decoding and attention panels
   redrawn with that step, small preset on the CPU (a trained checkpoint if
   given, else a fresh small model on the grammar task). Goal: ≤ 100 ms.
3. Hover on a 48-token heatmap: time per mouse move, and how often the image is
   re-rendered while hovering. Goal: fluid, no re-render.
4. Beam-search stalls: the longest uninterrupted GUI-thread block (handler and
   the paint pass after it) while the decoding panel shows each step, and Run to
   end, at beam sizes 4, 8 and the spin box's maximum, with the spin box's largest
   max length, on the bundled model (the engine's work is done beforehand, so only
   the panel is timed). Goal: no stall over 50 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from explorer.answers import RunInfo
    from model.session import Session

if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def grid_redraw(app) -> None:
    from explorer.widgets.heatmap import HeatmapGrid

    grid = HeatmapGrid("grid")
    grid.resize(900, 700)
    grid.show()
    rng = np.random.default_rng(0)
    maps = [rng.dirichlet(np.ones(64), size=(6, 8, 64)).astype(np.float32) for _ in range(5)]
    times = []
    for i in range(40):
        t0 = time.perf_counter()
        grid.set_data(maps[i % 5])
        grid.view.viewport().repaint()
        app.processEvents()
        times.append(time.perf_counter() - t0)
    print(
        f"== all-heads grid, 6 layers x 8 heads at 64 x 64: median {1000 * statistics.median(times[5:]):.1f} ms, "
        f"max {1000 * max(times[5:]):.1f} ms (goal <= 50 ms)"
    )


def step_latency(app, checkpoint: str | None) -> None:
    from PySide6.QtCore import QSettings

    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    folder = Path(tempfile.mkdtemp())
    window = MainWindow(
        engine=Engine("cpu"),
        settings=QSettings(str(folder / "s.ini"), QSettings.Format.IniFormat),
        data_dir=folder,
        open_path=checkpoint,
        start_default=checkpoint is None,
    )
    if checkpoint is None:
        form = window.training.form
        form.task_combo.setCurrentIndex(form.task_combo.findData("grammar-en-zh"))
        form.preset_combo.setCurrentText("small")
        window.new_model()
    window.resize(1600, 1000)
    window.show()
    deadline = time.perf_counter() + 60
    while (
        window.training.current is None or window.training.current.preset != "small"
    ) and time.perf_counter() < deadline:
        app.processEvents()
        time.sleep(0.01)
    current = window.training.current
    if current is None or current.preset != "small":
        raise SystemExit("the small model was not ready within 60 s")
    d = window.decoding
    shown = []
    d.view_shown.connect(lambda v: shown.append(time.perf_counter()))

    def wait_for(n: int) -> None:
        while len(shown) < n:
            app.processEvents()
            time.sleep(0.0005)

    d.input.setText("Did you read two interesting books in the library yesterday?")
    latencies = []
    for mode in ("greedy", "beam"):
        d.mode.setCurrentIndex(d.mode.findData(mode))
        d.start()
        wait_for(len(shown) + 1)
        for _ in range(8):
            assert d.view is not None  # shown above
            if d.view.at_end:
                break
            n = len(shown)
            t0 = time.perf_counter()
            d.step_button.click()
            wait_for(n + 1)
            window.repaint()  # everything that changed is painted before the clock stops
            latencies.append((mode, time.perf_counter() - t0))
    for mode in ("greedy", "beam"):
        ms = [1000 * t for m, t in latencies if m == mode]
        print(
            f"== click Step to redrawn step ({mode}, {current.preset} preset, "
            f"{current.total_parameters:,} parameters): median {statistics.median(ms):.1f} ms, "
            f"max {max(ms):.1f} ms over {len(ms)} steps (goal <= 100 ms)"
        )
    window.close()


def hover(app) -> None:
    from PySide6.QtCore import QPointF

    from explorer.widgets.heatmap import Heatmap

    h = Heatmap("hover")
    h.resize(900, 800)
    h.show()
    rng = np.random.default_rng(1)
    tokens = [f"tok{i}" for i in range(48)]
    h.set_data(rng.dirichlet(np.ones(48), size=48), tokens, tokens)
    app.processEvents()
    renders = []
    original = h.image.render

    def counted_render(*args):
        renders.append(1)
        return original(*args)

    h.image.render = counted_render
    times = []
    for i in range(1000):
        p = h.image.mapToScene(QPointF((i * 0.37) % 48, (i * 0.11) % 48))
        t0 = time.perf_counter()
        h.view.scene().sigMouseMoved.emit(p)
        app.processEvents()
        times.append(time.perf_counter() - t0)
    print(
        f"== hover over a 48 x 48 heatmap: median {1000 * statistics.median(times):.3f} ms per move, "
        f"p99 {1000 * float(np.percentile(times, 99)):.3f} ms; image re-rendered {len(renders)} times in 1000 moves"
    )


def _panel_stalls(app, panel, views) -> tuple[list[float], list[float], list[float]]:
    """For each view: the longest uninterrupted GUI-thread block while it is shown (the panel's handler with
    the paint pass that follows it, then each later pass that finishes drawing), the GUI time in all, and the
    process CPU time of the longest block (what the block costs without other programs competing for cores)."""
    longest, total, cpu = [], [], []
    for view in views:
        t0, c0 = time.perf_counter(), time.process_time()
        panel.show_view(view)
        app.processEvents()  # the paint pass Qt runs next (nothing forces a second, synchronous one)
        blocks = [(time.perf_counter() - t0, time.process_time() - c0)]
        while getattr(panel.tree, "pending", False):  # a tree drawn a few columns per pass
            t1, c1 = time.perf_counter(), time.process_time()
            app.processEvents()
            blocks.append((time.perf_counter() - t1, time.process_time() - c1))
        wall, cpu_s = max(blocks)
        longest.append(wall)
        cpu.append(cpu_s)
        total.append(sum(b[0] for b in blocks))
    return longest, total, cpu


def run_info(session: Session) -> RunInfo:
    """What the engine tells the window about ``session``'s model (run 1, nothing followed)."""
    from explorer.engine_base import run_info_of

    return run_info_of(session, 1)


def beam_stalls(app, checkpoint: str | None) -> None:
    from explorer.panels.decoding import DecodingPanel
    from model.decoding.stepping import DecodeDriver
    from model.io.snapshots import DecodeSettings
    from model.session import Session
    from resources import default_model

    path = checkpoint or default_model()
    if path is None:
        raise SystemExit("no bundled model here: give --checkpoint")
    session = Session.load(path, device="cpu")
    cfg = session.model_cfg
    panel = DecodingPanel()
    panel.resize(1400, 1000)
    panel.show()
    panel.on_run(run_info(session))
    panel.mode.setCurrentIndex(panel.mode.findData("beam"))
    max_len = min(panel.max_len.maximum(), cfg.max_len)  # beyond the model's max_len the engine refuses
    sentence = "Did you read two interesting books in the library yesterday?"
    long_input = " ".join(["the teacher did not read the interesting book in the library yesterday"] * 20)
    for beam in sorted({4, 8, panel.beam_size.maximum()}):
        for text, what in ((sentence, "sample sentence"), (long_input, f"{len(long_input)}-character input")):
            driver = DecodeDriver(session)
            settings = DecodeSettings(text, beam, 0.6, max_len)
            steps = [driver.start(settings)]
            if what == "sample sentence":  # step through: one view per step
                while not steps[-1].at_end:
                    steps.append(driver.act("step"))
                stepping, _, stepping_cpu = _panel_stalls(app, panel, steps)
            ends = [driver.act("reset"), driver.act("run")]
            longest, total, cpu = _panel_stalls(app, panel, ends)
            run, run_total, run_cpu = longest[-1], total[-1], cpu[-1]
            n_nodes = sum(len(s.kept) + len(s.pruned) for s in ends[-1].steps)
            line = f"== beam {beam}, max length {max_len}, {what}: {len(ends[-1].steps)} steps, {n_nodes} nodes;"
            if what == "sample sentence":
                line += (
                    f" Step: max {1000 * max(stepping):.1f} ms (CPU {1000 * max(stepping_cpu):.1f} ms), "
                    f"median {1000 * statistics.median(stepping):.1f} ms;"
                )
            line += f" Run to end: {1000 * run:.1f} ms (CPU {1000 * run_cpu:.1f} ms; {1000 * run_total:.1f} ms in all)"
            print(f"{line} (goal: no stall over 50 ms)", flush=True)
    panel.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", help="a trained small-preset checkpoint for the step latency")
    ap.add_argument("--beam-only", action="store_true", help="only the beam-search stalls (4)")
    args = ap.parse_args()
    from PySide6.QtWidgets import QApplication

    from model.training.device import prepare_optimizers

    app = QApplication.instance() or QApplication([])
    prepare_optimizers()
    if args.beam_only:
        beam_stalls(app, args.checkpoint)
        return
    grid_redraw(app)
    hover(app)
    step_latency(app, args.checkpoint)
    beam_stalls(app, args.checkpoint)


if __name__ == "__main__":
    main()
