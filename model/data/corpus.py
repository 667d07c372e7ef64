"""Named tasks and user files, turned into a :class:`Corpus` with train/valid/test splits."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.core.settings import from_plain, to_plain
from model.data.errors import DataError
from model.data.files import FILE_FORMATS, LoadReport, load_pairs_file, load_text_file
from model.data.grammar import generate_grammar
from model.data.hsk import load_hsk_pairs
from model.data.stream import DEFAULT_HELD_OUT, Progress, Scan, load_scan, stream_wanted
from model.data.synthetic import SYMBOL_TASKS, generate_symbol_task
from model.data.tokenization import contains_cjk

MONOLINGUAL_TASKS = ("text-grammar-en", "text-grammar-zh", "text-hsk-en", "text-hsk-zh")  # one side only
TASKS = ("copy", "reverse", "sort", "grammar-en-zh", "grammar-zh-en", "hsk-en-zh", "hsk-zh-en", *MONOLINGUAL_TASKS)
TASK_DESCRIPTIONS = {
    "copy": "copy a random symbol sequence",
    "reverse": "reverse a random symbol sequence",
    "sort": "sort a random symbol sequence",
    "grammar-en-zh": "English → Chinese, the project's teaching grammar",
    "grammar-zh-en": "Chinese → English, the project's teaching grammar",
    "hsk-en-zh": "English → Chinese, 4,354 real HSK example sentences",
    "hsk-zh-en": "Chinese → English, 4,354 real HSK example sentences",
    "text-grammar-en": "English sentences of the teaching grammar (one side, for single-stream models)",
    "text-grammar-zh": "Chinese sentences of the teaching grammar (one side, for single-stream models)",
    "text-hsk-en": "English HSK example sentences (one side, for single-stream models)",
    "text-hsk-zh": "Chinese HSK example sentences (one side, for single-stream models)",
}
Pair = tuple[str, str]


@dataclass(frozen=True)
class DataSpec:
    """Where the sentence pairs come from: a named task or a file, with its options."""

    task: str | None = "copy"  # one of TASKS, or None for a file
    path: str | None = None  # a user file (tsv / jsonl / source side of parallel text / plain text)
    target_path: str | None = None  # the target side of two aligned plain-text files
    file_format: str = "auto"  # auto | tsv | jsonl | parallel | text (one text per line, monolingual)
    src_key: str = "english"  # JSON lines: the source field
    tgt_key: str = "chinese"  # JSON lines: the target field
    swap: bool = False  # files: translate the second column into the first
    seed: int = 0  # generation and split seed
    # symbol tasks
    length: int = 10  # longest sequence
    min_length: int = 10  # shortest sequence
    alphabet: int = 10  # number of distinct symbols
    # generated tasks: sizes
    n_train: int = 20000
    n_valid: int = 500
    n_test: int = 500
    held_out_fraction: float = 0.05  # files: share of pairs for valid and for test (each)
    # files read as a stream (see model.data.stream): forced, or automatic from 64 MB on
    stream: bool = False
    valid_size: int = 0  # streamed files: valid pairs (0: the default, 1,000)
    test_size: int = 0  # streamed files: test pairs (0: the default, 1,000)
    tokenizer_sample: int = 200_000  # streamed files: training pairs the tokenizers learn from

    def __post_init__(self) -> None:
        wrong = _wrong_kinds(self)
        if wrong:  # e.g. a tampered checkpoint; the checks below compare values
            raise DataError("Invalid data description: " + "; ".join(wrong))
        if (self.task is None) == (self.path is None):
            raise DataError("give either a task name or a data file")
        if self.task is not None and self.task not in TASKS:
            raise DataError(f"unknown task {self.task!r}; choose one of {', '.join(TASKS)} or give a data file")
        if self.file_format not in FILE_FORMATS:
            raise DataError(f"unknown file format {self.file_format!r}; choose one of {FILE_FORMATS}")
        if self.file_format == "text" and self.target_path is not None:
            raise DataError("a text file has one side only; give no second (target) file")

    @property
    def name(self) -> str:
        return self.task or self.path  # type: ignore[return-value]

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DataSpec:
        """Build from plain data (e.g. read from a checkpoint): unknown keys are refused, missing ones take
        the defaults (see :func:`model.core.settings.from_plain`)."""
        return from_plain(cls, data, "data description", DataError)


def _wrong_kinds(spec: DataSpec) -> list[str]:
    """Fields that do not hold the kind of value their default has (or None, where the field allows it)."""
    wrong = []
    for f in dataclasses.fields(spec):
        value, default = getattr(spec, f.name), f.default
        if value is None:
            ok = "None" in str(f.type)  # annotations are strings here: "str | None"
        elif default is None:
            ok = isinstance(value, str)
        elif isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        elif isinstance(default, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1
        else:
            ok = isinstance(value, type(default))
        if not ok:
            wrong.append(f"{f.name} cannot be {value!r}")
    return wrong


@dataclass
class Corpus:
    """Sentence pairs in three splits, and what loading them reported."""

    spec: DataSpec
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    src_lang: str  # "en", "zh" or "sym"
    tgt_lang: str
    report: LoadReport | None = None  # for files: kept/skipped lines
    monolingual: bool = False  # single texts, each stored as the pair (text, text); src_lang == tgt_lang
    stream: Scan | None = None  # a streamed file: ``train`` holds only the tokenizer sample
    _lookup: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def n_train(self) -> int:
        """Training pairs (of a streamed file: its lines less the held-out ones, blank and bad ones included)."""
        return self.stream.n_train if self.stream is not None else len(self.train)

    def split(self, name: str) -> list[Pair]:
        if name not in ("train", "valid", "test"):
            raise ValueError(f"unknown split {name!r}")
        return getattr(self, name)

    def texts(self, split: str) -> list[str]:
        """The texts of a split: for a monolingual corpus its texts, otherwise the source sides."""
        return [s for s, _ in self.split(split)]

    def reference_for(self, source: str) -> str | None:
        """The target of ``source`` if it is a sentence of the corpus (any split)."""
        if not self._lookup:
            for pairs in (self.test, self.valid, self.train):
                self._lookup.update((" ".join(s.split()), t) for s, t in pairs)
        return self._lookup.get(" ".join(source.split()))


def is_monolingual(spec: DataSpec) -> bool:
    """Whether ``spec`` describes single texts (a text-* task or a ``text`` file) rather than pairs."""
    return spec.task in MONOLINGUAL_TASKS or (spec.task is None and spec.file_format == "text")


def load_corpus(spec: DataSpec, cache_dir: Path | None = None, progress: Progress | None = None) -> Corpus:
    """Generate or read the pairs (or, see :func:`is_monolingual`, the single texts) that ``spec`` describes.

    A big file (or with ``spec.stream``) is only scanned (:mod:`model.data.stream`): its held-out splits and
    the tokenizer sample are read, the training pairs streamed later; ``cache_dir`` keeps the scan and the
    encoded chunks; ``progress`` hears how the reading goes."""
    task = spec.task
    if stream_wanted(spec.path, spec.stream, spec.file_format, spec.target_path):
        return _load_streamed(spec, cache_dir, progress)
    if is_monolingual(spec):
        return _load_monolingual(spec)
    if task in SYMBOL_TASKS:
        train, valid, test = generate_symbol_task(
            task, spec.n_train, spec.n_valid, spec.n_test, spec.length, spec.min_length, spec.alphabet, spec.seed
        )
        return Corpus(spec, train, valid, test, "sym", "sym")
    if task in ("grammar-en-zh", "grammar-zh-en"):
        splits = generate_grammar(spec.n_train, spec.n_valid, spec.n_test, seed=spec.seed)
        parts = [[(s.en, s.zh) for s in part] for part in (splits.train, splits.valid, splits.test)]
        return _directed(spec, parts, "en", "zh", reverse=task == "grammar-zh-en")
    if task in ("hsk-en-zh", "hsk-zh-en"):
        return _directed(spec, list(load_hsk_pairs()), "en", "zh", reverse=task == "hsk-zh-en")
    assert spec.path is not None  # a DataSpec names a task or a file
    pairs, report = load_pairs_file(spec.path, spec.file_format, spec.src_key, spec.tgt_key, spec.target_path)
    if spec.swap:
        pairs = [(t, s) for s, t in pairs]
    if len(pairs) < 3:
        raise DataError(f"{spec.path}: {len(pairs)} usable pairs are too few to train on and test")
    rng = random.Random(spec.seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    n_held = max(1, round(len(pairs) * spec.held_out_fraction))
    valid = [pairs[i] for i in order[:n_held]]
    test = [pairs[i] for i in order[n_held : 2 * n_held]]
    train = [pairs[i] for i in order[2 * n_held :]]
    return Corpus(spec, train, valid, test, _language(p[0] for p in pairs), _language(p[1] for p in pairs), report)


def stream_settings(spec: DataSpec) -> dict[str, Any]:
    """What a streamed file's scan depends on."""
    return {
        "file_format": spec.file_format,
        "src_key": spec.src_key,
        "tgt_key": spec.tgt_key,
        "swap": spec.swap,
        "valid_size": spec.valid_size or DEFAULT_HELD_OUT,
        "test_size": spec.test_size or DEFAULT_HELD_OUT,
        "tokenizer_sample": max(1, spec.tokenizer_sample),
        "target_path": spec.target_path,
    }


