"""The look-inside panels (decoding, attention, positional lab), driven offscreen with pytest-qt."""

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import torch

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPointF, Qt  # noqa: E402
from PySide6.QtGui import QImage, QTextDocument  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from model.core.positional import sinusoidal_table  # noqa: E402
from model.decoding.search import beam_search, greedy_decode  # noqa: E402
from model.session import Session  # noqa: E402

SENTENCE = "3 1 4 1 5"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, copy_session_factory):
    session = copy_session_factory(eval_every=0)
    session.train_steps(200)
    path = tmp_path_factory.mktemp("trained") / "copy.ckpt"
    session.save(path)
    return path


@pytest.fixture
def trained_window(make_window, qtbot, checkpoint):
    window = make_window(open_path=str(checkpoint))
    qtbot.waitUntil(lambda: window.training.current is not None and window.status.step == 200, timeout=15000)
    return window


def next_token_probs(session, src_ids, prefix):
    """P(next | prefix, source) by an independent teacher-forced forward pass (PAD, BOS forbidden)."""
    cfg = session.model_cfg
    with torch.no_grad():
        logits = session.model(torch.tensor([src_ids]), torch.tensor([[cfg.bos_id, *prefix]]))[0, -1]
    logits[[cfg.pad_id, cfg.bos_id]] = float("-inf")
    return logits.softmax(-1)


def decode(window, qtbot, text=SENTENCE, mode="greedy", beam=3):
    d = window.decoding
    d.mode.setCurrentIndex(d.mode.findData(mode))
    d.beam_size.setValue(beam)
    d.input.setText(text)
    with qtbot.waitSignal(d.view_shown, timeout=10000):
        qtbot.keyClick(d.input, Qt.Key_Return)
    return d


def shown_text(label):
    """What a rich-text label shows, as plain text."""
    doc = QTextDocument()
    doc.setHtml(label.text())
    return doc.toPlainText()


def click(qtbot, panel, name):
    with qtbot.waitSignal(panel.view_shown, timeout=10000):
        qtbot.mouseClick(panel.findChild(QPushButton, name), Qt.LeftButton)


def test_greedy_steps_show_the_engines_probabilities_and_back_restores(trained_window, qtbot, checkpoint):
    session = Session.load(checkpoint, device="cpu")
    src_ids = session._source(SENTENCE)[1]
    expected = greedy_decode(session.model, torch.tensor(src_ids), 20)[0]
    d = decode(trained_window, qtbot)
    assert d.chips.tokens == ["3", "1", "4", "1", "5", "<eos>"]
    bars = []
    for n in range(3):
        click(qtbot, d, "decode_step_button")
        probs = next_token_probs(session, src_ids, expected[:n])
        top = probs.topk(len(d.candidates.tokens))
        assert d.candidates.tokens == [session.tgt_tok.display_token(int(t)) for t in top.indices]
        assert d.candidates.probs == pytest.approx(top.values.numpy(), abs=1e-5)
        assert d.candidates.chosen == {0}  # greedy keeps the most probable
        bars.append(d.candidates.probs.copy())
    assert list(d.view.focus_tokens) == expected[:3]
    assert shown_text(d.output).endswith(f": {session.tgt_tok.decode(expected[:3])}")
    click(qtbot, d, "decode_back_button")
    assert list(d.view.focus_tokens) == expected[:2] and d.candidates.probs == pytest.approx(bars[1])
    click(qtbot, d, "decode_run_button")
    assert d.view.at_end and list(d.view.hypotheses[0][3]) == expected
    assert "Translation" in d.output.text() and not d.step_button.isEnabled()


