"""Reading a training run that another process is writing (``python -m model.train … --out DIR``).

The writer's files, as :mod:`model.cli.train` leaves them in ``DIR``:

- ``metrics.jsonl``: one JSON object per line, appended live; a resumed run may rewrite it (shorter, through a
  new file) first.
- ``model.ckpt``: replaced atomically at every save.
- ``probe/step-NNNNNNNNN.npz``: the probe sentence's attention at a step (``--probe``), float16, written
  atomically; older ones are thinned out so that at most :data:`MAX_PROBES` are kept.

Nothing here writes into ``DIR`` except :func:`write_probe` (the trainer's). Reading tolerates a half-written
last line, lines that are not JSON or hold values of the wrong type (counted), lines longer than
:data:`LINE_LIMIT` (counted, never held), a log that is truncated or replaced, probe files that vanish, and
probe files that lie (cut short, huge, mistyped: skipped with a :class:`ProbeError` naming what is wrong). Only
regular files are opened: a pipe named like a run's file is never waited on.
"""

from __future__ import annotations

import json
import math
import os
import stat
import struct
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from model.families.registry import FAMILIES
from model.io.safe_files import NotAFileError, open_regular
from model.io.snapshots import TRAIN_METRICS, Inspection, RouterView
from model.io.tensorboard_events import EventScalars, event_files
from model.io.trainer_folder import (
    Scalars,
    TrainerLog,
    add_scalars,
    checkpoints,
    entry_records,
    file_signature,
    has_weights,
    is_trainer_folder,
)

MAX_PROBES = 300  # probe snapshots kept in a run folder
READ_LIMIT = 16 << 20  # bytes of the log read per poll: a huge backlog arrives over several polls
# a log line is ~200 bytes (an MoE run's lists of expert loads a few KB): a longer one is damage, dropped as it
# passes without being kept, so that a line with no end costs a poll's read, not a join of all it has so far
LINE_LIMIT = 1 << 20
# what a probe snapshot's file and its arrays may take: a 100-token probe sentence on a 24-layer, 16-head model
# is 24·16·100²·2 B ≈ 8 MB per map; a file that declares more is not the trainer's and is never read
PROBE_LIMIT = 64 << 20
PROBE_MEMBERS = 1024  # arrays in a probe snapshot (3 maps, masks, 3 per Mixture-of-Experts layer)


def _size(n: float) -> str:
    """ "64 B", "288 KB", "1.8 PB"."""
    units, k = ("B", "KB", "MB", "GB", "TB", "PB"), 0
    while n >= 1024 and k < len(units) - 1:
        n, k = n / 1024, k + 1
    return f"{n:.0f} {units[k]}" if n >= 10 or k == 0 else f"{n:.1f} {units[k]}"


# How a run ended, as the trainer notes it in its last checkpoint (``notes["ended"]``): by its exit status.
ENDINGS = {0: "finished", 130: "interrupted"}  # any other status: "failed"


def ending_note(step: int, status: int) -> dict[str, Any]:
    """What the trainer writes into the notes of its final checkpoint (under "ended")."""
    return {"step": step, "how": ENDINGS.get(status, "failed")}


def run_ending(notes: dict[str, Any], step: int) -> str:
    """How the run whose checkpoint (at ``step``) carries ``notes`` ended: "finished", "interrupted" or "failed";
    "" while it runs (no note, or one about another step: a checkpoint trained on after it was written)."""
    ended = notes.get("ended")
    if not isinstance(ended, dict) or ended.get("step") != step:
        return ""
    how = ended.get("how")
    return how if how in (*ENDINGS.values(), "failed") else ""


class RunFolderError(ValueError):
    """A folder that holds no training run, with what was looked for."""


