"""Reading a training run that another process is writing (``python -m model.train … --out DIR``).

The writer's files, as :mod:`model.train` leaves them in ``DIR``:

- ``metrics.jsonl``: one JSON object per line, appended live; a resumed run may rewrite it (shorter, through a
  new file) first.
- ``model.ckpt``: replaced atomically at every save.
- ``probe/step-NNNNNNNNN.npz``: the probe sentence's attention at a step (``--probe``), float16, written
  atomically; older ones are thinned out so that at most :data:`MAX_PROBES` are kept.

Nothing here writes into ``DIR`` except :func:`write_probe` (the trainer's). Reading tolerates a half-written
last line, lines that are not JSON (counted), a log that is truncated or replaced, probe files that vanish.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from model.snapshots import Inspection, RouterView

MAX_PROBES = 300  # probe snapshots kept in a run folder
READ_LIMIT = 16 << 20  # bytes of the log read per poll: a huge backlog arrives over several polls


class RunFolderError(ValueError):
    """A folder that holds no training run, with what was looked for."""


def check_run_folder(path: str | Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise RunFolderError(f"{path} does not exist")
    if not path.is_dir():
        raise RunFolderError(f"{path} is a file; choose the folder a training run writes (its --out)")
    if not (path / "metrics.jsonl").exists() and not (path / "model.ckpt").exists():
        raise RunFolderError(
            f"{path} holds no training run: there is no metrics.jsonl or model.ckpt in it (start one with "
            f"python -m model.train … --out {path})"
        )
    return path


class MetricsTail:
    """The lines appended to a metrics log since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pos, self.inode, self.partial = 0, -1, b""
        self.bad = 0  # lines that were not JSON records

    def read(self) -> tuple[list[dict[str, Any]], bool]:
        """(new records, whether the log was replaced or truncated: the records then start from its beginning)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return [], False
        reset = self.inode != -1 and (st.st_ino != self.inode or st.st_size < self.pos)
        if reset:
            self.pos, self.partial = 0, b""
        self.inode = st.st_ino
        if st.st_size == self.pos:
            return [], reset
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read(min(READ_LIMIT, st.st_size - self.pos))
        except OSError:
            return [], reset
        self.pos += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()  # "" after a whole line; else a line still being written
        records = []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if isinstance(record, dict) and isinstance(record.get("step"), (int, float)):
                records.append(record)
            elif line.strip():
                self.bad += 1
        return records, reset


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


@dataclass
class Poll:
    records: list[dict[str, Any]]  # new log lines: training steps and evaluations
    reset: bool  # the log was rewritten: ``records`` start from its beginning
    checkpoint: bool  # model.ckpt is new or was replaced since the last poll
    probes: list[Path]  # probe snapshots not seen before, oldest first


@dataclass
class RunWatcher:
    """What changed in a run folder since the last :meth:`poll`."""

    folder: Path
    tail: MetricsTail = field(init=False)
    last_change: float = field(default_factory=time.monotonic)
    _checkpoint: tuple[int, int, int] | None = None
    _probes: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.folder = check_run_folder(self.folder)
        self.tail = MetricsTail(self.folder / "metrics.jsonl")

    @property
    def checkpoint_path(self) -> Path:
        return self.folder / "model.ckpt"

    def poll(self) -> Poll:
        records, reset = self.tail.read()
        signature = _signature(self.checkpoint_path)
        changed = signature is not None and signature != self._checkpoint
        self._checkpoint = signature if signature is not None else self._checkpoint
        probes = []
        try:
            names = sorted(p.name for p in (self.folder / "probe").glob("step-*.npz"))
        except OSError:
            names = []
        for name in names:
            if name not in self._probes:
                self._probes.add(name)
                probes.append(self.folder / "probe" / name)
        if records or reset or changed or probes:
            self.last_change = time.monotonic()
        return Poll(records, reset, changed, probes)

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
        "step": inspection.step, "source": inspection.source, "src_tokens": inspection.src_tokens,
        "tgt_tokens": inspection.tgt_tokens, "out_tokens": inspection.out_tokens,
        "teacher_forced": inspection.teacher_forced, "target_ids": list(inspection.target_ids),
        "arch": inspection.arch,
        "routing": [{"stack": r.stack, "layer": r.layer, "tokens": r.tokens} for r in inspection.routing],
    }  # fmt: skip
    arrays: dict[str, Any] = {name: getattr(inspection, name).astype(np.float16) for name in _ARRAYS}
    arrays.update({f"mask_{k}": v.astype(bool) for k, v in inspection.masks.items()})
    for i, r in enumerate(inspection.routing):  # Mixture-of-Experts: what each router did with the probe
        arrays.update({f"route{i}_probs": r.probs.astype(np.float16), f"route{i}_chosen": r.chosen.astype(np.int16),
                       f"route{i}_weights": r.weights.astype(np.float16)})  # fmt: skip
    tmp = folder / f".{path.name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        np.savez(f, meta=np.array(json.dumps(meta, ensure_ascii=False)),
                 target_probs=inspection.target_probs.astype(np.float32), **arrays)  # fmt: skip
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


def read_probe(path: Path) -> Inspection:
    """A probe snapshot written by :func:`write_probe`; raises OSError or ValueError for a damaged one."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        arrays = {name: z[name].astype(np.float32) for name in _ARRAYS}
        masks = {k[len("mask_") :]: z[k] for k in z.files if k.startswith("mask_")}
        probs = z["target_probs"]
        routing = tuple(
            RouterView(str(r["stack"]), int(r["layer"]), list(r["tokens"]), z[f"route{i}_probs"].astype(np.float32),
                       z[f"route{i}_chosen"].astype(np.int64), z[f"route{i}_weights"].astype(np.float32))
            for i, r in enumerate(meta.get("routing", []))
        )  # fmt: skip
    return Inspection(
        meta["src_tokens"], meta["tgt_tokens"], meta["out_tokens"], arrays["encoder"], arrays["decoder_self"],
        arrays["cross"], probs, bool(meta["teacher_forced"]), int(meta["step"]), str(meta["source"]),
        tuple(meta["target_ids"]), masks, routing, str(meta["arch"]),
    )  # fmt: skip
