"""Pair files of any size, read as a stream.

A file is read twice, never held:

1. :func:`scan` reads it once as bytes, line by line: it notes where every chunk of :data:`CHUNK_LINES`
   lines starts and hashes every line (BLAKE2b of its bytes). The ``valid_size + test_size`` lines with
   the smallest hashes are held out (valid first, then test); the ``tokenizer_sample`` lines with the next
   smallest hashes are the sample the tokenizers are trained on. A line's hash depends on its bytes only,
   so the split is the same in every run and on every machine, and a line that occurs twice is held out
   (or trained on) both times.
2. :class:`ChunkEncoder` parses and tokenises one chunk at a time (lines whose hash is held out are
   skipped), and :class:`StreamedBatches` makes length-bucketed batches of each chunk, the chunks of an
   epoch in an order drawn from ``(seed, epoch)``. The next chunk is prepared on a thread while the
   current one trains. Encoded chunks are kept in a cache folder (next to the run), so a resumed run
   and later epochs do not parse or tokenise again; the scan is cached there too.

Encodings: detected from the first megabytes by the rules of :mod:`model.data.files` (UTF-8, GB18030,
byte-order marks); a line that does not decode is a bad line, and so is a line with a NUL byte. Bad lines are
skipped, counted and reported (:class:`~model.data.files.LoadReport`) as the stream reaches them: the held-out
lines and the sample while scanning, the training lines while the first epoch is encoded (a bad line the scan
reported is skipped like a held-out one, so that it is counted once).

Bounds: a line longer than :data:`LINE_LIMIT` bytes is a bad line, read past in pieces and never held, parsed or
tokenised; the lines the scan keeps (held out and sample) take at most :data:`HELD_BYTES`; a chunk is tokenised
:data:`ENCODE_BYTES` at a time.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import itertools
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

import numpy as np

from model.data.errors import DataError
from model.data.files import (
    NUL_PROBLEM,
    LoadReport,
    _decode,
    _parse_json,
    _parse_tsv,
    _Undecodable,
    _utf8_lines,
    open_regular,
    size_text,
    too_long,
)

CHUNK_LINES = 8192  # lines per chunk: the unit of reading, encoding, caching and sharding
SAMPLE_BYTES = 4 << 20  # what the encoding and the format are told from
STREAM_FROM_BYTES = 64 << 20  # files from this size on are streamed unless asked otherwise
DEFAULT_HELD_OUT = 1000  # valid and test pairs each, when not given
SCAN_VERSION = 3  # of the cached scan's layout (3: held_out has the bad lines the scan reported)
LINE_LIMIT = 1 << 20  # bytes of a line: longer is a bad line (why 1 MB: see model.data.files.LINE_LIMIT)
HELD_BYTES = 256 << 20  # bytes of the lines a scan keeps (held out and sample): the sample shrinks to fit
ENCODE_BYTES = 4 << 20  # bytes of lines tokenised at once (a tokenizer's own memory is ~100 bytes per byte)


@dataclass(frozen=True)
class ReadingProgress:
    """How far a scan has read a streamed file (two aligned files: their bytes together), as numbers; a status line
    shows them as :meth:`text` (a terminal) or :meth:`pace_text` (the window's note)."""

    read_bytes: int  # bytes read so far
    total_bytes: int  # bytes of the file (of both files)
    lines: int  # lines read so far
    mb_per_s: float  # megabytes (10⁶ bytes) read per second so far
    seconds_left: float  # at that rate (0 before anything was read)

    @classmethod
    def after(cls, read_bytes: int, total_bytes: int, lines: int, seconds: float) -> ReadingProgress:
        """The progress once ``read_bytes`` of ``total_bytes`` (``lines`` lines) were read in ``seconds``."""
        rate = read_bytes / 1e6 / max(seconds, 1e-6)
        left = (total_bytes - read_bytes) / 1e6 / rate if rate > 0 else 0.0
        return cls(read_bytes, total_bytes, lines, rate, left)

    def amount_text(self) -> str:
        """ "412 MB of 1,024 MB, 2.9 M lines"."""
        return f"{self.read_bytes / 1e6:,.0f} MB of {self.total_bytes / 1e6:,.0f} MB, {self.lines / 1e6:.1f} M lines"

    def pace_text(self) -> str:
        """ "98 MB/s, 6 s left"."""
        return f"{self.mb_per_s:.0f} MB/s, {self.seconds_left:.0f} s left"

    def text(self) -> str:
        """ "412 MB of 1,024 MB, 2.9 M lines, 98 MB/s, 6 s left"."""
        return f"{self.amount_text()}, {self.pace_text()}"


@dataclass(frozen=True)
class TokenizerSample:
    """The sample of a streamed file that its tokenizers are trained on."""

    pairs: int

    def text(self) -> str:
        """ "on a sample of 12,345 pairs"."""
        return f"on a sample of {self.pairs:,} pairs"


ProgressDetail = ReadingProgress | TokenizerSample
Progress = Callable[[str, float | None, ProgressDetail], None]  # (stage, fraction done or None, how far)


def line_hash(line: bytes) -> int:
    """The 64-bit hash a line is split by (its bytes without the line break)."""
    return int.from_bytes(hashlib.blake2b(line, digest_size=8).digest(), "little")


def stream_wanted(path: str | None, forced: bool, file_format: str = "auto", target_path: str | None = None) -> bool:
    """Whether the file at ``path`` is read as a stream: when asked, or from :data:`STREAM_FROM_BYTES` on."""
    if path is None:
        return False
    if forced:
        return True
    try:
        return os.path.getsize(path) + (os.path.getsize(target_path) if target_path else 0) >= STREAM_FROM_BYTES
    except OSError:
        return False  # reading it whole gives the message


@dataclass
class Scan:
    """What one pass over a file found: where its chunks start, what is held out, the tokenizer sample."""

    path: str
    size: int
    mtime_ns: int
    encoding: str
    fmt: str
    lines: int  # all lines, blank ones included
    offsets: list[int]  # byte offset of line k·CHUNK_LINES, for each chunk k
    held_out: set[int]  # hashes of the valid and test lines
    valid: list[tuple[str, str]]
    test: list[tuple[str, str]]
    sample: list[tuple[str, str]]  # training pairs the tokenizers learn from
    report: LoadReport = field(repr=False, default_factory=lambda: LoadReport(""))
    # two aligned files (source and target, a sentence per line): the target file, and where its chunks start
    target_path: str | None = None
    target_offsets: list[int] = field(default_factory=list)
    target_size: int = 0
    target_mtime_ns: int = 0

    @property
    def chunks(self) -> int:
        return len(self.offsets)

    @property
    def n_train(self) -> int:
        """Training lines (an upper bound: blank and bad lines are found only when their chunk is read)."""
        return max(0, self.lines - len(self.held_out))

    def to_json(self) -> dict[str, Any]:
        return {
            "version": SCAN_VERSION,
            "path": self.path,
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "encoding": self.encoding,
            "fmt": self.fmt,
            "lines": self.lines,
            "offsets": self.offsets,
            "held_out": sorted(self.held_out),
            "valid": self.valid,
            "test": self.test,
            "sample": self.sample,
            "skipped": self.report.skipped,
            "problems": self.report.problems,
            "target_path": self.target_path,
            "target_offsets": self.target_offsets,
            "target_size": self.target_size,
            "target_mtime_ns": self.target_mtime_ns,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Scan:
        report = LoadReport(d["path"], d["encoding"], skipped=d["skipped"], problems=list(d["problems"]))
        valid, test, sample = ([(str(p[0]), str(p[1])) for p in d[k]] for k in ("valid", "test", "sample"))
        scan = cls(
            d["path"],
            d["size"],
            d["mtime_ns"],
            d["encoding"],
            d["fmt"],
            d["lines"],
            list(d["offsets"]),
            set(d["held_out"]),
            valid,
            test,
            sample,
            report,
            d["target_path"],
            list(d["target_offsets"]),
            d["target_size"],
            d["target_mtime_ns"],
        )
        scan.report.kept = scan.n_train + len(scan.valid) + len(scan.test)
        return scan


def detect(path: Path, file_format: str) -> tuple[str, str]:
    """The encoding of the file at ``path`` and its format, told from its first megabytes."""
    head = _head(path)
    try:
        text, encoding = _decode(path, head)
    except _Undecodable as exc:  # damaged lines in a UTF-8 file: bad lines, as long as they are few
        lines = _utf8_lines(head)
        if sum(line is None for line in lines) * 2 > len(lines):
            raise DataError(str(exc)) from None
        text, encoding = "\n".join(line for line in lines if line is not None), "utf-8"
    if encoding == "utf-16":
        raise DataError(f"{path} is UTF-16 text, which cannot be streamed; save it as UTF-8 and try again")
    if file_format == "auto":
        from model.data.files import detect_format

        file_format = detect_format(path, text)
    return encoding, file_format


def _head(path: Path) -> bytes:
    """The first SAMPLE_BYTES of the file's whole lines, lines longer than LINE_LIMIT left out (bad lines: the
    encoding and the format are told from the others, never from a character cut in two)."""
    parts, size, read = [], 0, 0
    with open_regular(path) as f:
        for taken, line in _lines_of(f):
            read += taken
            if line is not None:
                parts.append(line)
                size += len(line) + 1
            if size >= SAMPLE_BYTES or read >= 16 * SAMPLE_BYTES:
                break
    if read and not parts:
        raise DataError(
            f"{path}: its first lines are all longer than {size_text(LINE_LIMIT)}; split long texts into lines"
        )
    return b"".join(line + b"\n" for line in parts)


def scan(
    path: str | Path,
    file_format: str,
    valid_size: int,
    test_size: int,
    sample_size: int,
    parse: Callable[[str], tuple[str, str] | str],
    progress: Progress | None = None,
    target: str | Path | None = None,
) -> Scan:
    """One pass over the file at ``path`` (see the module's description); ``parse`` reads one line. With
    ``target``: two aligned files, line n of one translating line n of the other, read side by side (a line is
    then the two lines' bytes joined by a NUL byte)."""
    path = Path(path)
    encoding, fmt = _encoding_of(path, file_format, target)
    paths = [path] + ([Path(target)] if target is not None else [])
    smallest = _Smallest(valid_size + test_size + sample_size, valid_size + test_size, path)
    offsets: list[list[int]] = [[] for _ in paths]
    pos, n, t0, said = [0] * len(paths), -1, time.perf_counter(), 0.0
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(open_regular(p)) for p in paths]
        stats = [os.fstat(f.fileno()) for f in files]
        total = sum(st.st_size for st in stats)
        for n, (sizes, line) in enumerate(_side_by_side(files, paths)):
            if n % CHUNK_LINES == 0:
                for k, offset in enumerate(pos):
                    offsets[k].append(offset)
                if progress is not None and time.perf_counter() - said > 0.25:
                    said = time.perf_counter()
                    progress("reading", sum(pos) / max(1, total), ReadingProgress.after(sum(pos), total, n, said - t0))
            pos = [a + b for a, b in zip(pos, sizes)]
            if line is not None and not _blank(line, target is not None):  # a long line: a bad line, when encoded
                smallest.offer(n, line)
    report = LoadReport(" + ".join(map(str, paths)), encoding)
    valid, test, sample, held = _choose(smallest.heap, encoding, parse, report, valid_size, test_size, path)
    result = Scan(
        str(path),
        stats[0].st_size,
        stats[0].st_mtime_ns,
        encoding,
        fmt,
        n + 1,
        offsets[0],
        held,
        valid,
        test,
        sample,
        report,
    )
    if target is not None:
        result.target_path, result.target_offsets = str(target), offsets[1]
        result.target_size, result.target_mtime_ns = stats[1].st_size, stats[1].st_mtime_ns
    report.kept = result.n_train + len(valid) + len(test)
    if progress is not None:
        progress("reading", 1.0, ReadingProgress.after(sum(pos), total, n + 1, time.perf_counter() - t0))
    return result


class _Smallest:
    """The lines with the smallest hashes: at most ``keep`` of them, and at most HELD_BYTES of their bytes (past
    that, the largest hashes go and ``keep`` shrinks to the rest, never below ``least``: the held-out lines)."""

    def __init__(self, keep: int, least: int, path: Path) -> None:
        self.keep, self.least, self.path = keep, least, path
        self.heap: list[tuple[int, int, bytes]] = []  # (−hash, line number, bytes)
        self.bytes = 0

    def offer(self, n: int, line: bytes) -> None:
        h = line_hash(line)
        if len(self.heap) < self.keep:
            heapq.heappush(self.heap, (-h, n, line))
        elif -self.heap[0][0] > h:
            self.bytes -= len(heapq.heapreplace(self.heap, (-h, n, line))[2])
        else:
            return
        self.bytes += len(line)
        while self.bytes > HELD_BYTES and len(self.heap) > self.least:
            self.bytes -= len(heapq.heappop(self.heap)[2])
            self.keep = len(self.heap)
        if self.bytes > HELD_BYTES:
            raise DataError(
                f"{self.path}: the {self.least} lines held out for validation and testing would take more than "
                f"{size_text(HELD_BYTES)}; its lines are far longer than sentences — use a smaller --valid-size / "
                "--test-size, or split long texts into lines"
            )


def _blank(line: bytes, joined: bool) -> bool:
    """A blank line (skipped, not a bad line); two aligned files' lines are joined by a NUL (see :func:`scan`)."""
    return not (line.replace(b"\x00", b"", 1) if joined else line).strip()


def _lines_of(f: IO[bytes]) -> Iterator[tuple[int, bytes | None]]:
    """(the bytes a line of ``f`` takes, the line without its break: None for a line longer than LINE_LIMIT, which
    is read past in pieces, never held whole)."""
    limit = LINE_LIMIT
    while raw := f.readline(limit + 2):  # room for "\r\n"
        size = len(raw)
        if size == limit + 2 and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = f.readline(1 << 16)
                size += len(raw)
            yield size, None
            continue
        line = raw.rstrip(b"\r\n")
        yield size, line if len(line) <= limit else None


def _encoding_of(path: Path, file_format: str, target: str | Path | None) -> tuple[str, str]:
    """The encoding and format of a file, or of two aligned files (which must share their encoding)."""
    encoding, fmt = detect(path, file_format)
    if target is None:
        return encoding, fmt
    other, _ = detect(Path(target), "parallel")
    plain = {"utf-8-sig": "utf-8"}  # a byte-order mark is taken off each line's text (see line_parser)
    if plain.get(encoding, encoding) != plain.get(other, other):
        raise DataError(
            f"{path} is {encoding} but {target} is {other}: two files read as a stream need one "
            "encoding; save both as UTF-8"
        )
    return plain.get(encoding, encoding), "parallel"


def _side_by_side(files: Sequence[IO[bytes]], paths: list[Path]) -> Iterator[tuple[list[int], bytes | None]]:
    """(each file's bytes of this line, the line without its break: with two files, both joined by NUL; None for
    a line longer than LINE_LIMIT)."""
    if len(files) == 1:
        for size, line in _lines_of(files[0]):
            yield [size], line
        return
    n, ours, theirs = 0, _lines_of(files[0]), _lines_of(files[1])
    for a, b in itertools.zip_longest(ours, theirs):
        if a is None or b is None:
            rest = 1 + sum(1 for _ in (ours if b is None else theirs))
            counts = (n + rest, n) if b is None else (n, n + rest)
            raise DataError(
                f"the files are misaligned: {paths[0]} has {counts[0]} lines but {paths[1]} has {counts[1]}; "
                "line n of one must translate line n of the other"
            )
        n += 1
        yield [a[0], b[0]], None if a[1] is None or b[1] is None else a[1] + b"\x00" + b[1]


def _choose(
    heap: list[tuple[int, int, bytes]],
    encoding: str,
    parse: Callable[[str], tuple[str, str] | str],
    report: LoadReport,
    valid_size: int,
    test_size: int,
    path: Path,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]], set[int]]:
    """The lines with the smallest hashes, read: valid, test, the tokenizer sample, and the held-out hashes."""
    pairs: list[tuple[int, tuple[str, str]]] = []
    bad: set[int] = set()
    for h, line_no, line in sorted((-neg, n, line) for neg, n, line in heap):
        pair = _read_line(line, encoding, parse)
        if isinstance(pair, str):
            report.skip(line_no + 1, pair)
            bad.add(h)
        else:
            pairs.append((h, pair))
    held = pairs[: valid_size + test_size]
    if len(held) < valid_size + test_size or len(pairs) - len(held) < 1:
        raise DataError(
            f"{path}: {len(pairs)} usable pairs are too few to hold out {valid_size} valid and {test_size} test "
            "pairs and train on the rest; use a smaller --valid-size / --test-size, or a bigger file"
        )
    valid = [p for _, p in held[:valid_size]]
    test = [p for _, p in held[valid_size:]]
    return valid, test, [p for _, p in pairs[len(held) :]], {h for h, _ in held} | bad  # bad: counted once


