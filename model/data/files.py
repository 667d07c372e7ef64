"""Loading a person's own parallel data.

Formats:
- ``tsv``: one pair per line, ``source<TAB>target`` (Tatoeba / Anki exports);
  further columns are ignored.
- ``jsonl``: one JSON object per line with the two texts under ``src_key`` and
  ``tgt_key`` (default ``english`` / ``chinese``, translation2019zh style).
- ``parallel``: two plain-text files with one sentence per line, line n of one
  translating line n of the other.
- ``text``: plain text, one sentence or document per line, for single-stream
  (language) models: read with :func:`load_text_file`, not :func:`load_pairs_file`.

Encodings: UTF-8 first; a UTF-8 or UTF-16 byte-order mark is honoured; GB18030
(a superset of GBK/GB2312) is tried when the file is not UTF-8. (A Latin-1 file
that happens to decode as GB18030 is read as such: check the Data panel.) Empty, binary and
misaligned files, UTF-16 without a byte-order mark, and anything but a regular file (a pipe is
never waited on) raise :class:`DataError`; bad lines (a NUL byte included, wherever it is, and
lines longer than :data:`LINE_LIMIT`) are skipped, counted and reported with their line numbers. A ``text`` file
that is neither UTF-8 nor GB18030 as a whole is read line by line as UTF-8, its undecodable lines
skipped and reported, as long as they are at most half of its lines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from model.data.errors import DataError
from model.io import safe_files
from model.io.safe_files import NotAFileError

FILE_FORMATS = ("auto", "tsv", "jsonl", "parallel", "text")
MAX_REPORTED = 20  # problems listed one by one; the rest are counted
NUL_PROBLEM = "contains a NUL byte (binary data, not text)"
# bytes of a line (UTF-8 bytes of a file read whole, the file's own bytes of a streamed one): a longer line is a bad
# line, never parsed or tokenised. Sentence pairs are under a few KB and a model reads at most max_len tokens of a
# text, so 1 MB is far past any line worth training on, and tokenising one takes milliseconds, not gigabytes
LINE_LIMIT = 1 << 20
SNIFF_BYTES = 1 << 20  # what the binary check reads: the share of its lines with a NUL byte


def too_long(limit: int) -> str:
    """Why a line longer than ``limit`` bytes is a bad line."""
    return f"longer than {size_text(limit)}; split long texts into lines"


def size_text(n: float) -> str:
    """ "1000 B", "64 KB", "1.5 MB"."""
    unit = "B"
    for bigger in ("KB", "MB", "GB"):
        if n < 1024:
            break
        n, unit = n / 1024, bigger
    return (f"{n:.0f}" if n >= 10 else f"{n:.1f}".rstrip("0").rstrip(".")) + " " + unit


@dataclass
class LoadReport:
    """What loading a file kept and skipped."""

    path: str
    encoding: str = "utf-8"
    kept: int = 0
    skipped: int = 0
    problems: list[str] = field(default_factory=list)  # "line 12: …", at most MAX_REPORTED
    unit: str = "pairs"  # what a kept line holds: "pairs", or "lines" for a text file

    def skip(self, line_no: int, why: str) -> None:
        self.skipped += 1
        if len(self.problems) < MAX_REPORTED:
            self.problems.append(f"line {line_no}: {why}")

    def summary(self) -> str:
        text = f"{self.kept} {self.unit} read from {self.path} ({self.encoding})"
        if self.skipped:
            text += f"; {self.skipped} bad lines skipped — " + "; ".join(self.problems)
            if self.skipped > len(self.problems):
                text += f"; … and {self.skipped - len(self.problems)} more"
        return text


def read_text(path: str | Path) -> tuple[str, str]:
    """The file's text and the encoding it was in. Refuses missing, empty and binary files."""
    path = Path(path)
    return _decode(path, read_bytes(path))


