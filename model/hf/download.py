"""Get a model from the Hugging Face Hub: only the files this engine reads, through ``huggingface_hub``.

The files go into ``huggingface_hub``'s own cache (``HF_HOME``, ``HF_HUB_CACHE``), so a model fetched here is the
same model ``transformers`` finds, and one already there is not fetched again; ``HF_HUB_OFFLINE=1`` (or no
network) opens a model from the cache. The repository's file list is asked first, then its ``config.json``: a
model of another architecture is refused before its weights are fetched. Of the weights, ``model.safetensors``
(or its shards) is preferred over ``pytorch_model.bin``. Progress, speed and time left are reported per chunk
and a download can be cancelled between chunks; the files finished stay in the cache, and a transfer the network
broke off is resumed from where it stopped by ``huggingface_hub`` itself. A cancelled file starts again from its
beginning next time (``huggingface_hub`` keeps no partial file).

PyTorch is not imported here: the window runs this on a thread of its own while the engine trains.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.hf.supported import unsupported

CONFIG = "config.json"
# what model/hf/tokenizers.py reads, whichever of them the repository has
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "target_vocab.json",
    "merges.txt",
    "vocab.txt",
    "source.spm",
    "target.spm",
)
SAFETENSORS, SAFETENSORS_INDEX, PICKLED = "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin"
CHUNK = 1 << 20  # bytes between two progress reports (and two chances to cancel)


class DownloadError(Exception):
    """A model that could not be fetched, said so that the person can act on it."""


class DownloadCancelled(DownloadError):
    """The person cancelled; the files already finished stay in the cache."""


@dataclass(frozen=True)
class DownloadProgress:
    repo_id: str
    file: str  # the file being fetched
    done: int  # bytes of all the model's files fetched so far (files found in the cache count as fetched)
    total: int  # bytes of all of them
    rate: float  # bytes per second, over the last few seconds
    seconds_left: float | None  # None until a rate is known


@dataclass(frozen=True)
class CachedModel:
    repo_id: str
    folder: Path  # the snapshot folder, which the engine opens
    size: int  # bytes on disk


class _Meter:
    """Bytes fetched, the rate (over a sliding window of a few seconds) and the time left."""

    WINDOW = 4.0

    def __init__(self, repo_id: str, total: int, report: Callable[[DownloadProgress], None]) -> None:
        self.repo_id, self.total, self.report = repo_id, total, report
        self.done, self.file = 0, ""
        self.marks: list[tuple[float, int]] = [(time.monotonic(), 0)]

    def add(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        self.marks.append((now, self.done))
        while len(self.marks) > 2 and now - self.marks[1][0] > self.WINDOW:
            self.marks.pop(0)
        (t0, d0) = self.marks[0]
        rate = (self.done - d0) / (now - t0) if now > t0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else None
        self.report(DownloadProgress(self.repo_id, self.file, self.done, self.total, rate, left))


def _bar_class(meter: _Meter, cancel: threading.Event) -> type:
    """A progress bar class for ``huggingface_hub`` (it is given ``tqdm_class``): each chunk received is counted
    and, if the person cancelled, stops the transfer."""

    class Bar:
        def __init__(self, **_: Any) -> None:
            pass

        def __enter__(self) -> Bar:
            return self

        def __exit__(self, *_: object) -> None:
            return None

        def update(self, n: float | None = 1) -> None:
            if cancel.is_set():
                raise DownloadCancelled("cancelled")
            meter.add(int(n or 0))

        def close(self) -> None:
            return None

    return Bar


def files_to_fetch(sizes: dict[str, int | None], shards: Iterable[str] = ()) -> list[str]:
    """The files of a repository (name → size) that the engine reads, config.json first and the weights last:
    the tokenizer files present, and ``model.safetensors``, else the shards the index names (``shards``), else
    ``pytorch_model.bin``. Raises :class:`DownloadError` when there are no weights this program reads."""
    if CONFIG not in sizes:
        raise DownloadError("it has no config.json, so it is not a model folder this program opens.")
    names = [CONFIG] + [n for n in TOKENIZER_FILES if n in sizes]
    if SAFETENSORS in sizes:
        return names + [SAFETENSORS]
    if SAFETENSORS_INDEX in sizes:
        return names + [SAFETENSORS_INDEX, *sorted(set(shards))]
    if PICKLED in sizes:
        return names + [PICKLED]
    found = ", ".join(sorted(n for n in sizes if n.endswith((".safetensors", ".bin", ".h5", ".msgpack", ".onnx"))))
    raise DownloadError(
        "it has no weights this program reads (model.safetensors or pytorch_model.bin)"
        + (f"; it has {found}." if found else ".")
    )


def _hub_error(repo_id: str, exc: Exception, cache_dir: str | Path | None) -> DownloadError:
    """The person's version of what ``huggingface_hub`` raised."""
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        return DownloadError(
            f"{repo_id} is gated: accept its terms on the Hugging Face website, then log in here with "
            f"`hf auth login` (or set HF_TOKEN) and try again."
        )
    if isinstance(exc, RepositoryNotFoundError):
        return DownloadError(
            f"There is no model {repo_id!r} on the Hugging Face Hub (or it is private). Check the spelling: "
            f"an id is owner/name, for example Helsinki-NLP/opus-mt-en-zh."
        )
    if isinstance(exc, RevisionNotFoundError):
        return DownloadError(f"{repo_id} has no such revision.")
    if isinstance(exc, (OfflineModeIsEnabled, LocalEntryNotFoundError, OSError)) or _is_network_error(exc):
        cached = ", ".join(m.repo_id for m in cached_models(cache_dir)) or "none"
        return DownloadError(
            f"The Hugging Face Hub cannot be reached ({_short(exc)}), and {repo_id} is not in the cache. Connect to "
            f"the internet and try again, or open a model already in the cache: {cached}."
        )
    return DownloadError(f"{repo_id} could not be fetched: {_short(exc)}")


