import pytest

from model.data.tokenization import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    TOKENIZER_KINDS,
    UNK_ID,
    TextTokenizer,
    TokenizerSpec,
    join_words,
)

CORPUS = [
    "I read two books in the library yesterday.",
    "Li Hua's cat is very cute.",
    "Do you like coffee?",
    "我昨天在图书馆看了两本书。",
    "李华的猫非常可爱。",
    "你喜欢咖啡吗？",
    "我喜欢Python和咖啡。",
    "Hello, world! (It works.)",
] * 5

# Texts already in every kind's normal form (single spaces, none beside Chinese or before punctuation)
ROUND_TRIP = [
    "I read two books in the library yesterday.",
    "李华的猫非常可爱。",
    "我喜欢Python和咖啡。",
    "Do you like coffee?",
]


@pytest.fixture(scope="module", params=TOKENIZER_KINDS)
def tok(request):
    return TextTokenizer.train(CORPUS, TokenizerSpec(request.param, vocab_size=400))


def test_special_ids_are_fixed(tok):
    assert [tok.id_to_token(i) for i in (PAD_ID, BOS_ID, EOS_ID, UNK_ID)] == ["<pad>", "<bos>", "<eos>", "<unk>"]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip_english_chinese_mixed(tok, text):
    enc = tok.encode(text)
    assert tok.decode(enc.ids) == text
    assert tok.normal_form(text) == text
    assert enc.unknown == []


def test_whitespace_is_normalised(tok):
    assert tok.decode(tok.encode_ids("  Do   you like\tcoffee? ")) == "Do you like coffee?"


def test_word_kinds_document_their_normal_form():
    tok = TextTokenizer.train(CORPUS, TokenizerSpec("word"))
    text = "我 喜欢 Python 和 咖啡 。 Hello , world !"
    assert tok.decode(tok.encode_ids(text)) == "我喜欢Python和咖啡。Hello, world!"
    assert tok.normal_form(text) == tok.decode(tok.encode_ids(text))
    assert join_words(["Li", "Hua", "'", "s", "cat", "(", "big", ")", "."]) == "Li Hua's cat (big)."


@pytest.mark.parametrize("kind", ["char", "word", "bpe", "wordpiece"])
def test_unknown_characters_become_unk_and_are_reported(kind):
    tok = TextTokenizer.train(CORPUS, TokenizerSpec(kind, vocab_size=400))
    enc = tok.encode("我喜欢狗和Zebra")  # 狗 and Z never occur in the corpus
    assert UNK_ID in enc.ids
    unknown = "".join(enc.unknown_text)
    assert "狗" in unknown and "Z" in unknown
    assert "喜" not in unknown
    for a, b in enc.unknown:
        assert enc.text[a:b] in ("狗", "Z", "Zebra", "狗和Zebra", "和Zebra")
    assert "<unk>" in tok.decode(enc.ids)


def test_byte_level_never_has_unknowns():
    tok = TextTokenizer.train(CORPUS, TokenizerSpec("byte_bpe", vocab_size=400))
    text = "狗 Zebra ✓ ünïcödé"
    enc = tok.encode(text)
    assert enc.unknown == [] and UNK_ID not in enc.ids
    assert tok.decode(enc.ids) == text
    shown = [tok.display_token(i) for i in enc.ids]
    assert any(s.startswith("<") and s.endswith(">") for s in shown)  # partial UTF-8 shown as bytes


def test_save_and_restore(tok):
    again = TextTokenizer.from_json(tok.to_json())
    assert again.kind == tok.kind and again.vocab_size == tok.vocab_size
    for text in ROUND_TRIP:
        assert again.encode_ids(text) == tok.encode_ids(text)
    with pytest.raises(ValueError):
        TextTokenizer.from_json('{"kind": "nope"}')


def test_vocabulary_size_and_min_frequency():
    alphabet = len(set("".join(CORPUS))) + 4  # BPE always keeps every character it saw, plus specials
    small = TextTokenizer.train(CORPUS, TokenizerSpec("bpe", vocab_size=alphabet + 10))
    large = TextTokenizer.train(CORPUS, TokenizerSpec("bpe", vocab_size=alphabet + 60))
    assert small.vocab_size <= alphabet + 10 < large.vocab_size <= alphabet + 60
    rare = TextTokenizer.train(CORPUS + ["Zebra"], TokenizerSpec("word", min_frequency=2))
    assert UNK_ID in rare.encode_ids("Zebra")  # seen once, below the minimum
    with pytest.raises(ValueError, match="Unknown tokenizer kind"):
        TokenizerSpec("sentencepiece")


def test_quotes_are_not_glued_to_words_only_contractions_are():
    assert join_words(["don", "'", "t", "and", "Li", "Hua", "'", "s", "we", "'", "re"]) == "don't and Li Hua's we're"
    assert join_words(["He", "said", "'", "hi", "'", "to", "the", "students", "'", "books"]) == (
        "He said ' hi ' to the students ' books"
    )