def read_bytes(path: Path, limit: int = -1) -> bytes:
    """The file's bytes (the first ``limit`` of them, if given); a DataError that says why it cannot be read."""
    with open_regular(path) as f:
        try:
            return f.read(limit)
        except OSError as exc:
            raise DataError(f"{path}: cannot be read ({exc.strerror})") from None


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for reading bytes; a DataError that says why not, and for anything but a regular file. A
    pipe is opened without waiting for a writer and refused, so that reading a data file never blocks."""
    try:
        return safe_files.open_regular(path)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path} is a folder; choose a data file inside it") from None
    except NotAFileError as exc:
        if Path(path).is_dir():
            raise DataError(f"{path} is a folder; choose a data file inside it") from None
        raise DataError(
            f"{path} is not a regular file (a pipe, a socket or a device); choose a data file on disk"
        ) from exc
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror})") from None


class _Undecodable(DataError):
    """A file that is neither UTF-8 nor GB18030; ``data`` holds its bytes (for :func:`load_text_file`)."""

    def __init__(self, message: str, data: bytes) -> None:
        super().__init__(message)
        self.data = data


def _decode(path: Path, data: bytes) -> tuple[str, str]:
    """``data``'s text and the encoding it was in (see :func:`read_text`)."""
    if not data.strip():
        raise DataError(f"{path} is empty; it needs one sentence pair per line")
    for bom, codec in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):  # e.g. Excel's "Unicode Text"
        if data.startswith(bom):
            try:
                return data[2:].decode(codec), "utf-16"
            except UnicodeDecodeError:
                raise DataError(f"{path} starts like UTF-16 but is not valid UTF-16; save it as UTF-8") from None
    sample = data[:65536]
    if _mostly_nul(data[:SNIFF_BYTES]):  # a line with a NUL byte in text is a bad line; most lines: not text
        order = _utf16_order(sample)
        if order:
            raise DataError(
                f"{path} is probably UTF-16 text ({order}) without a byte-order mark, which cannot be read "
                "reliably; save it as UTF-8 (in most editors: Save As, encoding UTF-8) and try again"
            )
        raise DataError(_BINARY.format(path=path))
    if sum(b < 32 and b not in (0, 9, 10, 13) for b in sample) > len(sample) * 0.01:
        raise DataError(_BINARY.format(path=path))
    if data.startswith(b"\xef\xbb\xbf"):
        try:
            return data[3:].decode("utf-8"), "utf-8-sig"
        except UnicodeDecodeError as exc:
            line = data[3 : exc.start + 3].count(b"\n") + 1
            raise DataError(
                f"{path} starts like UTF-8 but is not valid UTF-8 (line {line}); save it as UTF-8"
            ) from None
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as utf8_error:
        try:
            return data.decode("gb18030"), "gb18030"
        except UnicodeDecodeError:
            line = data[: utf8_error.start].count(b"\n") + 1
            raise _Undecodable(
                f"{path} is neither UTF-8 nor GB18030 (first undecodable byte on line {line}); "
                "save it as UTF-8 and try again",
                data,
            ) from None


_BINARY = (
    "{path} looks like a binary file, not text; export your sentence pairs as tab-separated text (.tsv), "
    "JSON lines (.jsonl) or plain text"
)


def _mostly_nul(sample: bytes) -> bool:
    """Whether most lines of ``sample`` hold a NUL byte (binary data, or UTF-16), rather than a few bad lines."""
    lines, with_nul, at = sample.count(b"\n") + 1, 0, sample.find(b"\x00")
    while at >= 0:  # one step per line with a NUL, whatever its count of them
        with_nul += 1
        end = sample.find(b"\n", at)
        at = sample.find(b"\x00", end) if end >= 0 else -1
    return with_nul * 2 > lines


def _utf16_order(sample: bytes) -> str | None:
    """ "little-endian" or "big-endian" when ``sample`` reads as UTF-16 text in that byte order, else None.

    Text means: it decodes, holds no control character but tab and line breaks, has a tab or a line break,
    and its zero bytes are (nearly all) the high bytes of characters below U+0100, as in ASCII text.
    """
    even = sample[: len(sample) // 2 * 2]
    for codec, high, order in (("utf-16-le", 1, "little-endian"), ("utf-16-be", 0, "big-endian")):
        try:
            text = even.decode(codec)
        except UnicodeDecodeError as exc:
            if exc.start < len(even) - 4:  # not just a character pair cut by the sample's end
                continue
            text = even[: exc.start].decode(codec)
        if (
            ("\n" in text or "\t" in text)
            and all(c >= " " or c in "\t\n\r" for c in text)
            and even[high::2].count(0) >= 0.9 * even.count(0)
        ):
            return order
    return None


def detect_format(path: str | Path, text: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix in (".tsv", ".tab"):
        return "tsv"
    first = next((line for line in _lines(text) if line.strip() and "\x00" not in line), "")
    if first.lstrip().startswith("{"):
        return "jsonl"
    if "\t" in first:
        return "tsv"
    raise DataError(
        f"{path}: cannot tell the format — the first line has no tab and is not JSON. Use tab-separated "
        "pairs (source<TAB>target), JSON lines, or give the target sentences as a second, aligned file"
    )


def load_pairs_file(
    path: str | Path,
    fmt: str = "auto",
    src_key: str = "english",
    tgt_key: str = "chinese",
    target_path: str | Path | None = None,
) -> tuple[list[tuple[str, str]], LoadReport]:
    """Sentence pairs from a file (or two aligned files) and a report of what was skipped."""
    if fmt not in FILE_FORMATS:
        raise DataError(f"unknown file format {fmt!r}; choose one of {FILE_FORMATS}")
    if fmt == "text":
        raise DataError(f"{path}: a text file holds single sentences, not pairs; read it with load_text_file")
    if target_path is not None or fmt == "parallel":
        if target_path is None:
            raise DataError("the parallel format needs two files: the source sentences and the target sentences")
        return _load_parallel(path, target_path)
    text, encoding = read_text(path)
    report = LoadReport(str(path), encoding)
    fmt = detect_format(path, text) if fmt == "auto" else fmt
    pairs = []
    for line_no, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        pair = _line_problem(line) or (_parse_tsv(line) if fmt == "tsv" else _parse_json(line, src_key, tgt_key))
        if not isinstance(pair, str) and ("\x00" in pair[0] or "\x00" in pair[1]):
            pair = NUL_PROBLEM  # written as \u0000 in JSON
        if isinstance(pair, str):
            report.skip(line_no, pair)
        else:
            pairs.append(pair)
    return _finish(pairs, report, fmt)


def _line_problem(line: str) -> str | None:
    """Why a line of text is a bad line before it is parsed: a NUL byte, or more than LINE_LIMIT bytes."""
    if "\x00" in line:
        return NUL_PROBLEM
    if len(line) > LINE_LIMIT // 4 and len(line.encode("utf-8", "surrogatepass")) > LINE_LIMIT:
        return too_long(LINE_LIMIT)
    return None


def _parse_tsv(line: str) -> tuple[str, str] | str:
    cols = line.split("\t")
    if len(cols) < 2:
        return "no tab between source and target"
    src, tgt = cols[0].strip(), cols[1].strip()
    if not src or not tgt:
        return "empty " + ("source" if not src else "target")
    return src, tgt


def _parse_json(line: str, src_key: str, tgt_key: str) -> tuple[str, str] | str:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg})"
    except RecursionError:
        return "not valid JSON (nested too deep)"
    if not isinstance(obj, dict):
        return "not a JSON object"
    missing = [k for k in (src_key, tgt_key) if k not in obj]
    if missing:
        return f"no {' or '.join(repr(k) for k in missing)} key (keys: {', '.join(list(obj)[:6])})"
    src, tgt = obj[src_key], obj[tgt_key]
    if not isinstance(src, str) or not isinstance(tgt, str):
        return "the sentences must be strings"
    if not src.strip() or not tgt.strip():
        return "empty " + ("source" if not src.strip() else "target")
    return src.strip(), tgt.strip()


