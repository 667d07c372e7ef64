"""The Why panel (explorer/panels/interpret.py) with a real engine and a tiny trained copy model: its matrix is
``Session.attribute``'s for the sentence and the output up to the step shown, a candidate clicked in the Decoding
panel's chart becomes the contrast of the last row, the lens table holds the LensTable's top tokens, the source
chips take the colours of the current step's row, and the CSV export is the matrix."""

import csv
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPointF, Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from explorer import commands as cmd  # noqa: E402
from explorer.answers import Attributed, EngineStatus, RunInfo  # noqa: E402
from explorer.engine_client import EngineClient  # noqa: E402
from explorer.panels.decoding import DecodingPanel  # noqa: E402
from explorer.panels.interpret import WhyPanel  # noqa: E402
from explorer.panels.interpret_state import WhyView  # noqa: E402
from explorer.widgets.token_strip import shown_piece  # noqa: E402
from explorer.worker import Engine  # noqa: E402

SENTENCE = "1 2 3 4"


def _copy_spec():
    """A tiny translator of the copy task (short sentences over 6 symbols)."""
    from explorer.commands import NewModelSpec
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.training.trainer import train_config_for

    data = DataSpec(task="copy", n_train=300, n_valid=20, n_test=20, length=6, min_length=3, alphabet=6)
    return NewModelSpec(data, "tiny", {}, train_config_for("tiny", eval_every=0, batch_size=16), TokenizerSpec("word"))


def family_spec(arch):
    """A tiny GPT or BERT on the English teaching grammar's text."""
    from explorer.commands import NewModelSpec
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.training.trainer import train_config_for

    data = DataSpec(task="text-grammar-en", n_train=300, n_valid=20, n_test=20)
    train = train_config_for("tiny", eval_every=0, batch_size=16)
    return NewModelSpec(data, "tiny", {"arch": arch}, train, TokenizerSpec("word"))


@pytest.fixture
def panels(qtbot, request):
    """A Decoding panel and a Why panel on screen, following an engine whose copy model (or the model of
    ``request.param``) trained 60 steps."""
    spec = _copy_spec() if not hasattr(request, "param") else family_spec(request.param)
    engine = Engine("cpu", threads=1)
    got: list[object] = []
    engine.run_described.connect(got.append)
    engine.status_changed.connect(got.append)
    client = EngineClient(engine)
    decoding, why = DecodingPanel(), WhyPanel()
    for w in (decoding, why):
        qtbot.addWidget(w)
        w.resize(700, 600)
        w.show()
    decoding.attach(client)
    why.attach(client, decoding)
    engine.start()
    engine.submit(cmd.NewModel(spec))
    engine.submit(cmd.Step(n=60))
    done = [lambda s: s.step == 60, lambda s: s.step == 60 and s.state == "paused"]
    for ok in done:
        qtbot.waitUntil(lambda ok=ok: any(isinstance(s, EngineStatus) and ok(s) for s in got), timeout=60000)
    info = [r for r in got if isinstance(r, RunInfo)][-1]
    decoding.on_run(info)
    why.on_run(info)
    why.set_on_screen(True)
    try:
        yield engine, decoding, why
    finally:
        engine.shutdown(None, timeout_ms=30000)


def step_to(qtbot, decoding, why, steps):
    """The sentence decoded greedily ``steps`` steps; the Why panel's answer for that step arrived."""
    if decoding.view is None or decoding.view.settings.text != SENTENCE:
        decoding.mode.setCurrentIndex(decoding.mode.findData("greedy"))
        decoding.input.setText(SENTENCE)
        decoding.start()
        qtbot.waitUntil(lambda: decoding.view is not None and not decoding.waiting, timeout=10000)
    while decoding.view.position < steps:
        decoding.press("step")
        qtbot.waitUntil(lambda: not decoding.waiting, timeout=10000)
    wait_answer(qtbot, why, steps)
    return decoding.view


def wait_answer(qtbot, why, rows, contrast=None):
    def arrived():
        a = why.attribution
        return a is not None and len(a.target_tokens) == rows and a.contrast == contrast and not why.state.text()

    qtbot.waitUntil(arrived, timeout=30000)


