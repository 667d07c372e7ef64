import json

import pytest
import torch

from model.data import BatchStream, DataError, DataSpec, collate, encode_pairs, load_corpus, load_pairs_file
from model.data.batching import IGNORE, Specials
from model.data.grammar import generate_grammar, vocabulary
from model.data.tokenization import BOS_ID, EOS_ID, PAD_ID, TextTokenizer, TokenizerSpec

# -- generated tasks -----------------------------------------------------------------------


@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_symbol_tasks_are_right_and_held_out(task):
    corpus = load_corpus(DataSpec(task=task, n_train=2000, n_valid=100, n_test=100, length=8, min_length=3))
    for src, tgt in corpus.train[:200] + corpus.test:
        s = [int(x) for x in src.split()]
        expected = {"copy": s, "reverse": s[::-1], "sort": sorted(s)}[task]
        assert [int(x) for x in tgt.split()] == expected
        assert 3 <= len(s) <= 8
    train = {s for s, _ in corpus.train}
    assert not train & {s for s, _ in corpus.valid} and not train & {s for s, _ in corpus.test}
    assert len(train) == 2000


def test_symbol_task_refuses_impossible_sizes():
    with pytest.raises(ValueError, match="distinct sequences"):
        load_corpus(DataSpec(task="copy", length=2, min_length=2, alphabet=3, n_train=100))


def test_grammar_splits_hold_out_combinations():
    splits = generate_grammar(n_train=6000, n_valid=300, n_test=300, seed=3)
    train_keys = {s.key for s in splits.train}
    valid_keys, test_keys = {s.key for s in splits.valid}, {s.key for s in splits.test}
    assert not train_keys & valid_keys and not train_keys & test_keys and not valid_keys & test_keys
    # ...while every word of a held-out combination is seen in training, in other combinations
    train_parts = {part for key in train_keys for part in key}
    assert all(part in train_parts for key in test_keys for part in key)
    assert {s.en for s in splits.train}.isdisjoint(s.en for s in splits.test)
    assert {s.kind for s in splits.test} == {"action", "adjective", "copula", "location"}


def test_grammar_is_deterministic_and_large_enough():
    a, b = generate_grammar(500, 50, 50, seed=7), generate_grammar(500, 50, 50, seed=7)
    assert [s.en for s in a.train] == [s.en for s in b.train]
    assert [s.en for s in generate_grammar(500, 50, 50, seed=8).train] != [s.en for s in a.train]
    en, zh = vocabulary()
    assert len(en) >= 200 and len(zh) >= 200


def test_grammar_teaches_its_points():
    pairs = {s.en: s.zh for s in generate_grammar(20000, 10, 10, seed=0).train}
    text = " ".join(pairs.values())
    for point in ("了", "吗？", "不", "没", "很", "非常", "的", "两", "本", "只", "杯", "昨天", "明天", "在"):
        assert point in text, point
    # time words move before the verb; English keeps them at the end
    moved = [(e, z) for e, z in pairs.items() if e.endswith(" yesterday.") and "before" not in e and " in the " in e]
    assert moved
    e, z = moved[0]
    assert z.index("昨天") < z.index("在")
    # questions: English inverts, Chinese ends in 吗？
    for e, z in pairs.items():
        if e.startswith(("Does ", "Did ", "Will ")):
            assert z.endswith("吗？")
        if " did not " in e:
            assert "没" in z and "了" not in z


def test_grammar_tasks_run_both_ways():
    en_zh = load_corpus(DataSpec(task="grammar-en-zh", n_train=100, n_valid=10, n_test=10))
    zh_en = load_corpus(DataSpec(task="grammar-zh-en", n_train=100, n_valid=10, n_test=10))
    assert (en_zh.src_lang, en_zh.tgt_lang, zh_en.src_lang, zh_en.tgt_lang) == ("en", "zh", "zh", "en")
    assert [(t, s) for s, t in en_zh.test] == zh_en.test
    assert en_zh.reference_for(en_zh.test[0][0]) == en_zh.test[0][1]


def test_hsk_pairs_come_from_the_installed_package():
    corpus = load_corpus(DataSpec(task="hsk-en-zh"))
    total = len(corpus.train) + len(corpus.valid) + len(corpus.test)
    assert total == 4354
    assert corpus.src_lang == "en" and corpus.tgt_lang == "zh"
    assert set(corpus.train).isdisjoint(corpus.test)
    again = load_corpus(DataSpec(task="hsk-en-zh", seed=99))
    assert again.test == corpus.test  # the split is fixed, whatever the seed


