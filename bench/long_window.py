"""A 512-token text in the whole window (``python -m bench.long_sequences --window``).

A GPT-2 folder of GPT-2 small's 12 layers × 12 heads (``--width`` its d_model: narrow by default, so that the
engine's share stays small next to the window's; 768 is GPT-2 small's own) is made here with the tests' builder
(:func:`tests.hf_folders.gpt2_folder`, which needs ``transformers``), opened in the application's MainWindow with
its engine thread at 1366 × 768, and a 512-token prompt typed into the Decoding panel. Timed as a person meets it:

- Generate: the prompt read by the engine (one decoder call a token, recording each) until the Attention panel has
  drawn its 512 × 512 map; a Step likewise. The engine's seconds, no goal; the window's timer meanwhile.
- switching the head and the layer (the spin boxes): the panel's redraw, synchronous. Goal ≤ 100 ms.
- the all-heads grid (the check box): on the window's thread (goal ≤ 100 ms), and until drawn.
- hover over the map: one mouse move. Goal ≤ 16 ms.
- zoom: one notch of the wheel, the map and the labels of the cells in view redrawn. Goal ≤ 100 ms.
- the window's 16 ms timer while a person scrolls through the heads (one every 50 ms, each painted by the event
  loop as it comes). Goal p99 ≤ 10 ms.
- the Why? panel (raised over the Attention panel, as a person opens its tab): integrated gradients, gradient ×
  input and attention rollout of the step's token over the 512-token prompt, and the logit lens: the engine's
  seconds, the map's redraw, hover, and the timer while the engine computes (goal p99 ≤ 10 ms).

The window's timer is a 16 ms precise QTimer whose lateness is read per phase (p99 and max).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LAYERS, HEADS = 12, 12


class Lateness:
    """A 16 ms timer on the window's thread; how late each tick came, read per phase."""

    def __init__(self) -> None:
        from PySide6.QtCore import Qt, QTimer

        self.stamps: list[float] = []
        self.timer = QTimer(timerType=Qt.TimerType.PreciseTimer, interval=16)
        self.timer.timeout.connect(lambda: self.stamps.append(time.perf_counter()))
        self.timer.start()

    def since(self, start: float) -> tuple[float, float]:
        """p99 and max lateness (ms) of the ticks after ``start`` (perf_counter seconds)."""
        s = np.array([t for t in self.stamps if t >= start])
        if len(s) < 2:
            return float("nan"), float("nan")
        late = np.maximum(0.0, np.diff(s) - 0.016) * 1e3
        return float(np.percentile(late, 99)), float(late.max())


def pump(app, seconds: float, until: Callable[[], bool] = lambda: False) -> bool:
    """Run the window's events until ``until()`` or ``seconds`` passed; → whether ``until()`` came true."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        if until():
            return True
        app.processEvents()
        time.sleep(0.001)
    return until()


def long_prompt(folder: Path, tokens: int) -> str:
    """Teaching-grammar sentences, as many as make ``tokens - 1`` tokens of the folder's tokenizer (its
    ``<|endoftext|>`` starts the text: ``tokens`` positions)."""
    from tokenizers import Tokenizer

    from tests.hf_folders import grammar_lines

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    words = " ".join(grammar_lines("en", 600)).split()
    n = next(i for i in range(len(words)) if len(tok.encode(" ".join(words[:i])).ids) >= tokens - 1)
    return " ".join(words[:n])


def open_window(folder: Path):
    """The application's window at 1366 × 768 with its engine thread, the folder opened; → (app, window)."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv)
    from explorer.main_window import MainWindow
    from explorer.worker import Engine

    tmp = Path(tempfile.mkdtemp())
    window = MainWindow(
        engine=Engine("cpu", None, wait_for_window=True),
        settings=QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat),
        data_dir=tmp / "data",
        open_path=str(folder),
        start_default=False,
    )
    window.resize(1366, 768)
    window.show()
    window.engine.release()
    d = window.decoding
    if not pump(app, 300, lambda: d.info is not None and d.info.model_origin is not None):
        raise SystemExit("the folder did not open in 300 s")
    pump(app, 2)  # the first screen's own requests
    return app, window


