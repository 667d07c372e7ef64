"""The teaching grammar marks tense on the verb; a time word is never the only clue to 了 or 会."""

from collections import Counter

import pytest

from model.data.grammar import (
    ATTRIBUTIVE,
    NAMES,
    NOUNS,
    PLACES,
    PRONOUNS,
    TIME_WORDS,
    VERBS,
    GrammarGenerator,
    Phrase,
    _counted,
    _demonstrative,
    generate_grammar,
)

PAST_ZH = [zh for _, zh in TIME_WORDS["past"]]
FUTURE_ZH = [zh for _, zh in TIME_WORDS["future"]]
ANY_TIME_ZH = [zh for words in TIME_WORDS.values() for _, zh in words]


def _tense(english: str) -> str | None:
    """The tense an action sentence's English shows by itself (None where it does not show it)."""
    if english.startswith("Did ") or " did not " in english:
        return "past"
    if english.startswith("Will ") or " will " in english:
        return "future"
    if english.startswith(("Do ", "Does ")) or " do not " in english or " does not " in english:
        return "present"
    words = set(english.rstrip(".").split())
    past_forms = {v.en[2].split()[0] for v in VERBS if v.en[2] != v.en[0]}
    present_forms = {form.split()[0] for v in VERBS for form in v.en[:2]}
    if words & past_forms:
        return "past"
    if words & present_forms - {"read"}:  # "read" is both: such a sentence tells nothing by its verb
        return "present"
    return None


@pytest.fixture(scope="module")
def actions():
    splits = generate_grammar(20000, 500, 500, seed=0)
    return [s for s in splits.train + splits.valid + splits.test if s.kind == "action"]


def _has_time_word(zh: str) -> bool:
    return any(word in zh for word in ANY_TIME_ZH)


def test_past_and_future_come_with_and_without_a_time_word(actions):
    counts = Counter((_tense(s.en), _has_time_word(s.zh)) for s in actions)
    for tense in ("past", "future"):
        with_time, without = counts[tense, True], counts[tense, False]
        assert without >= 1000 and with_time >= 1000, (tense, with_time, without)
        assert 0.3 <= without / (with_time + without) <= 0.7, tense
    # the present keeps its habitual time words (every day…) as well as going without
    assert counts["present", True] >= 1000 and counts["present", False] >= 1000


def test_a_time_word_does_not_predict_the_tense(actions):
    """Whether a sentence has a time word says little about its tense: the verb has to be read."""
    without = Counter(_tense(s.en) for s in actions if not _has_time_word(s.zh))
    with_time = Counter(_tense(s.en) for s in actions if _has_time_word(s.zh))
    for counts in (without, with_time):
        total = sum(counts.values())
        for tense in ("present", "past", "future"):
            assert counts[tense] / total >= 0.15, (tense, counts)


def test_tense_is_rendered_from_the_verb_in_every_action_sentence(actions):
    checked = Counter()
    for s in actions:
        tense, negative = _tense(s.en), " not " in s.en
        if tense == "past" and negative:
            assert "没" in s.zh and "了" not in s.zh, (s.en, s.zh)
        elif tense == "past":
            assert "了" in s.zh and "会" not in s.zh, (s.en, s.zh)
        elif tense == "future":
            assert ("不会" if negative else "会") in s.zh and "了" not in s.zh, (s.en, s.zh)
        elif tense == "present":
            assert "了" not in s.zh and "会" not in s.zh, (s.en, s.zh)
        if tense is not None:
            checked[tense, _has_time_word(s.zh)] += 1
        # a time word, where there is one, belongs to the tense
        if tense == "past":
            assert not any(w in s.zh for w in FUTURE_ZH), s.en
        if tense == "future":
            assert not any(w in s.zh for w in PAST_ZH), s.en
    assert min(checked.values()) >= 500, checked


