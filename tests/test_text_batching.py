"""Single-text data for decoder-only (language model) and encoder-only (masked LM) models."""

import math
import random

import pytest
import torch

from model.data import (
    IGNORE,
    DataError,
    DataSpec,
    EncodedTexts,
    LMBatch,
    MLMBatch,
    TextStream,
    encode_texts,
    is_monolingual,
    load_corpus,
    load_pairs_file,
    load_text_file,
    mask_tokens,
    nsp_examples,
    text_batches_in_order,
)
from model.data.hsk import load_hsk_pairs
from model.data.tokenization import BOS_ID, EOS_ID, PAD_ID, UNK_ID, TextTokenizer, TokenizerSpec

MASK_ID, FIRST_REGULAR = 4, 5  # an encoder-only tokenizer: the four specials, then <mask>
MLM = {"vocab_size": 60, "mask_id": MASK_ID, "first_regular_id": FIRST_REGULAR}


def within(count: int, n: int, p: float, sigmas: float = 4) -> bool:
    """Whether ``count`` successes in ``n`` trials fit probability ``p`` within ``sigmas`` standard deviations."""
    return abs(count - n * p) <= sigmas * math.sqrt(n * p * (1 - p))


# -- tasks and files --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "task, side, lang",
    [("text-grammar-en", 0, "en"), ("text-grammar-zh", 1, "zh"), ("text-hsk-en", 0, "en"), ("text-hsk-zh", 1, "zh")],
)
def test_text_tasks_hold_one_side_of_the_bilingual_task(task, side, lang):
    spec = DataSpec(task=task, n_train=120, n_valid=15, n_test=12, seed=4)
    corpus = load_corpus(spec)
    assert is_monolingual(spec) and corpus.monolingual
    assert corpus.src_lang == corpus.tgt_lang == lang
    pair_task = task.replace("text-", "").rsplit("-", 1)[0] + "-en-zh"
    pairs = load_corpus(DataSpec(task=pair_task, n_train=120, n_valid=15, n_test=12, seed=4))
    for split in ("train", "valid", "test"):
        assert corpus.texts(split) == [p[side] for p in pairs.split(split)]
        assert all(s == t for s, t in corpus.split(split))
    if "hsk" in task:
        assert [len(corpus.split(s)) for s in ("train", "valid", "test")] == [len(p) for p in load_hsk_pairs()]
    else:
        assert (len(corpus.train), len(corpus.valid), len(corpus.test)) == (120, 15, 12)
    assert not pairs.monolingual and not is_monolingual(pairs.spec)


def write(tmp_path, name, content: bytes):
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_text_file_reports_blank_and_undecodable_lines(tmp_path):
    content = b"First line.\n\n   \n" + b"bad \xff line\n" + "第二行。\r\nThird.\nFourth.\n".encode()
    texts, report = load_text_file(write(tmp_path, "notes.txt", content))
    assert texts == ["First line.", "第二行。", "Third.", "Fourth."]
    assert report.kept == 4 and report.skipped == 3
    bad = "line 4: not valid UTF-8 (undecodable bytes)"
    assert report.problems == ["line 2: empty line", "line 3: empty line", bad]
    assert report.summary().startswith("4 lines read from") and "3 bad lines skipped" in report.summary()


def test_text_file_that_is_mostly_undecodable_is_refused(tmp_path):
    path = write(tmp_path, "latin.txt", b"ok\n\xff\xfa one\n\xff\xfa two\n")
    with pytest.raises(DataError, match="neither UTF-8 nor GB18030"):
        load_text_file(path)
    with pytest.raises(DataError, match="load_text_file"):
        load_pairs_file(write(tmp_path, "t.txt", b"a\nb\n"), "text")
    with pytest.raises(DataError, match="one side"):
        DataSpec(task=None, path="a.txt", target_path="b.txt", file_format="text")