def test_beam_tree_and_n_best_list_equal_beam_search(trained_window, qtbot, checkpoint):
    session = Session.load(checkpoint, device="cpu")
    src_ids = session._source("2 7 1 8 2")[1]
    d = decode(trained_window, qtbot, "2 7 1 8 2", mode="beam", beam=3)
    click(qtbot, d, "decode_run_button")
    tree = d.findChild(type(d.tree), "beam_tree_view")
    qtbot.waitUntil(lambda: not tree.pending)  # a long run's columns are added a few at a time
    kept = tree.kept_per_level()
    assert kept and max(kept) <= 3 and all(k >= 1 for k in kept[:-1])
    assert any(n.status == "pruned" for n in tree.nodes) and any(n.status == "finished" for n in tree.nodes)
    expected = beam_search(session.model, torch.tensor(src_ids), 3, session.default_max_len(len(src_ids)))
    table = [(d.nbest.item(r, 0).text(), float(d.nbest.item(r, 1).text())) for r in range(d.nbest.rowCount())]
    assert [t for t, _ in table] == [session.tgt_tok.decode(h.tokens) or "∅" for h in expected]
    assert [s for _, s in table] == pytest.approx([h.score for h in expected], abs=1e-3)
    # clicking a kept node shows that prefix's candidates
    node = next(n for n in tree.nodes if n.status == "live" and n.level == 2)
    tree.node_clicked.emit(node.level, node.live_index)
    step = d.view.steps[2]
    prefix = step.prefixes[node.live_index]
    probs = next_token_probs(session, src_ids, prefix)
    assert d.candidates.probs[0] == pytest.approx(float(probs.max()), abs=1e-5)


def test_heatmap_shows_the_engines_weights(trained_window, qtbot, checkpoint):
    session = Session.load(checkpoint, device="cpu")
    a = trained_window.attention
    a.pair_src.setText("9 8 7")
    a.pair_tgt.setText("9 8 7")
    with qtbot.waitSignal(trained_window.engine.inspection_ready, timeout=10000):
        qtbot.mouseClick(a.pair_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: a.source.currentData() == "pair")
    src = torch.tensor([session._source("9 8 7")[1]])
    tgt = torch.tensor([[1, *session.tgt_tok.encode_ids("9 8 7")]])
    with torch.no_grad():
        _, maps = session.model(src, tgt, return_attention=True)
    for kind, captured in (("encoder", maps.encoder), ("decoder_self", maps.decoder_self), ("cross", maps.cross)):
        a.kind.setCurrentIndex(a.kind.findData(kind))
        a.layer.setValue(2)
        a.head.setValue(3)
        shown = a.heatmap.image.image
        assert shown == pytest.approx(captured[1][0, 2].numpy(), abs=1e-6), kind
        if kind == "decoder_self":  # the future is masked, and drawn as masked
            assert a.heatmap.masked is not None and a.heatmap.masked[0, 1] and not a.heatmap.masked[1, 0]
            assert a.heatmap.overlay.isVisible()
    a.average.setChecked(True)
    assert a.shown_matrix() == pytest.approx(maps.cross[1][0].mean(0).numpy(), abs=1e-6)
    a.average.setChecked(False)
    a.all_heads.setChecked(True)
    assert a.grid.maps.shape == (2, 4, 4, 4)
    assert a.grid.maps[1, 2] == pytest.approx(maps.cross[1][0, 2].numpy(), abs=1e-6)
    a.grid.cell_clicked.emit(0, 1)  # focus a map of the grid
    assert not a.all_heads.isChecked() and (a.layer.value(), a.head.value()) == (1, 2)