def test_missing_hsk_package_says_how_to_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_hsk(name, *args, **kwargs):
        if name == "hsk_sentences_audio":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_hsk)
    with pytest.raises(DataError, match="pip install hsk-sentences-audio"):
        load_corpus(DataSpec(task="hsk-zh-en"))


def test_unknown_task_is_refused():
    with pytest.raises(DataError, match="unknown task"):
        DataSpec(task="translate-everything")


# -- user files ------------------------------------------------------------------------------


def write(tmp_path, name, content, encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode(encoding))
    return path


def test_tsv_pairs_extra_columns_and_bad_lines(tmp_path):
    path = write(
        tmp_path,
        "pairs.tsv",
        "Hello.\t你好。\tCC-BY 2.0 (France) Attribution: tatoeba.org #1\n"
        "no tab here\n"
        "\n"
        "Thanks.\t谢谢。\n"
        "\t空的\n"
        "Bye.\t再见。\n",
    )
    pairs, report = load_pairs_file(path)
    assert pairs == [("Hello.", "你好。"), ("Thanks.", "谢谢。"), ("Bye.", "再见。")]
    assert report.skipped == 2 and report.kept == 3
    assert report.problems == ["line 2: no tab between source and target", "line 5: empty source"]
    assert "2 bad lines skipped" in report.summary()


def test_jsonl_default_and_chosen_keys(tmp_path):
    lines = [
        json.dumps({"english": "I am here.", "chinese": "我在这儿。"}, ensure_ascii=False),
        "{not json",
        json.dumps({"en": "x"}),
        json.dumps(["a", "b"]),
        json.dumps({"english": "Good.", "chinese": "好。"}, ensure_ascii=False),
    ]
    path = write(tmp_path, "t.jsonl", "\n".join(lines) + "\n")
    pairs, report = load_pairs_file(path)
    assert pairs == [("I am here.", "我在这儿。"), ("Good.", "好。")]
    assert [p.split(":")[0] for p in report.problems] == ["line 2", "line 3", "line 4"]
    assert "not valid JSON" in report.problems[0] and "'english'" in report.problems[1]
    other = write(tmp_path, "o.jsonl", json.dumps({"src": "a", "dst": "b"}) + "\n")
    assert load_pairs_file(other, src_key="src", tgt_key="dst")[0] == [("a", "b")]


def test_parallel_files_and_misalignment(tmp_path):
    src = write(tmp_path, "a.en", "One.\nTwo.\n\nFour.\n")
    tgt = write(tmp_path, "a.zh", "一。\n二。\n三。\n四。\n")
    pairs, report = load_pairs_file(src, target_path=tgt)
    assert pairs == [("One.", "一。"), ("Two.", "二。"), ("Four.", "四。")]
    assert report.problems == ["line 3: empty source"]
    short = write(tmp_path, "b.zh", "一。\n二。\n")
    with pytest.raises(DataError, match="misaligned: .* has 4 lines but .* has 2"):
        load_pairs_file(src, target_path=short)


def test_encodings_bom_and_gb18030(tmp_path):
    bom = write(tmp_path, "bom.tsv", b"\xef\xbb\xbf" + "Hi.\t你好。\n".encode())
    pairs, report = load_pairs_file(bom)
    assert pairs == [("Hi.", "你好。")] and report.encoding == "utf-8-sig"
    gb = write(tmp_path, "gb.tsv", "Hi.\t你好。\nCat.\t猫。\n", encoding="gb18030")
    pairs, report = load_pairs_file(gb)
    assert pairs == [("Hi.", "你好。"), ("Cat.", "猫。")] and report.encoding == "gb18030"


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "is empty"),
        (b"  \n\n ", "is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "looks like a binary file"),
        (b"just one column\nand another\n", "cannot tell the format"),
        (b"a\tb\n\xff\xfe\xfa\xff\xff\xff\n", "neither UTF-8 nor GB18030 .*line 2"),
        (b"only\nlines without tabs\n\tempty\n", "cannot tell the format"),
    ],
)
def test_bad_files_say_what_is_wrong(tmp_path, content, message):
    path = write(tmp_path, "bad.txt", content)
    with pytest.raises(DataError, match=message):
        load_pairs_file(path)