def test_an_english_sentence_always_gets_the_same_chinese():
    """No English sentence is ambiguous in tense: "I read this book." alone would be present or past."""
    seen: dict[str, str] = {}
    for seed in (0, 1):
        splits = generate_grammar(20000, 500, 500, seed=seed)
        for s in splits.train + splits.valid + splits.test:
            assert seen.setdefault(s.en, s.zh) == s.zh, (s.en, seen[s.en], s.zh)
    # "read" in a past statement without a time word only with a third-person singular subject
    for english in seen:
        words = english.rstrip(".").split()
        if "read" in words and not english.endswith("?") and " not " not in english:
            time = any(english.rstrip(".").endswith(" " + en) for en, _ in TIME_WORDS["past"])
            if not time and words[0] in ("I", "You", "We", "They"):
                assert seen[english].count("了") == 0, english  # present, e.g. 我看这本书。


# -- hand-written translations ---------------------------------------------------------


def _person(en: str):
    return next(p for p in PRONOUNS + NAMES if p.en == en)


def _verb(base: str):
    return next(v for v in VERBS if v.en[0] == base)


def _noun(en: str):
    return next(n for n in NOUNS if n.en == en)


def _place(en: str):
    return next(p for p in PLACES if p[0] == en)


def _time(en: str):
    return next(t for words in TIME_WORDS.values() for t in words if t[0] == en)


def _adjective(en: str):
    return next(a for a in ATTRIBUTIVE if a.en == en)


# (subject, verb, object, tense, mood, time, place) → English, Chinese (written from Chinese grammar)
HAND_WRITTEN = [
    (
        ("Li Hua", "buy", _counted(_noun("book"), 1, _adjective("interesting")), "past", "statement", None, None),
        "Li Hua bought an interesting book.",
        "李华买了一本有意思的书。",
    ),
    (
        ("Anna", "read", _counted(_noun("novel"), 1, None), "past", "question", None, "in the library"),
        "Did Anna read a novel in the library?",
        "安娜在图书馆看了一本小说吗？",
    ),
    (
        ("she", "buy", _demonstrative(_noun("book"), near=False), "past", "negative", None, None),
        "She did not buy that book.",
        "她没买那本书。",
    ),
    (
        ("I", "eat", _counted(_noun("apple"), 2, None), "past", "statement", None, "at the restaurant"),
        "I ate two apples at the restaurant.",
        "我在饭馆吃了两个苹果。",
    ),
    (
        ("we", "drink", _counted(_noun("coffee"), 3, None), "past", "question", None, None),
        "Did we drink three cups of coffee?",
        "我们喝了三杯咖啡吗？",
    ),
    (
        ("they", "buy", _counted(_noun("car"), 1, None), "future", "statement", None, None),
        "They will buy a car.",
        "他们会买一辆车。",
    ),
    (
        ("he", "drink", Phrase("coffee", "咖啡"), "future", "negative", None, None),
        "He will not drink coffee.",
        "他不会喝咖啡。",
    ),
    (
        ("I", "read", _counted(_noun("book"), 1, None), "past", "statement", "yesterday", "in the library"),
        "I read a book in the library yesterday.",
        "我昨天在图书馆看了一本书。",
    ),
]


@pytest.mark.parametrize(("choices", "english", "chinese"), HAND_WRITTEN, ids=[e for _, e, _ in HAND_WRITTEN])
def test_hand_written_translations(choices, english, chinese):
    subject, verb, obj, tense, mood, time, place = choices
    sentence = GrammarGenerator(0)._render_action(
        _person(subject),
        _verb(verb),
        obj,
        tense,
        mood,
        _time(time) if time else None,
        _place(place) if place else None,
        ("key",),
    )
    assert (sentence.en, sentence.zh) == (english, chinese)


def test_the_corpus_holds_past_sentences_without_a_time_word(actions):
    pairs = {s.en: s.zh for s in actions}
    past_without = [e for e, z in pairs.items() if _tense(e) == "past" and not _has_time_word(z)]
    statements = [e for e in past_without if e.endswith(".") and " not " not in e]
    questions = [e for e in past_without if e.startswith("Did ")]
    negatives = [e for e in past_without if " did not " in e]
    assert min(len(statements), len(questions), len(negatives)) >= 200
