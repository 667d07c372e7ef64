"""The scalars of TensorBoard event files in a followed folder (a ``SummaryWriter``'s, a Hugging Face Trainer's
``runs/<date_host>/``, a TensorFlow program's), read while their writer appends to them.

An event file is a sequence of TFRecords: the length of a serialized ``Event`` (uint64, little-endian), that
length's masked CRC-32C (uint32), the ``Event``, its masked CRC-32C. TensorBoard's ``EventFileLoader`` tails
such a file for its server, but as a poller of someone else's files it falls short, which is why the records are
framed here (with TensorBoard's own checksum and ``Event`` message):

- after a record whose checksum fails it stops at that record for good, without a word (a debug log line), and a
  damaged record cannot be told from one still being written;
- it reads a record's length in one go: a file that says a petabyte (its checksum right) raises ``MemoryError``;
- it keeps reading a file that was replaced through its old handle, and after a truncation it reads nothing;
- it opens a file by name: a named pipe called ``events.out.tfevents.x`` would block the open.

Here a torn last record is left for the next read; a file replaced or truncated starts every scalar again
(``reset``); a record whose checksum fails is counted in ``bad`` and passed over (when the damage is in a
length, the file is searched for the next whole record); records larger than :data:`RECORD_LIMIT` (images, graphs)
are stepped over unread; only regular files are opened; each read takes at most :data:`READ_LIMIT` bytes, so a
long backlog arrives over several polls. Nothing is written into the folder. TensorBoard itself is imported only
when there are event files to read.
"""

from __future__ import annotations

import functools
import importlib
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from model.io.safe_files import NotAFileError, describe, open_regular

PREFIX = "events.out.tfevents."  # how every TensorBoard writer names its files
MAX_DEPTH = 4  # folders below the followed one that are searched: runs/<date_host>/<add_scalars tag>/
MAX_FILES = 256  # event files read from one folder
MAX_ENTRIES = 4096  # names looked at while searching (a Trainer's checkpoint-N folders, probes)
READ_LIMIT = 128 << 10  # bytes read per read(): ~2,500 scalars, ~50 ms
RECORD_LIMIT = 1 << 20  # records longer than this (images, graphs, embeddings) hold no scalar: stepped over
SCAN_LIMIT = 16 << 10  # bytes of a damaged stretch searched for the next whole record per read()
HEAD = 64  # bytes at the start of a file remembered to notice it rewritten in place (its first event's time)
_HEADER = struct.Struct("<QI")  # a record's length and the length's masked CRC-32C
MISSING = (
    "TensorBoard event files are here but the tensorboard package is not installed: "
    "pip install tensorboard (or the program's [tensorboard] extra)"
)

Points = tuple[list[int], list[float]]  # a tag's steps and values, in the order written


def event_files(folder: Path) -> list[Path]:
    """The event files (``events.out.tfevents.*``) of a followed folder, in file-name order per run folder.

    Searched: the folder and the folders below it down to :data:`MAX_DEPTH` (its ``runs/<date_host>/``: where a
    Trainer and a ``SummaryWriter`` write by default), at most :data:`MAX_FILES`; a ``runs/`` folder beside it
    only when the folder itself holds none. Unreadable folders and links that loop are passed over.
    """
    return [path for path, _ in _find(folder)[0]]


def _find(folder: Path) -> tuple[list[tuple[Path, str]], bool]:
    """(each event file with the name of its run, whether the search saw everything it was allowed to)."""
    found, complete = _walk(folder)
    root = folder
    beside = folder.parent / "runs"
    if not found and beside != folder and not _same(beside, folder):
        (found, complete), root = _walk(beside), beside
    return [(path, _run_name(root, path)) for path in found], complete


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a link loop (before Python 3.13)
        return True


def _walk(root: Path) -> tuple[list[Path], bool]:
    """The event files below ``root`` (sorted) and whether no bound cut the search short."""
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()  # folders by (device, inode): a link back up is entered once
    stack, entries = [(root, 0)], 0
    while stack and len(found) <= MAX_FILES and entries < MAX_ENTRIES:
        folder, depth = stack.pop()
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen or not stat.S_ISDIR(st.st_mode):
                continue
            seen.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as names:
                for entry in names:
                    entries += 1
                    if entry.name.startswith(PREFIX):
                        found.append(Path(entry.path))
                    elif depth < MAX_DEPTH and not entry.name.startswith(".") and entry.is_dir():
                        stack.append((Path(entry.path), depth + 1))
                    if entries >= MAX_ENTRIES:
                        break
        except OSError:  # not there, no permission, a link to nowhere
            continue
    complete = not stack and len(found) <= MAX_FILES and entries < MAX_ENTRIES
    return sorted(found)[:MAX_FILES], complete


