"""What the Decoding and Attention panels say about their own state, in the window at 1366×768: a step being
computed, a map made with older weights, a sentence typed but not decoded yet, a decoding at step 0, every head
of the grid, the small cross-attention plot's labels, and the panels after a change of family (GPT sampling →
BERT → GPT with experts in beam search; BERT's fill-mask sentence in the attention panel)."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from explorer.commands import Load  # noqa: E402
from explorer.main_window import MainWindow  # noqa: E402
from explorer.panels.attention_caption import rows_caption  # noqa: E402
from explorer.panels.decoding import CHART_HEIGHT  # noqa: E402
from model.data import DataSpec  # noqa: E402
from model.decoding.stepping import DecodeDriver  # noqa: E402
from model.families.registry import ENCODER_ONLY  # noqa: E402
from model.session import Session  # noqa: E402
from model.training.config import TrainConfig  # noqa: E402
from tests.scenarios.test_layout_sizes import drawn_tick_labels  # noqa: E402

SENTENCE = "Did you read two interesting books in the library yesterday?"


def laptop_window(make_window, qtbot, monkeypatch):
    """The window on a 1366×768 screen with the bundled model open and its first-launch sample shown."""
    monkeypatch.setattr(MainWindow, "_screen_size", staticmethod(lambda: (1366, 768)))
    window = make_window(start_default=True)
    window.show()
    window.setWindowState(Qt.WindowState.WindowNoState)
    window.resize(1366, 768 - 70)
    qtbot.waitUntil(lambda: window.decoding.view is not None and not window.decoding.waiting, timeout=20000)
    return window


def decode(qtbot, window, sentence: str, steps: int = 0) -> None:
    d = window.decoding
    d.input.setText(sentence)
    d.translate_button.click()
    qtbot.waitUntil(lambda: d.view is not None and d.view.settings.text == sentence and not d.waiting, timeout=10000)
    for n in range(1, steps + 1):
        d.step_button.click()
        qtbot.waitUntil(lambda n=n: not d.waiting and d.view.position == n, timeout=10000)


def train_steps(qtbot, window, n: int) -> int:
    """Step N from the Training panel; → the step the engine paused at."""
    target = window.status.step + n
    window.training.step_n.setValue(n)
    qtbot.mouseClick(window.findChild(QPushButton, "train_step_n_button"), Qt.LeftButton)
    qtbot.waitUntil(lambda: window.status.step == target and window.status.state == "paused", timeout=60000)
    return target


# -- the grid of heads -------------------------------------------------------------------------------------------
def test_all_heads_shows_every_head_with_average_over_heads_on(make_window, qtbot, monkeypatch):
    window = laptop_window(make_window, qtbot, monkeypatch)
    a = window.attention
    assert a.average.isChecked()  # the launch default
    a.all_heads.setChecked(True)
    n_heads = window.decoding.info.model_config.n_heads
    assert n_heads > 1 and a.grid.maps.shape[1] == n_heads
    labels = [t for _, t in a.grid.plot.getAxis("bottom")._tickLevels[0]]
    assert labels == [f"H{h + 1}" for h in range(n_heads)]
    assert not a.average.isEnabled()  # the grid's columns are the heads, whatever the box says


# -- a step being computed ---------------------------------------------------------------------------------------
def test_a_slow_step_shows_that_it_is_computing_and_queues_the_clicks(make_window, qtbot, monkeypatch):
    window = laptop_window(make_window, qtbot, monkeypatch)
    d = window.decoding
    decode(qtbot, window, "the teacher reads a book .", steps=1)
    act = DecodeDriver.act

    def slow(self, action, position=None):
        if action == "step":
            time.sleep(1.0)
        return act(self, action, position)

    monkeypatch.setattr(DecodeDriver, "act", slow)
    d.step_button.click()
    qtbot.waitUntil(lambda: "Computing step 2" in d.step_label.text(), timeout=2000)
    assert not d.run_button.isEnabled() and not d.back_button.isEnabled() and not d.reset_button.isEnabled()
    d.step_button.click()
    d.step_button.click()
    assert "2 more queued" in d.step_label.text() and d.step_button.text().endswith("(+2)")
    qtbot.waitUntil(lambda: not d.waiting, timeout=10000)
    assert d.view.position == 4 and d.step_label.text().startswith("Step 4")  # every click was carried out
    assert d.step_button.text() == "Step ▶" and d.back_button.isEnabled()


# -- older weights -----------------------------------------------------------------------------------------------
def test_the_map_says_it_shows_older_weights_and_updates_with_one_click(make_window, qtbot, monkeypatch):
    window = laptop_window(make_window, qtbot, monkeypatch)
    a = window.attention
    decode(qtbot, window, "the teacher reads a book .", steps=2)
    before = window.status.step
    assert f"training step {before}" in a.caption.text() and a.update_button.isHidden()
    now = train_steps(qtbot, window, 2)
    # the caption follows each step as it arrives: wait for the last one (on a busy machine it lags the engine)
    qtbot.waitUntil(lambda: not a.update_button.isHidden() and f"now at step {now}" in a.caption.text(), timeout=5000)
    text = a.caption.text()
    assert f"training step {before}" in text and f"now at step {now}" in text, text
    a.update_button.click()
    qtbot.waitUntil(lambda: a.update_button.isHidden(), timeout=10000)
    assert f"training step {now}" in a.caption.text() and "now at step" not in a.caption.text()
    assert window.decoding.view.weights_step == now and window.decoding.view.position == 2


def small_checkpoint(path, arch: str, **overrides):
    session = Session.create(
        DataSpec(task="text-hsk-zh"),
        "tiny",
        TrainConfig(warmup_steps=50, eval_every=0),
        arch=arch,
        device="cpu",
        **overrides,
    )
    session.train_steps(3)
    session.save(path)
    return path


def open_checkpoint(qtbot, window, path, family: str, moe: bool = False) -> None:
    d = window.decoding
    window.client.send(Load(str(path)))
    qtbot.waitUntil(lambda: d.family == family and d.info.model_config.moe == moe, timeout=30000)


def fill(qtbot, window, text: str) -> None:
    view = window.decoding.fill_view
    view.input.setText(text)
    qtbot.keyClick(view.input, Qt.Key_Return)
    qtbot.waitUntil(lambda: view.view is not None and view.view.text == text, timeout=20000)


def test_bert_the_attention_panel_follows_the_fill_mask_sentence_and_its_weights(
    make_window, qtbot, monkeypatch, tmp_path
):
    window = laptop_window(make_window, qtbot, monkeypatch)
    a = window.attention
    open_checkpoint(qtbot, window, small_checkpoint(tmp_path / "bert.ckpt", "encoder_only"), "encoder_only")
    fill(qtbot, window, "我<mask>天去了")
    qtbot.waitUntil(lambda: a.current()[0] is window.decoding.fill_view.view.inspection, timeout=10000)
    assert a.source.currentData() == "decoding" and a.source.currentText() == "Following the fill-mask panel"
    assert a.pair_row.isHidden()  # no empty "text of your own" field beside it
    caption = a.caption.text()
    assert "Nothing is masked" not in caption and "training step 3" in caption
    now = train_steps(qtbot, window, 2)
    qtbot.waitUntil(lambda: not a.update_button.isHidden(), timeout=5000)
    assert "training step 3" in a.caption.text() and f"now at step {now}" in a.caption.text()
    a.update_button.click()
    qtbot.waitUntil(lambda: a.update_button.isHidden(), timeout=10000)
    assert f"training step {now}" in a.caption.text() and window.decoding.fill_view.view.text == "我<mask>天去了"
    view = window.decoding.fill_view  # another sentence typed: the chips and the map are the previous one's
    qtbot.keyClicks(view.input, "a")
    assert view.chips.faded and "previous sentence" in a.caption.text()
    qtbot.keyClick(view.input, Qt.Key_Return)
    qtbot.waitUntil(lambda: view.view.text == "我<mask>天去了a", timeout=10000)
    assert not view.chips.faded and "previous sentence" not in a.caption.text()


def test_the_two_meanings_of_mask_are_not_confused():
    text = rows_caption("encoder", ENCODER_ONLY)
    assert "Nothing is masked" not in text
    assert "attention mask" in text and "<mask>" in text


# -- a change of family ------------------------------------------------------------------------------------------
def test_gpt_beam_search_after_sampling_and_bert_gets_a_tree_and_its_own_axis(
    make_window, qtbot, monkeypatch, tmp_path
):
    window = laptop_window(make_window, qtbot, monkeypatch)
    d = window.decoding
    gpt = small_checkpoint(tmp_path / "gpt.ckpt", "decoder_only")
    bert = small_checkpoint(tmp_path / "bert.ckpt", "encoder_only")
    moe = small_checkpoint(tmp_path / "moe.ckpt", "decoder_only", n_experts=4, experts_top_k=2)
    open_checkpoint(qtbot, window, gpt, "decoder_only")
    d.mode.setCurrentIndex(d.mode.findData("sample"))
    decode(qtbot, window, "我昨天", steps=1)
    open_checkpoint(qtbot, window, bert, "encoder_only")
    open_checkpoint(qtbot, window, moe, "decoder_only", moe=True)
    assert d.mode.currentData() != "beam"  # not chosen by anyone
    assert d.candidates.plot.getAxis("bottom").labelText == "P(token | text so far)"
    d.mode.setCurrentIndex(d.mode.findData("beam"))
    decode(qtbot, window, "我昨天")
    assert d.candidates.plot.getAxis("bottom").labelText == "P(token | text so far)"  # a GPT reads no source
    decode(qtbot, window, "我昨天", steps=2)
    qtbot.wait(50)
    chart, tree = d.body.sizes()  # as a GPT opened first in beam search: the chart what it needs, the tree the rest
    assert abs(chart - max(CHART_HEIGHT, int(0.45 * (chart + tree)))) <= 2, (chart, tree)
    assert d.tree.isVisible() and d.tree.height() >= 150, d.tree.height()
    assert d.candidates.plot.getAxis("bottom").labelText == "P(token | text so far)"


# -- the state of the sentence -----------------------------------------------------------------------------------
def test_step_0_says_what_to_press(make_window, qtbot, monkeypatch):
    window = laptop_window(make_window, qtbot, monkeypatch)
    d, a = window.decoding, window.attention
    decode(qtbot, window, "the teacher reads a book .")
    assert d.view.position == 0
    assert "Step ▶" in d.candidates.title.text()
    assert "Step ▶" in d.cross.title.text()
    assert "Step ▶" in a.caption.text()
    d.step_button.click()
    qtbot.waitUntil(lambda: not d.waiting and d.view.position == 1, timeout=10000)
    assert "Step ▶" not in d.candidates.title.text() and "Step ▶" not in a.caption.text()


def test_a_sentence_typed_but_not_decoded_marks_the_old_one(make_window, qtbot, monkeypatch):
    window = laptop_window(make_window, qtbot, monkeypatch)
    d, a = window.decoding, window.attention
    decode(qtbot, window, "the teacher reads a book .", steps=2)
    assert not d.chips.faded and "previous sentence" not in d.step_label.text()
    d.input.setFocus()
    d.input.end(False)
    qtbot.keyClicks(d.input, " today")
    assert d.chips.faded and "previous sentence" in d.step_label.text()
    assert "previous sentence" in a.caption.text()
    for _ in " today":  # back to what is shown: nothing is old
        qtbot.keyClick(d.input, Qt.Key_Backspace)
    assert not d.chips.faded and "previous sentence" not in a.caption.text()
    qtbot.keyClicks(d.input, " today")
    d.step_button.click()  # a step starts the new sentence
    qtbot.waitUntil(lambda: not d.waiting and d.view.settings.text.endswith("today"), timeout=10000)
    assert not d.chips.faded and "previous sentence" not in d.step_label.text()
    assert "previous sentence" not in a.caption.text()


# -- the small cross-attention plot ------------------------------------------------------------------------------
def labels_by_line(axis) -> dict[int, list]:
    """The drawn labels of a staggered axis, by line (a label on the second line starts with a newline), each
    with the horizontal extent of its text."""
    lines: dict[int, list] = {}
    for rect, text in drawn_tick_labels(axis):
        word = text.lstrip("\n")
        lines.setdefault(len(text) - len(word), []).append((rect.left(), rect.right(), word))
    return lines


def test_the_step_cross_attention_labels_never_overprint_and_name_eos(make_window, qtbot, monkeypatch):
    window = laptop_window(make_window, qtbot, monkeypatch)
    d = window.decoding
    decode(qtbot, window, SENTENCE, steps=1)
    qtbot.wait(50)
    cols = d.cross.cols
    assert cols[-1] == "<eos>"
    lines = labels_by_line(d.cross.plot.getAxis("bottom"))
    words = [w for line in lines.values() for _, _, w in line]
    assert "<eos>" in words and cols[0] in words
    assert len(words) >= len(cols) // 2  # most of them (the hover names every one)
    for line in lines.values():
        line.sort()
        for (_, right, a), (left, _, b) in zip(line, line[1:]):
            assert right <= left, f"{a!r} and {b!r} overprint"


@pytest.mark.parametrize(
    "widths, span",
    [([20, 20, 25, 21, 64, 35, 11, 19, 38, 59, 6, 41], 200), ([8] * 128, 300), ([42] * 19, 190), ([20] * 4, 200)],
)
def test_column_labels_are_every_nth_on_two_lines_and_always_the_last(widths, span):
    from explorer.widgets.heatmap import EDGE, place_labels

    placed = place_labels(widths, span)
    columns = [i for i, _ in placed]
    assert columns[-1] == len(widths) - 1 and columns[0] == 0
    step = columns[1] - columns[0] if len(columns) > 1 else 1
    assert columns[:-1] == list(range(0, len(widths) - 1, step))  # regular: every step-th column
    cell = span / len(widths)
    for line in (0, 1):
        spans = sorted(
            ((i + 0.5) * cell - widths[i] / 2, (i + 0.5) * cell + widths[i] / 2) for i, k in placed if k == line
        )
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
        assert all(-EDGE <= left and right <= span + EDGE for left, right in spans)