@pytest.mark.parametrize("mode", ["greedy", "beam"])
def test_attention_following_decoding_shows_the_teacher_forced_maps_of_the_focus(
    trained_window, qtbot, checkpoint, mode
):
    session = Session.load(checkpoint, device="cpu")
    d = decode(trained_window, qtbot, "2 7 1 8 2", mode=mode, beam=3)
    for _ in range(3):
        click(qtbot, d, "decode_step_button")
    a = trained_window.attention
    assert a.source.currentData() == "decoding"
    src = torch.tensor([session._source("2 7 1 8 2")[1]])
    tgt = torch.tensor([[session.model_cfg.bos_id, *d.view.focus_tokens]])
    with torch.no_grad():
        _, maps = session.model(src, tgt, return_attention=True)
    a.layer.setValue(2)
    a.head.setValue(3)
    for kind, captured in (("encoder", maps.encoder), ("decoder_self", maps.decoder_self), ("cross", maps.cross)):
        a.kind.setCurrentIndex(a.kind.findData(kind))
        assert a.heatmap.image.image == pytest.approx(captured[1][0, 2].numpy(), abs=1e-5), kind
        if kind == "decoder_self":  # hatched: exactly the later positions
            n = tgt.shape[1]
            assert np.array_equal(a.heatmap.masked, np.triu(np.ones((n, n), dtype=bool), 1))
            assert a.heatmap.overlay.isVisible()
        else:
            assert a.heatmap.masked is None and not a.heatmap.overlay.isVisible()
    assert a.heatmap.row_box.isVisible() and a.heatmap.rows[-1].endswith("→ ?")  # the position predicting next


def test_hover_shows_the_exact_weight_without_redrawing(trained_window, qtbot):
    a = trained_window.attention
    a.pair_src.setText("1 2 3 4")
    with qtbot.waitSignal(trained_window.engine.inspection_ready, timeout=10000):
        qtbot.mouseClick(a.pair_button, Qt.LeftButton)
    h = a.heatmap
    renders = []
    original = h.image.render
    h.image.render = lambda *args: renders.append(1) or original(*args)
    point = h.image.mapToScene(QPointF(2.5, 1.5))
    h._on_move(point)
    assert h.hover_label.text().endswith(f"{h.values[1, 2]:.4f}")
    assert "“" + h.rows[1] + "”" in h.hover_label.text()
    for x in np.linspace(0.1, h.values.shape[1] - 0.1, 50):
        h._on_move(h.image.mapToScene(QPointF(x, 0.5)))
    assert renders == []


def test_timeline_scrubs_through_training_snapshots(make_window, qtbot):
    window = make_window()
    form = window.training.form
    form.task_combo.setCurrentIndex(form.task_combo.findData("copy"))
    a = window.attention
    a.over_training.probe_every.setValue(5)
    window.training.step_n.setValue(20)
    qtbot.mouseClick(window.training.step_n_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.status.step == 20 and window.status.state == "paused", timeout=30000)
    qtbot.waitUntil(lambda: len(a.over_training.snapshots) >= 5, timeout=10000)
    steps = [s.step for s in a.over_training.snapshots]
    assert steps[0] == 0 and 20 in steps
    a.kind.setCurrentIndex(a.kind.findData("cross"))
    slider = window.findChild(type(a.over_training.timeline), "attention_timeline_slider")
    slider.setValue(0)
    first = a.heatmap.image.image.copy()
    assert first == pytest.approx(a.over_training.snapshots[0].inspection.cross[0, 0])
    marker = window.training.probe_marker  # moved at the plots' next tick
    qtbot.waitUntil(lambda: marker.value() == 0 and marker.isVisible(), timeout=2000)
    slider.setValue(slider.maximum())
    assert a.heatmap.image.image == pytest.approx(a.over_training.snapshots[-1].inspection.cross[0, 0])
    assert not np.allclose(first, a.heatmap.image.image)
    qtbot.waitUntil(lambda: marker.value() == a.over_training.snapshots[-1].step, timeout=2000)
    a.tabs.setCurrentWidget(a.over_training)  # the entropy plot is drawn when its tab is opened
    entropy_x, entropy_y = a.over_training.entropy.data(1, "head0")
    assert list(entropy_x) == steps
    row = a.over_training.snapshots[0].inspection.cross[0, 0]
    expected = float(np.mean(-(row * np.log(np.clip(row, 1e-12, 1))).sum(-1)))
    assert entropy_y[0] == pytest.approx(expected, abs=1e-5)
    # beside it, each snapshot's head-function scores, as the engine recorded them with the probe
    from model.interpret.head_functions import head_functions

    a.over_training.functions.choose("alignment")
    function_x, function_y = a.over_training.functions.plot.data(1, "head0")
    assert list(function_x) == steps
    recomputed = [head_functions(s.inspection)["cross"]["alignment"][0, 0] for s in a.over_training.snapshots]
    assert function_y == pytest.approx(recomputed, abs=1e-6)