def _is_network_error(exc: Exception) -> bool:
    module = type(exc).__module__.split(".")[0]
    return module.startswith("httpx") or module in {"requests", "urllib3", "ssl", "socket"}


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def _from_cache(repo_id: str, cache_dir: str | Path | None) -> Path | None:
    """The cached snapshot of ``repo_id`` if it opens in this engine, else None."""
    return next((m.folder for m in cached_models(cache_dir) if m.repo_id == repo_id), None)


def _check_config(repo_id: str, path: str) -> None:
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DownloadError(f"{repo_id}'s config.json cannot be read as JSON ({exc}).") from None
    reason = unsupported(config) if isinstance(config, dict) else "its config.json is not a table of settings."
    if reason is not None:
        raise DownloadError(f"{repo_id} does not open in this program: {reason} Nothing more was fetched.")


def _shards(index_path: str) -> list[str]:
    try:
        weight_map = json.loads(Path(index_path).read_text(encoding="utf-8")).get("weight_map", {})
    except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
        raise DownloadError(f"model.safetensors.index.json cannot be read ({exc}).") from None
    names = {str(v) for v in weight_map.values()} if isinstance(weight_map, dict) else set()
    bad = [n for n in names if "/" in n or "\\" in n or n.startswith(".") or not n.endswith(".safetensors")]
    if bad:
        raise DownloadError(f"model.safetensors.index.json names files this program does not fetch: {bad[:3]}")
    return sorted(names)


