"""A local stand-in for the Hugging Face Hub, for tests: the part of its HTTP interface ``huggingface_hub`` uses to
fetch a model (``/api/models/ID`` with the file list and sizes, ``HEAD`` and ``GET`` of ``/ID/resolve/REV/FILE``
with ``Range``), serving repositories held in memory. Point ``huggingface_hub`` at it with ``HF_ENDPOINT`` or
``endpoint=``. It records every request; it can hold a file's transfer half-way until released, and break a
connection off once half-way (as a network does)."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class Request:
    method: str
    repo_id: str
    file: str  # "" for the API
    range: str | None


@dataclass
class Hub:
    repos: dict[str, dict[str, bytes]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    hold: dict[str, threading.Event] = field(default_factory=dict)  # file -> released when set (half-way)
    halfway: dict[str, threading.Event] = field(default_factory=dict)  # file -> set when half has been sent
    break_once: set[str] = field(default_factory=set)  # files whose first transfer is broken off half-way
    chunk: int = 64 * 1024
    delay: float = 0.0  # seconds between chunks
    url: str = ""

    def add_folder(self, repo_id: str, folder: Path) -> None:
        self.repos[repo_id] = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}

    def gets(self, file: str) -> list[Request]:
        return [r for r in self.requests if r.method == "GET" and r.file == file]


# files a Hub repository holds beside the ones this engine reads
EXTRA = {"README.md": b"# tiny\n", "tf_model.h5": b"\0" * 5000, "flax_model.msgpack": b"\1" * 3000}


def gpt2_repo(root: Path) -> dict[str, bytes]:
    """A tiny GPT-2's files as a Hub repository holds them: the ones this engine reads, a ``pytorch_model.bin``
    beside ``model.safetensors`` (which must not be fetched) and files of other libraries."""
    from tests.hf_folders import gpt2_folder

    folder = gpt2_folder(root)
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    files["pytorch_model.bin"] = files["model.safetensors"][:100]
    return {**files, **EXTRA}


def hub_of(repo_id: str, files: dict[str, bytes], monkeypatch: Any, cache: Path | None = None) -> Hub:
    """A Hub holding ``files`` as ``repo_id``, with ``huggingface_hub`` set for a test: online, small transfer
    chunks (many progress reports for a small file), and its cache at ``cache`` when given (not the person's);
    ``monkeypatch`` puts every setting back afterwards."""
    from huggingface_hub import constants

    from model.hf import download

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", constants.DOWNLOAD_CHUNK_SIZE)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", constants.HF_HUB_DISABLE_XET)
    if cache is not None:
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(download, "CHUNK", 8 * 1024)
    return Hub(repos={repo_id: dict(files)}, chunk=8 * 1024)


class _Handler(BaseHTTPRequestHandler):
    hub: Hub
    protocol_version = "HTTP/1.1"

    def log_message(self, *_: object) -> None:
        return None

    def _send(self, code: int, headers: dict[str, str], body: bytes = b"", head: bool = False) -> None:
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _not_found(self, head: bool, what: str = "RepoNotFound") -> None:
        body = json.dumps({"error": "Repository Not Found"}).encode()
        self._send(404, {"X-Error-Code": what, "Content-Type": "application/json"}, body, head)

    def _route(self, head: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        if path.startswith("/api/models/"):
            repo_id = path.removeprefix("/api/models/").split("/revision/")[0].rstrip("/")
            self.hub.requests.append(Request(self.command, repo_id, "", None))
            return self._api(repo_id, head)
        if "/resolve/" not in path:
            return self._not_found(head)
        repo_id, rest = path.strip("/").split("/resolve/", 1)
        file = rest.split("/", 1)[1] if "/" in rest else ""
        self.hub.requests.append(Request(self.command, repo_id, file, self.headers.get("Range")))
        files = self.hub.repos.get(repo_id)
        if files is None:
            return self._not_found(head)
        if file not in files:
            return self._not_found(head, "EntryNotFound")
        self._file(files[file], file, head)

    def _api(self, repo_id: str, head: bool) -> None:
        files = self.hub.repos.get(repo_id)
        if files is None:
            return self._not_found(head)
        siblings = [{"rfilename": n, "size": len(b), "blobId": hashlib.sha1(b).hexdigest()} for n, b in files.items()]
        body = json.dumps({"id": repo_id, "modelId": repo_id, "sha": COMMIT, "siblings": siblings}).encode()
        self._send(200, {"Content-Type": "application/json"}, body, head)

    def _file(self, data: bytes, file: str, head: bool) -> None:
        start = 0
        asked = self.headers.get("Range")
        if asked and asked.startswith("bytes="):
            start = int(asked.removeprefix("bytes=").split("-")[0] or 0)
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{hashlib.sha256(data).hexdigest()}"', "Accept-Ranges": "bytes"}
        if head:
            return self._send(200, headers, data, head=True)
        body = data[start:]
        self.send_response(206 if start else 200)
        for k, v in headers.items():
            self.send_header(k, v)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self._stream(body, file, start, len(data))

    def _stream(self, body: bytes, file: str, start: int, size: int) -> None:
        hub, sent, half, held = self.hub, 0, size // 2, False
        while sent < len(body):
            at = start + sent
            if at >= half and file in hub.break_once:
                hub.break_once.discard(file)
                self.close_connection = True
                return
            if at >= half and not held and file in hub.halfway:
                held = True
                hub.halfway[file].set()
                if file in hub.hold:
                    hub.hold[file].wait(30)
            end = min(at + hub.chunk, half) if at < half else at + hub.chunk
            try:
                self.wfile.write(body[sent : end - start])
                self.wfile.flush()
            except OSError:
                return
            sent = end - start
            if hub.delay:
                time.sleep(hub.delay)

    def do_HEAD(self) -> None:
        self._route(head=True)

    def do_GET(self) -> None:
        self._route(head=False)


class HubServer:
    """``with HubServer(hub) as url:`` serves ``hub`` on a free local port."""

    def __init__(self, hub: Hub) -> None:
        handler = type("Handler", (_Handler,), {"hub": hub})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.hub = hub
        hub.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return self.hub.url

    def __exit__(self, *_: object) -> None:
        for hold in self.hub.hold.values():
            hold.set()
        self.server.shutdown()
        self.server.server_close()
