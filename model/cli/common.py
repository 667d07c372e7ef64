"""Small helpers shared by the command-line tools."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from model.core.settings import settings_of
from model.families.registry import FamilySpec
from model.training.device import DEVICE_CHOICES


def add_checkpoint_flag(ap: argparse.ArgumentParser) -> None:
    """``--checkpoint``: the model the tool opens."""
    ap.add_argument(
        "--checkpoint", required=True, metavar="FILE|FOLDER", help="a checkpoint, or a Hugging Face model folder"
    )


def add_device_flags(ap: argparse.ArgumentParser) -> None:
    """``--device`` and ``--threads``: where the tool computes."""
    ap.add_argument("--device", choices=DEVICE_CHOICES, default="auto")
    ap.add_argument("--threads", type=int)


def add_setting_flags(group: argparse._ArgumentGroup, cls: type) -> None:
    """One flag for each field of the settings dataclass ``cls`` that carries a Setting, in field order.

    Every flag defaults to None, so that :func:`given_settings` returns only the flags given, which override
    a preset's values. Booleans get ``--x`` / ``--no-x``; Literal fields their choices.
    """
    for s in settings_of(cls):
        text = s.setting.help.replace("%", "%%")  # argparse formats help with %
        if s.kind is bool:
            group.add_argument(f"--{s.flag}", action=argparse.BooleanOptionalAction, default=None, help=text)
        else:
            if s.choices:  # choices are text already; "decoder-only" is read as "decoder_only"
                group.add_argument(f"--{s.flag}", choices=s.choices, type=_underscored, help=text)
            else:
                group.add_argument(f"--{s.flag}", type=s.kind, help=text)


def _underscored(value: str) -> str:
    return value.replace("-", "_")


def given_settings(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """Field name → value of the flags of :func:`add_setting_flags` that were given."""
    return {s.name: getattr(args, s.dest) for s in settings_of(cls) if getattr(args, s.dest) is not None}


def given_flags(args: argparse.Namespace, cls: type) -> list[str]:
    """The flags of :func:`add_setting_flags` that were given, as typed ("--d-model")."""
    return [f"--{s.flag}" for s in settings_of(cls) if getattr(args, s.dest) is not None]


class Progress:
    """A one-line progress bar on stderr (a plain line now and then when not a terminal)."""

    def __init__(self, total: int, start: int = 0, width: int = 28) -> None:
        self.total, self.start, self.width = total, start, width
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.tty = sys.stderr.isatty()

    def update(self, step: int, text: str, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < (0.1 if self.tty else 10.0):
            return
        self.last = now
        done = (step - self.start) / max(1, self.total - self.start)
        rate = (step - self.start) / max(1e-9, now - self.t0)
        eta = (self.total - step) / rate if rate > 0 else 0
        filled = int(self.width * done)
        bar = "#" * filled + "." * (self.width - filled)
        line = f"step {step}/{self.total} [{bar}] {100 * done:3.0f}% {text} ETA {int(eta) // 60}:{int(eta) % 60:02d}"
        if self.tty:
            sys.stderr.write("\r" + line[:160].ljust(160))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()


def open_checkpoint(args: argparse.Namespace, family: FamilySpec) -> Any:
    """The checkpoint ``args.checkpoint`` on ``args.device`` (threads from ``args.threads``), when it is a model of
    ``family``; else None, with the reason (and the tool for the family it is) on stderr."""
    import torch

    from model.io.checkpoint import CheckpointError
    from model.session import Session

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        session = Session.load(args.checkpoint, device=args.device)
    except (CheckpointError, ValueError) as exc:  # ValueError: e.g. --device cuda without a GPU
        print(f"error: {exc}", file=sys.stderr)
        return None
    found = session.model_cfg.family
    if found is not family:
        print(f"error: {args.checkpoint} is a {found.name} model; use {found.cli} with it", file=sys.stderr)
        return None
    return session


def input_lines(texts: list[str]) -> Any:
    """The texts given on the command line, else the lines of stdin, numbered from 1."""
    return enumerate(texts or (line.rstrip("\n") for line in sys.stdin), start=1)
