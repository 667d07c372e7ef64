"""Streamed pair files: the hash split, chunks, bad lines, encodings, the cache and exact resumption."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from model.data import DataError, DataSpec, load_corpus
from model.data import stream as st
from model.data.batching import DEFAULT_SPECIALS
from model.data.tokenization import TextTokenizer, TokenizerSpec
from model.session import Session
from model.training.trainer import TrainConfig


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(st, "CHUNK_LINES", 40)  # many chunks from a small file


def pairs(n: int, start: int = 0) -> list[tuple[str, str]]:
    return [(f"sentence number {i} is here", f"第{i}个句子在这里") for i in range(start, start + n)]


def write_jsonl(path: Path, rows: list[tuple[str, str]], extra: dict[int, str] | None = None) -> Path:
    lines = [json.dumps({"english": e, "chinese": z}, ensure_ascii=False) for e, z in rows]
    for at, bad in sorted((extra or {}).items()):
        lines.insert(at, bad)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def settings(**over) -> dict:
    base = dict(
        file_format="auto",
        src_key="english",
        tgt_key="chinese",
        swap=False,
        valid_size=20,
        test_size=10,
        tokenizer_sample=50,
    )
    return {**base, **over}


def encoder_for(scan: st.Scan, cache: Path | None = None) -> st.ChunkEncoder:
    texts = [e for e, _ in scan.sample] + [z for _, z in scan.sample]
    tok = TextTokenizer.train(texts, TokenizerSpec("char", 500))
    parse = st.line_parser(scan.fmt, "english", "chinese", False)
    return st.ChunkEncoder(scan, parse, tok, tok, 64, DEFAULT_SPECIALS, cache)


def test_the_hash_split_is_exact_stable_and_independent_of_line_order(tmp_path):
    rows = pairs(1000)
    a = st.load_scan(write_jsonl(tmp_path / "a.jsonl", rows), settings(), None)
    b = st.load_scan(write_jsonl(tmp_path / "b.jsonl", rows[::-1]), settings(), None)
    assert (len(a.valid), len(a.test), len(a.sample)) == (20, 10, 50)
    assert set(a.valid) == set(b.valid) and set(a.test) == set(b.test)  # by the line, not its place
    assert not set(a.valid) & set(a.test) and not (set(a.valid) | set(a.test)) & set(a.sample)
    # the held-out lines are those with the smallest hashes: recompute them independently
    line = {p: json.dumps({"english": p[0], "chinese": p[1]}, ensure_ascii=False).encode() for p in rows}
    ranked = sorted(
        rows, key=lambda p: int.from_bytes(__import__("hashlib").blake2b(line[p], digest_size=8).digest(), "little")
    )
    assert a.valid == ranked[:20] and a.test == ranked[20:30] and a.sample == ranked[30:80]
    assert a.lines == 1000 and a.chunks == 25 and a.offsets[1] == sum(len(line[p]) + 1 for p in rows[:40])


def test_an_epoch_trains_on_every_other_line_once_and_ranks_share_it(tmp_path):
    rows = pairs(1000)
    scan = st.load_scan(write_jsonl(tmp_path / "a.jsonl", rows), settings(), None)
    enc = encoder_for(scan)
    held = set(scan.valid) | set(scan.test)
    expected = Counter(tuple(enc.src_tok.encode_ids(e)[:63]) for e, z in rows if (e, z) not in held)

    def epoch_sources(world: int) -> Counter:
        seen: Counter = Counter()
        for rank in range(world):
            s = st.StreamedBatches(enc, 16, seed=3, rank=rank, world=world)
            while s.epoch == 0:
                batch = next(s)
                if s.epoch == 0:
                    for row in batch.src.tolist():
                        seen[tuple(i for i in row if i != DEFAULT_SPECIALS.pad)[:-1]] += 1
        return seen

    assert epoch_sources(1) == expected
    assert epoch_sources(2) == expected  # two ranks: disjoint shares that make up the epoch


def test_a_resumed_stream_gives_exactly_the_next_batches(tmp_path):
    scan = st.load_scan(write_jsonl(tmp_path / "a.jsonl", pairs(600)), settings(), None)
    enc = encoder_for(scan)
    s = st.StreamedBatches(enc, 8, seed=1)
    for _ in range(23):  # past a chunk's end
        next(s)
    state = s.state_dict()
    ahead = [next(s).src.tolist() for _ in range(40)]  # across chunks and into the next epoch
    resumed = st.StreamedBatches(enc, 8, seed=1, **state)
    assert [next(resumed).src.tolist() for _ in range(40)] == ahead
    other_epoch = st.StreamedBatches(enc, 8, seed=1, epoch=1)
    assert next(other_epoch).src.tolist() != next(st.StreamedBatches(enc, 8, seed=1)).src.tolist()


def test_bad_lines_are_counted_with_their_line_numbers_as_the_stream_reaches_them(tmp_path):
    rows = pairs(300)
    path = write_jsonl(tmp_path / "a.jsonl", rows, {5: "not json at all", 100: '{"english": "x"}', 201: ""})
    scan = st.load_scan(path, settings(valid_size=5, test_size=5), None)
    enc = encoder_for(scan)
    for k in range(scan.chunks):
        enc(k)
        enc(k)  # a chunk read twice is counted once
    assert scan.report.skipped == 2  # the blank line is not a bad line
    assert any(p.startswith("line 6: not valid JSON") for p in scan.report.problems)
    assert any(p.startswith("line 101: no 'chinese' key") for p in scan.report.problems)


def test_encodings_a_gb18030_file_and_a_damaged_utf8_line(tmp_path):
    rows = pairs(200)
    gb = tmp_path / "gb.tsv"
    gb.write_bytes("".join(f"{e}\t{z}\n" for e, z in rows).encode("gb18030"))
    scan = st.load_scan(gb, settings(valid_size=5, test_size=5), None)
    assert scan.encoding == "gb18030" and scan.fmt == "tsv"
    assert set(scan.valid) <= set(rows)
    broken = tmp_path / "broken.tsv"
    data = "".join(f"{e}\t{z}\n" for e, z in rows).encode("utf-8").split(b"\n")
    data[150] = data[150][:-2] + b"\xff\xfe"
    broken.write_bytes(b"\n".join(data))
    scan = st.load_scan(broken, settings(valid_size=5, test_size=5), None)
    enc = encoder_for(scan)
    for k in range(scan.chunks):
        enc(k)
    assert scan.report.skipped == 1 and "line 151: not valid UTF-8" in scan.report.problems[0]


def test_the_cache_gives_the_same_ids_without_reading_the_file_again(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "a.jsonl", pairs(400))
    cache = tmp_path / "cache"
    scan = st.load_scan(path, settings(), cache)
    enc = encoder_for(scan, cache)
    first = [enc(k) for k in range(scan.chunks)]

    def no_reading(*args, **kwargs):
        raise AssertionError("the file was scanned again")

    monkeypatch.setattr(st, "scan", no_reading)
    again = st.load_scan(path, settings(), cache)
    assert again.valid == scan.valid and again.offsets == scan.offsets
    enc2 = encoder_for(again, cache)
    monkeypatch.setattr(enc2, "_encode", no_reading)
    assert [(c.src, c.tgt) for c in (enc2(k) for k in range(scan.chunks))] == [(c.src, c.tgt) for c in first]
    path.write_text(path.read_text("utf-8") + '{"english": "one more", "chinese": "再一个"}\n', "utf-8")
    with pytest.raises(AssertionError, match="scanned again"):  # a changed file is scanned again
        st.load_scan(path, settings(), cache)


def test_too_small_a_file_and_unstreamable_formats_get_messages(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", pairs(25))
    with pytest.raises(DataError, match="too few to hold out 20 valid and 10 test"):
        st.load_scan(path, settings(), None)
    (tmp_path / "u16.tsv").write_bytes("a\tb\n".encode("utf-16"))
    with pytest.raises(DataError, match="UTF-16 .* save it as UTF-8"):
        st.load_scan(tmp_path / "u16.tsv", settings(), None)
    with pytest.raises(DataError, match="no such file"):
        st.load_scan(tmp_path / "missing.tsv", settings(), None)


def test_a_session_trains_saves_and_resumes_on_a_streamed_file(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", pairs(700))
    spec = DataSpec(task=None, path=str(path), stream=True, valid_size=30, test_size=30, tokenizer_sample=100)
    corpus = load_corpus(spec)
    assert corpus.stream is not None and corpus.n_train == 640 and len(corpus.train) == 100
    train = TrainConfig(batch_size=16, eval_every=0, seed=2)
    s = Session.create(spec, "tiny", train, TokenizerSpec("char", 300), data_cache=tmp_path / "cache")
    s.train_steps(30)
    s.save(tmp_path / "m.ckpt")
    s.train_steps(10)
    after = [p.detach().clone() for p in s.model.parameters()]
    r = Session.load(tmp_path / "m.ckpt")
    r.data_cache = tmp_path / "cache"
    r.train_steps(10)
    for a, b in zip(after, r.model.parameters()):
        assert (a - b).abs().max() < 1e-5  # the same ten batches, from the same place in the stream
    assert r.evaluate("valid", 5)["sentences"] == 5


def test_the_window_streams_a_big_file_with_its_progress_in_the_status_bar(make_window, qtbot, tmp_path, monkeypatch):
    pytest.importorskip("pytestqt")
    from explorer.commands import Pause

    monkeypatch.setattr(st, "STREAM_FROM_BYTES", 10_000)  # this file counts as big
    monkeypatch.setattr("explorer.engine_files.data_cache_dir", lambda: tmp_path / "cache")
    path = write_jsonl(tmp_path / "big.jsonl", pairs(2600))
    window = make_window()
    notes = []
    window.engine.load_progressed.connect(lambda p: notes.append((p.stage, window.note_label.toolTip())))
    window.training.form.set_data_file(str(path))
    window.train_from_scratch()
    qtbot.waitUntil(lambda: window.status.step >= 3, timeout=60000)
    window.engine.submit(Pause())
    assert any(
        stage == "reading" and note.startswith("Preparing big.jsonl — reading…") and "MB/s" in note
        for stage, note in notes
    ), notes
    assert (
        "training the tokenizers",
        "Preparing big.jsonl — training the tokenizers… on a sample of 600 pairs",
    ) in notes
    qtbot.waitUntil(lambda: window.data_panel.data is not None, timeout=30000)
    info = window.data_panel.data.corpus
    assert (info.train, info.valid, info.test) == (600, 1000, 1000)  # held out by the hash, 1,000 each
    assert list((tmp_path / "cache").glob("scan-*.json")) and list((tmp_path / "cache").glob("chunks-*/*.npz"))


def test_a_text_file_streams_for_the_single_stream_families(tmp_path):
    path = tmp_path / "lines.txt"
    lines = [f"line {i} of the text" for i in range(500)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = DataSpec(
        task=None, path=str(path), file_format="text", stream=True, valid_size=20, test_size=20, tokenizer_sample=100
    )
    train = TrainConfig(batch_size=8, eval_every=0, seed=4)
    gpt = Session.create(spec, "tiny", train, TokenizerSpec("word"), arch="decoder_only")
    corpus = gpt.corpus
    assert corpus.monolingual and corpus.n_train == 460 and not set(corpus.texts("valid")) & set(corpus.texts("train"))
    held = set(corpus.texts("valid")) | set(corpus.texts("test"))
    stream = gpt._make_stream()
    seen = []
    while stream.epoch == 0:
        batch = next(stream)
        if stream.epoch == 0:
            seen += [tuple(i for i in row[1:] if i != gpt.specials.pad) for row in batch.ids.tolist()]
    want = [tuple(gpt.tgt_tok.encode_ids(t)) for t in lines if t not in held]
    assert sorted(seen) == sorted(want)  # every training line once, each after BOS (language-model batches)
    state = stream.state_dict()
    ahead = [next(stream).ids.tolist() for _ in range(5)]
    assert [next(gpt._make_stream(**state)).ids.tolist()] == ahead[:1]
    bert = Session.create(
        spec, "tiny", TrainConfig(batch_size=8, eval_every=0, nsp=True), TokenizerSpec("word"), arch="encoder_only"
    )
    records = bert.train_steps(3)
    assert all(np.isfinite(r.loss) for r in records) and "nsp_accuracy" in bert.evaluate("valid", 5)


def test_a_streamed_run_resumes_with_another_number_of_ranks_where_it_was(tmp_path):
    scan = st.load_scan(write_jsonl(tmp_path / "a.jsonl", pairs(900)), settings(), None)
    enc = encoder_for(scan)
    two = st.StreamedBatches(enc, 8, seed=1, rank=0, world=2)
    while two.chunk < 3:  # rank 0 of two has finished 3 chunks: 6 of the epoch's are done
        next(two)
    state = two.state_dict()
    assert state["chunk"] == 6
    one = st.StreamedBatches(enc, 8, seed=1, world=1, **state)
    assert (one.epoch, one.chunk) == (0, 6)
    four = st.StreamedBatches(enc, 8, seed=1, rank=3, world=4, **state)
    assert (four.epoch, four.chunk) == (0, 1)  # its second chunk: epoch chunks 7 (= 1 · 4 + 3) and on


def test_two_aligned_files_stream_side_by_side(tmp_path):
    rows = pairs(700)
    src, tgt = tmp_path / "train.en", tmp_path / "train.zh"
    src.write_text("".join(e + "\n" for e, _ in rows), encoding="utf-8")
    zh = [z for _, z in rows]
    zh[300] = ""  # a line without its translation
    tgt.write_text("\ufeff" + "".join(z + "\n" for z in zh), encoding="utf-8")  # a byte-order mark on one side
    spec = DataSpec(
        task=None, path=str(src), target_path=str(tgt), stream=True, valid_size=20, test_size=10, tokenizer_sample=50
    )
    corpus = load_corpus(spec)
    scan = corpus.stream
    assert scan is not None and scan.target_path == str(tgt) and scan.fmt == "parallel"
    assert set(corpus.valid) <= set(rows) and set(corpus.test) <= set(rows) and set(corpus.train) <= set(rows)
    enc = encoder_for(scan)
    got = [p for k in range(scan.chunks) for p in zip(*_texts(enc, k))]
    assert scan.report.skipped == 1 and scan.report.problems[0] == "line 301: empty target"
    held = set(corpus.valid) | set(corpus.test)
    want = [(e, z) for i, (e, z) in enumerate(rows) if (e, z) not in held and i != 300]
    ids = sorted((tuple(enc.src_tok.encode_ids(e)), tuple(enc.tgt_tok.encode_ids(z))) for e, z in want)
    assert sorted((tuple(a), tuple(b)) for a, b in got) == ids  # every training pair once, aligned
    tgt.write_text("".join(z + "\n" for z in zh[:-3]), encoding="utf-8")
    with pytest.raises(DataError, match=r"misaligned: .*train.en has 700 lines but .*train.zh has 697"):
        load_corpus(spec)
    tgt.write_bytes("".join(z + "\n" for z in zh).encode("gb18030"))
    with pytest.raises(DataError, match="need one encoding; save both as UTF-8"):
        load_corpus(spec)


def _texts(enc: st.ChunkEncoder, k: int) -> tuple[list[list[int]], list[list[int]]]:
    chunk = enc(k)
    return [s[:-1] for s in chunk.src], chunk.tgt  # the source without its EOS
