"""Opening files a person or a download chose (model/io/safe_files.py): only regular files, without waiting on a
named pipe, and only names that stay inside their folder."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from model.io.safe_files import NotAFileError, check_regular, describe, inside, open_regular, read_regular
from tests.blocking import finishes

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes and /dev/null are POSIX's")


def test_what_a_file_is_is_said_in_words():
    assert describe(stat.S_IFDIR | 0o755) == "a folder"
    assert describe(stat.S_IFIFO | 0o644) == "a named pipe"
    assert describe(stat.S_IFCHR) == describe(stat.S_IFBLK) == "a device"
    assert describe(stat.S_IFSOCK) == "a socket"
    assert describe(stat.S_IFREG | 0o644) == "something else"  # (asked only of what is not a regular file)


def test_a_regular_file_and_a_link_to_one_are_read(tmp_path):
    (tmp_path / "vocab.json").write_bytes(b'{"a": 1}')
    (tmp_path / "link.json").symlink_to(tmp_path / "vocab.json")
    with open_regular(tmp_path / "vocab.json") as f:
        assert f.read() == b'{"a": 1}' and f.mode == "rb"
    assert read_regular(tmp_path / "link.json") == b'{"a": 1}'
    check_regular(str(tmp_path / "link.json"))


def test_a_folder_is_refused_and_a_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(NotAFileError, match=f"{tmp_path}: is not a regular file but a folder; give the name of a file"):
        open_regular(tmp_path)
    assert issubclass(NotAFileError, ValueError)  # the tools and the window show it as a message
    with pytest.raises(FileNotFoundError):
        check_regular(tmp_path / "gone.bin")


@posix_only
def test_a_named_pipe_without_a_writer_is_refused_at_once(tmp_path):
    pipe = tmp_path / "model.safetensors"
    os.mkfifo(pipe)
    for call in (lambda: open_regular(pipe), lambda: read_regular(pipe), lambda: check_regular(pipe)):
        outcome = finishes(call)
        assert isinstance(outcome, NotAFileError) and "a named pipe" in str(outcome), outcome


@posix_only
def test_a_device_and_a_socket_are_refused(tmp_path):
    with pytest.raises(NotAFileError, match="a device"):
        read_regular("/dev/null")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tmp_path / "s"))
        outcome = finishes(lambda: check_regular(tmp_path / "s"))
        assert not isinstance(outcome, TimeoutError), "it blocked"
        assert isinstance(outcome, (OSError, NotAFileError))  # a socket cannot even be opened: never read
    finally:
        server.close()


def test_a_name_listed_in_a_folder_stays_in_it(tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    assert inside(tmp_path, "model-00001.safetensors", index) == tmp_path / "model-00001.safetensors"
    assert inside(tmp_path, "shards\\part-1.bin", index) == tmp_path / "shards" / "part-1.bin"
    for name in ("", "/etc/passwd", "../secret", "shards/../../secret", "..\\secret", "C:\\weights.bin", "C:x"):
        with pytest.raises(NotAFileError, match="outside the folder") as refused:
            inside(tmp_path, name, index)
        assert str(refused.value).startswith(f"{index}: names")


def test_a_link_out_of_the_folder_is_refused_unless_into_a_folder_allowed(tmp_path):
    folder, cache = tmp_path / "model", tmp_path / "cache"
    folder.mkdir()
    cache.mkdir()
    (cache / "blob").write_bytes(b"x")
    (folder / "weights.bin").symlink_to(cache / "blob")  # how a download cache lays a model out
    with pytest.raises(NotAFileError, match=f"names weights.bin, a link to {cache / 'blob'}, outside the folder"):
        inside(folder, "weights.bin", folder / "index.json")
    assert inside(folder, "weights.bin", folder / "index.json", also=(cache,)) == folder / "weights.bin"
    assert inside(folder, "not-there-yet.bin", "index.json") == folder / "not-there-yet.bin"
