"""Getting a model from the Hub (model/hf/download.py, ``python -m model.download``), against a local stand-in for
the Hub (tests/hub_server.py): only the files the engine reads, progress, cancel and a second try, a broken
connection resumed, a wrong id, a model of another architecture refused before its weights, offline."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from model.hf import download as dl
from tests.hub_server import Hub, HubServer, gpt2_repo, hub_of

pytest.importorskip("transformers")

REPO = "tiny-org/tiny-gpt2"


@pytest.fixture(scope="module")
def gpt2_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return gpt2_repo(tmp_path_factory.mktemp("hub"))


@pytest.fixture()
def hub(gpt2_files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch) -> Hub:
    return hub_of(REPO, gpt2_files, monkeypatch)


def _get(hub: Hub, cache: Path, **kw: object) -> Path:
    return dl.download(REPO, cache_dir=cache, endpoint=hub.url, **kw)  # type: ignore[arg-type]


def test_only_the_files_the_engine_reads_are_fetched_and_the_folder_opens(hub: Hub, tmp_path: Path) -> None:
    seen: list[dl.DownloadProgress] = []
    with HubServer(hub):
        folder = _get(hub, tmp_path, progress=seen.append)
    files = hub.repos[REPO]
    fetched = {r.file for r in hub.requests if r.method == "GET" and r.file}
    wanted = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}
    assert wanted <= fetched
    assert not fetched & {"pytorch_model.bin", "README.md", "tf_model.h5", "flax_model.msgpack"}
    assert all(len(hub.gets(f)) == 1 for f in fetched)
    for name in fetched:
        assert (folder / name).read_bytes() == files[name]
    total = sum(len(files[n]) for n in fetched)
    assert seen[-1].done == seen[-1].total == total
    assert [p.done for p in seen] == sorted(p.done for p in seen)
    assert len(seen) > len(files["model.safetensors"]) // (8 * 1024)  # reported chunk by chunk
    assert seen[-1].seconds_left == 0 or seen[-1].seconds_left is None

    from model.hf.folders import read_folder

    opened = read_folder(folder)  # the engine opens what was fetched, named by its id, not the commit
    assert opened.origin["model_type"] == "gpt2" and opened.name == REPO


def test_cancel_half_way_then_a_second_try_fetches_only_what_is_missing(hub: Hub, tmp_path: Path) -> None:
    weights = "model.safetensors"
    hub.halfway[weights], hub.hold[weights] = threading.Event(), threading.Event()
    cancel, seen, outcome = threading.Event(), [], {}

    def run() -> None:
        try:
            _get(hub, tmp_path, progress=seen.append, cancel=cancel)
        except dl.DownloadError as exc:
            outcome["error"] = exc

    with HubServer(hub):
        worker = threading.Thread(target=run)
        worker.start()
        assert hub.halfway[weights].wait(20), "the weights' transfer never reached half-way"
        cancel.set()
        hub.hold[weights].set()
        worker.join(20)
        assert isinstance(outcome.get("error"), dl.DownloadCancelled)
        assert seen[-1].done < seen[-1].total  # stopped before the end
        before = {f: len(hub.gets(f)) for f in ("config.json", "tokenizer.json", weights)}
        hub.halfway.clear()
        folder = _get(hub, tmp_path)
    assert len(hub.gets("config.json")) == before["config.json"] == 1  # kept in the cache, not fetched again
    assert len(hub.gets("tokenizer.json")) == before["tokenizer.json"] == 1
    assert len(hub.gets(weights)) == 2
    assert (folder / weights).read_bytes() == hub.repos[REPO][weights]


def test_a_connection_broken_off_is_resumed_where_it_stopped(hub: Hub, tmp_path: Path) -> None:
    weights = "model.safetensors"
    hub.break_once.add(weights)
    with HubServer(hub):
        folder = _get(hub, tmp_path)
    ranges = [r.range for r in hub.gets(weights)]
    assert ranges[0] is None and ranges[1] is not None and ranges[1].startswith("bytes=")
    assert int(ranges[1].removeprefix("bytes=").split("-")[0]) > 0
    assert (folder / weights).read_bytes() == hub.repos[REPO][weights]


def test_an_id_that_is_not_on_the_hub_says_so(hub: Hub, tmp_path: Path) -> None:
    with HubServer(hub), pytest.raises(dl.DownloadError, match="no model 'nobody/nothing'.*spelling"):
        dl.download("nobody/nothing", cache_dir=tmp_path, endpoint=hub.url)
    assert not [r for r in hub.requests if r.file]


def test_another_architecture_is_refused_before_its_weights(hub: Hub, tmp_path: Path) -> None:
    config = {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"]}
    hub.repos["google/t5-tiny"] = {"config.json": json.dumps(config).encode(), "model.safetensors": b"\0" * 50_000}
    with HubServer(hub), pytest.raises(dl.DownloadError, match="'t5' is not supported.*Nothing more was fetched"):
        dl.download("google/t5-tiny", cache_dir=tmp_path, endpoint=hub.url)
    assert [r.file for r in hub.requests if r.method == "GET" and r.file] == ["config.json"]


def test_a_repository_without_weights_this_program_reads(hub: Hub, tmp_path: Path) -> None:
    hub.repos["org/tf-only"] = {"config.json": b'{"model_type": "gpt2"}', "tf_model.h5": b"\0"}
    with HubServer(hub), pytest.raises(dl.DownloadError, match="no weights this program reads.*tf_model.h5"):
        dl.download("org/tf-only", cache_dir=tmp_path, endpoint=hub.url)
    assert not [r for r in hub.requests if r.file]


def test_offline_a_cached_model_opens_and_another_is_refused_naming_the_cache(
    hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    with HubServer(hub):
        folder = _get(hub, tmp_path)
    asked = len(hub.requests)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert _get(hub, tmp_path) == folder
    assert len(hub.requests) == asked  # nothing asked of the Hub
    with pytest.raises(dl.DownloadError, match=f"not in the cache.*{REPO}"):
        dl.download("Helsinki-NLP/opus-mt-en-zh", cache_dir=tmp_path)
    assert [m.repo_id for m in dl.cached_models(tmp_path)] == [REPO]


def test_with_the_hub_out_of_reach_a_cached_model_still_opens(hub: Hub, tmp_path: Path) -> None:
    with HubServer(hub):
        folder = _get(hub, tmp_path)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    assert dl.download(REPO, cache_dir=tmp_path, endpoint=closed) == folder
    with pytest.raises(dl.DownloadError, match="cannot be reached.*Connect to the internet"):
        dl.download("Helsinki-NLP/opus-mt-zh-en", cache_dir=tmp_path, endpoint=closed)


def test_not_an_id() -> None:
    with pytest.raises(dl.DownloadError, match="not a model id"):
        dl.download("two words")


def test_files_to_fetch_prefers_safetensors_and_follows_an_index() -> None:
    sizes: dict[str, int | None] = {"config.json": 1, "vocab.txt": 2, "README.md": 3}
    assert dl.files_to_fetch({**sizes, "pytorch_model.bin": 9}) == ["config.json", "vocab.txt", "pytorch_model.bin"]
    both = {**sizes, "pytorch_model.bin": 9, "model.safetensors": 8}
    assert dl.files_to_fetch(both) == ["config.json", "vocab.txt", "model.safetensors"]
    index = {**sizes, "model.safetensors.index.json": 1, "pytorch_model.bin": 9}
    shards = ["model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors"]
    assert dl.files_to_fetch(index, shards)[-3:] == ["model.safetensors.index.json", *sorted(shards)]
    with pytest.raises(dl.DownloadError, match="no config.json"):
        dl.files_to_fetch({"model.safetensors": 1})


def test_the_command_line_fetches_through_hf_endpoint(hub: Hub, tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "0"}
    with HubServer(hub):
        env["HF_ENDPOINT"] = hub.url
        ok = subprocess.run(
            [sys.executable, "-m", "model.download", REPO], env=env, capture_output=True, text=True, timeout=120
        )
        missing = subprocess.run(
            [sys.executable, "-m", "model.download", "nobody/nothing"], env=env, capture_output=True, text=True
        )
    assert ok.returncode == 0, ok.stderr
    folder = Path(ok.stdout.strip().splitlines()[-1])
    assert (folder / "model.safetensors").read_bytes() == hub.repos[REPO]["model.safetensors"]
    assert missing.returncode == 1 and "no model 'nobody/nothing'" in missing.stderr
