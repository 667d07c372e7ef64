"""Large reads and sorts in short C calls (model/io/gentle.py): the same results as ``json.loads``, ``sorted`` and a
whole-file decode, for text whose commas inside strings and nested values would mislead a careless cut, with each C
call given a slice, and the same errors for malformed JSON."""

from __future__ import annotations

import json
import random

import pytest

from model.io import gentle


@pytest.fixture
def parsed_sizes(monkeypatch) -> list[int]:
    """The length of the text each call of ``json.loads`` inside the module was given."""
    sizes: list[int] = []
    loads = json.loads

    def recording(text, *args, **kwargs):
        sizes.append(len(text))
        return loads(text, *args, **kwargs)

    monkeypatch.setattr(gentle.json, "loads", recording)
    return sizes


def tricky_strings(n: int) -> dict[str, object]:
    """A vocabulary-like map whose keys and values hold what a cut might be fooled by."""
    rng = random.Random(0)
    traps = [', "', "},\n  {", "\\", '"', ",", "[", "{", "▁中文", "\n"]
    return {f"piece{i}{rng.choice(traps)}{i}": (i if i % 3 else [i, {'a, "b': [1, 2]}]) for i in range(n)}


@pytest.mark.parametrize("indent", [None, 2], ids=["minified", "pretty"])
def test_a_large_object_reads_as_json_loads_reads_it_a_slice_at_a_time(parsed_sizes, indent):
    value = tricky_strings(40_000)
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    assert len(text) > 10 * gentle.JSON_SLICE
    read = gentle.json_loads(text)
    assert read == value and list(read) == list(value)  # the same entries, in the same order
    assert len(parsed_sizes) > 10 and max(parsed_sizes) < 3 * gentle.JSON_SLICE  # never the whole text at once


def test_a_large_list_of_nested_records_reads_as_json_loads_reads_it(parsed_sizes):
    records = [
        {"id": f"r{i}", "text": "老师，您好！ }, {", "tokens": [{"word": "老师", "gloss": 'a, "b"'}] * 3}
        for i in range(6_000)
    ]
    text = json.dumps(records, indent=2, ensure_ascii=False)
    assert gentle.json_loads(text) == records
    assert max(parsed_sizes) < 3 * gentle.JSON_SLICE


def test_repeated_keys_keep_the_last_value_as_json_loads_does():
    text = "{" + ", ".join(f'"k{i % 1000}": {i}' for i in range(20_000)) + "}"
    assert gentle.json_loads(text) == json.loads(text)


@pytest.mark.parametrize(
    "bad",
    [
        lambda t: t[:-1],  # the closing brace lost
        lambda t: t.replace('": 7,', '": 7,,', 1),  # a doubled comma
        lambda t: t.replace('"piece7', "piece7", 1),  # a key without quotes
        lambda t: t + " x",  # text after the value
        lambda t: t[:-1] + ",}",  # a trailing comma
    ],
    ids=["unclosed", "double-comma", "bare-key", "extra-data", "trailing-comma"],
)
def test_malformed_json_raises_the_error_json_loads_raises(bad):
    text = bad(json.dumps({f"piece{i}": i for i in range(20_000)}))
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as raised:
        gentle.json_loads(text)
    assert (raised.value.msg, raised.value.pos) == (expected.value.msg, expected.value.pos)


def test_small_or_scalar_json_is_read_whole():
    for text in ["{}", " [ ] ", '"a"', "3", '{"a": [1, {"b": null}]}', "[1, 2, 3]"]:
        assert gentle.json_loads(text) == json.loads(text)


def test_sorted_in_slices_is_sorted_and_stable():
    rng = random.Random(1)
    words = [
        rng.choice(["Cat", "cat", "dog", "Dog", "ant", "émile", "Zebra"]) + str(rng.randrange(50))
        for _ in range(20_000)
    ]
    key = str.casefold  # equal keys ("Cat1", "cat1") keep their order, as sorted keeps it
    assert gentle.sorted_in_slices(words, key) == sorted(words, key=key)
    assert gentle.sorted_in_slices([], key) == [] and gentle.sorted_in_slices(["b", "A"], key) == ["A", "b"]


def test_read_text_decodes_characters_cut_by_a_slice(tmp_path, monkeypatch):
    monkeypatch.setattr(gentle, "TEXT_SLICE", 7)  # every few bytes: most three-byte characters are cut
    text = "中文 text, ▁pieces and 😀 emoji\n" * 50
    path = tmp_path / "t.json"
    path.write_text(text, encoding="utf-8")
    assert gentle.read_text(path) == text
    path.write_bytes("ok 😀".encode()[:-2])  # a character cut short at the end
    with pytest.raises(UnicodeDecodeError):
        gentle.read_text(path)