def test_file_with_no_usable_pairs_and_missing_file(tmp_path):
    path = write(tmp_path, "x.tsv", "a\t\n\tb\n")
    with pytest.raises(DataError, match="no usable sentence pairs .*line 1: empty target"):
        load_pairs_file(path)
    with pytest.raises(DataError, match="no such file"):
        load_pairs_file(tmp_path / "missing.tsv")


def test_user_file_corpus_splits_and_swap(tmp_path):
    rows = "".join(f"Sentence {i}.\t句子{i}。\n" for i in range(100))
    path = write(tmp_path, "c.tsv", rows)
    corpus = load_corpus(DataSpec(task=None, path=str(path)))
    assert (len(corpus.train), len(corpus.valid), len(corpus.test)) == (90, 5, 5)
    assert corpus.src_lang == "en" and corpus.tgt_lang == "zh"
    swapped = load_corpus(DataSpec(task=None, path=str(path), swap=True))
    assert swapped.src_lang == "zh" and swapped.test == [(t, s) for s, t in corpus.test]


# -- batching ----------------------------------------------------------------------------------


def toks():
    return TextTokenizer.train(["a b c d e f g"], TokenizerSpec("word"))


def test_shift_right_and_padding():
    tok = toks()
    enc = encode_pairs([("a b c", "d e"), ("a", "f g a b")], tok, tok, max_len=16)
    batch = collate(enc.src, enc.tgt)
    a, b, c, d, e, f, g = (tok.encode_ids(x)[0] for x in "abcdefg")
    assert batch.src.tolist() == [[a, b, c, EOS_ID], [a, EOS_ID, PAD_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[BOS_ID, d, e, PAD_ID, PAD_ID], [BOS_ID, f, g, a, b]]
    assert batch.tgt_out.tolist() == [[d, e, EOS_ID, -100, -100], [f, g, a, b, EOS_ID]]  # not predicted
    assert batch.n_tokens == 3 + 5


def test_batches_take_the_models_own_special_ids():
    """A model opened from elsewhere (Marian: start = pad = 9, end = 0) gets its batches laid out with its ids."""
    tok = toks()
    specials = Specials(pad=9, bos=9, eos=0)
    enc = encode_pairs([("a b", "d"), ("a", "f g")], tok, tok, max_len=16, specials=specials)
    batch = collate(enc.src, enc.tgt, enc.specials)
    a, b, d, f, g = (tok.encode_ids(x)[0] for x in "abdfg")
    assert batch.src.tolist() == [[a, b, 0], [a, 0, 9]]
    assert batch.tgt_in.tolist() == [[9, d, 9], [9, f, g]]
    assert batch.tgt_out.tolist() == [[d, 0, -100], [f, g, 0]]


def test_pad_positions_do_not_count_in_the_loss():
    tok = toks()
    batch = collate(*(lambda e: (e.src, e.tgt))(encode_pairs([("a", "b c d e f"), ("a", "b")], tok, tok, 16)))
    logits = torch.randn(*batch.tgt_out.shape, tok.vocab_size)
    loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), batch.tgt_out, ignore_index=IGNORE)
    changed = logits.clone()
    changed[batch.tgt_in == PAD_ID] = 1e3  # garbage where the pads are
    again = torch.nn.functional.cross_entropy(changed.transpose(1, 2), batch.tgt_out, ignore_index=IGNORE)
    assert torch.allclose(loss, again)


def test_long_sentences_are_truncated_and_counted():
    tok = toks()
    enc = encode_pairs([("a b c d e f g", "a b"), ("a", "b"), ("a", "a b c d e f g")], tok, tok, max_len=4)
    assert enc.truncated == 2
    assert all(len(s) <= 4 and s[-1] == EOS_ID for s in enc.src)
    assert all(len(t) <= 3 for t in enc.tgt)


def test_batch_stream_buckets_and_resumes_exactly():
    tok = TextTokenizer.train(["x"], TokenizerSpec("word"))
    corpus = load_corpus(DataSpec(task="copy", n_train=3000, length=12, min_length=1))
    enc = encode_pairs(corpus.train, tok, tok, 64)
    stream = BatchStream(enc, batch_size=50, seed=1)
    batches = [next(stream) for _ in range(130)]  # crosses an epoch boundary (60 batches)
    assert stream.epoch == 2
    pad_share = sum((b.src == PAD_ID).sum().item() for b in batches) / sum(b.src.numel() for b in batches)
    assert pad_share < 0.15  # bucketing: random lengths 1-12 would pad ~40%
    stream2 = BatchStream(enc, batch_size=50, seed=1)
    for _ in range(70):
        next(stream2)
    resumed = BatchStream(enc, batch_size=50, seed=1, **stream2.state_dict())
    assert all(torch.equal(next(resumed).src, b.src) for b in batches[70:])
    assert not torch.equal(next(BatchStream(enc, 50, seed=2)).src, batches[0].src)