def test_text_file_corpus_is_monolingual_and_keeps_line_order(tmp_path):
    lines = [f"Sentence number {i}." for i in range(40)]
    path = write(tmp_path, "doc.txt", ("\n".join(lines) + "\n").encode())
    spec = DataSpec(task=None, path=str(path), file_format="text", held_out_fraction=0.1)
    corpus = load_corpus(spec)
    assert is_monolingual(spec) and corpus.monolingual and corpus.src_lang == corpus.tgt_lang == "en"
    assert (len(corpus.train), len(corpus.valid), len(corpus.test)) == (32, 4, 4)
    assert sorted(corpus.texts("train") + corpus.texts("valid") + corpus.texts("test")) == sorted(lines)
    assert corpus.texts("train") == [t for t in lines if t in set(corpus.texts("train"))]  # in file order
    assert corpus.report is not None and corpus.report.kept == 40
    few = write(tmp_path, "few.txt", b"one\n\ntwo\n")
    with pytest.raises(DataError, match="2 usable lines are too few"):
        load_corpus(DataSpec(task=None, path=str(few), file_format="text"))


# -- encoding and language-model batches ----------------------------------------------------------------


@pytest.fixture(scope="module")
def tok():
    return TextTokenizer.train(["a b c d e f g h", "the cat sat"], TokenizerSpec("word"))


def test_encode_texts_cuts_and_counts(tok):
    texts = ["a b c", "a b c d e f g h", "the cat sat", "a b c d e"]
    enc = encode_texts(texts, tok, max_len=7)  # room for 5 tokens
    assert [len(t) for t in enc.ids] == [3, 5, 3, 5]
    assert enc.truncated == 1
    assert encode_texts(texts, tok, max_len=7, reserve=1).truncated == 1
    assert encode_texts(texts, tok, max_len=5, reserve=1).truncated == 2
    assert encode_texts(texts, tok, max_len=3, reserve=1).truncated == 4
    assert enc.ids[1] == tok.encode_ids("a b c d e")
    with pytest.raises(ValueError, match="no room"):
        encode_texts(texts, tok, max_len=2)


def test_lm_batches_predict_the_next_token():
    data = EncodedTexts([[7, 8, 9], [10], [11, 12, 13, 14, 15], [16, 17]], 0)
    (batch,) = text_batches_in_order(data, 8, "lm")
    assert isinstance(batch, LMBatch) and batch.ids.shape == batch.targets.shape == (4, 6)
    real = batch.targets != IGNORE
    assert batch.n_tokens == int(real.sum()) == 3 + 1 + 5 + 2 + 4
    for row, text in zip(range(4), sorted(data.ids, key=len)):
        n = len(text) + 1
        assert batch.ids[row, :n].tolist() == [BOS_ID, *text]
        assert batch.targets[row, :n].tolist() == [*text, EOS_ID]
        assert batch.ids[row, 1:n].tolist() == batch.targets[row, : n - 1].tolist()  # shifted by one
        assert (batch.ids[row, n:] == PAD_ID).all() and (batch.targets[row, n:] == IGNORE).all()
    assert (real == (batch.ids != PAD_ID)).all()  # a target for every real input, none for padding


# -- masking ------------------------------------------------------------------------------------------


