"""The tokenizers of Hugging Face model folders give exactly the ids and texts ``transformers`` gives.

Every folder is built here from tokenizers trained on the bundled grammar's sentences (nothing is downloaded):
a Marian folder (two SentencePiece models and a vocab.json laid out as opus-mt's), GPT-2 folders (tokenizer.json,
or only vocab.json + merges.txt) and BERT folders (tokenizer.json, or only vocab.txt with BERT's special rows).
"""

import io
import json
import warnings

import pytest

pytest.importorskip("transformers")
sentencepiece = pytest.importorskip("sentencepiece")

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers  # noqa: E402

from model.data.grammar import GrammarGenerator  # noqa: E402
from model.data.tokenization import TextTokenizer, TokenizerSpec  # noqa: E402
from model.hf.tokenizers import (  # noqa: E402
    HFJsonTokenizer,
    HFTokenizerError,
    MarianSpmTokenizer,
    align_pieces,
    find_first_regular_id,
    load_folder_tokenizers,
    spm_pieces_and_spans,
    tokenizer_from_json,
)

_PAIRS = [GrammarGenerator(3).sentence() for _ in range(400)]
ENGLISH = [p.en for p in _PAIRS] + ["Hello, world! (It works.)", "Don't you like coffee?", "Café au lait, naïve."]
CHINESE = [p.zh for p in _PAIRS] + ["我喜欢喝咖啡。", "你好，世界！"]

