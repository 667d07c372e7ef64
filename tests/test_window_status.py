"""The status row's note while a big data file is prepared, built from the stream's numbers: the same words as when
the engine sent them as text (the expected strings below were taken from that code, in English and Chinese), and the
same line on a terminal (``python -m model.train``)."""

from __future__ import annotations

import pytest

from explorer.answers import LoadProgress
from explorer.i18n import language
from model.cli.train import StreamPrinter
from model.data.stream import ReadingProgress, TokenizerSample

READ_40 = ReadingProgress.after(412_000_000, 1_024_000_000, 2_900_000, 4.2)
READ_ALL = ReadingProgress.after(1_024_000_000, 1_024_000_000, 7_345_678, 10.5)
READ_NOTHING = ReadingProgress.after(0, 5_000_000_000, 0, 0.3)
READ_AT_ONCE = ReadingProgress.after(1_500, 3_000, 10, 0.0)
SAMPLE = TokenizerSample(12_345)

# (stage, fraction, detail) → the note and its tooltip, as the window showed them when the detail was text
NOTES = {
    "en": [
        (
            ("reading", 0.402, READ_40),
            "Preparing big.tsv — reading… 40% (98 MB/s, 6 s left)",
            "Preparing big.tsv — reading… 412 MB of 1,024 MB, 2.9 M lines, 98 MB/s, 6 s left",
        ),
        (
            ("reading", 1.0, READ_ALL),
            "Preparing big.tsv — reading… 100% (98 MB/s, 0 s left)",
            "Preparing big.tsv — reading… 1,024 MB of 1,024 MB, 7.3 M lines, 98 MB/s, 0 s left",
        ),
        (
            ("reading", 0.0, READ_NOTHING),
            "Preparing big.tsv — reading… 0% (0 MB/s, 0 s left)",
            "Preparing big.tsv — reading… 0 MB of 5,000 MB, 0.0 M lines, 0 MB/s, 0 s left",
        ),
        (
            ("reading", 0.5, READ_AT_ONCE),
            "Preparing big.tsv — reading… 50% (1500 MB/s, 0 s left)",
            "Preparing big.tsv — reading… 0 MB of 0 MB, 0.0 M lines, 1500 MB/s, 0 s left",
        ),
        (
            ("training the tokenizers", None, SAMPLE),
            "Preparing big.tsv — training the tokenizers…",
            "Preparing big.tsv — training the tokenizers… on a sample of 12,345 pairs",
        ),
    ],
    "zh": [
        (
            ("reading", 0.402, READ_40),
            "正在准备 big.tsv——读取中… 40% (98 MB/s, 6 s left)",
            "正在准备 big.tsv——读取中… 412 MB of 1,024 MB, 2.9 M lines, 98 MB/s, 6 s left",
        ),
        (
            ("reading", 1.0, READ_ALL),
            "正在准备 big.tsv——读取中… 100% (98 MB/s, 0 s left)",
            "正在准备 big.tsv——读取中… 1,024 MB of 1,024 MB, 7.3 M lines, 98 MB/s, 0 s left",
        ),
        (
            ("reading", 0.0, READ_NOTHING),
            "正在准备 big.tsv——读取中… 0% (0 MB/s, 0 s left)",
            "正在准备 big.tsv——读取中… 0 MB of 5,000 MB, 0.0 M lines, 0 MB/s, 0 s left",
        ),
        (
            ("reading", 0.5, READ_AT_ONCE),
            "正在准备 big.tsv——读取中… 50% (1500 MB/s, 0 s left)",
            "正在准备 big.tsv——读取中… 0 MB of 0 MB, 0.0 M lines, 1500 MB/s, 0 s left",
        ),
        (
            ("training the tokenizers", None, SAMPLE),
            "正在准备 big.tsv——训练分词器…",
            "正在准备 big.tsv——训练分词器… on a sample of 12,345 pairs",
        ),
    ],
}

# the same progress on a terminal that is not one (a log): one line each
CLI_LINES = [
    (("reading", 0.402, READ_40), "reading  40%: 412 MB of 1,024 MB, 2.9 M lines, 98 MB/s, 6 s left\n"),
    (("reading", 1.0, READ_ALL), "reading 100%: 1,024 MB of 1,024 MB, 7.3 M lines, 98 MB/s, 0 s left\n"),
    (("reading", 0.0, READ_NOTHING), "reading   0%: 0 MB of 5,000 MB, 0.0 M lines, 0 MB/s, 0 s left\n"),
    (("reading", 0.5, READ_AT_ONCE), "reading  50%: 0 MB of 0 MB, 0.0 M lines, 1500 MB/s, 0 s left\n"),
    (("training the tokenizers", None, SAMPLE), "training the tokenizers: on a sample of 12,345 pairs\n"),
]


def test_reading_progress_is_numbers():
    assert READ_40.read_bytes == 412_000_000 and READ_40.total_bytes == 1_024_000_000
    assert READ_40.lines == 2_900_000
    assert READ_40.mb_per_s == pytest.approx(412 / 4.2)
    assert READ_40.seconds_left == pytest.approx((1024 - 412) / (412 / 4.2))
    assert READ_NOTHING.mb_per_s == 0.0 and READ_NOTHING.seconds_left == 0.0  # no rate yet: no time left either


@pytest.mark.parametrize("code", ["en", "zh"])
def test_the_note_from_the_numbers_reads_as_before(qtbot, code):
    from explorer.status_row import StatusRow
    from explorer.widgets.message_bar import MessageBar
    from explorer.window_status import WindowStatus

    row = StatusRow()
    qtbot.addWidget(row)
    row.note_label.setFixedWidth(3000)  # room for the whole name: the note is not shortened
    status = WindowStatus(row, MessageBar())
    language.set(code)
    try:
        for (stage, fraction, detail), note, tip in NOTES[code]:
            status._on_load_progress(LoadProgress(7, "big.tsv", stage, -1.0 if fraction is None else fraction, detail))
            assert (row.note_label.text(), row.note_label.toolTip()) == (note, tip)
    finally:
        language.set("en")


def test_the_terminal_line_from_the_numbers_reads_as_before(capsys):
    for (stage, fraction, detail), line in CLI_LINES:
        printer = StreamPrinter()
        printer.tty = False
        printer(stage, fraction, detail)
        assert capsys.readouterr().err == line