def test_mask_tokens_follows_berts_proportions():
    g = torch.Generator().manual_seed(0)
    vocab = 50
    ids = torch.randint(FIRST_REGULAR, vocab, (500, 300), generator=g)
    ids[:, 0], ids[:, -40:] = BOS_ID, PAD_ID  # specials and padding, never maskable
    ids[::7, 5], ids[::5, 9], ids[::3, 11] = EOS_ID, UNK_ID, MASK_ID
    maskable = (ids >= FIRST_REGULAR) & (ids != MASK_ID)
    out, labels = mask_tokens(ids, maskable, vocab, MASK_ID, FIRST_REGULAR, g)
    chosen = labels != -100
    n = int(maskable.sum())
    assert n >= 100_000
    assert not (chosen & ~maskable).any()  # specials, <mask> and PAD never chosen
    assert (labels[chosen] == ids[chosen]).all()
    assert (out[~chosen] == ids[~chosen]).all()  # -100 exactly where nothing was chosen
    k = int(chosen.sum())
    assert within(k, n, 0.15)
    masked = int((out[chosen] == MASK_ID).sum())
    replaced = chosen & (out != MASK_ID) & (out != ids)
    kept = int((out[chosen] == ids[chosen]).sum())
    p_same = 0.1 / (vocab - FIRST_REGULAR)  # a random replacement can draw the original id
    assert within(masked, k, 0.8) and within(int(replaced.sum()), k, 0.1 - p_same) and within(kept, k, 0.1 + p_same)
    assert (out[replaced] >= FIRST_REGULAR).all() and (out[replaced] < vocab).all()
    assert len(set(out[replaced].tolist())) == vocab - FIRST_REGULAR  # uniform over all regular ids


def test_mask_tokens_depends_on_the_generator_only():
    ids = torch.randint(FIRST_REGULAR, 50, (64, 64), generator=torch.Generator().manual_seed(1))
    maskable = torch.ones_like(ids, dtype=torch.bool)
    a = mask_tokens(ids, maskable, 50, MASK_ID, FIRST_REGULAR, torch.Generator().manual_seed(3))
    b = mask_tokens(ids, maskable, 50, MASK_ID, FIRST_REGULAR, torch.Generator().manual_seed(3))
    c = mask_tokens(ids, maskable, 50, MASK_ID, FIRST_REGULAR, torch.Generator().manual_seed(4))
    assert all(torch.equal(x, y) for x, y in zip(a, b)) and not torch.equal(a[1], c[1])


# -- next-sentence prediction ---------------------------------------------------------------------------


def test_nsp_pairs_are_half_next_and_half_random():
    lines = [[FIRST_REGULAR + i] for i in range(4001)]  # line i holds the id 5 + i
    examples = nsp_examples(lines, random.Random(0))
    assert len(examples) == 4000
    labels = [label for *_, label in examples]
    assert within(labels.count(0), 4000, 0.5)
    before = after = 0
    for i, (a, b, label) in enumerate(examples):
        assert a == lines[i]
        j = b[0] - FIRST_REGULAR
        if label == 0:
            assert j == i + 1  # IsNext: really the next line
        else:
            assert j not in (i, i + 1)  # NotNext: never the line itself or the next
            before, after = before + (j < i), after + (j > i + 1)
    assert before > 200 and after > 200
    with pytest.raises(ValueError, match="at least 3"):
        nsp_examples(lines[:2], random.Random(0))


def test_nsp_batches_lay_out_two_segments_and_cut_long_pairs():
    data = EncodedTexts([list(range(10, 10 + n)) for n in (3, 20, 2, 4, 12, 1)], 0)
    batches = text_batches_in_order(data, 2, "mlm", nsp=True, max_len=16, **MLM)
    assert len(batches) == 3 and all(isinstance(b, MLMBatch) for b in batches)
    for batch in batches:
        assert batch.nsp_labels is not None and batch.nsp_labels.shape == (batch.ids.shape[0],)
        assert batch.ids.shape[1] <= 16
        for ids, segments in zip(batch.ids.tolist(), batch.segments.tolist()):
            n = sum(i != PAD_ID for i in ids)
            ends = [k for k in range(n) if ids[k] == EOS_ID]
            assert ids[0] == BOS_ID and len(ends) == 2 and ends[1] == n - 1
            assert segments == [0] * (ends[0] + 1) + [1] * (n - ends[0] - 1) + [0] * (len(ids) - n)