def test_the_matrix_is_the_sessions_for_the_step_shown_and_its_csv_too(qtbot, panels, tmp_path):
    engine, decoding, why = panels
    view = step_to(qtbot, decoding, why, 3)
    target = list(view.focus_tokens)
    assert len(target) == 3
    want = engine.session.attribute(SENTENCE, "integrated_gradients", target, steps=why.steps.value())
    got = why.attribution
    assert got.source_tokens == want.source_tokens and got.target_tokens == want.target_tokens
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.prefix_scores, want.prefix_scores, rtol=1e-5, atol=1e-6)
    drawn = why.map.values  # the picture: the scores, an empty column, the prefix scores
    S = len(want.source_tokens)
    np.testing.assert_allclose(drawn[:, :S], want.scores, rtol=1e-5, atol=1e-6)
    assert np.isnan(drawn[:, S]).all()
    np.testing.assert_allclose(drawn[:, S + 1 :], want.prefix_scores, rtol=1e-5, atol=1e-6)
    assert -why.map.levels[0] == why.map.levels[1] > 0  # diverging colours centred at 0
    assert why.map.rows == [shown_piece(t) for t in want.target_tokens]

    why.map.export(tmp_path / "why.csv")
    with (tmp_path / "why.csv").open(encoding="utf-8") as f:
        rows = list(csv.reader(f))
    numbers = np.array([[float(x) for x in r[1:]] for r in rows[1:]])
    np.testing.assert_allclose(numbers, np.hstack([got.scores, got.prefix_scores]), rtol=1e-6)
    assert [r[0] for r in rows[1:]] == list(got.target_tokens)

    why.method.setCurrentIndex(why.method.findData("gradient_x_input"))  # another method: asked at once
    qtbot.waitUntil(lambda: why.attribution is not None and why.attribution.method == "gradient_x_input", timeout=30000)
    want = engine.session.attribute(SENTENCE, "gradient_x_input", target)
    np.testing.assert_allclose(why.attribution.scores, want.scores, rtol=1e-5, atol=1e-6)


def click_bar(qtbot, bars, index):
    """A person's click on the bar ``index`` of a candidates chart."""
    box = bars.plot.getViewBox()
    scene = box.mapViewToScene(QPointF(0.02, index))
    QTest.mouseClick(bars.plot.viewport(), Qt.MouseButton.LeftButton, pos=bars.plot.mapFromScene(scene))


def test_a_clicked_candidate_is_the_contrast_of_the_last_row(qtbot, panels):
    engine, decoding, why = panels
    view = step_to(qtbot, decoding, why, 2)
    plain = why.attribution
    chart = decoding.candidates
    chosen = view.focus_tokens[-1]
    other = next(i for i, t in enumerate(chart.tokens) if t != why.piece(chosen))
    contrast_id = int(view.steps[-1].top_tokens[0][other])
    asked: list[cmd.Attribute] = []
    submit = engine.submit
    engine.submit = lambda c: (asked.append(c) if isinstance(c, cmd.Attribute) else None, submit(c))[1]
    try:
        click_bar(qtbot, chart, other)
        wait_answer(qtbot, why, 2, contrast=why.piece(contrast_id))
    finally:
        engine.submit = submit
    assert asked and asked[-1].contrast_id == contrast_id and why.contrast.currentData() == contrast_id
    want = engine.session.attribute(SENTENCE, target=list(view.focus_tokens), contrast=contrast_id, steps=64)
    got = why.attribution
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.scores[:-1], plain.scores[:-1], rtol=1e-5, atol=1e-6)  # only the last row
    assert not np.allclose(got.scores[-1], plain.scores[-1])
    assert why.map.rows[-1] == f"{why.piece(chosen)} ≠ {why.piece(contrast_id)}"

    why.clear_button.click()  # back to plain attribution
    wait_answer(qtbot, why, 2)
    np.testing.assert_allclose(why.attribution.scores, plain.scores, rtol=1e-5, atol=1e-6)


def test_the_lens_table_holds_the_lens_top_tokens_of_the_current_step(qtbot, panels):
    engine, decoding, why = panels
    view = step_to(qtbot, decoding, why, 3)
    qtbot.waitUntil(lambda: why.lens.table_data is not None and len(why.lens.table_data.targets) == 3, timeout=30000)
    assert_lens_cells(engine, why, view)


def test_while_the_lens_is_shown_each_step_brings_it_and_no_lens_pass_is_asked(qtbot, panels):
    """The lens tab in front: the engine is told, each decoding view carries its step's lens (read out of the
    step's own decoder call) and the table is that one, equal to Session.logit_lens; no LogitLensOf goes out.
    The attribution tab in front again: the engine is told, and the steps stop reading the lens."""
    engine, decoding, why = panels
    sent: list[object] = []
    submit = engine.submit
    engine.submit = lambda command: (sent.append(command), submit(command))[1]
    why.tabs.setCurrentWidget(why.lens)
    for steps in (1, 2, 3):
        view = step_to(qtbot, decoding, why, steps)
        assert view.lens is not None and why.lens.table_data is view.lens
        assert_lens_cells(engine, why, view)
    assert [c.on for c in sent if isinstance(c, cmd.WatchLens)] == [True]
    assert not any(isinstance(c, cmd.LogitLensOf) for c in sent)
    why.tabs.setCurrentIndex(0)
    assert [c.on for c in sent if isinstance(c, cmd.WatchLens)] == [True, False]
    decoding.press("step")
    qtbot.waitUntil(lambda: not decoding.waiting and decoding.view.position == 4, timeout=10000)
    assert decoding.view.lens is None