def _read_line(line: bytes, encoding: str, parse: Callable[[str], tuple[str, str] | str]) -> tuple[str, str] | str:
    """A pair from a line's bytes, or why it is a bad line."""
    try:
        text = line.decode("utf-8" if encoding == "utf-8-sig" else encoding)
    except UnicodeDecodeError:
        return f"not valid {encoding.upper()} (undecodable bytes)"
    pair = parse(text.lstrip("\ufeff"))
    if not isinstance(pair, str) and ("\x00" in pair[0] or "\x00" in pair[1]):
        return NUL_PROBLEM
    return pair


def line_parser(fmt: str, src_key: str, tgt_key: str, swap: bool) -> Callable[[str], tuple[str, str] | str]:
    """How one line of a ``tsv`` or ``jsonl`` file becomes a pair (or the reason it does not)."""
    if fmt not in ("tsv", "jsonl", "text", "parallel"):
        raise DataError(f"a {fmt} file cannot be streamed; give tab-separated pairs, JSON lines or plain text")
    if fmt == "text":  # one text per line, kept as the pair (text, text)
        return lambda text: NUL_PROBLEM if "\x00" in text else (text.strip(), text.strip())
    if fmt == "parallel":
        return partial(_parallel_pair, swap=swap)

    def parse(text: str) -> tuple[str, str] | str:
        if "\x00" in text:
            return NUL_PROBLEM
        pair = _parse_tsv(text) if fmt == "tsv" else _parse_json(text, src_key, tgt_key)
        return pair if isinstance(pair, str) or not swap else (pair[1], pair[0])

    return parse


