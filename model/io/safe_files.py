"""Open files that a person or a download chose, without blocking and without leaving a folder.

A name in a folder can be something other than a file: a named pipe (FIFO), whose ``open`` waits for a writer
forever; a device (``/dev/zero`` never ends); a folder. :func:`open_regular` opens without waiting and keeps
only regular files. :func:`inside` tells whether a name read from a file (a shard list) stays in its folder.
Both raise :class:`NotAFileError`, a ``ValueError`` that names the path and what it is, so the command-line
tools and the window show it as a message.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import BinaryIO

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotAFileError(ValueError):
    """A path that is not a regular file, or that leads out of the folder it must stay in."""


def describe(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words ("a named pipe")."""
    return next((name for test, name in _KINDS if test(mode)), "something else")


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for reading in binary mode, when it is (or links to) a regular file.

    The open itself does not wait (``O_NONBLOCK``: a named pipe with no writer would block a plain open), and
    the file is checked on the open descriptor, so a name swapped in between cannot slip through.
    Raises :class:`NotAFileError` for anything else, and ``OSError`` as ``open`` does (missing, no permission).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFileError(f"{path}: is not a regular file but {describe(mode)}; give the name of a file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # reads of a regular file never wait anyway; leave the usual mode
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path) -> bytes:
    """The bytes of ``path`` (see :func:`open_regular`)."""
    with open_regular(path) as handle:
        return handle.read()


def check_regular(path: str | Path) -> None:
    """Raise :class:`NotAFileError` unless ``path`` is (or links to) a regular file; for libraries that open
    a path themselves. ``OSError`` when it is not there."""
    open_regular(path).close()


def inside(folder: Path, name: str, source: str | Path, also: tuple[Path, ...] = ()) -> Path:
    """``folder / name`` for a ``name`` that the file ``source`` of that folder lists, when it stays inside.

    Refused: absolute names, names with ``..`` or a drive, and links that lead out of ``folder`` (unless into
    one of the folders ``also``). Raises :class:`NotAFileError` naming ``source`` and ``name``.
    """
    parts = PurePosixPath(name.replace("\\", "/"))
    if not name or parts.is_absolute() or PureWindowsPath(name).drive or ".." in parts.parts:
        raise NotAFileError(f"{source}: names the file {name}, outside the folder; a model's files must lie in it")
    path = folder / parts
    real, roots = path.resolve(), [folder.resolve(), *(p.resolve() for p in also)]
    if not any(real.is_relative_to(root) for root in roots):
        raise NotAFileError(
            f"{source}: names {name}, a link to {real}, outside the folder; a model's files must lie in it"
        )
    return path
