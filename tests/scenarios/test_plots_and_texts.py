"""What the plots and maps show after a theme switch, a decoding step and a new model, and the words around
them: axes that stay readable in either theme, the outlined row that chose the decoding step's token, and
captions per kind of attention. (1. The training plots after a second run, legends and views of the ticked
runs only: tests/test_training_panel.py.)"""

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtGui import QColor  # noqa: E402

from tests.test_training_panel import evaluations_batch, steps_batch  # noqa: E402


# -- 2. the dark theme -------------------------------------------------------------------------------------------
def _axis_pixels(heatmap):
    """The left axis's strip of the rendered map, as lightness values [rows, cols]."""
    image = heatmap.grab().toImage()
    axis = heatmap.plot.getAxis("left")
    rect = axis.mapRectToScene(axis.boundingRect())
    top_left = heatmap.view.mapTo(heatmap, heatmap.view.mapFromScene(rect.topLeft()))
    x0, y0 = max(0, top_left.x()), max(0, top_left.y())
    w, h = int(rect.width()), int(rect.height())
    return np.array(
        [
            [QColor(image.pixel(x, y)).lightness() for x in range(x0, x0 + w)]
            for y in range(y0, min(image.height(), y0 + h))
        ]
    )


def _readable(heatmap, dark: bool) -> None:
    axis = heatmap.plot.getAxis("left")
    text = axis.textPen().color().lightness()
    pixels = _axis_pixels(heatmap)
    background = float(np.median(pixels))
    assert (text > 180 and background < 80) if dark else (text < 80 and background > 180), (text, background)
    assert np.abs(pixels - background).max() > 100  # the row labels stand out from it


def test_a_theme_switch_restyles_the_maps_already_drawn_and_later_ones(qtbot):
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from explorer.appearance import apply_theme
    from explorer.widgets.heatmap import Heatmap

    root = QWidget()
    qtbot.addWidget(root)
    layout = QVBoxLayout(root)
    heatmap = Heatmap("theme_heatmap", "map")
    layout.addWidget(heatmap)
    root.resize(420, 360)
    root.show()
    heatmap.set_data(np.eye(4), ["aa", "bb", "cc", "dd"], ["w", "x", "y", "z"])
    apply_theme("light", root)
    qtbot.wait(50)
    _readable(heatmap, dark=False)  # drawn once in the light theme
    try:
        apply_theme("dark", root)
        qtbot.wait(50)
        _readable(heatmap, dark=True)
        later = Heatmap("later_heatmap", "later")
        layout.addWidget(later)
        later.set_data(np.eye(3), ["aa", "bb", "cc"], ["x", "y", "z"])
        qtbot.wait(50)
        _readable(later, dark=True)
    finally:
        apply_theme("light", root)
    qtbot.wait(50)
    _readable(heatmap, dark=False)


# -- 3 and 5. the attention panel with a real engine -------------------------------------------------------------
@pytest.fixture
def copy_window(make_window, qtbot):
    """A window whose engine trained a small copy-task model for a while."""
    from explorer.commands import NewModel, Step

    window = make_window()
    form = window.training.form
    form.task_combo.setCurrentIndex(form.task_combo.findData("copy"))
    window.engine.submit(NewModel(form.spec()))
    window.engine.submit(Step(n=150))
    qtbot.waitUntil(lambda: window.status.step == 150 and window.status.state == "paused", timeout=60000)
    # the decoding panel asks the new model for a sample sentence: let it land before a test types its own
    qtbot.waitUntil(lambda: getattr(window.decoding, "sample", None) is None, timeout=10000)
    return window


def _step_decoding(window, qtbot, action: str) -> None:
    d = window.decoding
    with qtbot.waitSignal(d.view_shown, timeout=10000):
        d.decoding_page.act(action)


def _check_outlined_row(window) -> None:
    """The outlined row of each decoder map is the one that chose the decoding panel's current token."""
    a, d = window.attention, window.decoding
    view = d.view
    chosen = view.steps[-1].kept[0].token  # greedy: the one continuation taken at the current step
    n = len(view.steps)
    a.follow_cross_attention(d.cross_layer.value())
    for kind in ("decoder_self", "cross"):
        a.kind.setCurrentIndex(a.kind.findData(kind))
        box = a.heatmap.row_box
        assert box.isVisible() and int(box.rect().top()) == n - 1, kind
        assert a.heatmap.rows[n - 1].endswith("→ " + d.piece(chosen)), (kind, a.heatmap.rows)
    # the decoding panel's map of this step is the same row: its heads, averaged
    assert a.heatmap.values[n - 1] == pytest.approx(d.cross.values.mean(axis=0), abs=1e-5)
    a.kind.setCurrentIndex(a.kind.findData("encoder"))
    assert not a.heatmap.row_box.isVisible()  # encoder rows predict nothing
    assert "predict" in a.caption.text() and "outlined" not in a.caption.text()


def test_the_outlined_row_is_the_one_that_chose_the_decoding_step_s_token(copy_window, qtbot, english):
    d = copy_window.decoding
    d.input.setText("3 1 4 1 5")
    with qtbot.waitSignal(d.view_shown, timeout=10000):
        d.start()
    for _ in range(2):
        _step_decoding(copy_window, qtbot, "step")
        _check_outlined_row(copy_window)
    _step_decoding(copy_window, qtbot, "run")
    assert d.view.at_end
    _check_outlined_row(copy_window)