def _load_parallel(src_path: str | Path, tgt_path: str | Path) -> tuple[list[tuple[str, str]], LoadReport]:
    src_text, src_enc = read_text(src_path)
    tgt_text, tgt_enc = read_text(tgt_path)
    src_lines, tgt_lines = _lines(src_text), _lines(tgt_text)
    if len(src_lines) != len(tgt_lines):
        raise DataError(
            f"the files are misaligned: {src_path} has {len(src_lines)} lines but {tgt_path} has "
            f"{len(tgt_lines)}; line n of one must translate line n of the other"
        )
    report = LoadReport(f"{src_path} + {tgt_path}", src_enc if src_enc == tgt_enc else f"{src_enc} + {tgt_enc}")
    pairs = []
    for line_no, (src, tgt) in enumerate(zip(src_lines, tgt_lines), start=1):
        src, tgt = src.strip(), tgt.strip()
        if not src and not tgt:
            report.skip(line_no, "both lines empty")
        elif not src or not tgt:
            report.skip(line_no, "empty " + ("source" if not src else "target"))
        elif problem := _line_problem(src) or _line_problem(tgt):
            report.skip(line_no, problem)
        else:
            pairs.append((src, tgt))
    return _finish(pairs, report, "parallel")


def load_text_file(path: str | Path) -> tuple[list[str], LoadReport]:
    """The lines of a plain-text file (one sentence or document per line, stripped) and a report.

    Encodings as for pair files; empty and whitespace-only lines are skipped and counted, and so are lines
    with a NUL byte and (in a file that is neither UTF-8 nor GB18030 as a whole) lines that are not UTF-8.
    """
    try:
        text, encoding = read_text(path)
        lines: list[str | None] = list(_lines(text))
    except _Undecodable as exc:
        lines, encoding = _utf8_lines(exc.data), "utf-8"
        if sum(line is None for line in lines) * 2 > len(lines):
            raise DataError(str(exc)) from None  # mostly undecodable: not a damaged UTF-8 file
    report = LoadReport(str(path), encoding, unit="lines")
    texts = []
    for line_no, line in enumerate(lines, start=1):
        if line is None:
            report.skip(line_no, "not valid UTF-8 (undecodable bytes)")
        elif not line.strip():
            report.skip(line_no, "empty line")
        elif problem := _line_problem(line):
            report.skip(line_no, problem)
        else:
            texts.append(line.strip())
    report.kept = len(texts)
    if not texts:
        detail = "; ".join(report.problems[:3])
        raise DataError(f"{report.path}: no usable lines of text" + (f" ({detail})" if detail else ""))
    return texts, report


def _utf8_lines(data: bytes) -> list[str | None]:
    """``data`` split into lines and decoded one by one as UTF-8; None for a line that is not UTF-8."""
    raw = data.split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()
    lines: list[str | None] = []
    for line in raw:
        try:
            lines.append(line.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError:
            lines.append(None)
    return lines


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline does not start a line
    return [line.rstrip("\r") for line in lines]


def _finish(pairs: list[tuple[str, str]], report: LoadReport, fmt: str) -> tuple[list[tuple[str, str]], LoadReport]:
    report.kept = len(pairs)
    if not pairs:
        detail = "; ".join(report.problems[:3])
        raise DataError(f"{report.path}: no usable sentence pairs in {fmt} format" + (f" ({detail})" if detail else ""))
    return pairs, report
