"""The HSK example sentences shipped by the ``hsk-sentences-audio`` package.

4,354 English–Chinese sentence pairs, CC-BY-SA-4.0, loaded from the installed
package (never copied into this repository). The split is fixed: the sentences
are ordered by id and shuffled with a constant seed, 90% train, 5% valid, 5% test.
"""

from __future__ import annotations

import functools
import random
from importlib import resources
from pathlib import Path
from typing import Any

from model.data.errors import DataError
from model.io import gentle

SPLIT_SEED = 20240101  # fixed for everyone, so published figures are comparable
LICENSE = "CC-BY-SA-4.0"
SOURCE = "hsk-sentences-audio (https://github.com/no7z/hsk-sentences-audio)"


def load_hsk_pairs() -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]]]:
    """(train, valid, test) lists of (english, chinese)."""
    try:
        import hsk_sentences_audio
    except ImportError as exc:
        raise DataError(
            "The HSK sentences come from the 'hsk-sentences-audio' package, which is not installed. "
            "Install it with:  pip install hsk-sentences-audio"
        ) from exc
    records = sorted(_records(hsk_sentences_audio), key=lambda r: r["id"])
    pairs = []
    for r in records:
        en = (r.get("translation") or {}).get("en", "").strip()
        zh = (r.get("chinese") or "").strip()
        if en and zh:
            pairs.append((en, zh))
    random.Random(SPLIT_SEED).shuffle(pairs)
    n_held = max(1, len(pairs) // 20)
    return pairs[2 * n_held :], pairs[:n_held], pairs[n_held : 2 * n_held]


@functools.lru_cache(maxsize=1)
def _records(package: Any) -> list[dict[str, Any]]:
    """The package's sentence records (what its ``load_sentences()`` reads), read in slices: the file is 6.4 MB of
    JSON, and ``json.load`` held the GIL for 40–100 ms, the window's thread waiting meanwhile."""
    data = resources.files(package).joinpath("data", "sentences.json")
    if not isinstance(data, Path) or not data.is_file():  # (another layout of the package: its own reader)
        return package.load_sentences()
    return gentle.json_loads(gentle.read_text(data))
