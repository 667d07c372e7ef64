"""Large reads and sorts that let other threads run while they work.

The window's thread and the engine thread share one GIL. Python hands it over between bytecodes (every 1 ms
here, see ``explorer.engine_loading.favour_the_window``), but not in the middle of one C call: ``json.loads``
of a 65,001-piece ``vocab.json`` (25–70 ms) or ``sorted`` of 60,000 words by a key (50–240 ms) keep the window
from drawing for that long. These do the same work in small C calls, with Python between them.
"""

from __future__ import annotations

import codecs
import json
import re
import time
from collections.abc import Callable, Iterable
from heapq import merge
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

SORTED_SLICE = 4096  # items sorted by one C call (~2 ms)
_SPACE = re.compile(r"[ \t\n\r]*")
JSON_SLICE = 1 << 16  # characters of JSON read by one C call (~1–2 ms)
TEXT_SLICE = 1 << 18  # bytes of UTF-8 decoded by one C call
_ANY_CUT = re.compile(r',[ \t\n\r]*(?=["\[{])')  # a comma before a string, a list or an object
TRIES = 16  # cuts tried for one slice before the rest is read whole


def read_text(path: str | Path) -> str:
    """The UTF-8 text of the file at ``path``, decoded a slice at a time."""
    data = Path(path).read_bytes()
    decoder = codecs.getincrementaldecoder("utf-8")()
    parts = []
    for start in range(0, len(data), TEXT_SLICE):
        parts.append(decoder.decode(data[start : start + TEXT_SLICE]))
        time.sleep(0)
    parts.append(decoder.decode(b"", final=True))
    return "".join(parts)


def json_loads(text: str) -> Any:
    """``json.loads(text)``; a large top-level object or list is read a slice of its items at a time.

    A slice ends before a comma. Where that comma is not between two items of the top-level object or list (it
    is inside a string, or inside a nested list or object), the slice before it is not valid JSON (a string or
    a bracket is left open), so a slice that reads is a run of whole items; when it does not, the next comma is
    tried. Anything else, malformed text included, is read by ``json.loads`` whole, which raises its usual
    error. Pretty-printed text is cut where an item begins at the first item's indentation."""
    first, last = _space_end(text, 0), len(text)  # (no stripped copy of a 6 MB text: copies hold the GIL too)
    while last > first and text[last - 1] in " \t\n\r":
        last -= 1
    if last - first <= JSON_SLICE or text[first] + text[last - 1] not in ("{}", "[]"):
        return json.loads(text)
    gap = text[first + 1 : _space_end(text, first + 1)]  # before the first item: a newline and indentation
    cuts = re.compile(re.escape("," + gap) + r'(?=["\[{])') if "\n" in gap else _ANY_CUT
    out: dict[str, Any] | list[Any] = {} if text[first] == "{" else []
    start, end = first + 1, last - 1
    while start < end:
        part, start = _slice(text, start, end, cuts, text[first] + text[last - 1])
        if part is None:
            return json.loads(text)
        out.update(part) if isinstance(out, dict) else out.extend(part)  # (a repeated key: the last one wins)
        time.sleep(0)  # (the GIL to a waiting thread now, not at the next switch interval)
    return out


def _space_end(text: str, at: int) -> int:
    """Where the JSON whitespace from ``at`` on ends."""
    found = _SPACE.match(text, at)
    return found.end() if found else at


def _slice(text: str, start: int, end: int, cuts: re.Pattern[str], brackets: str) -> tuple[Any, int]:
    """The items of ``text[start:end]`` up to a cut about :data:`JSON_SLICE` on, and where the next slice begins;
    (None, end) when no cut within :data:`TRIES` gives valid JSON."""
    opening, closing = brackets[0], brackets[1]
    at = min(start + JSON_SLICE, end)
    for _ in range(TRIES):
        found = cuts.search(text, at, end)
        cut = found.start() if found else end
        try:
            return json.loads(opening + text[start:cut] + closing), cut + 1
        except json.JSONDecodeError:
            if found is None:
                break
            at = cut + 1
    return None, end


def sorted_in_slices(items: Iterable[T], key: Callable[[T], Any]) -> list[T]:
    """``sorted(items, key=key)`` (stable, the same order), sorted a slice at a time and merged."""
    items = list(items)
    runs = []
    for start in range(0, len(items), SORTED_SLICE):
        runs.append(sorted(items[start : start + SORTED_SLICE], key=key))
        time.sleep(0)  # (the GIL to a waiting thread now, not at the next switch interval)
    return list(merge(*runs, key=key)) if len(runs) > 1 else (runs[0] if runs else [])