def assert_lens_cells(engine, why, view):
    """The lens table is Session.logit_lens's at the view's current step (a teacher-forced pass of its own)."""
    lens = engine.session.logit_lens(SENTENCE, list(view.focus_tokens))
    ids, probs = lens.top(5)
    show = engine.session.tgt_tok.display_token
    cells = why.lens.cells()
    assert len(cells) == lens.probs.shape[0]
    for layer, row in enumerate(cells):
        want = [f"{shown_piece(show(int(i)))}  {p:.2f}" for i, p in zip(ids[layer, -1], probs[layer, -1])]
        assert row[:5] == want
        assert float(row[5]) == pytest.approx(lens.target_probs()[layer, -1], abs=5e-4)
    first = int(lens.first_layer()[-1])
    marked = [why.lens.table.verticalHeaderItem(r).text().endswith("★") for r in range(len(cells))]
    assert marked == [r == first for r in range(len(cells))]
    assert f"layer {first + 1}" in why.lens.caption.text()


def test_the_source_chips_follow_the_current_steps_row(qtbot, panels):
    engine, decoding, why = panels
    for steps in (1, 2):
        step_to(qtbot, decoding, why, steps)
        row = why.attribution.scores[-1]
        chips = decoding.chips
        assert len(chips.tokens) == len(row)  # a translator's source, <eos> included
        np.testing.assert_allclose(chips.weights, row, rtol=1e-6)
        assert why.attribution.target_tokens[-1] in chips.legend
        strongest = int(np.argmax(np.abs(row)))
        colour = chips.tint(strongest)
        assert colour is not None and colour != chips.tint(int(np.argmin(np.abs(row))))
    why.on_source.setChecked(False)
    assert decoding.chips.weights is None and decoding.chips.legend == ""
    why.on_source.setChecked(True)
    assert decoding.chips.weights is not None
    why.set_on_screen(False)  # a tab behind another computes nothing and tints nothing
    assert decoding.chips.weights is None


def test_a_stale_answer_is_not_drawn_and_the_view_state_round_trips(qtbot, panels):
    engine, decoding, why = panels
    step_to(qtbot, decoding, why, 1)
    shown = why.attribution
    stale = Attributed(0, engine.session.attribute(SENTENCE, "attention_rollout"))
    why._on_attributed(stale)
    assert why.attribution is shown
    state = WhyView(tab="lens", method="attention_rollout", steps=8, contrast=None, on_source=False)
    why.show_view(state)
    assert why.view() == state and not why.steps.isEnabled()


def test_the_state_module_imports_no_qt():
    code = "import sys, explorer.panels.interpret_state; sys.exit(any(m.startswith('PySide6') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("panels", ["decoder_only"], indirect=True)
def test_a_gpts_continuation_is_explained_by_its_prompt(qtbot, panels):
    engine, decoding, why = panels
    decoding.mode.setCurrentIndex(decoding.mode.findData("greedy"))
    decoding.input.setText("I read")
    decoding.start()
    qtbot.waitUntil(lambda: decoding.view is not None and not decoding.waiting, timeout=10000)
    for _ in range(2):
        decoding.press("step")
        qtbot.waitUntil(lambda: not decoding.waiting, timeout=10000)
    wait_answer(qtbot, why, 2)
    view = decoding.view
    want = engine.session.attribute(view.settings.text, target=list(view.focus_tokens), steps=64)
    np.testing.assert_allclose(why.attribution.scores, want.scores, rtol=1e-5, atol=1e-6)
    assert why.attribution.source_tokens[0] == "<bos>"  # the prompt, <bos> first: the chips have no <bos>
    np.testing.assert_allclose(decoding.chips.weights, want.scores[-1][-len(decoding.chips.tokens) :], rtol=1e-6)


@pytest.mark.parametrize("panels", ["encoder_only"], indirect=True)
def test_a_berts_masked_position_is_explained_by_its_sentence(qtbot, panels):
    engine, decoding, why = panels
    fill = decoding.fill_view
    fill.input.setText("I read a book .")  # nothing masked: no question (the engine would refuse it)
    fill.ask()
    qtbot.waitUntil(lambda: len(fill.tokens) > 2, timeout=10000)
    assert why.question is None and why.asked is None
    fill.input.setText("I read a <mask> .")
    fill.ask()
    qtbot.waitUntil(lambda: why.attribution is not None and not why.state.text(), timeout=30000)
    source = why.question.source
    want = engine.session.attribute(source, steps=64)
    np.testing.assert_allclose(why.attribution.scores, want.scores, rtol=1e-5, atol=1e-6)
    assert why.map.values.shape == want.scores.shape  # no prefix columns
    np.testing.assert_allclose(fill.chips.weights, want.scores[-1], rtol=1e-6)