def download(
    repo_id: str,
    *,
    progress: Callable[[DownloadProgress], None] | None = None,
    cancel: threading.Event | None = None,
    cache_dir: str | Path | None = None,
    endpoint: str | None = None,
) -> Path:
    """Fetch the files of ``repo_id`` that the engine reads into the Hub cache and return the snapshot folder
    (which :func:`model.hf.folders.read_folder` opens). Offline, or with the Hub out of reach, a model already in
    the cache is returned; otherwise :class:`DownloadError` says what to do."""
    from huggingface_hub import HfApi, constants, hf_hub_download

    repo_id = repo_id.strip().strip("/")
    if not repo_id or " " in repo_id or repo_id.count("/") > 1:
        raise DownloadError(f"{repo_id!r} is not a model id: an id is owner/name, such as Helsinki-NLP/opus-mt-en-zh.")
    cancel = cancel or threading.Event()
    if _offline():
        cached = _from_cache(repo_id, cache_dir)
        if cached is not None:
            return cached
        raise _hub_error(repo_id, OSError("offline mode is on: HF_HUB_OFFLINE"), cache_dir)
    constants.HF_HUB_DISABLE_XET = True  # plain HTTP: its chunks report progress and can be cancelled
    constants.DOWNLOAD_CHUNK_SIZE = min(constants.DOWNLOAD_CHUNK_SIZE, CHUNK)
    try:
        info = HfApi(endpoint=endpoint).model_info(repo_id, files_metadata=True)
    except Exception as exc:
        cached = _from_cache(repo_id, cache_dir)
        if cached is not None and not _is_missing(exc):
            return cached
        raise _hub_error(repo_id, exc, cache_dir) from None
    sizes = {s.rfilename: s.size for s in (info.siblings or [])}
    revision = info.sha

    def fetch(name: str, bar: type | None = None) -> str:
        if cancel.is_set():
            raise DownloadCancelled("cancelled")
        try:
            path = hf_hub_download(
                repo_id, name, revision=revision, cache_dir=cache_dir, endpoint=endpoint, tqdm_class=bar
            )
        except DownloadError:
            raise
        except Exception as exc:
            raise _hub_error(repo_id, exc, cache_dir) from None
        return str(path)

    plan = files_to_fetch(sizes)  # checks for config.json and weights before anything is fetched
    meter = _Meter(repo_id, sum(sizes.get(n) or 0 for n in plan), progress or (lambda p: None))
    bar = _bar_class(meter, cancel)
    meter.file = CONFIG
    config_path = fetch(CONFIG, bar)
    _check_config(repo_id, config_path)
    if SAFETENSORS_INDEX in plan:
        meter.file = SAFETENSORS_INDEX
        plan = files_to_fetch(sizes, _shards(fetch(SAFETENSORS_INDEX, bar)))
        meter.total = sum(sizes.get(n) or 0 for n in plan)
    _fetch_all([n for n in plan if n not in (CONFIG, SAFETENSORS_INDEX)], sizes, meter, lambda n: fetch(n, bar))
    return Path(config_path).parent


def _fetch_all(names: list[str], sizes: dict[str, int | None], meter: _Meter, fetch: Callable[[str], str]) -> None:
    for name in names:
        meter.file = name
        before = meter.done
        fetch(name)
        if meter.done == before:  # found in the cache: counted as fetched
            meter.add(sizes.get(name) or 0)


def _is_missing(exc: Exception) -> bool:
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    return isinstance(exc, (RepositoryNotFoundError, GatedRepoError))


def cached_models(cache_dir: str | Path | None = None) -> list[CachedModel]:
    """The models in the Hub cache that open in this engine (a config.json of a supported architecture and
    weights), newest first."""
    from huggingface_hub import constants, scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:  # the cache hf_hub_download writes to (its constant as it is now, not as scan_cache_dir imported it)
        cache = scan_cache_dir(cache_dir or constants.HF_HUB_CACHE)
    except (CacheNotFound, OSError, ValueError):
        return []
    found: list[tuple[float, CachedModel]] = []
    for repo in cache.repos:
        if repo.repo_type != "model":
            continue
        for rev in sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True):
            names = {f.file_name for f in rev.files}
            config = rev.snapshot_path / CONFIG
            if CONFIG not in names or not names & {SAFETENSORS, SAFETENSORS_INDEX, PICKLED}:
                continue
            try:
                settings = json.loads(config.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            if isinstance(settings, dict) and unsupported(settings) is None:
                found.append((rev.last_modified, CachedModel(repo.repo_id, rev.snapshot_path, rev.size_on_disk)))
                break
    return [m for _, m in sorted(found, key=lambda t: t[0], reverse=True)]