def check_run_folder(path: str | Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise RunFolderError(f"{path} does not exist")
    if not path.is_dir():
        raise RunFolderError(f"{path} is a file; choose the folder a training run writes (its --out)")
    own = (path / "metrics.jsonl").exists() or (path / "model.ckpt").exists()
    if not own and not is_trainer_folder(path) and not event_files(path):
        raise RunFolderError(
            f"{path} holds no training run: there is no metrics.jsonl or model.ckpt in it (python -m model.train … "
            f"--out {path}, or model.follow.RunWriter), no checkpoint-N folder or trainer_state.json (a Hugging "
            "Face Trainer's output_dir) and no TensorBoard event file"
        )
    return path


class MetricsTail:
    """The lines appended to a metrics log since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pos, self.inode, self.partial = 0, -1, b""
        self.bad = 0  # lines that were not records: not JSON, values of the wrong type, longer than LINE_LIMIT
        self.skipping = False  # inside a line longer than LINE_LIMIT (counted): dropped up to its end

    def read(self) -> tuple[list[dict[str, Any]], bool]:
        """(new records, whether the log was replaced or truncated: the records then start from its beginning)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return [], False
        reset = self.inode != -1 and (st.st_ino != self.inode or st.st_size < self.pos)
        if reset:
            self.pos, self.partial, self.skipping = 0, b"", False
        self.inode = st.st_ino
        if st.st_size == self.pos or not stat.S_ISREG(st.st_mode):
            return [], reset
        try:
            with open_regular(self.path) as f:
                f.seek(self.pos)
                data = f.read(min(READ_LIMIT, st.st_size - self.pos))
        except (OSError, NotAFileError):
            return [], reset
        self.pos += len(data)
        return [r for r in map(self._record, self._lines(data)) if r is not None], reset

    def _lines(self, data: bytes) -> list[bytes]:
        """The whole lines that ``data`` completes; what follows the last line break is kept for the next read,
        up to LINE_LIMIT bytes."""
        lines = data.split(b"\n")
        if self.skipping:  # the rest of a long line, counted when it began
            lines[0] = b""
            self.skipping = len(lines) == 1
        else:
            lines[0] = self.partial + lines[0]
        self.partial = lines.pop()  # "" after a whole line; else a line still being written
        if len(self.partial) > LINE_LIMIT:
            self.partial, self.skipping = b"", True
            self.bad += 1
        return lines

    def _record(self, line: bytes) -> dict[str, Any] | None:
        """The record on ``line``, or None (counted as bad unless the line is blank)."""
        if not line.strip():
            return None
        try:
            record = json.loads(line) if len(line) <= LINE_LIMIT else None
        except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
            record = None
        if isinstance(record, dict) and _valid_record(record):
            return record
        self.bad += 1
        return None


_NUMBER_LIMIT = 2**63  # an integer beyond this is no step and no metric (float() of a huge one overflows)
EXPERTS_LIMIT = 4096  # entries of a step's expert_load


def _number(value: Any) -> bool:
    """A JSON number a float holds (NaN and infinity are numbers: a diverged loss)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, float) or (isinstance(value, int) and abs(value) < _NUMBER_LIMIT)


def _valid_record(record: dict[str, Any]) -> bool:
    """Whether a log line holds a record the engine can take: a step (a whole number), every value a number but the
    split (an evaluation's: "valid" or "test", with a loss) and the expert loads (a list of numbers). Which numbers
    a training line has is free (a loop that logs only its loss, with other scalars): see :func:`line_records`."""
    step: Any = record.get("step")
    if not _number(step) or not 0 <= step < _NUMBER_LIMIT or step != int(step):  # NaN and infinity fail this too
        return False
    load = record.get("expert_load", [])
    if not isinstance(load, list) or len(load) > EXPERTS_LIMIT or not all(map(_number, load)):
        return False
    if not all(_number(v) for k, v in record.items() if k not in ("split", "expert_load")):
        return False
    if "split" in record:
        return record["split"] in ("valid", "test") and "loss" in record
    return True


# the numbers of this project's own log lines (model.cli.train): what is not one of them is a scalar of its own
OWN_TRAIN = frozenset((*TRAIN_METRICS, "expert_load"))
OWN_EVAL = frozenset(
    ("step", "time", "split", "loss", "sentences", "exact_match", "bleu", "perplexity", "mlm_accuracy")
    + ("nsp_accuracy", "aux_loss", "expert_load")
)


def line_records(record: dict[str, Any]) -> tuple[list[dict[str, Any]], Scalars]:
    """A valid log line as the training steps and evaluations it holds, and its other numbers as scalars (each
    under its own name, at the line's step). This project's trainer writes a step with all of TRAIN_METRICS, or an
    evaluation with "split"; a loop's RunWriter writes what it has, under the Trainer's names or this project's."""
    step = int(record["step"])
    if "split" in record:
        known: frozenset[str] = OWN_EVAL
        records = [record]
    elif all(k in record for k in TRAIN_METRICS if k not in ("time", "aux_loss")):
        known, records = OWN_TRAIN, [record]
    else:
        return entry_records(record)
    return records, {k: ([step], [float(v)]) for k, v in record.items() if k not in known}


@dataclass
class Poll:
    records: list[dict[str, Any]]  # new log lines: training steps and evaluations
    reset: bool  # the log was rewritten: ``records`` start from its beginning
    checkpoint: bool  # the run's newest checkpoint is new or was replaced since the last poll
    probes: list[Path]  # probe snapshots not seen before, oldest first
    scalars: Scalars = field(default_factory=dict)  # new points of the log's other numbers, per tag
    events: Scalars = field(default_factory=dict)  # new points of the TensorBoard event files, per tag
    events_reset: bool = False  # an event file was rewritten: ``events`` start from the beginning
    events_purged: dict[str, int] = field(default_factory=dict)  # tag -> step: earlier points from it on dropped


@dataclass
class RunWatcher:
    """What changed in a run folder since the last :meth:`poll`: this project's run (metrics.jsonl, model.ckpt,
    probe/), a Hugging Face Trainer's output_dir (checkpoint-N/ with trainer_state.json: :mod:`model.io.
    trainer_folder`), TensorBoard event files (:mod:`model.io.tensorboard_events`), or several of them."""

    folder: Path
    tail: MetricsTail = field(init=False)
    trainer: TrainerLog = field(init=False)
    events: EventScalars = field(init=False)
    last_change: float = field(default_factory=time.monotonic)
    skipped_probes: int = 0  # probe snapshots that could not be read (see problem)
    problem: str = ""  # the latest file skipped and why, for the person to see ("" while there is none)
    checkpoint_path: Path = field(init=False)  # the newest checkpoint: model.ckpt, or a Trainer's checkpoint-N/
    _checkpoint: tuple[Any, ...] | None = None
    _refused: tuple[Any, ...] | None = None  # a checkpoint that cannot be opened as it is (not tried again)
    _probes: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.folder = check_run_folder(self.folder)
        self.tail = MetricsTail(self.folder / "metrics.jsonl")
        self.trainer = TrainerLog(self.folder)
        self.events = EventScalars(self.folder)
        self.checkpoint_path = self.folder / "model.ckpt"

    @property
    def computes_probes(self) -> bool:
        """Whether the engine computes the probe sentence's attention at each new checkpoint: a Trainer's or a
        RunWriter's checkpoint-N/ (this project's trainer writes probe snapshots itself, with --probe)."""
        return self.checkpoint_path.is_dir() and not (self.folder / "probe").is_dir()

    def poll(self) -> Poll:
        records, reset = self.tail.read()
        lines: list[dict[str, Any]] = []
        scalars: Scalars = {}
        for record in records:
            more, points = line_records(record)
            lines += more
            add_scalars(scalars, points)
        logged, points, rewritten = self.trainer.read()
        lines += logged
        add_scalars(scalars, points)
        events, events_reset = self.events.read()
        self.problem = self.trainer.problem or self.events.problem or self.problem
        changed = self._newest_checkpoint()
        probes = self._new_probes()
        purged = self.events.purged  # (a writer restarted from an earlier step: TensorBoard's rule)
        if lines or reset or rewritten or changed or probes or events or events_reset or scalars or purged:
            self.last_change = time.monotonic()
        return Poll(lines, reset or rewritten, changed, probes, scalars, events, events_reset, purged)

    def _newest_checkpoint(self) -> bool:
        """Whether the newest checkpoint is new or was replaced (then at ``checkpoint_path``)."""
        own = self.folder / "model.ckpt"
        path = own
        signature: tuple[Any, ...] | None = file_signature(own)
        if signature is None and os.path.lexists(own) and not own.is_file():
            self.problem = (
                f"{own} is not a regular file (a pipe, a device or a folder), so it is not read; "
                "remove it: the trainer writes a new one at its next save"
            )
        if signature is None:
            complete = [(n, p) for n, p in checkpoints(self.folder) if has_weights(p)]
            if complete:
                path = complete[-1][1]
                state = file_signature(path / "trainer_state.json")
                signature = None if state is None else (path.name, *state)
        changed = signature is not None and signature != self._checkpoint and signature != self._refused
        if changed:
            self._checkpoint, self.checkpoint_path = signature, path
        return changed

    def _new_probes(self) -> list[Path]:
        probes = []
        try:
            names = sorted(p.name for p in (self.folder / "probe").glob("step-*.npz"))
        except OSError:
            names = []
        for name in names:
            if name not in self._probes:
                self._probes.add(name)
                probes.append(self.folder / "probe" / name)
        return probes

    def refuse_checkpoint(self, why: str) -> None:
        """The checkpoint just found cannot be opened as it is (another architecture, say): said, and not tried
        again until a newer one comes."""
        self._refused, self.problem = self._checkpoint, why

    def read_probe(self, path: Path) -> Inspection | None:
        """The probe snapshot at ``path``; None when it is gone (thinned out by the trainer meanwhile) or cannot be
        read (counted in ``skipped_probes``, the reason in ``problem``)."""
        try:
            return read_probe(path)
        except ProbeError as exc:
            if not exc.vanished:
                self.skipped_probes += 1
                self.problem = str(exc)
            return None

    def retry_checkpoint(self) -> None:
        """Read the checkpoint again at the next poll (it could not be read this time)."""
        self._checkpoint = None


# -- probe snapshots ---------------------------------------------------------------------------------------------
_ARRAYS = ("encoder", "decoder_self", "cross")


def write_probe(folder: Path, inspection: Inspection) -> Path:
    """Save ``inspection`` as ``folder/step-N.npz`` (attention in float16), atomically; thin out old ones."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"step-{inspection.step:09d}.npz"
    meta = {
        "step": inspection.step,
        "source": inspection.source,
        "src_tokens": inspection.src_tokens,
        "tgt_tokens": inspection.tgt_tokens,
        "out_tokens": inspection.out_tokens,
        "teacher_forced": inspection.teacher_forced,
        "target_ids": list(inspection.target_ids),
        "arch": inspection.arch,
        "routing": [{"stack": r.stack, "layer": r.layer, "tokens": r.tokens} for r in inspection.routing],
    }
    arrays: dict[str, Any] = {name: getattr(inspection, name).astype(np.float16) for name in _ARRAYS}
    arrays.update({f"mask_{k}": v.astype(bool) for k, v in inspection.masks.items()})
    for i, r in enumerate(inspection.routing):  # Mixture-of-Experts: what each router did with the probe
        arrays.update(
            {
                f"route{i}_probs": r.probs.astype(np.float16),
                f"route{i}_chosen": r.chosen.astype(np.int16),
                f"route{i}_weights": r.weights.astype(np.float16),
            }
        )
    tmp = folder / f".{path.name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        np.savez(
            f,
            meta=np.array(json.dumps(meta, ensure_ascii=False)),
            target_probs=inspection.target_probs.astype(np.float32),
            **arrays,
        )
    os.replace(tmp, path)
    _thin(folder)
    return path


def _thin(folder: Path) -> None:
    """Over MAX_PROBES snapshots: drop every second one of the older half (the newest stay dense)."""
    files = sorted(folder.glob("step-*.npz"))
    if len(files) <= MAX_PROBES:
        return
    older = files[1 : len(files) // 2]  # the first one stays: the start of training
    for p in older[::2]:
        try:
            p.unlink()
        except OSError:
            pass


class ProbeError(ValueError):
    """A probe snapshot that cannot be read, with what is wrong with it (the follower skips it)."""

    def __init__(self, path: Path, what: str, vanished: bool = False) -> None:
        super().__init__(f"probe snapshot {path} {what}; it is skipped (delete it if the trainer did not write it)")
        self.vanished = vanished  # not there any more: thinned out by the trainer, nothing to report


# what a damaged zip or .npy can raise from the standard library and numpy while it is read
_DAMAGE = (
    OSError,
    EOFError,
    ValueError,
    KeyError,
    TypeError,
    zipfile.BadZipFile,
    NotImplementedError,
    RuntimeError,
    struct.error,
    zlib.error,
)


def read_probe(path: Path) -> Inspection:
    """A probe snapshot written by :func:`write_probe`; raises :class:`ProbeError` (a ValueError) naming what is
    wrong with a damaged one. Its sizes are checked against :data:`PROBE_LIMIT` before anything is read: the file's,
    the sum its zip directory declares, each array's shape × dtype from its header."""
    try:
        f = open_regular(path)
    except FileNotFoundError:
        raise ProbeError(path, "is gone", vanished=True) from None
    except NotAFileError:
        raise ProbeError(path, "is not a regular file (a pipe, a device or a folder)") from None
    except OSError as exc:
        raise ProbeError(path, f"cannot be read ({exc.strerror})") from None
    with f:
        try:
            arrays = _read_arrays(path, f)
        except ProbeError:
            raise
        except _DAMAGE as exc:
            raise ProbeError(path, f"is damaged ({type(exc).__name__}: {exc})") from None
    return _inspection(path, _meta(path, arrays), arrays)


def _read_arrays(path: Path, f: BinaryIO) -> dict[str, np.ndarray]:
    """Every ``.npy`` member of the zip ``f``, by name (without ``.npy``), read within PROBE_LIMIT."""
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        raise ProbeError(path, "is empty (0 bytes)")
    if size > PROBE_LIMIT:
        raise ProbeError(path, f"is {_size(size)}, more than a probe snapshot may be ({_size(PROBE_LIMIT)})")
    members = _zip_members(path, f, size)
    if members > PROBE_MEMBERS:
        raise ProbeError(path, f"has {members} members, more than a probe snapshot has ({PROBE_MEMBERS})")
    with zipfile.ZipFile(f) as z:
        infos = [i for i in z.infolist() if i.filename.endswith(".npy")]
        odd = [i.filename for i in infos if i.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)]
        if odd:  # bzip2 and LZMA decompress without a bound on what one read gives
            raise ProbeError(path, f"has {odd[0]} compressed in a way probe snapshots never are")
        declared = sum(i.file_size for i in infos)
        if declared > PROBE_LIMIT:
            raise ProbeError(
                path,
                f"declares {_size(declared)} of arrays, more than a probe snapshot may hold ({_size(PROBE_LIMIT)})",
            )
        return {i.filename[: -len(".npy")]: _read_npy(path, z, i) for i in infos}


def _zip_members(path: Path, f: BinaryIO, size: int) -> int:
    """The number of members the zip's end record declares, read before its directory is (which would build an
    object per member)."""
    tail_len = min(size, 22 + 0xFFFF)  # the end record (22 bytes) and a comment of at most 64 KB
    f.seek(size - tail_len)
    tail = f.read(tail_len)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        raise ProbeError(path, "is cut short or not a zip archive (no end record)")
    return int(struct.unpack_from("<H", tail, at + 10)[0])  # 0xFFFF: a ZIP64 archive, more than any probe has


def _read_npy(path: Path, z: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """One ``.npy`` member; its header's shape × dtype is checked against what the member stores before reading."""
    name = info.filename[: -len(".npy")]
    with z.open(info) as m:
        version = np.lib.format.read_magic(m)
        if version not in ((1, 0), (2, 0)):
            raise ProbeError(path, f"has an array {name} in .npy format {version}, which probes are not written in")
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(m)
        if dtype.hasobject:
            raise ProbeError(path, f"has an array {name} of Python objects, not numbers")
        nbytes, stored = math.prod(shape) * dtype.itemsize, info.file_size - m.tell()
        if min(shape, default=0) < 0 or nbytes > stored:
            raise ProbeError(
                path,
                f"has an array {name} that declares shape {shape} of {dtype} ({_size(nbytes)}), "
                f"more than the {_size(stored)} stored for it",
            )
        data = bytearray(m.read(nbytes))
    if len(data) < nbytes:
        raise ProbeError(path, f"is cut short in array {name}")
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")


_ARCHS = tuple(FAMILIES)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < _NUMBER_LIMIT


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(t, str) for t in value)


def _router(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("stack"), str)
        and _int(value.get("layer"))
        and _texts(value.get("tokens"))
    )


# each field of a probe's meta text: (whether a value fits, what belongs there)
_META: dict[str, tuple[Any, str]] = {
    "step": (lambda v: _int(v) and v >= 0, "a step number"),
    "source": (lambda v: isinstance(v, str), "a text"),
    "src_tokens": (_texts, "a list of tokens"),
    "tgt_tokens": (_texts, "a list of tokens"),
    "out_tokens": (_texts, "a list of tokens"),
    "teacher_forced": (lambda v: isinstance(v, bool), "true or false"),
    "target_ids": (lambda v: isinstance(v, list) and all(map(_int, v)), "a list of token ids"),
    "arch": (lambda v: isinstance(v, str) and v in _ARCHS, "one of " + ", ".join(_ARCHS)),
    "routing": (lambda v: isinstance(v, list) and all(map(_router, v)), "a list of routers (stack, layer, tokens)"),
}


def _meta(path: Path, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The probe's meta text (tokens, step, family, routers), every field of the type it must have."""
    raw = arrays.get("meta")
    if raw is None or raw.dtype.kind != "U" or raw.ndim != 0:
        raise ProbeError(path, "has no meta text (its tokens and step) where one belongs")
    try:
        meta = json.loads(str(raw[()]))
    except ValueError:
        meta = None
    if not isinstance(meta, dict):
        raise ProbeError(path, "has a meta text that is not a JSON object")
    meta.setdefault("routing", [])  # written before Mixture-of-Experts models were
    for key, (fits, kind) in _META.items():
        if not fits(meta.get(key)):
            found = f"= {json.dumps(meta[key])[:40]}" if key in meta else "missing"
            raise ProbeError(path, f"has meta {key} {found}, where {kind} belongs")
    return meta


_KINDS = {"f": "floats", "iu": "integers", "b": "booleans"}


def _array(path: Path, arrays: dict[str, np.ndarray], name: str, kinds: str, shape: tuple[int | None, ...]) -> Any:
    """The array ``name``, of a dtype kind in ``kinds`` ("f": float, "iu": integer, "b": bool) and of ``shape``
    (None: any length on that axis)."""
    a = arrays.get(name)
    if a is None:
        raise ProbeError(path, f"has its array {name} missing")
    fits = len(a.shape) == len(shape) and all(w is None or n == w for n, w in zip(a.shape, shape))
    if a.dtype.kind not in kinds or not fits:
        want = "×".join("n" if w is None else str(w) for w in shape) + " " + _KINDS[kinds]
        raise ProbeError(
            path,
            f"has an array {name} of {a.dtype} {'×'.join(map(str, a.shape)) or 'scalar'}, "
            f"where {want} belongs (by its {len(shape)} axes and its tokens)",
        )
    return a


def _inspection(path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Inspection:
    """The probe as an Inspection, every array's shape checked against its tokens (the window indexes by them)."""
    S, T = len(meta["src_tokens"]), len(meta["tgt_tokens"])
    fit = {"encoder": (S, S), "decoder_self": (T, T), "cross": (T, S)}  # (queries, keys) per kind of map
    maps = {k: _array(path, arrays, k, "f", (None, None, *qk)).astype(np.float32) for k, qk in fit.items()}
    probs = _array(path, arrays, "target_probs", "f", (len(meta["out_tokens"]),))
    masks = {k[len("mask_") :]: _mask(path, arrays, k, fit) for k in arrays if k.startswith("mask_")}
    routing = tuple(_router_view(path, arrays, i, r) for i, r in enumerate(meta["routing"]))
    return Inspection(
        meta["src_tokens"],
        meta["tgt_tokens"],
        meta["out_tokens"],
        maps["encoder"],
        maps["decoder_self"],
        maps["cross"],
        probs,
        meta["teacher_forced"],
        meta["step"],
        meta["source"],
        tuple(meta["target_ids"]),
        masks,
        routing,
        meta["arch"],
    )


def _mask(path: Path, arrays: dict[str, np.ndarray], name: str, fit: dict[str, tuple[int, int]]) -> Any:
    """``mask_<kind>``: True where a query may attend, shaped as that kind's maps."""
    kind = name[len("mask_") :]
    if kind not in fit:
        raise ProbeError(path, f"has an array {name} for no kind of attention map")
    return _array(path, arrays, name, "b", fit[kind])


def _router_view(path: Path, arrays: dict[str, np.ndarray], i: int, r: dict[str, Any]) -> RouterView:
    """Router ``i``: probabilities [T, N], chosen experts [T, k] (each < N) and their weights [T, k]."""
    n = len(r["tokens"])
    probs = _array(path, arrays, f"route{i}_probs", "f", (n, None))
    chosen = _array(path, arrays, f"route{i}_chosen", "iu", (n, None))
    weights = _array(path, arrays, f"route{i}_weights", "f", chosen.shape)
    if chosen.size and not 0 <= chosen.min() <= chosen.max() < probs.shape[1]:
        raise ProbeError(path, f"has an array route{i}_chosen naming experts beyond its {probs.shape[1]}")
    return RouterView(
        r["stack"],
        r["layer"],
        list(r["tokens"]),
        probs.astype(np.float32),
        chosen.astype(np.int64),
        weights.astype(np.float32),
    )