def test_mlm_batches_never_choose_specials_or_padding():
    texts = EncodedTexts([list(range(FIRST_REGULAR, FIRST_REGULAR + n)) for n in range(1, 40)], 0)
    stream = TextStream(texts, 8, seed=2, kind="mlm", nsp=True, max_len=24, **MLM)
    chosen = 0
    for _ in range(40):
        batch = next(stream)
        special = (batch.ids == PAD_ID) | (batch.ids == BOS_ID) | (batch.ids == EOS_ID)
        assert (batch.labels[special] == -100).all()
        assert (batch.segments[batch.ids == PAD_ID] == 0).all()
        assert batch.n_tokens == int((batch.labels != -100).sum())
        chosen += batch.n_tokens
    assert chosen > 100


# -- streams and evaluation -----------------------------------------------------------------------------


def same(a, b) -> bool:
    if isinstance(a, LMBatch):
        return torch.equal(a.ids, b.ids) and torch.equal(a.targets, b.targets)
    nsp = (a.nsp_labels is None and b.nsp_labels is None) or torch.equal(a.nsp_labels, b.nsp_labels)
    return torch.equal(a.ids, b.ids) and torch.equal(a.labels, b.labels) and torch.equal(a.segments, b.segments) and nsp


@pytest.mark.parametrize("options", [{"kind": "lm"}, {"kind": "mlm", **MLM}, {"kind": "mlm", "nsp": True, **MLM}])
def test_a_resumed_stream_gives_the_same_next_batches(options):
    gen = random.Random(5)
    data = EncodedTexts([[gen.randrange(FIRST_REGULAR, 60) for _ in range(gen.randint(1, 12))] for _ in range(50)], 0)
    stream = TextStream(data, 8, seed=11, max_len=30, **options)
    for _ in range(9):  # 7 batches an epoch: past an epoch boundary
        next(stream)
    state = stream.state_dict()
    assert state == {"epoch": 1, "position": 2}
    expected = [next(stream) for _ in range(8)]
    resumed = TextStream(data, 8, seed=11, max_len=30, **options, **state)
    assert all(same(a, b) for a, b in zip(expected, [next(resumed) for _ in range(8)]))
    other = TextStream(data, 8, seed=12, max_len=30, **options, **state)
    assert not all(same(a, b) for a, b in zip(expected, [next(other) for _ in range(8)]))
    if options["kind"] == "mlm":  # the same texts masked anew at another position
        again = TextStream(data, 8, seed=11, max_len=30, **options, epoch=0, position=0)
        first = [next(again) for _ in range(7)]
        assert not all(torch.equal(a.labels, b.labels) for a, b in zip(first, expected))


def test_a_stream_shows_every_text_once_an_epoch():
    data = EncodedTexts([[FIRST_REGULAR + i] * (1 + i % 5) for i in range(30)], 0)
    stream = TextStream(data, 4, seed=0, kind="lm")
    rows = [r[r != PAD_ID][1:].tolist() for _ in range(8) for r in next(stream).ids]  # 30 texts: 8 batches
    assert sorted(rows) == sorted(data.ids)
    next(stream)
    assert stream.state_dict() == {"epoch": 1, "position": 1}


def test_evaluation_batches_are_repeatable_and_cover_every_text():
    gen = random.Random(1)
    data = EncodedTexts([[gen.randrange(FIRST_REGULAR, 60) for _ in range(gen.randint(1, 9))] for _ in range(37)], 0)
    a = text_batches_in_order(data, 8, "mlm", **MLM)
    b = text_batches_in_order(data, 8, "mlm", **MLM)
    assert len(a) == 5 and all(same(x, y) for x, y in zip(a, b))
    assert not all(same(x, y) for x, y in zip(a, text_batches_in_order(data, 8, "mlm", seed=1, **MLM)))
    originals = []
    for batch in a:
        restored = torch.where(batch.labels != -100, batch.labels, batch.ids)
        originals += [r[(r != PAD_ID) & (r != BOS_ID) & (r != EOS_ID)].tolist() for r in restored]
    assert sorted(originals) == sorted(data.ids)
    with pytest.raises(ValueError, match="needs mask_id"):
        text_batches_in_order(data, 8, "mlm", vocab_size=60)