def test_qk_explainer_worked_example_and_a_real_head(trained_window, qtbot):
    a = trained_window.attention
    with qtbot.waitSignal(trained_window.engine.explained, timeout=10000):
        qtbot.mouseClick(a.explainer.notes_button, Qt.LeftButton)
    e = a.explainer.explanation
    s = 1 / math.sqrt(2)
    weights_row1 = [math.exp(s), 1.0, math.exp(s)]
    weights_row1 = [w / sum(weights_row1) for w in weights_row1]
    headers = [a.explainer.per_key.horizontalHeaderItem(c).text() for c in range(a.explainer.per_key.columnCount())]
    softmax = headers.index("softmax")
    assert [float(a.explainer.per_key.item(j, softmax).text()) for j in range(3)] == pytest.approx(
        weights_row1, abs=1e-4
    )
    assert float(a.explainer.per_key.item(0, 1).text()) == pytest.approx(s, abs=1e-4)
    assert e.output[0] == pytest.approx(
        [10 * weights_row1[0] + 5 * weights_row1[2], 10 * weights_row1[1] + 5 * weights_row1[2]]
    )
    a.pair_src.setText("5 5 6")
    with qtbot.waitSignal(trained_window.engine.inspection_ready, timeout=10000):
        qtbot.mouseClick(a.pair_button, Qt.LeftButton)
    a.kind.setCurrentIndex(a.kind.findData("cross"))
    a.layer.setValue(2)
    a.head.setValue(4)
    with qtbot.waitSignal(trained_window.engine.explained, timeout=10000):
        qtbot.mouseClick(a.explainer.explain_button, Qt.LeftButton)
    assert a.explainer.explanation.weights == pytest.approx(a.heatmap.values, abs=1e-5)


def show_positional(window):
    """The lab draws when it is looked at: show it."""
    window.show()
    window.docks["positional"].show()
    window.docks["positional"].raise_()
    return window.positional


def test_positional_lab_data_equal_the_formula(trained_window):
    p = show_positional(trained_window)
    assert p.isVisible() and not p._stale
    p.d_model.setValue(20)
    p.positions.setValue(50)
    p.dims.setText("4 5 6 7")
    p.redraw()
    for i in (4, 5, 6, 7):
        x, y = p.curves.series[f"dim {i}"]
        f = math.sin if i % 2 == 0 else math.cos
        assert y == pytest.approx([f(pos / 10000 ** ((i - i % 2) / 20)) for pos in x], abs=1e-6)
    assert p.matrix.values == pytest.approx(sinusoidal_table(50, 20).numpy(), abs=1e-6)
    assert p.similarity.values[3, 7] == pytest.approx(p.similarity.values[10, 14], abs=1e-6)  # only p − q matters
    p.shift.setValue(7)
    p.pos_spin.setValue(11)
    _, target = p.shift_plot.series["PE(pos + k)"]
    _, moved = p.shift_plot.series["M_k · PE(pos)"]
    assert moved == pytest.approx(target, abs=1e-6)
    assert target == pytest.approx(sinusoidal_table(50, 20).numpy()[18], abs=1e-6)