def _run_name(root: Path, path: Path) -> str:
    """The run an event file belongs to: its folder below ``root``, without a leading ``runs/`` ("Jan01_host")."""
    parts = path.parent.relative_to(root).parts
    if parts[:1] == ("runs",) and len(parts) > 1:
        parts = parts[1:]
    return "/".join(parts) or root.name


class _TensorBoard(NamedTuple):
    """What is used of the tensorboard package."""

    event: Any  # the Event message class
    crc: Any  # masked CRC-32C of bytes, as the records carry it
    table: np.ndarray  # CRC-32C's table of 256 (uint32)
    make_ndarray: Any  # TensorProto -> numpy array
    scalar_class: int  # SummaryMetadata's DATA_CLASS_SCALAR
    start: int  # SessionLog's START: a writer (re)started at this step (SummaryWriter's purge_step)


def _tensorboard() -> _TensorBoard | str:
    """The parts of tensorboard read with, or a sentence saying why it cannot be had."""
    try:
        event_pb2 = importlib.import_module("tensorboard.compat.proto.event_pb2")
        summary_pb2 = importlib.import_module("tensorboard.compat.proto.summary_pb2")
        stub = importlib.import_module("tensorboard.compat.tensorflow_stub.pywrap_tensorflow")
        make_ndarray = importlib.import_module("tensorboard.util.tensor_util").make_ndarray
    except ImportError:
        return MISSING
    except Exception as e:  # a broken install: a protobuf too new or too old for it
        return f"TensorBoard event files are here but the tensorboard package does not load ({e}): reinstall it"
    table = np.array(stub.CRC_TABLE, dtype=np.uint32)
    start = event_pb2.SessionLog.START
    return _TensorBoard(event_pb2.Event, stub.masked_crc32c, table, make_ndarray, summary_pb2.DATA_CLASS_SCALAR, start)


@dataclass
class _Record:
    offset: int  # where it starts in its file
    payload: bytes  # the serialized Event
    crc: int  # the masked CRC-32C the file gives for it


@dataclass
class _Chunk:
    """What one read of an event file gave."""

    records: list[_Record] = field(default_factory=list)
    read: int = 0  # bytes read
    damage: list[str] = field(default_factory=list)  # a sentence per damaged stretch found


class _Replaced(Exception):
    """The event file is another file now, or shorter than what was read of it."""


class _EventFile:
    """One event file, read from where the last read stopped."""

    def __init__(self, path: Path, run: str, crc: Any) -> None:
        self.path, self.run = path, run
        self.crc = crc  # the masked CRC-32C of a record's length (8 bytes)
        self.restart()

    def restart(self) -> None:
        self.pos = 0  # the records before this offset have been read
        self.signature: tuple[int, int, int] | None = None  # (inode, size, mtime) when last read
        self.head = b""  # its first HEAD bytes
        self.waiting = False  # the last read reached its end (or a torn record): nothing to do until it changes
        self.damaged = False  # inside a damaged stretch: searching for the next whole record

    def read(self, budget: int) -> _Chunk:
        """The whole records after the last read, up to about ``budget`` bytes.

        Raises :class:`_Replaced`, :class:`NotAFileError` for a name that is no regular file (never opened),
        and ``OSError``.
        """
        st = os.stat(self.path)
        if not stat.S_ISREG(st.st_mode):
            raise NotAFileError(f"{self.path}: is {describe(st.st_mode)}, not a file; it is not read")
        if self.waiting and (st.st_ino, st.st_size, st.st_mtime_ns) == self.signature:
            return _Chunk()
        with open_regular(self.path) as f:
            st = os.fstat(f.fileno())
            if self.signature is not None and (
                st.st_ino != self.signature[0] or st.st_size < self.pos or f.read(len(self.head)) != self.head
            ):
                raise _Replaced(self.path)
            self.signature = (st.st_ino, st.st_size, st.st_mtime_ns)
            return self._records(f, st.st_size, budget)

    def _records(self, f: BinaryIO, size: int, budget: int) -> _Chunk:
        start = self.pos
        f.seek(start)
        data = f.read(min(size - start, budget))
        if start == 0:
            self.head = data[:HEAD]
        chunk, i, cut = _Chunk(read=len(data)), 0, False
        while True:
            if self.damaged:
                i = self._search(data, i)
                if self.damaged:
                    cut = i < len(data) - _HEADER.size + 1  # SCAN_LIMIT reached before the end of what was read
                    break
            if len(data) - i < _HEADER.size:
                break
            length, length_crc = _HEADER.unpack_from(data, i)
            if self.crc(data[i : i + 8]) != length_crc:
                chunk.damage.append(f"{self.path}: damaged at byte {start + i}; read on from the next whole record")
                self.damaged, i = True, i + 1
                continue
            end = i + _HEADER.size + length + 4
            if start + end > size:  # torn: its writer has not finished it yet
                break
            if length > RECORD_LIMIT:
                i = end
                continue
            if end > len(data):
                if i > 0:  # for the next read
                    break
                data += f.read(end - len(data))  # one record longer than the budget, read whole
                chunk.read = len(data)
            (crc,) = struct.unpack_from("<I", data, end - 4)
            chunk.records.append(_Record(start + i, data[i + _HEADER.size : end - 4], crc))
            i = end
        self.pos += i
        # nothing more to do until the file changes: the rest is a torn record or too short for one
        self.waiting = start + len(data) == size and not cut
        return chunk

    def _search(self, data: bytes, i: int) -> int:
        """The offset in ``data`` of the next record whose length passes its checksum, from ``i``; where the search
        stopped (SCAN_LIMIT bytes on) when there is none, with ``damaged`` still set."""
        stop = max(i, min(len(data) - _HEADER.size + 1, i + SCAN_LIMIT))
        for j in range(i, stop):
            length, length_crc = _HEADER.unpack_from(data, j)
            if length >> 32 == 0 and self.crc(data[j : j + 8]) == length_crc:
                self.damaged = False
                return j
        return stop