def test_unicode_line_separators_inside_a_record_do_not_split_it(tmp_path):
    record = json.dumps({"english": "a\u2028b", "chinese": "甲\x0c乙"}, ensure_ascii=False)
    path = write(tmp_path, "sep.jsonl", record + "\n" + json.dumps({"english": "c", "chinese": "丙"}) + "\n")
    pairs, report = load_pairs_file(path)
    assert pairs == [("a\u2028b", "甲\x0c乙"), ("c", "丙")] and report.skipped == 0


def test_utf16_files_with_a_byte_order_mark(tmp_path):
    path = write(tmp_path, "excel.txt", "Hi.\t你好。\nCat.\t猫。\n".encode("utf-16"))  # BOM + UTF-16
    pairs, report = load_pairs_file(path)
    assert pairs == [("Hi.", "你好。"), ("Cat.", "猫。")] and report.encoding == "utf-16"
    broken = write(tmp_path, "broken.tsv", b"\xef\xbb\xbfHi.\t\xff\xfe\n")
    with pytest.raises(DataError, match="starts like UTF-8 but is not valid UTF-8"):
        load_pairs_file(broken)


@pytest.mark.parametrize("codec, order", [("utf-16-le", "little-endian"), ("utf-16-be", "big-endian")])
def test_utf16_without_a_byte_order_mark_is_named_with_the_fix(tmp_path, codec, order):
    text = "".join(f"I have {n} cats.\t我有{n}只猫。\n" for n in range(40))
    path = write(tmp_path, "no-bom.tsv", text.encode(codec))
    with pytest.raises(DataError) as info:
        load_pairs_file(path)
    message = str(info.value)
    assert str(path) in message and f"UTF-16 text ({order}) without a byte-order mark" in message
    assert "save it as UTF-8" in message and "binary" not in message
    # Chinese-only lines have zero bytes only in their line breaks: still recognised (two aligned files)
    zh = write(tmp_path, "zh.txt", "".join("我有猫。\n" for _ in range(40)).encode(codec))
    en = write(tmp_path, "en.txt", "".join("I have cats.\n" for _ in range(40)))
    with pytest.raises(DataError, match=f"{order}.*save it as UTF-8"):
        load_pairs_file(en, target_path=zh)


def test_real_binary_data_is_not_mistaken_for_utf16(tmp_path):
    import zlib

    packed = zlib.compress("".join(f"I have {n} cats.\t我有{n}只猫。\n" for n in range(4000)).encode())
    for content in (packed, bytes(range(256)) * 64):
        with pytest.raises(DataError, match="looks like a binary file"):
            load_pairs_file(write(tmp_path, "data.tsv", content))


@pytest.mark.parametrize("fmt", ["tsv", "jsonl", "parallel"])
def test_a_nul_byte_past_the_first_64_kb_never_reaches_a_pair(tmp_path, fmt):
    n, bad = 4000, 3500  # lines of at least 24 bytes: line 3,501 starts past byte 65,536
    src = [f"sentence number {i} here" for i in range(n)]
    tgt = [f"第{i}句话" for i in range(n)]
    src[bad] = "a NUL\x00hides here"
    if fmt == "tsv":
        path, target = write(tmp_path, "p.tsv", "".join(f"{s}\t{t}\n" for s, t in zip(src, tgt))), None
    elif fmt == "jsonl":
        lines = [json.dumps({"english": s, "chinese": t}, ensure_ascii=False) for s, t in zip(src, tgt)]
        path, target = write(tmp_path, "p.jsonl", "\n".join(lines) + "\n"), None
    else:
        path = write(tmp_path, "src.txt", "".join(s + "\n" for s in src))
        target = write(tmp_path, "tgt.txt", "".join(t + "\n" for t in tgt))
    nul = b"\\u0000" if fmt == "jsonl" else b"\x00"  # JSON writes it escaped; it decodes to the same character
    assert path.read_bytes().index(nul) > 65536
    pairs, report = load_pairs_file(path, target_path=target)
    assert not any("\x00" in s or "\x00" in t for s, t in pairs)
    assert len(pairs) == n - 1 and report.skipped == 1
    assert report.problems == [f"line {bad + 1}: contains a NUL byte (binary data, not text)"]
