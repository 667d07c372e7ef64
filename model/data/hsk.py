"""The HSK example sentences shipped by the ``hsk-sentences-audio`` package.

4,354 English–Chinese sentence pairs, CC-BY-SA-4.0, loaded from the installed
package (never copied into this repository). The split is fixed: the sentences
are ordered by id and shuffled with a constant seed, 90% train, 5% valid, 5% test.
"""

from __future__ import annotations

import random

from model.data.errors import DataError

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
    records = sorted(hsk_sentences_audio.load_sentences(), key=lambda r: r["id"])
    pairs = []
    for r in records:
        en = (r.get("translation") or {}).get("en", "").strip()
        zh = (r.get("chinese") or "").strip()
        if en and zh:
            pairs.append((en, zh))
    random.Random(SPLIT_SEED).shuffle(pairs)
    n_held = max(1, len(pairs) // 20)
    return pairs[2 * n_held :], pairs[:n_held], pairs[n_held : 2 * n_held]