def _timed(fn: Callable[[], None], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


Row = tuple[str, float, float | None, str]  # what, value, goal (None: reported only), unit


def decoding_rows(app, window, timer: Lateness, text: str) -> list[Row]:
    """Generate with the prompt, then a Step: seconds until the Attention panel drew the map, and the timer."""
    d, a = window.decoding, window.attention
    drawn = lambda n: a.heatmap.values.shape[0] >= n and a.heatmap.isVisible()  # noqa: E731
    rows: list[Row] = []
    d.input.setText(text)
    start = time.perf_counter()
    d.translate_button.click()
    if not pump(
        app, 900, lambda: d.view is not None and not d.waiting and drawn(d.view.inspection.decoder_self.shape[-1])
    ):
        raise SystemExit("the prompt's map was not drawn in 900 s")
    a.heatmap.view.viewport().repaint()
    tokens = a.heatmap.values.shape[0]
    rows.append((f"Generate: the {tokens}-token prompt read and its map drawn", time.perf_counter() - start, None, "s"))
    p99, worst = timer.since(start)
    rows += [("  window's timer meanwhile, p99", p99, 10, "ms"), ("  (max)", worst, None, "ms")]
    start = time.perf_counter()
    d.step_button.click()
    if not pump(app, 300, lambda: not d.waiting and d.view.position == 1 and drawn(tokens + 1)):
        raise SystemExit("the step's map was not drawn in 300 s")
    a.heatmap.view.viewport().repaint()
    rows.append(("Step: the next token and its map drawn", time.perf_counter() - start, None, "s"))
    p99, worst = timer.since(start)
    rows += [("  window's timer meanwhile, p99", p99, 10, "ms"), ("  (max)", worst, None, "ms")]
    return rows


def attention_rows(app, window, timer: Lateness, repeats: int) -> list[Row]:
    """Heads and layers switched, the grid, hover and the timer while scrolling heads, in the Attention panel."""
    from PySide6.QtCore import QPointF

    a = window.attention
    counter = iter(range(10**9))

    def redraw(spin, n: int) -> Callable[[], None]:
        def step() -> None:
            spin.setValue(next(counter) % n + 1)
            a.heatmap.view.viewport().repaint()  # the scene itself, drawn now

        return step

    heads = _timed(redraw(a.head, HEADS), repeats)
    layers = _timed(redraw(a.layer, LAYERS), repeats)
    start = time.perf_counter()
    a.all_heads.setChecked(True)
    a.grid.view.viewport().repaint()
    on_thread = time.perf_counter() - start
    pump(app, 60, lambda: not a.grid.pending)
    a.grid.view.viewport().repaint()
    grid_drawn = time.perf_counter() - start
    a.all_heads.setChecked(False)
    pump(app, 0.5)
    scene, rect = a.heatmap.view.scene(), a.heatmap.plot.sceneBoundingRect()
    rng = np.random.default_rng(0)

    def hover() -> None:
        x, y = rng.random(2)
        scene.sigMouseMoved.emit(QPointF(rect.left() + rect.width() * x, rect.top() + rect.height() * y))

    hovers = _timed(hover, 200)
    zooms = _timed(wheel_zoom(a.heatmap), 16)
    a.heatmap.show_whole()
    # scrolling: each new head painted by the event loop as the spin box changes it (no repaint forced: that painted
    # every head twice)
    scrolling = scroll_heads(app, timer, lambda: a.head.setValue(next(counter) % HEADS + 1))
    ms = 1e3
    return [
        ("switching the head: the map redrawn, median", ms * statistics.median(heads), 100, "ms"),
        ("switching the layer: the map redrawn, median", ms * statistics.median(layers), 100, "ms"),
        ("all-heads grid: on the window's thread", ms * on_thread, 100, "ms"),
        ("all-heads grid: until drawn (brought down on a thread)", ms * grid_drawn, None, "ms"),
        ("hover over the map, one mouse move, p99", ms * float(np.percentile(hovers, 99)), 16, "ms"),
        ("zoom: one wheel notch, the map and its labels redrawn, median", ms * statistics.median(zooms), 100, "ms"),
        ("window's timer while scrolling through heads, p99", scrolling[0], 10, "ms"),
        ("  (max)", scrolling[1], None, "ms"),
    ]


def wheel_zoom(heatmap) -> Callable[[], None]:
    """One notch of the wheel over the map's middle, in for eight notches then out, and a synchronous repaint."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    viewport, notches = heatmap.view.viewport(), iter(range(10**9))
    centre = QPointF(viewport.width() / 2, viewport.height() / 2)

    def notch() -> None:
        sign = 1 if next(notches) % 16 < 8 else -1
        event = QWheelEvent(
            centre, QPointF(viewport.mapToGlobal(centre.toPoint())), QPoint(), QPoint(0, 120 * sign),
            Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False,
        )  # fmt: skip
        QApplication.sendEvent(viewport, event)
        viewport.repaint()

    return notch


def scroll_heads(app, timer: Lateness, next_head: Callable[[], None], seconds: float = 4.0) -> tuple[float, float]:
    """A new head every 50 ms for ``seconds``, as when a person scrolls the spin box: the timer's p99 and max."""
    from PySide6.QtCore import QTimer

    scroller = QTimer(interval=50)
    scroller.timeout.connect(next_head)
    start = time.perf_counter()
    scroller.start()
    pump(app, seconds)
    scroller.stop()
    return timer.since(start)


def why_rows(app, window, timer: Lateness, ig_steps: int) -> list[Row]:
    """The Why? panel raised (it asks for the lens and the attribution of the step shown), then each attribution
    method: the engine's seconds until drawn, the timer meanwhile, the map's redraw."""
    from explorer.panels.interpret_state import WhyView

    why, lens_answered = window.why, []
    window.engine.lens_ready.connect(lambda _: lens_answered.append(time.perf_counter()))
    rows: list[Row] = []
    start = time.perf_counter()
    why.show_view(WhyView("attribution", "integrated_gradients", ig_steps, None, True))
    window.docks["why"].raise_()  # on screen: it asks
    methods = (("integrated gradients", "integrated_gradients"), ("gradient × input", "gradient_x_input"))
    for name, method in (*methods, ("attention rollout", "attention_rollout")):
        why.show_view(WhyView("attribution", method, ig_steps, None, True))
        if not pump(app, 3600, lambda m=method: why.attribution is not None and why.attribution.method == m):  # type: ignore[misc]
            raise SystemExit(f"no {name} in an hour")
        why.map.view.viewport().repaint()
        steps = f" ({ig_steps} steps)" if method == "integrated_gradients" else ""
        rows.append((f"Why?: {name}{steps} computed and drawn", time.perf_counter() - start, None, "s"))
        p99, worst = timer.since(start)
        rows += [("  window's timer meanwhile, p99", p99, 10, "ms"), ("  (max)", worst, None, "ms")]
        if lens_answered and len(rows) == 3:
            rows.append(("Why?: the logit lens (asked first) answered", lens_answered[0] - start, None, "s"))
        start = time.perf_counter()
    a = why.attribution

    def redraw_map() -> None:
        why.map.draw(a, a.scores.shape[0] - 1)
        why.map.view.viewport().repaint()

    redraw = _timed(redraw_map, 5)
    size = f"{a.scores.shape[0]} x {a.scores.shape[1] + 1 + a.prefix_scores.shape[1]}"
    rows.append((f"attribution map ({size}) redrawn, median", 1e3 * statistics.median(redraw), 100, "ms"))
    return rows


def run_window(tokens: int, width: int, ig_steps: int) -> int:
    sys.path.insert(0, str(ROOT))  # tests.hf_folders
    from tests.hf_folders import gpt2_folder

    t0 = time.perf_counter()
    folder = gpt2_folder(Path(tempfile.mkdtemp()), "gpt2-12x12", shape=(LAYERS, HEADS, width, max(1024, tokens + 64)))
    print(
        f"A GPT-2 folder of {LAYERS} layers x {HEADS} heads, d_model {width}, made in {time.perf_counter() - t0:.0f} s"
    )
    text = long_prompt(folder, tokens)
    app, window = open_window(folder)
    timer = Lateness()
    rows = decoding_rows(app, window, timer, text)
    rows += attention_rows(app, window, timer, 15)
    rows += why_rows(app, window, timer, ig_steps)
    size = window.size()
    print(f"{tokens}-token prompt in the window ({size.width()} x {size.height()}, {app.platformName()} platform)")
    for what, value, goal, unit in rows:
        shown = f"{value:.1f} {unit}" if unit == "ms" else f"{value:.2f} {unit}"
        verdict = "" if goal is None else f" (goal <= {goal} {unit}): {'holds' if value <= goal else 'FAILS'}"
        print(f"  {what}: {shown}{verdict}")
    window.close()
    return 0