def _load_streamed(spec: DataSpec, cache_dir: Path | None, progress: Progress | None) -> Corpus:
    assert spec.path is not None
    scan = load_scan(spec.path, stream_settings(spec), cache_dir, progress)
    src_lang = _language(p[0] for p in scan.sample + scan.valid)
    tgt_lang = _language(p[1] for p in scan.sample + scan.valid)
    if spec.file_format == "text":  # single texts, held out and sampled by the hash as pairs are
        scan.report.unit = "lines"
    return Corpus(
        spec,
        scan.sample,
        scan.valid,
        scan.test,
        src_lang,
        tgt_lang,
        scan.report,
        monolingual=spec.file_format == "text",
        stream=scan,
    )


def _load_monolingual(spec: DataSpec) -> Corpus:
    """A text-* task (one side of a bilingual task, its splits) or a text file, as (text, text) pairs."""
    if spec.task in ("text-grammar-en", "text-grammar-zh"):
        splits = generate_grammar(spec.n_train, spec.n_valid, spec.n_test, seed=spec.seed)
        side = "en" if spec.task == "text-grammar-en" else "zh"
        parts = [[getattr(s, side) for s in part] for part in (splits.train, splits.valid, splits.test)]
        return _monolingual(spec, parts, side)
    if spec.task in ("text-hsk-en", "text-hsk-zh"):
        side = "en" if spec.task == "text-hsk-en" else "zh"
        column = 0 if side == "en" else 1
        return _monolingual(spec, [[p[column] for p in part] for part in load_hsk_pairs()], side)
    assert spec.path is not None  # a DataSpec names a task or a file
    lines, report = load_text_file(spec.path)
    if len(lines) < 3:
        raise DataError(f"{spec.path}: {len(lines)} usable lines are too few to train on and test (at least 3)")
    order = list(range(len(lines)))
    random.Random(spec.seed).shuffle(order)
    n_held = max(1, round(len(lines) * spec.held_out_fraction))
    # the same lines held out as for a pair file, but each split keeps the file's order (next-sentence tasks)
    valid, test = sorted(order[:n_held]), sorted(order[n_held : 2 * n_held])
    train = sorted(order[2 * n_held :])
    parts = [[lines[i] for i in part] for part in (train, valid, test)]
    return _monolingual(spec, parts, _language(lines), report)


def _monolingual(spec: DataSpec, parts: Sequence[list[str]], lang: str, report: LoadReport | None = None) -> Corpus:
    train, valid, test = ([(t, t) for t in part] for part in parts)
    return Corpus(spec, train, valid, test, lang, lang, report, monolingual=True)


def _directed(spec: DataSpec, splits: Sequence[list[Pair]], a: str, b: str, reverse: bool) -> Corpus:
    train, valid, test = ([(t, s) for s, t in part] for part in splits) if reverse else splits
    return Corpus(spec, train, valid, test, b, a) if reverse else Corpus(spec, train, valid, test, a, b)


def _language(texts) -> str:
    sample = [t for _, t in zip(range(200), texts)]
    cjk = sum(contains_cjk(t) for t in sample)
    return "zh" if cjk > len(sample) / 2 else "en"