def test_a_new_model_leaves_nothing_of_the_last_one_in_the_attention_panel(copy_window, qtbot):
    from explorer.commands import NewModel

    window, a = copy_window, copy_window.attention
    a.pair_src.setText("1 2 3")
    with qtbot.waitSignal(window.engine.inspection_ready, timeout=10000):
        a._on_pair()
    assert a.heatmap.values.size and a.heatmap.rows
    with qtbot.waitSignal(window.engine.explained, timeout=10000):
        a.explainer.head_asked.emit()
    qtbot.waitUntil(lambda: len(a.over_training.snapshots) > 0, timeout=10000)
    assert a.explainer.explanation is not None and a.over_training.timeline_label.text()
    seen = []

    def on_new_run(info) -> None:  # after the window's own handler: before the new model answered anything
        seen.append(
            (
                info.run_id,
                a.heatmap.values.size,
                list(a.heatmap.rows),
                list(a.heatmap.cols),
                a.grid.maps.size,
                a.explainer.explanation,
                a.explainer.query.count(),
                a.explainer.per_key.rowCount(),
                list(a.over_training.snapshots),
                a.over_training.timeline_label.text(),
                a.over_training.entropy.series,
                window.training.probe_marker.isVisible(),
            )
        )

    window.engine.run_described.connect(on_new_run)
    window.engine.submit(NewModel(window.training.form.spec()))
    qtbot.waitUntil(lambda: any(s[0] == 2 for s in seen), timeout=20000)
    assert [s[1:] for s in seen if s[0] == 2][0] == (0, [], [], 0, None, 0, 0, [], "", {}, False)
    qtbot.waitUntil(lambda: len(a.over_training.snapshots) > 0, timeout=10000)  # the new model's own probe
    assert all(s.run_id == 2 and s.step == 0 for s in a.over_training.snapshots)


# -- 4. texts ----------------------------------------------------------------------------------------------------
def test_captions_say_what_the_rows_of_each_kind_are(qtbot, copy_session_factory, english):
    from explorer.panels.attention import AttentionPanel

    panel = AttentionPanel()
    qtbot.addWidget(panel)
    inspection = copy_session_factory().inspect("1 2 3", "1 2 3")
    panel.on_inspection(inspection)
    captions = {}
    for kind in ("encoder", "decoder_self", "cross"):
        panel.kind.setCurrentIndex(panel.kind.findData(kind))
        captions[kind] = panel.caption.text()
    assert "source positions" in captions["encoder"] and "predict nothing" in captions["encoder"]
    assert "next token" not in captions["encoder"] and "read → predicts" not in captions["encoder"]
    assert all("read → predicts" in captions[k] for k in ("decoder_self", "cross"))
    assert "Hatched" in captions["decoder_self"] and "Hatched" not in captions["cross"]


def test_the_attention_training_and_positional_panels_leave_no_english_in_chinese(
    qtbot, copy_session_factory, monkeypatch
):
    """Every string these panels pass through tr() at run time — composed ones, plot titles, axis labels and
    legends included — has a Chinese entry (the static completeness test sees only literal tr()/N_() calls)."""
    import re

    import explorer.i18n as i18n
    from explorer.panels.attention import AttentionPanel
    from explorer.panels.positional import PositionalPanel
    from explorer.panels.training import TrainingPanel
    from explorer.worker import Engine
    from model.session import notes_example

    asked: set[str] = set()

    class Recording(dict):
        def get(self, key, default=None):
            asked.add(key)
            return super().get(key, default)

    monkeypatch.setattr(i18n, "ZH", Recording(i18n.ZH))
    # the code alone, without the changed signal: only these panels speak (windows of other tests stay out)
    monkeypatch.setattr(i18n.language, "code", "zh")
    session, engine = copy_session_factory(), Engine("cpu")
    engine._run_id = 1
    info = engine._run_info(session)
    training, attention, positional = TrainingPanel(), AttentionPanel(), PositionalPanel()
    for panel in (training, attention, positional):
        qtbot.addWidget(panel)
        panel.show()
    training.on_run(info)
    training.on_metrics(steps_batch(1, 1, 30))
    training.on_metrics(evaluations_batch(1, [10, 20]))
    training.redraw()
    attention.on_run(info)
    positional.on_run(info)
    attention.on_inspection(session.inspect("1 2 3", "1 2 3"))
    for kind in range(attention.kind.count()):
        attention.kind.setCurrentIndex(kind)
    attention.on_explanation(notes_example())
    attention.on_explanation(session.explain_attention("1 2 3", [4, 5], "cross", 0, 1))
    for i in range(positional.tabs.count()):
        positional.tabs.setCurrentIndex(i)
        positional.redraw()
    for panel in (training, attention, positional):
        panel.retranslate()
    technical = {"%", "‖g‖", "PE", "pos", "q·k", "BLEU"}  # symbols and names, the same in Chinese
    english = sorted(s for s in asked - set(i18n.ZH) - technical if re.search(r"[A-Za-z]{2,}", s))
    assert english == [], english
