"""Data files that misbehave: pipes named like data files, lines with no end or of hundreds of megabytes, NUL bytes
early in a file, JSON nested past the parser's depth. Each file is refused with a DataError naming it and what
to do, or its bad lines are counted and skipped; a long line is never parsed, tokenised or held whole."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from model.data import DataError, load_pairs_file, load_text_file
from model.data import files as fl
from model.data import stream as st
from model.data.batching import DEFAULT_SPECIALS
from model.data.tokenization import TextTokenizer, TokenizerSpec
from tests.blocking import finishes


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(st, "CHUNK_LINES", 40)  # many chunks from a small file


def rows(n: int) -> list[str]:
    return [json.dumps({"english": f"sentence number {i} is here", "chinese": f"第{i}个句子"}) for i in range(n)]


def write_lines(path: Path, lines: list[str | bytes]) -> Path:
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path


def settings(**over: Any) -> dict[str, Any]:
    base = dict(
        file_format="auto",
        src_key="english",
        tgt_key="chinese",
        swap=False,
        valid_size=5,
        test_size=5,
        tokenizer_sample=50,
    )
    return {**base, **over}


class Spy:
    """A tokenizer that notes the longest text it was given."""

    def __init__(self, tok: Any) -> None:
        self.tok, self.longest = tok, 0

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        self.longest = max([self.longest, *map(len, texts)])
        return self.tok.encode_batch(texts)

    def to_json(self) -> Any:
        return self.tok.to_json()


def encoder_for(scan: st.Scan) -> st.ChunkEncoder:
    tok = Spy(TextTokenizer.train([e for e, _ in scan.sample] + [z for _, z in scan.sample], TokenizerSpec("char")))
    parse = st.line_parser(scan.fmt, "english", "chinese", False)
    return st.ChunkEncoder(scan, parse, tok, tok, 64, DEFAULT_SPECIALS, None)


def encode_all(scan: st.Scan, encoder: st.ChunkEncoder | None = None) -> tuple[list[Any], Spy]:
    encoder = encoder or encoder_for(scan)
    return [encoder(k) for k in range(scan.chunks)], encoder.src_tok


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX thing")
def test_a_pipe_named_like_a_data_file_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pairs.tsv"
    os.mkfifo(fifo)
    try:
        for read in (load_pairs_file, load_text_file, lambda p: st.load_scan(p, settings(), None)):
            result = finishes(lambda read=read: read(fifo))
            assert isinstance(result, DataError), result
            assert str(fifo) in str(result) and "not a regular file" in str(result)
    finally:  # let a reader blocked on opening it go
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


# -- NUL bytes: bad lines wherever they are ---------------------------------------------------------------------------
def test_a_small_file_with_a_nul_line_counts_it_as_a_bad_line(tmp_path):
    path = write_lines(tmp_path / "p.tsv", ["Hi.\t你好。", b"a NUL\x00here\tb", b"\x00\x00", "Cat.\t猫。"])
    pairs, report = load_pairs_file(path)
    assert pairs == [("Hi.", "你好。"), ("Cat.", "猫。")] and report.skipped == 2
    assert report.problems == [f"line {n}: {fl.NUL_PROBLEM}" for n in (2, 3)]
    texts, report = load_text_file(write_lines(tmp_path / "t.txt", ["one", b"tw\x00o", "three"]))
    assert texts == ["one", "three"] and report.problems == [f"line 2: {fl.NUL_PROBLEM}"]
    first = write_lines(tmp_path / "first.txt", [b"\x00", "a\tb", "c\td"])  # the format is told past it
    assert load_pairs_file(first)[0] == [("a", "b"), ("c", "d")]


def test_binary_and_utf16_files_are_still_refused_with_their_own_messages(tmp_path):
    utf16 = tmp_path / "u16.tsv"
    utf16.write_bytes("".join(f"I have {n} cats.\t我有{n}只猫。\n" for n in range(40)).encode("utf-16-le"))
    for read in (load_pairs_file, lambda p: st.load_scan(p, settings(), None)):
        with pytest.raises(DataError, match="UTF-16 .*save it as UTF-8"):
            read(utf16)
    blob = tmp_path / "blob.tsv"
    blob.write_bytes(b"\x00\x01\x02\x03" * 5000)
    for read in (load_pairs_file, lambda p: st.load_scan(p, settings(), None)):
        with pytest.raises(DataError, match="looks like a binary file"):
            read(blob)


def test_nul_lines_early_in_a_streamed_file_are_bad_lines(tmp_path):
    lines: list[str | bytes] = [*rows(300)]
    lines[2] = b'{"english": "a NUL\x00", "chinese": "x"}'  # within the first 64 KB
    lines[4] = b"\x00\x00\x00"
    scan = st.load_scan(write_lines(tmp_path / "a.jsonl", lines), settings(), None)
    chunks, _ = encode_all(scan)
    assert sorted(scan.report.problems) == [f"line 3: {fl.NUL_PROBLEM}", f"line 5: {fl.NUL_PROBLEM}"]
    assert sum(len(c.src) for c in chunks) + len(scan.valid) + len(scan.test) == 298


# -- long lines --------------------------------------------------------------------------------------------------------
def test_streamed_lines_over_the_limit_are_bad_lines_never_parsed_tokenised_or_held(tmp_path, monkeypatch):
    monkeypatch.setattr(st, "LINE_LIMIT", 64 << 10)
    monkeypatch.setattr(st, "SAMPLE_BYTES", 128 << 10)  # what the encoding is told from: read whole, by design
    huge = json.dumps({"english": "x" * (2 << 20), "chinese": "y"})  # 2 MB: valid, but no sentence
    lines: list[str | bytes] = [*rows(300)]
    lines[10], lines[200] = huge, huge
    path = write_lines(tmp_path / "a.jsonl", lines)
    path.write_bytes(path.read_bytes() + b"z" * (1 << 20))  # and a last line with no end
    tracemalloc.start()
    try:
        scan = st.load_scan(path, settings(), None)
        _, scan_peak = tracemalloc.get_traced_memory()
        encoder = encoder_for(scan)
        tracemalloc.reset_peak()
        chunks, tok = encode_all(scan, encoder)
        _, encode_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert scan.lines == 301
    assert sorted(scan.report.problems) == sorted(
        f"line {n}: longer than 64 KB; split long texts into lines" for n in (11, 201, 301)
    )
    assert sum(len(c.src) for c in chunks) + len(scan.valid) + len(scan.test) == 298
    assert tok.longest < 100
    assert scan_peak < 512 << 10 and encode_peak < 512 << 10  # a long line is skipped in pieces, never held whole


def test_a_long_first_line_does_not_decide_the_encoding(tmp_path, monkeypatch):
    monkeypatch.setattr(st, "LINE_LIMIT", 64 << 10)
    monkeypatch.setattr(st, "SAMPLE_BYTES", 128 << 10)  # less than the first line: it would be cut mid-character
    first = json.dumps({"english": "xyz", "chinese": "长" * 200_000}, ensure_ascii=False)  # 128 KB: mid-character
    path = write_lines(tmp_path / "a.jsonl", [first, *rows(100)])
    scan = st.load_scan(path, settings(), None)
    encode_all(scan)
    assert scan.encoding == "utf-8" and scan.report.problems == [
        "line 1: longer than 64 KB; split long texts into lines"
    ]
    only_long = write_lines(tmp_path / "b.jsonl", [first] * 3)
    with pytest.raises(DataError, match="b.jsonl: its first lines are all longer than 64 KB"):
        st.load_scan(only_long, settings(), None)


def test_a_long_line_in_one_of_two_aligned_files_is_one_bad_line(tmp_path, monkeypatch):
    monkeypatch.setattr(st, "LINE_LIMIT", 1 << 10)
    src = write_lines(tmp_path / "src.txt", [f"sentence {i}" for i in range(100)])
    tgt_lines = [f"句子 {i}" for i in range(100)]
    tgt_lines[50] = "长" * 2000
    tgt = write_lines(tmp_path / "tgt.txt", tgt_lines)
    scan = st.load_scan(src, {**settings(), "file_format": "parallel", "target_path": str(tgt)}, None)
    parse = st.line_parser("parallel", "", "", False)
    tok = TextTokenizer.train(["sentence 句子"], TokenizerSpec("char"))
    encoder = st.ChunkEncoder(scan, parse, tok, tok, 64, DEFAULT_SPECIALS, None)
    chunks = [encoder(k) for k in range(scan.chunks)]
    assert scan.report.problems == ["line 51: longer than 1 KB; split long texts into lines"]
    assert sum(len(c.src) for c in chunks) + len(scan.valid) + len(scan.test) == 99


def test_lines_over_the_limit_are_bad_lines_in_a_file_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(fl, "LINE_LIMIT", 1000)
    path = write_lines(tmp_path / "p.tsv", ["a\tb", "x" * 2000 + "\ty", "c\td"])
    pairs, report = load_pairs_file(path)
    assert pairs == [("a", "b"), ("c", "d")] and report.problems == [
        "line 2: longer than 1000 B; split long texts into lines"
    ]
    texts, report = load_text_file(write_lines(tmp_path / "t.txt", ["one", "x" * 2000, "three"]))
    assert texts == ["one", "three"] and report.skipped == 1


def test_chunks_encoded_in_pieces_equal_chunks_encoded_whole(tmp_path, monkeypatch):
    scan = st.load_scan(write_lines(tmp_path / "a.jsonl", rows(300)), settings(), None)
    whole, _ = encode_all(scan)
    monkeypatch.setattr(st, "ENCODE_BYTES", 500)  # a few lines at a time
    pieces, _ = encode_all(scan)
    assert [(c.src, c.tgt, c.truncated) for c in pieces] == [(c.src, c.tgt, c.truncated) for c in whole]


def test_held_lines_stay_within_their_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(st, "HELD_BYTES", 20 << 10)
    path = write_lines(tmp_path / "a.jsonl", rows(2000))
    scan = st.load_scan(path, settings(tokenizer_sample=1000), None)
    held = scan.valid + scan.test + scan.sample
    assert len(scan.valid) == 5 and len(scan.test) == 5 and 100 < len(held) < 1010
    assert sum(len(json.dumps({"english": e, "chinese": z})) for e, z in held) <= 20 << 10
    monkeypatch.setattr(st, "HELD_BYTES", 1 << 30)
    full = st.load_scan(path, settings(tokenizer_sample=1000), None)
    assert scan.valid == full.valid and scan.test == full.test and scan.sample == full.sample[: len(scan.sample)]


def test_json_nested_past_the_parsers_depth_is_a_bad_line(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    pairs, report = load_pairs_file(write_lines(tmp_path / "p.jsonl", [*rows(3), deep]))
    assert len(pairs) == 3 and report.problems == ["line 4: not valid JSON (nested too deep)"]
    scan = st.load_scan(write_lines(tmp_path / "s.jsonl", [*rows(100), deep]), settings(), None)
    encode_all(scan)
    assert scan.report.problems == ["line 101: not valid JSON (nested too deep)"]