def test_every_view_exports_readable_files(trained_window, qtbot, tmp_path):
    show_positional(trained_window)
    d = decode(trained_window, qtbot, mode="beam")
    click(qtbot, d, "decode_step_button")
    click(qtbot, d, "decode_step_button")
    a = trained_window.attention
    a.all_heads.setChecked(False)
    views = {
        "heatmap": a.heatmap,
        "step_cross": d.cross,
        "pe_matrix": trained_window.positional.matrix,
        "pe_plot": trained_window.positional.curves,
        "candidates": d.candidates,
    }
    for name, view in views.items():
        for ext in ("png", "svg", "csv"):
            view.export(tmp_path / f"{name}.{ext}")
        assert not QImage(str(tmp_path / f"{name}.png")).isNull(), name
        assert ET.parse(tmp_path / f"{name}.svg").getroot().tag.endswith("svg"), name
        assert len((tmp_path / f"{name}.csv").read_text(encoding="utf-8").splitlines()) >= 2, name
    a.heatmap.export(tmp_path / "heatmap.npy")
    assert np.load(tmp_path / "heatmap.npy") == pytest.approx(a.heatmap.values)
    rows = (tmp_path / "heatmap.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0].split(",")[1:] == a.heatmap.cols
    d.tree.export(tmp_path / "tree.svg")
    d.tree.export(tmp_path / "tree.png")
    assert ET.parse(tmp_path / "tree.svg").getroot().tag.endswith("svg")
    assert not QImage(str(tmp_path / "tree.png")).isNull()
    d.tree.export(tmp_path / "tree.csv")
    assert (tmp_path / "tree.csv").read_text(encoding="utf-8").startswith("level,status,token")
    d.export_nbest(str(tmp_path / "nbest.csv"))
    d.export_nbest(str(tmp_path / "nbest.svg"))
    assert ET.parse(tmp_path / "nbest.svg").getroot().tag.endswith("svg")
    a.all_heads.setChecked(True)
    a.grid.export(tmp_path / "grid.npy")
    assert np.load(tmp_path / "grid.npy").ndim == 4
    with qtbot.waitSignal(trained_window.engine.explained, timeout=10000):
        a.explain_worked_example()
    a.export_explanation(str(tmp_path / "qk.csv"))
    a.export_explanation(str(tmp_path / "qk.png"))
    lines = (tmp_path / "qk.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + 9 and lines[1].startswith("1,x1,1,x1,1.0,")
    assert lines[0].split(",")[-2:] == ["exp", "weight"]
    assert float(lines[1].split(",")[-2]) == pytest.approx(math.exp(1 / math.sqrt(2)))
    assert not QImage(str(tmp_path / "qk.png")).isNull()


def test_autoplay_runs_to_the_end(trained_window, qtbot):
    d = decode(trained_window, qtbot)
    d.speed.setValue(10)
    d.play_button.setChecked(True)
    qtbot.waitUntil(lambda: d.view is not None and d.view.at_end, timeout=15000)
    qtbot.waitUntil(lambda: not d.play_button.isChecked(), timeout=5000)
    assert d.view.position == len(d.view.steps) >= 2


def test_learned_position_table_is_shown_live(make_window, qtbot):
    window = make_window()
    form = window.training.form
    form.task_combo.setCurrentIndex(form.task_combo.findData("copy"))
    form.positional.setCurrentText("learned")
    window.show()
    window.docks["positional"].show()
    window.docks["positional"].raise_()
    qtbot.mouseClick(window.training.start_button, Qt.LeftButton)
    p = window.positional
    qtbot.waitUntil(lambda: p.model_tables is not None and p.model_tables.step > 0, timeout=20000)
    first = p.model_tables.step
    qtbot.waitUntil(lambda: p.model_tables.step > first, timeout=20000)  # refreshed while training
    qtbot.mouseClick(window.training.stop_button, Qt.LeftButton)
    session_table = p.model_tables.target
    assert not p.learned.isHidden() and p.learned.values.shape[1] == window.training.current.model_config.d_model
    assert p.learned.values == pytest.approx(session_table[: p.learned.values.shape[0]])
    assert "step" in p.learned.title.text()