EN_TESTS = [
    ENGLISH[0],
    ENGLISH[7],
    "Don't you like coffee?",
    "Hello, World! Zebra quokka 42 ☃ 你好",  # characters and words the models never saw
    "  two   spaces  ",
    ">>zho<< I read a book.",  # a language code
    "a typed </s> and <unk>",  # typed special tokens
    "",
]
ZH_TESTS = [CHINESE[0], CHINESE[5], "我爱你 Python ☃！", "他们很饿。。", "魑魅魍魉"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MarianTokenizer recommends sacremoses
        yield


# -- building folders -------------------------------------------------------------------------------------------


def _spm(lines, vocab_size=300):
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return model.getvalue()


def _marian_vocab(*spm_models):
    """opus-mt's layout: </s> 0, <unk> 1, the pieces of both models, <pad> last."""
    vocab = {"</s>": 0, "<unk>": 1}
    for model in spm_models:
        sp = sentencepiece.SentencePieceProcessor(model_proto=model)
        for i in range(sp.get_piece_size()):
            piece = sp.id_to_piece(i)
            if piece not in ("<s>", "</s>", "<unk>") and piece not in vocab:
                vocab[piece] = len(vocab)
    vocab["<pad>"] = len(vocab)
    return vocab


@pytest.fixture(scope="module")
def spm_models():
    return _spm(ENGLISH), _spm(CHINESE)


def _write_marian(folder, spm_models, separate=False):
    source, target = spm_models
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "source.spm").write_bytes(source)
    (folder / "target.spm").write_bytes(target)
    config = {"source_lang": "en", "target_lang": "zh", "separate_vocabs": separate}
    if separate:
        (folder / "vocab.json").write_text(json.dumps(_marian_vocab(source), ensure_ascii=False), encoding="utf-8")
        target_vocab = json.dumps(_marian_vocab(target), ensure_ascii=False)
        (folder / "target_vocab.json").write_text(target_vocab, encoding="utf-8")
    else:
        vocab = json.dumps(_marian_vocab(source, target), ensure_ascii=False)
        (folder / "vocab.json").write_text(vocab, encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def marian_dir(tmp_path_factory, spm_models):
    return _write_marian(tmp_path_factory.mktemp("marian"), spm_models)


def _byte_bpe_files(folder):
    """GPT-2's files: vocab.json (with <|endoftext|> as the last id) and merges.txt."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(ENGLISH + CHINESE, trainer)
    folder.mkdir(parents=True, exist_ok=True)
    tok.model.save(str(folder))
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    vocab["<|endoftext|>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def gpt2_dirs(tmp_path_factory):
    """(a folder with only vocab.json + merges.txt, one saved by GPT2TokenizerFast with tokenizer.json)"""
    from transformers import GPT2TokenizerFast

    plain = _byte_bpe_files(tmp_path_factory.mktemp("gpt2_plain"))
    saved = tmp_path_factory.mktemp("gpt2_json")
    GPT2TokenizerFast.from_pretrained(str(plain)).save_pretrained(str(saved))
    for name in ("vocab.json", "merges.txt"):
        (saved / name).unlink(missing_ok=True)
    assert (saved / "tokenizer.json").is_file()
    (saved / "config.json").write_text(
        json.dumps(
            {"model_type": "gpt2", "eos_token_id": len(json.load((plain / "vocab.json").open(encoding="utf-8"))) - 1}
        ),
        encoding="utf-8",
    )
    return plain, saved


def _bert_vocab_txt(folder, lowercase):
    """bert-base-uncased's layout: [PAD] 0, [unused0…98], [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103, two more
    [unusedN] rows, then the trained pieces."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(ENGLISH + CHINESE, trainers.WordPieceTrainer(vocab_size=700, show_progress=False))
    rows = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    rows += ["[unused99]", "[unused100]"]
    trained = sorted(tok.get_vocab().items(), key=lambda kv: kv[1])
    rows += [piece for piece, _ in trained if piece not in rows]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": lowercase}), encoding="utf-8")
    return folder


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def bert_dirs(request, tmp_path_factory):
    """(a folder with only vocab.txt, one saved by BertTokenizerFast with tokenizer.json)"""
    from transformers import BertTokenizerFast

    plain = _bert_vocab_txt(tmp_path_factory.mktemp("bert_plain"), request.param)
    saved = tmp_path_factory.mktemp("bert_json")
    BertTokenizerFast.from_pretrained(str(plain)).save_pretrained(str(saved))
    (saved / "vocab.txt").unlink(missing_ok=True)
    assert (saved / "tokenizer.json").is_file()
    return plain, saved


# -- Marian ---------------------------------------------------------------------------------------------------------


def test_marian_ids_and_decoding_match_transformers(marian_dir):
    from transformers import MarianTokenizer

    hf = MarianTokenizer.from_pretrained(str(marian_dir))
    src, tgt = load_folder_tokenizers(marian_dir, "marian")
    assert isinstance(src, MarianSpmTokenizer) and (src.side, tgt.side) == ("source", "target")
    for text in EN_TESTS + ENGLISH[:40]:
        ids = hf(text)["input_ids"]
        assert src.encode_ids(text) + [src.eos_id] == ids, text
        assert src.encode(text).ids == ids[:-1]
        assert src.decode(ids) == hf.decode(ids, skip_special_tokens=True), text
    for text in ZH_TESTS + CHINESE[:40]:
        ids = hf(text_target=text)["input_ids"]
        assert tgt.encode_ids(text) + [tgt.eos_id] == ids, text
        assert tgt.decode(ids) == hf.decode(ids, skip_special_tokens=True), text
        assert tgt.normal_form(text) == tgt.decode(ids)
    assert tgt.encode_batch(ZH_TESTS) == [tgt.encode_ids(t) for t in ZH_TESTS]


def test_the_same_tokenizer_files_give_the_same_tokenizers(tmp_path, spm_models):
    """A Trainer's checkpoint-N/ folders hold the same tokenizer files: they are built once, and the tables made of
    them once per tokenizer; a file that changed gives new tokenizers."""
    first = load_folder_tokenizers(_write_marian(tmp_path / "checkpoint-2", spm_models), "marian")
    second = load_folder_tokenizers(_write_marian(tmp_path / "checkpoint-4", spm_models), "marian")
    assert second[0] is first[0] and second[1] is first[1]
    changed = _write_marian(tmp_path / "checkpoint-6", spm_models)
    settings = json.loads((changed / "tokenizer_config.json").read_text(encoding="utf-8"))
    (changed / "tokenizer_config.json").write_text(json.dumps({**settings, "model_max_length": 512}))
    third = load_folder_tokenizers(changed, "marian")
    assert third[0] is not first[0] and third[0].encode_ids("the cat") == first[0].encode_ids("the cat")
    vocab = json.loads((changed / "vocab.json").read_text(encoding="utf-8"))
    vocab["▁newpiece"] = len(vocab)
    (changed / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    assert load_folder_tokenizers(changed, "marian")[0].vocab_size == first[0].vocab_size + 1


def test_marian_decodes_any_ids_as_transformers(marian_dir):
    from transformers import MarianTokenizer

    hf = MarianTokenizer.from_pretrained(str(marian_dir))
    src, tgt = load_folder_tokenizers(marian_dir, "marian")
    for start in range(7):
        ids = list(range(start, src.vocab_size, 7))
        assert tgt.decode(ids) == hf.decode(ids, skip_special_tokens=True)
        assert src.decode(ids) == hf.decode(ids, skip_special_tokens=True)


def test_marian_special_ids_and_sizes(marian_dir):
    from transformers import MarianTokenizer

    hf = MarianTokenizer.from_pretrained(str(marian_dir))
    src, tgt = load_folder_tokenizers(marian_dir, "marian")
    for tok in (src, tgt):
        assert (tok.eos_id, tok.unk_id, tok.pad_id) == (hf.eos_token_id, hf.unk_token_id, hf.pad_token_id)
        assert tok.bos_id == tok.pad_id  # Marian's decoder starts from <pad>
        assert tok.vocab_size == hf.vocab_size and tok.mask_id is None
        assert tok.special_ids == frozenset({0, 1, tok.vocab_size - 1})
        assert tok.first_regular_id == 2
    assert src.id_to_token(0) == "</s>" and src.display_token(src.encode_ids("I read")[0]).startswith("▁")


def test_marian_spans_and_unknowns(marian_dir):
    src, tgt = load_folder_tokenizers(marian_dir, "marian")
    text = "Hello, World! Zebra ☃ 你好"
    enc = src.encode(text)
    assert enc.text == text and len(enc.spans) == len(enc.ids) == len(enc.tokens)
    for (a, b), token in zip(enc.spans, enc.tokens):
        assert 0 <= a <= b <= len(text)
        assert text[a:b].strip() == token.replace("▁", " ").strip(), (token, text[a:b])
    assert "☃" in enc.unknown_text and "你好" in "".join(enc.unknown_text)
    assert src.encode(ENGLISH[0]).unknown == []
    coded = src.encode(">>zho<< I read.")
    assert coded.tokens[0] == ">>zho<<" and coded.spans[0] == (0, 7)
    zh = tgt.encode(CHINESE[0] + "☃")
    assert zh.unknown_text == ["☃"] and zh.spans[-1] == (len(CHINESE[0]), len(CHINESE[0]) + 1)


def test_marian_separate_vocabularies(tmp_path, spm_models):
    from transformers import MarianTokenizer

    folder = _write_marian(tmp_path / "sep", spm_models, separate=True)
    hf = MarianTokenizer.from_pretrained(str(folder))
    src, tgt = load_folder_tokenizers(folder, "marian")
    target_vocab = json.loads((folder / "target_vocab.json").read_text(encoding="utf-8"))
    assert tgt.vocab_size == len(target_vocab) != src.vocab_size
    for text in EN_TESTS:
        assert src.encode_ids(text) + [src.eos_id] == hf(text)["input_ids"]
        assert src.decode(src.encode_ids(text)) == src.normal_form(text)
    for text in ZH_TESTS:
        ids = hf(text_target=text)["input_ids"]
        assert tgt.encode_ids(text) + [tgt.eos_id] == ids
        assert tgt.decode(ids) == hf.decode(ids, skip_special_tokens=True)
    assert src.normal_form(ENGLISH[0]) == ENGLISH[0]


# -- GPT-2 ----------------------------------------------------------------------------------------------------------

GPT2_TESTS = [
    ENGLISH[0],
    " Hello  world ",
    "Don't you like coffee?",
    CHINESE[0],
    "我爱你 ☃ 🙂",
    "end<|endoftext|>x",
    "",
]


def test_gpt2_ids_and_decoding_match_transformers(gpt2_dirs):
    from transformers import GPT2TokenizerFast

    for folder in gpt2_dirs:
        hf = GPT2TokenizerFast.from_pretrained(str(folder))
        src, tgt = load_folder_tokenizers(folder, "gpt2")
        assert src is tgt and isinstance(src, HFJsonTokenizer)
        for text in GPT2_TESTS + ENGLISH[:20] + CHINESE[:20]:
            ids = hf(text)["input_ids"]
            assert src.encode_ids(text) == src.encode(text).ids == ids, (folder.name, text)
            assert src.decode(ids) == hf.decode(ids, skip_special_tokens=True)
        assert src.encode_batch(GPT2_TESTS) == [hf(t)["input_ids"] for t in GPT2_TESTS]
        assert src.normal_form(" Hello  world ") == " Hello  world "


def test_gpt2_special_ids_and_display(gpt2_dirs):
    from transformers import GPT2TokenizerFast

    for folder in gpt2_dirs:
        hf = GPT2TokenizerFast.from_pretrained(str(folder))
        tok = HFJsonTokenizer.from_folder(folder, "gpt2")
        end = hf.convert_tokens_to_ids("<|endoftext|>")
        assert end == tok.vocab_size - 1 == len(hf) - 1
        assert (tok.bos_id, tok.eos_id, tok.pad_id, tok.unk_id) == (end, end, end, end)
        assert tok.special_ids == frozenset({end}) and tok.mask_id is None and tok.first_regular_id == 0
        enc = tok.encode("I like coffee ☃")
        assert enc.unknown == [] and "".join(tok.display_token(i) for i in enc.ids[:3]) == "I like coffee"
        assert tok.display_token(end) == "<|endoftext|>"
        assert [tok.display_token(i) for i in tok.encode_ids("☃")] != ["☃"]  # bytes of one character
        assert tok.encode("end<|endoftext|>x").tokens.count("<|endoftext|>") == 1


# -- BERT -----------------------------------------------------------------------------------------------------------

BERT_TESTS = [
    ENGLISH[0],
    "Don't you like Coffee, Li Hua?",
    "Café au lait!",
    CHINESE[0],
    "我爱你",
    "我 [MASK] 你。",
    "The [MASK] is here.",
    "☃ zebra 魑魅",
    "",
]


def test_bert_ids_and_decoding_match_transformers(bert_dirs):
    from transformers import BertTokenizerFast

    for folder in bert_dirs:
        hf = BertTokenizerFast.from_pretrained(str(folder))
        src, tgt = load_folder_tokenizers(folder, "bert")
        assert src is tgt
        for text in BERT_TESTS + ENGLISH[:20] + CHINESE[:20]:
            ids = hf(text)["input_ids"]
            assert [src.bos_id, *src.encode_ids(text), src.eos_id] == ids, (folder.name, text)
            assert src.decode(ids) == hf.decode(ids, skip_special_tokens=True), text
        for start in range(5):
            ids = list(range(start, src.vocab_size, 5))
            assert src.decode(ids) == hf.decode(ids, skip_special_tokens=True)
        assert src.decode(src.encode_ids("我们")) == "我 们"  # as transformers: spaces between characters


def test_bert_special_ids_mask_and_unknowns(bert_dirs):
    from transformers import BertTokenizerFast

    for folder in bert_dirs:
        hf = BertTokenizerFast.from_pretrained(str(folder))
        tok = HFJsonTokenizer.from_folder(folder, "bert")
        assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id, tok.mask_id) == (0, 101, 102, 100, 103)
        assert (tok.pad_id, tok.unk_id, tok.mask_id) == (hf.pad_token_id, hf.unk_token_id, hf.mask_token_id)
        assert tok.special_ids == frozenset({0, 100, 101, 102, 103})
        assert tok.first_regular_id == 106  # after [MASK] and the [unused99], [unused100] rows
        assert tok.vocab_size == len(hf)
        enc = tok.encode("I like [MASK] ☃.")
        assert tok.mask_id in enc.ids and enc.unknown_text == ["☃"]
        assert enc.text[slice(*enc.spans[enc.ids.index(tok.mask_id)])] == "[MASK]"
        assert tok.decode(enc.ids) == hf.decode(enc.ids, skip_special_tokens=True)


def test_bert_lowercasing_follows_tokenizer_config(bert_dirs):
    plain, _ = bert_dirs
    tok = HFJsonTokenizer.from_folder(plain, "bert")
    lowercase = json.loads((plain / "tokenizer_config.json").read_text())["do_lower_case"]
    assert (tok.encode_ids("Coffee") == tok.encode_ids("coffee")) == lowercase


def test_clean_up_tokenization_spaces_follows_tokenizer_config(tmp_path, spm_models, gpt2_dirs):
    from transformers import GPT2TokenizerFast, MarianTokenizer

    marian = _write_marian(tmp_path / "marian", spm_models)
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    for name in ("vocab.json", "merges.txt"):
        (gpt2 / name).write_bytes((gpt2_dirs[0] / name).read_bytes())
    for folder in (marian, gpt2):
        config = json.loads((folder / "tokenizer_config.json").read_text()) if folder == marian else {}
        (folder / "tokenizer_config.json").write_text(json.dumps({**config, "clean_up_tokenization_spaces": True}))
    text = "they wait . do n't they ?"
    hf = MarianTokenizer.from_pretrained(str(marian))
    src = MarianSpmTokenizer.from_folder(marian, "source")
    ids = hf(text)["input_ids"]
    assert src.decode(ids) == hf.decode(ids, skip_special_tokens=True) == "they wait. don't they?"
    hf_gpt2, gpt2_tok = GPT2TokenizerFast.from_pretrained(str(gpt2)), HFJsonTokenizer.from_folder(gpt2, "gpt2")
    assert gpt2_tok.decode(gpt2_tok.encode_ids(text)) == hf_gpt2.decode(hf_gpt2(text)["input_ids"]) == text


# -- saving and loading ---------------------------------------------------------------------------------------------


def _same(a, b, texts):
    assert type(a) is type(b) and a.kind == b.kind
    assert (a.pad_id, a.bos_id, a.eos_id, a.unk_id, a.mask_id) == (b.pad_id, b.bos_id, b.eos_id, b.unk_id, b.mask_id)
    assert (a.vocab_size, a.special_ids, a.first_regular_id) == (b.vocab_size, b.special_ids, b.first_regular_id)
    for text in texts:
        assert a.encode(text) == b.encode(text)
        assert a.decode(a.encode_ids(text)) == b.decode(b.encode_ids(text)) and a.normal_form(text) == b.normal_form(
            text
        )
    assert [a.display_token(i) for i in range(a.vocab_size)] == [b.display_token(i) for i in range(b.vocab_size)]


def test_json_round_trip_of_every_kind(marian_dir, gpt2_dirs, bert_dirs):
    src, tgt = load_folder_tokenizers(marian_dir, "marian")
    _same(src, tokenizer_from_json(src.to_json()), EN_TESTS)
    _same(tgt, tokenizer_from_json(tgt.to_json()), ZH_TESTS)
    for folder, texts in ((gpt2_dirs[0], GPT2_TESTS), (gpt2_dirs[1], GPT2_TESTS), (bert_dirs[0], BERT_TESTS)):
        tok = HFJsonTokenizer.from_folder(folder, "bert" if folder in bert_dirs else "gpt2")
        _same(tok, tokenizer_from_json(tok.to_json()), texts)
    own = TextTokenizer.train(ENGLISH + CHINESE, TokenizerSpec("wordpiece", vocab_size=500), masking=True)
    _same(own, tokenizer_from_json(own.to_json()), ENGLISH[:5] + CHINESE[:5])
    with pytest.raises(ValueError):
        tokenizer_from_json(json.dumps({"kind": "nonsense"}))


def test_text_tokenizer_names_its_special_ids():
    plain = TextTokenizer.train(ENGLISH[:50], TokenizerSpec("word"))
    masked = TextTokenizer.train(ENGLISH[:50], TokenizerSpec("word"), masking=True)
    assert (plain.pad_id, plain.bos_id, plain.eos_id, plain.unk_id) == (0, 1, 2, 3)
    assert plain.special_ids == frozenset({0, 1, 2, 3}) and masked.special_ids == frozenset({0, 1, 2, 3, 4})
    assert plain.first_regular_id == 4 and masked.first_regular_id == 5


# -- what goes wrong ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["source.spm", "target.spm", "vocab.json"])
def test_marian_missing_file_is_named(tmp_path, spm_models, missing):
    folder = _write_marian(tmp_path / "m", spm_models)
    (folder / missing).unlink()
    with pytest.raises(HFTokenizerError, match=missing.replace(".", r"\.")) as info:
        load_folder_tokenizers(folder, "marian")
    assert str(folder) in str(info.value)


def test_marian_broken_files_are_refused(tmp_path, spm_models):
    folder = _write_marian(tmp_path / "m", spm_models)
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    del vocab["<pad>"]
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    with pytest.raises(HFTokenizerError, match="<pad>"):
        MarianSpmTokenizer.from_folder(folder, "source")
    (folder / "vocab.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(HFTokenizerError, match="vocab.json"):
        MarianSpmTokenizer.from_folder(folder, "source")
    _write_marian(folder, spm_models)
    (folder / "target.spm").write_bytes(b"not a model")
    with pytest.raises(HFTokenizerError, match="target.spm"):
        MarianSpmTokenizer.from_folder(folder, "target")


def test_hf_missing_files_are_named(tmp_path, gpt2_dirs, bert_dirs):
    with pytest.raises(HFTokenizerError, match="tokenizer.json or vocab.txt"):
        HFJsonTokenizer.from_folder(tmp_path, "bert")
    with pytest.raises(HFTokenizerError, match=r"tokenizer.json or vocab.json \+ merges.txt"):
        load_folder_tokenizers(tmp_path, "gpt2")
    (tmp_path / "vocab.json").write_text((gpt2_dirs[0] / "vocab.json").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(HFTokenizerError, match="merges.txt") as info:
        HFJsonTokenizer.from_folder(tmp_path, "gpt2")
    assert str(tmp_path) in str(info.value)
    with pytest.raises(HFTokenizerError, match="model type"):
        load_folder_tokenizers(tmp_path, "t5")


def test_hf_missing_special_token_is_refused(tmp_path, bert_dirs):
    data = json.loads((bert_dirs[1] / "tokenizer.json").read_text(encoding="utf-8"))
    data["added_tokens"] = [t for t in data["added_tokens"] if t["content"] != "[MASK]"]
    data["model"]["vocab"].pop("[MASK]")
    (tmp_path / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(HFTokenizerError, match=r"\[MASK\]"):
        HFJsonTokenizer.from_folder(tmp_path, "bert")


# -- helpers --------------------------------------------------------------------------------------------------------


def test_first_regular_id_skips_specials_below_the_vocabulary():
    names = {0: "[PAD]", 1: "[unused0]", 5: "[unused4]", 6: "a"}
    assert find_first_regular_id({0, 3, 4}, 10, names.get) == 6
    assert find_first_regular_id({0, 1, 9}, 10, names.get) == 2  # Marian: <pad> last
    assert find_first_regular_id({9}, 10, names.get) == 0  # GPT-2: <|endoftext|> last


def test_spans_without_sentencepiece_offsets():
    class OldProcessor:  # sentencepiece 0.2.0: byte offsets in an immutable proto, no offset mapping
        def encode(self, text, out_type=None, **kw):
            if kw:
                raise TypeError("unexpected keyword")
            if out_type is str:
                return ["▁我", "爱", "▁tea"]

            class P:
                def __init__(self, b, e):
                    self.begin, self.end = b, e

            return type("Proto", (), {"pieces": [P(0, 3), P(3, 6), P(6, 10)]})()

    assert spm_pieces_and_spans(OldProcessor(), "我爱 tea") == (["▁我", "爱", "▁tea"], [(0, 1), (1, 2), (2, 6)])
    assert align_pieces("I  like ☃", ["▁I", "▁like", "▁", "x"]) == [(0, 1), (3, 7), (7, 7), (7, 7)]
