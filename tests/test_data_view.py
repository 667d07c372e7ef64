"""The Data panel (explorer/panels/data_view.py): the corpus summary as the run and its description arrive (its
sizes, languages and tokenizer, what was cut, or why it could not be read), and the training sentences as the
tokenizers split them, laid out once the panel is on screen."""

from types import SimpleNamespace

import pytest

pytest.importorskip("pytestqt")

from explorer.answers import CorpusSummary, PiecesOf, RunData  # noqa: E402
from explorer.panels.data_view import DataPanel  # noqa: E402
from model.core.config import ModelConfig  # noqa: E402


@pytest.fixture
def panel(qtbot):
    p = DataPanel()
    qtbot.addWidget(p)
    return p


def run(run_id: int = 1, task: str | None = "copy", path: str | None = None) -> SimpleNamespace:
    """A run as the panel reads it: its id, data and tokenizer (word pieces, 20 source and 22 target)."""
    return SimpleNamespace(
        run_id=run_id,
        data=SimpleNamespace(task=task, path=path),
        tokenizer=SimpleNamespace(kind="word"),
        vocab_sizes=(20, 22),
        model_origin=None,
        model_config=ModelConfig.preset("tiny", src_vocab_size=20, tgt_vocab_size=22),
    )


CORPUS = CorpusSummary("copy", "Copy the input", 1200, 50, 60, "en", "zh")
SAMPLES = (
    (PiecesOf(("1", "2"), frozenset()), PiecesOf(("1", "2"), frozenset())),
    (PiecesOf(("3", "x", "4"), frozenset({1})), PiecesOf(("3", "<unk>", "4"), frozenset({1}))),
)


def strips(panel) -> list[tuple[list[str], list[str]]]:
    return [(a.tokens, b.tokens) for a, b in panel.strips]


def test_the_summary_follows_the_run_and_its_description(panel, english):
    assert panel.summary.text() == "No data yet."
    panel.on_run(run())
    assert panel.summary.text() == "<b>copy</b><br>Reading the data…"
    panel.on_data(RunData(1, CORPUS, ()))
    text = panel.summary.text()
    assert text.startswith("<b>copy</b> — Copy the input<br>")
    assert "train 1,200 · valid 50 · test 60 pairs; en → zh; tokenizer: word (20 / 22 pieces)" in text
    assert "were cut" not in text and "<small>" not in text


def test_a_file_is_named_by_its_name_and_what_was_cut_and_reported_is_said(panel, english):
    panel.on_run(run(task=None, path="/data/my pairs.tsv"))
    assert panel.summary.text() == "<b>my pairs.tsv</b><br>Reading the data…"
    corpus = CorpusSummary("my pairs.tsv", "", 10, 1, 1, "en", "de", report="line 3: <no tab>", truncated=2)
    panel.on_data(RunData(1, corpus, ()))
    text = panel.summary.text()
    assert "<br>2 training pairs were longer than the model accepts and were cut" in text
    assert "<small>line 3: &lt;no tab&gt;</small>" in text  # the file's words, not markup


def test_a_corpus_that_could_not_be_read_says_why(panel):
    panel.on_run(run(task=None, path="/data/gone.tsv"))
    panel.on_data(RunData(1, CorpusSummary("gone.tsv", error="No such file"), ()))
    assert panel.summary.text() == "<b>gone.tsv</b><br><span style='color:#c62828'>No such file</span>"


def test_the_sentences_are_shown_as_split_and_replaced_by_a_new_runs(panel):
    panel.on_run(run())
    panel.on_data(RunData(1, CORPUS, SAMPLES))
    assert strips(panel) == [(["1", "2"], ["1", "2"]), (["3", "x", "4"], ["3", "<unk>", "4"])]
    assert panel.strips[1][0].highlight == {1} and panel.strips[0][0].highlight == set()
    assert panel.grid.count() == 4
    panel.on_run(run())  # the same run described again: the sentences stay
    assert len(panel.strips) == 2
    panel.on_run(run(run_id=2))
    assert panel.strips == [] and panel.grid.count() == 0 and "Reading the data" in panel.summary.text()


def test_a_description_of_a_replaced_run_is_not_shown(panel, english):
    panel.on_run(run(run_id=2))
    panel.on_data(RunData(1, CORPUS, SAMPLES))
    assert panel.data is None and panel.strips == [] and "Reading the data" in panel.summary.text()


def test_the_sentences_are_laid_out_once_the_panel_is_looked_at(panel):
    panel.set_on_screen(False)
    panel.on_run(run())
    panel.on_data(RunData(1, CORPUS, SAMPLES))
    assert panel.strips == [] and "1,200" in panel.summary.text()  # the summary at once, the sentences later
    panel.set_on_screen(True)
    assert len(panel.strips) == 2