class EventScalars:
    """The scalars the TensorBoard event files of a followed folder hold (see :func:`event_files`), read a
    part at a time as they grow.

    A tag is named as it was written ("train/loss"); when several runs (``runs/A``, ``runs/B``) hold the same tag,
    each is named with its run in front ("A/train/loss"), and when a new run makes a tag shared that was named
    plainly before, every scalar is read again under the new names (``reset``).

    A writer restarted from an earlier step drops a run's points from that step on, as TensorBoard does
    (``EventAccumulator``'s orphaned data): where its files say so (a ``SessionLog`` START, which a
    ``SummaryWriter`` writes for ``purge_step``), every tag of the run; in files older than the second event file
    version, which say nothing, a tag whose step goes back. Points of this read are dropped in it; those of earlier
    reads are named in :attr:`purged`, for the reader to drop.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.bad = 0  # records that could not be read: a checksum that fails, bytes that are no event
        self.problem = ""  # the latest file skipped and why ("" when none)
        self._files: dict[Path, _EventFile] = {}  # every file seen, also those gone: one coming back is noticed
        self._plugins: dict[tuple[str, str], str] = {}  # (run, tag) -> the plugin its first value named
        self._runs: dict[str, set[str]] = {}  # tag -> the runs that hold it
        self._plain: set[str] = set()  # tags given out without their run's name
        self._length_crc: Any = None
        self._version: dict[str, float] = {}  # run -> its event files' version (brain.Event:2)
        self._recent: dict[str, int] = {}  # run -> its latest step (files before version 2: see _in_order)
        self._purges: dict[tuple[str, str], int] = {}  # (run, tag) -> this read's drop of its earlier points
        self.purged: dict[str, int] = {}  # tag -> the step from which the last read dropped its earlier points

    def read(self) -> tuple[dict[str, Points], bool]:
        """(the new points since the last read per tag, whether the scalars start again from these: a file was
        replaced or truncated, or names changed — what was read before is to be dropped)."""
        found, complete = _find(self.folder)
        if not complete:
            self.problem = f"{self.folder}: holds too many files to search; the first {MAX_FILES} event files are read"
        if not found:
            return {}, False
        tensorboard = _tensorboard()
        if isinstance(tensorboard, str):
            self.problem = tensorboard
            return {}, False
        if self._length_crc is None:  # records of a kind share their length: its checksum is remembered
            self._length_crc = functools.lru_cache(maxsize=4096)(tensorboard.crc)
        files = self._follow(found, self._length_crc)
        self._purges = {}
        points, reset = self._read_files(files, tensorboard), False
        if points is None or self._renamed(points):
            self._restart()
            points, reset = self._read_files(files, tensorboard) or {}, True
            self._renamed(points)  # the runs of what this pass read further
            self._purges = {}  # (everything is read again)
        self.purged = {self._name(run, tag): step for (run, tag), step in self._purges.items()}
        return self._named(points), reset

    def _follow(self, found: list[tuple[Path, str]], crc: Any) -> list[_EventFile]:
        """The files to read now, in order; states kept for those that went (at most a few times MAX_FILES)."""
        for path, run in found:
            if path not in self._files:
                self._files[path] = _EventFile(path, run, crc)
        if len(self._files) > 4 * MAX_FILES:
            now = {path for path, _ in found}
            self._files = {path: f for path, f in self._files.items() if path in now}
        return [self._files[path] for path, _ in found]

    def _restart(self) -> None:
        for f in self._files.values():
            f.restart()
        self.bad = 0
        self._plugins.clear()
        self._plain.clear()
        self._version.clear()
        self._recent.clear()

    def _read_files(self, files: list[_EventFile], tensorboard: _TensorBoard) -> dict[tuple[str, str], Points] | None:
        """The new points per (run, tag); None when a file was replaced (everything is to be read again)."""
        points: dict[tuple[str, str], Points] = {}
        budget = READ_LIMIT
        for f in files:
            if budget <= 0:
                break
            try:
                chunk = f.read(budget)
            except _Replaced:
                return None
            except FileNotFoundError:  # gone since the search: what it gave stays
                continue
            except NotAFileError as e:
                self.problem = str(e)
                continue
            except OSError as e:
                self.problem = f"{f.path}: cannot be read ({e.strerror or e}); it is skipped"
                continue
            budget -= chunk.read
            self.bad += len(chunk.damage)
            self.problem = chunk.damage[-1] if chunk.damage else self.problem
            self._take(f, chunk.records, tensorboard, points)
        return points

    def _take(
        self, f: _EventFile, records: list[_Record], tensorboard: _TensorBoard, points: dict[tuple[str, str], Points]
    ) -> None:
        """Add the scalars of an event file's records to ``points``. A record's checksum is computed only when it
        holds scalars or does not parse (the images and histograms beside the scalars are not worth it)."""
        events = [_parse(tensorboard, record.payload) for record in records]
        scalars = [self._scalars(f.run, event, tensorboard) if event is not None else [] for event in events]
        check = [k for k, event in enumerate(events) if event is None or scalars[k] or _orders(event)]
        crcs = _masked_crcs([records[k].payload for k in check], tensorboard)
        for k, crc in zip(check, crcs):
            event, offset = events[k], records[k].offset
            if crc != records[k].crc or event is None:
                self.bad += 1
                what = "is damaged (its checksum fails)" if crc != records[k].crc else "is no TensorBoard event"
                self.problem = f"{f.path}: the record at byte {offset} {what}; skipped"
                continue
            self._in_order(f.run, event, [tag for tag, _ in scalars[k]], tensorboard, points)
            for tag, value in scalars[k]:
                steps, values = points.setdefault((f.run, tag), ([], []))
                steps.append(int(event.step))
                values.append(value)

    def _in_order(
        self, run: str, event: Any, tags: list[str], tensorboard: _TensorBoard, points: dict[tuple[str, str], Points]
    ) -> None:
        """TensorBoard's rule for a restarted writer (its ``EventAccumulator._MaybePurgeOrphanedData``), before
        the event's scalars are taken: a run's files of version 2 or later drop its points from a SessionLog
        START's step on, every tag; older ones drop a tag's points from a step that went back."""
        if event.WhichOneof("what") == "file_version":
            self._version[run] = _version_number(event.file_version)
        if self._version.get(run, 0.0) >= 2:
            if event.WhichOneof("what") == "session_log" and event.session_log.status == tensorboard.start:
                self._drop(run, int(event.step), None, points)
        elif tags and event.step < self._recent.get(run, -1):
            self._drop(run, int(event.step), set(tags), points)
        else:
            self._recent[run] = int(event.step)

    def _drop(self, run: str, step: int, tags: set[str] | None, points: dict[tuple[str, str], Points]) -> None:
        """Drop the points of ``run`` (of ``tags``, or all) from ``step`` on: those of this read here, those of
        earlier reads noted for :attr:`purged`."""
        for (r, tag), (steps, values) in points.items():
            if r == run and (tags is None or tag in tags):
                steps[:], values[:] = _before(steps, values, step)
        for tag, runs in self._runs.items():  # (the tags read before)
            if run in runs and (tags is None or tag in tags):
                self._purges[(run, tag)] = min(step, self._purges.get((run, tag), step))

    def _scalars(self, run: str, event: Any, tensorboard: _TensorBoard) -> list[tuple[str, float]]:
        """The (tag, value) scalars of an event: ``simple_value`` (``SummaryWriter.add_scalar``, TF 1) and
        one-element numeric tensors of the "scalars" plugin (TF 2, ``tensorboard.summary``), whose metadata
        only the first value of a tag carries."""
        if not event.HasField("summary"):
            return []
        scalars = []
        for value in event.summary.value:
            kind = value.WhichOneof("value")
            if kind == "simple_value":
                scalars.append((value.tag, float(value.simple_value)))
                continue
            if kind != "tensor":
                continue
            plugin = value.metadata.plugin_data.plugin_name
            if plugin:
                self._plugins[(run, value.tag)] = plugin
            if (
                self._plugins.get((run, value.tag)) == "scalars"
                or value.metadata.data_class == tensorboard.scalar_class
            ):
                number = _tensor_scalar(value.tensor, tensorboard)
                if number is not None:
                    scalars.append((value.tag, number))
        return scalars

    def _renamed(self, points: dict[tuple[str, str], Points]) -> bool:
        """Note the runs of each tag; whether a tag given out plainly is now held by more than one run."""
        for run, tag in points:
            self._runs.setdefault(tag, set()).add(run)
        return any(len(self._runs[tag]) > 1 for tag in self._plain)

    def _named(self, points: dict[tuple[str, str], Points]) -> dict[str, Points]:
        named: dict[str, Points] = {}
        for (run, tag), (steps, values) in points.items():
            if len(self._runs[tag]) == 1:
                self._plain.add(tag)
            named[self._name(run, tag)] = (steps, values)
        return named

    def _name(self, run: str, tag: str) -> str:
        return tag if len(self._runs[tag]) == 1 else f"{run}/{tag}"


def drop_purged(scalars: dict[str, Points], purged: dict[str, int]) -> None:
    """Drop from ``scalars`` (tag -> points kept from earlier reads) what :attr:`EventScalars.purged` names."""
    for tag, step in purged.items():
        if tag in scalars:
            scalars[tag] = _before(*scalars[tag], step)


def _before(steps: list[int], values: list[float], step: int) -> Points:
    """The points before ``step``."""
    kept = [i for i, s in enumerate(steps) if s < step]
    return [steps[i] for i in kept], [values[i] for i in kept]


def _orders(event: Any) -> bool:
    """Whether an event tells how a run's steps go on: its files' version, or a writer's session starting."""
    return event.WhichOneof("what") in ("file_version", "session_log")