def _parallel_pair(text: str, swap: bool) -> tuple[str, str] | str:
    """A pair from the two aligned lines joined by NUL (see :func:`scan`), or why it is a bad line."""
    if text.count("\x00") != 1:
        return NUL_PROBLEM
    src, tgt = (part.lstrip("\ufeff").strip() for part in text.split("\x00"))
    if not src or not tgt:
        return "empty " + ("source" if not src else "target")
    return (tgt, src) if swap else (src, tgt)


def load_scan(
    path: str | Path, settings: dict[str, Any], cache_dir: Path | None, progress: Progress | None = None
) -> Scan:
    """The scan of ``path`` with ``settings`` (format, keys, swap, sizes): from the cache when the file has
    not changed since, else made now and cached."""
    path = Path(path)
    target = settings.get("target_path")
    fmt = "parallel" if target else settings["file_format"]
    if fmt == "auto":
        fmt = detect(path, fmt)[1]
    parse = line_parser(fmt, settings["src_key"], settings["tgt_key"], settings["swap"])
    cached = _scan_file(path, settings, cache_dir)
    if cached is not None and cached.exists():
        try:
            saved = json.loads(cached.read_text("utf-8"))
            if saved.get("version") != SCAN_VERSION:
                raise ValueError("a scan of another version")
            scan_ = Scan.from_json(saved)
            stat = path.stat()
            same = (scan_.size, scan_.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
            if target:
                t = Path(target).stat()
                same = same and (scan_.target_size, scan_.target_mtime_ns) == (t.st_size, t.st_mtime_ns)
            if same:
                return scan_
        except (OSError, ValueError, KeyError, TypeError):
            pass  # damaged or from another version: scanned again below
    result = scan(
        path, fmt, settings["valid_size"], settings["test_size"], settings["tokenizer_sample"], parse, progress, target
    )
    if cached is not None:
        _write_atomically(cached, json.dumps(result.to_json(), ensure_ascii=False).encode("utf-8"))
    return result


def _scan_file(path: Path, settings: dict[str, Any], cache_dir: Path | None) -> Path | None:
    if cache_dir is None:
        return None
    key = json.dumps({"path": str(path.resolve()), **settings}, sort_keys=True)
    return cache_dir / f"scan-{hashlib.sha1(key.encode()).hexdigest()[:16]}.json"


def _write_atomically(path: Path, data: bytes) -> None:
    """``data`` into ``path`` through a temporary file: a reader never sees half of it. A cache that cannot
    be written is only slower next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass


class ChunkEncoder:
    """Chunk ``k`` of a scanned file as token ids (:class:`~model.data.batching.EncodedPairs`): parsed and
    tokenised, or read back from the cache. Bad lines found on the way go into the scan's report."""

    def __init__(
        self,
        scan_: Scan,
        parse: Callable[[str], tuple[str, str] | str],
        src_tok: Any,
        tgt_tok: Any,
        max_len: int,
        specials: Any,
        cache_dir: Path | None,
        reserve: int | None = None,
    ) -> None:
        self.scan, self.parse = scan_, parse
        self.src_tok, self.tgt_tok, self.max_len, self.specials = src_tok, tgt_tok, max_len, specials
        self.reserve = reserve  # single texts (a ``text`` file): positions kept free for specials; None: pairs
        self.cache_dir = cache_dir / self._key() if cache_dir is not None else None
        self.truncated = 0
        self._lock = threading.Lock()
        self._counted: set[int] = set()  # chunks whose bad lines are in the report

    def _key(self) -> str:
        parts = [
            self.scan.path,
            self.scan.size,
            self.scan.mtime_ns,
            self.scan.fmt,
            self.max_len,
            list(self.specials),
            self.reserve,
            self.src_tok.to_json(),
            self.tgt_tok.to_json(),
            sorted(self.scan.held_out)[:50],
        ]
        return "chunks-" + hashlib.sha1(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]

    def __call__(self, k: int) -> Any:
        """Chunk ``k``: :class:`~model.data.batching.EncodedPairs`, or for single texts
        :class:`~model.data.text_batching.EncodedTexts`."""
        cached = self.cache_dir / f"{k:06d}.npz" if self.cache_dir is not None else None
        if cached is not None and cached.exists():
            try:
                return self._read(cached)
            except (OSError, ValueError, KeyError):
                pass  # damaged: encoded again
        encoded = self._encode(k)
        if cached is not None:
            _write_atomically(cached, _npz_bytes(encoded))
        return encoded

    def _read(self, cached: Path) -> Any:
        from model.data.batching import EncodedPairs
        from model.data.text_batching import EncodedTexts

        def lists(z: Any, name: str) -> list[list[int]]:
            ends = z[name + "_ends"]
            return [part.tolist() for part in np.split(z[name], ends[:-1])] if len(ends) else []

        with np.load(cached) as z:
            if self.reserve is not None:
                return EncodedTexts(lists(z, "ids"), 0, self.specials)
            return EncodedPairs(lists(z, "src"), lists(z, "tgt"), 0, self.specials)

    def _encode(self, k: int) -> Any:
        """Chunk ``k`` parsed and tokenised, ENCODE_BYTES of lines at a time; its bad lines go into the report."""
        scan_, pieces, pairs, held, bad = self.scan, [], [], 0, []
        with contextlib.ExitStack() as stack:
            for i, line in enumerate(self._lines(stack, k)):
                if line is None:
                    bad.append((k * CHUNK_LINES + i + 1, too_long(LINE_LIMIT)))
                    continue
                if _blank(line, scan_.target_path is not None) or line_hash(line) in scan_.held_out:
                    continue
                pair = _read_line(line, scan_.encoding, self.parse)
                if isinstance(pair, str):
                    bad.append((k * CHUNK_LINES + i + 1, pair))
                    continue
                pairs.append(pair)
                held += len(line)
                if held > ENCODE_BYTES:
                    pieces.append(self._tokenise(pairs))
                    pairs, held = [], 0
        pieces.append(self._tokenise(pairs))
        with self._lock:
            if k not in self._counted:
                self._counted.add(k)
                for line_no, why in bad:
                    scan_.report.skip(line_no, why)
                scan_.report.kept -= len(bad)
        return _joined(pieces)

    def _lines(self, stack: contextlib.ExitStack, k: int) -> Iterator[bytes | None]:
        """The lines of chunk ``k`` as :func:`scan` hashed them (two aligned files' joined by NUL; None: too long)."""
        scan_ = self.scan
        ours = _chunk_lines(stack.enter_context(open_regular(scan_.path)), scan_.offsets[k])
        if scan_.target_path is None:
            return ours
        theirs = _chunk_lines(stack.enter_context(open_regular(scan_.target_path)), scan_.target_offsets[k])
        return (None if a is None or b is None else a + b"\x00" + b for a, b in zip(ours, theirs))

    def _tokenise(self, pairs: list[tuple[str, str]]) -> Any:
        encoded: Any
        if self.reserve is not None:
            from model.data.text_batching import encode_texts

            encoded = encode_texts([t for t, _ in pairs], self.tgt_tok, self.max_len, self.reserve, self.specials)
        else:
            from model.data.batching import encode_pairs

            encoded = encode_pairs(pairs, self.src_tok, self.tgt_tok, self.max_len, self.specials)
        self.truncated += encoded.truncated
        return encoded


def _chunk_lines(f: IO[bytes], offset: int) -> Iterator[bytes | None]:
    """The lines of the chunk that starts at ``offset``, without their line breaks (None: longer than LINE_LIMIT)."""
    f.seek(offset)
    return (line for _, line in itertools.islice(_lines_of(f), CHUNK_LINES))


def _joined(pieces: list[Any]) -> Any:
    """One EncodedPairs (or EncodedTexts) of a chunk tokenised in pieces."""
    from model.data.batching import EncodedPairs

    first, truncated = pieces[0], sum(p.truncated for p in pieces)
    if len(pieces) == 1:
        return first
    if isinstance(first, EncodedPairs):
        return EncodedPairs(
            [s for p in pieces for s in p.src], [t for p in pieces for t in p.tgt], truncated, first.specials
        )
    return type(first)([ids for p in pieces for ids in p.ids], truncated, first.specials)


def _npz_bytes(encoded: Any) -> bytes:
    import io

    buf = io.BytesIO()
    flat: dict[str, Any] = {}
    fields = (("ids", encoded.ids),) if hasattr(encoded, "ids") else (("src", encoded.src), ("tgt", encoded.tgt))
    for name, seqs in fields:
        lengths = np.array([len(s) for s in seqs], dtype=np.int64)
        flat[name] = np.fromiter((i for s in seqs for i in s), dtype=np.int32, count=int(lengths.sum()))
        flat[name + "_ends"] = np.cumsum(lengths)
    np.savez(buf, **flat)
    return buf.getvalue()


class StreamedBatches:
    """Endless training batches from a streamed file: :class:`~model.data.batching.BatchStream`'s contract
    (``next()``, ``state_dict()``) with the state ``(epoch, chunk, position)``.

    An epoch visits the chunks in an order drawn from ``(seed, epoch)``; with ``world`` ranks, rank ``r``
    takes the epoch's chunks ``r, r + world, …``. Within a chunk, batches are bucketed by length as in
    :func:`~model.data.batching.bucketed_plan`. ``chunk`` counts the chunks this rank has finished in the
    epoch; a resumed run with the same number of ranks continues with exactly the next batch; with another
    number of ranks, each rank starts at the chunk the saved rank had reached.
    """

    POOL = 50  # batches per sorting pool, as BatchStream

    def __init__(
        self,
        encoder: ChunkEncoder,
        batch_size: int,
        seed: int,
        epoch: int = 0,
        chunk: int = 0,
        position: int = 0,
        rank: int = 0,
        world: int = 1,
        text_options: dict[str, Any] | None = None,
    ) -> None:
        self.encoder, self.batch_size, self.seed = encoder, batch_size, seed
        # single texts: TextStream's kind and options (the batches of each chunk are a TextStream's); None: pairs
        self.text_options = text_options
        self._batches = 0
        self._plan: list[np.ndarray] = []
        self._texts: Any = None
        self.rank, self.world = rank, world
        self.epoch, self.chunk, self.position = epoch, chunk // world, position
        self._ahead: tuple[tuple[int, int], _Prefetch] | None = None
        self._data: Any = None
        self._load()

    @property
    def per_rank(self) -> int:
        """Chunks of an epoch that this rank trains on."""
        return max(1, -(-(self.encoder.scan.chunks - self.rank) // self.world))

    def _order(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.seed, epoch, 1]).permutation(self.encoder.scan.chunks)

    def _slot(self, epoch: int, chunk: int) -> tuple[int, int]:
        """(epoch, file chunk index) of this rank's ``chunk``-th chunk of ``epoch``, moving on to the next
        epoch past the last one."""
        epoch, chunk = epoch + chunk // self.per_rank, chunk % self.per_rank
        order = self._order(epoch)
        return epoch, int(order[min(len(order) - 1, chunk * self.world + self.rank)])

    def _fetch(self, epoch: int, chunk: int) -> tuple[int, Any]:
        """(the file chunk index, its encoded examples) of this rank's ``chunk``-th chunk of ``epoch``; the next
        one is prepared on a thread meanwhile."""
        slot = self._slot(epoch, chunk)
        if self._ahead is not None and self._ahead[0] == slot:
            data = self._ahead[1].result()
        else:
            data = self.encoder(slot[1])
        nxt = self._slot(epoch, chunk + 1)
        self._ahead = (nxt, _Prefetch(self.encoder, nxt[1]))
        return slot[1], data

    def _load(self) -> None:
        """The chunk at (epoch, chunk) and its batch plan; empty chunks (all bad or held out) are passed over."""
        for _ in range(self.encoder.scan.chunks * 2 + 2):
            if self.chunk >= self.per_rank:
                self.epoch, self.chunk = self.epoch + 1, 0
            file_chunk, data = self._fetch(self.epoch, self.chunk)
            seed = self.seed * 1_000_003 + file_chunk  # the chunk's own order
            if self._plan_chunk(data, seed) and self.position < self._batches:
                return
            self.chunk, self.position = self.chunk + 1, 0
        raise DataError(f"{self.encoder.scan.path}: no usable training examples")

    def _plan_chunk(self, data: Any, seed: int) -> bool:
        """Batches of ``data`` in bucketed order (pairs), or a text stream over it (single texts); False when
        the chunk holds nothing to train on."""
        from model.data.batching import bucketed_plan
        from model.data.text_batching import TextStream

        self._data = data
        if self.text_options is None:
            if not data.src:
                return False
            lengths = np.array([len(s) + len(t) for s, t in zip(data.src, data.tgt)])
            self._plan = bucketed_plan(lengths, self.batch_size, seed, self.epoch, self.POOL)
            self._batches = len(self._plan)
            return True
        try:
            self._texts = TextStream(
                data, self.batch_size, seed, epoch=self.epoch, position=self.position, **self.text_options
            )
        except (ValueError, IndexError):  # no texts (or too few for next-sentence pairs)
            return False
        self._batches = len(self._texts._plan)
        return True

    def __iter__(self) -> StreamedBatches:
        return self

    def __next__(self) -> Any:
        from model.data.batching import collate

        if self.position >= self._batches:
            self.chunk, self.position = self.chunk + 1, 0
            self._load()
        self.position += 1
        if self.text_options is not None:
            return next(self._texts)
        idx = self._plan[self.position - 1]
        d = self._data
        return collate([d.src[i] for i in idx], [d.tgt[i] for i in idx], d.specials)

    def state_dict(self) -> dict[str, int]:
        """``chunk``: the chunks all ranks have finished in the epoch (this rank's count × ranks)."""
        return {"epoch": self.epoch, "chunk": self.chunk * self.world, "position": self.position}


class _Prefetch:
    """``fn(arg)`` computed on a thread of its own (a daemon: a run that ends does not wait for it)."""

    def __init__(self, fn: Callable[[int], Any], arg: int) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, arg), name="chunk-reader", daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[int], Any], arg: int) -> None:
        try:
            self._value = fn(arg)
        except BaseException as exc:  # handed to the reader, who raises it where it can be handled
            self._error = exc

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