def _version_number(file_version: str) -> float:
    """2.0 for "brain.Event:2"; 0 for what cannot be read."""
    try:
        return float(file_version.rsplit(":", 1)[-1])
    except ValueError:
        return 0.0


def _parse(tensorboard: _TensorBoard, payload: bytes) -> Any:
    """The Event a record holds, or None."""
    try:
        return tensorboard.event.FromString(payload)
    except Exception:  # protobuf's DecodeError, and whatever else bytes that are no event make it raise
        return None


def _masked_crcs(payloads: list[bytes], tensorboard: _TensorBoard) -> list[int]:
    """The masked CRC-32C of each payload. Payloads of one length are done together, a byte column at a time
    through TensorBoard's table (numpy): its pure-Python checksum alone would take ~25 µs for a scalar's record."""
    crcs = [0] * len(payloads)
    by_length: dict[int, list[int]] = {}
    for k, payload in enumerate(payloads):
        by_length.setdefault(len(payload), []).append(k)
    for length, ks in by_length.items():
        if len(ks) < 8:  # a few, or long ones (a column per byte would cost more than the loop)
            for k in ks:
                crcs[k] = tensorboard.crc(payloads[k])
            continue
        rows = np.frombuffer(b"".join(payloads[k] for k in ks), dtype=np.uint8).reshape(len(ks), length)
        crc = np.full(len(ks), 0xFFFFFFFF, dtype=np.uint32)
        for column in rows.T:
            crc = tensorboard.table[(crc ^ column) & 0xFF] ^ (crc >> np.uint32(8))
        crc ^= np.uint32(0xFFFFFFFF)
        masked = ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(0xA282EAD8)
        for k, value in zip(ks, masked.tolist()):
            crcs[k] = value
    return crcs


def _tensor_scalar(tensor: Any, tensorboard: _TensorBoard) -> float | None:
    """The number a one-element numeric tensor holds; None for anything else (a shape is checked before the
    array is made: a tensor proto may declare a billion elements filled from one value)."""
    if any(dim.size != 1 for dim in tensor.tensor_shape.dim) or len(tensor.tensor_shape.dim) > 8:
        return None
    try:
        array = tensorboard.make_ndarray(tensor)
    except Exception:  # an unknown dtype, content of the wrong size
        return None
    if array.size != 1 or array.dtype.kind not in "fiub":
        return None
    return float(array.reshape(-1)[0])
