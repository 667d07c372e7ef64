"""Rebuild ``resources/fonts/NotoSansCJKsc-Subset.otf``, the Chinese font shipped for systems that have none.

    python -m resources.make_font_subset [--source /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc]

The source is Noto Sans CJK SC (SIL Open Font License 1.1; Debian/Ubuntu: ``apt install fonts-noto-cjk``).
The subset keeps the characters the program can show: every non-ASCII character of the program's own source
(the Chinese interface strings of ``explorer/i18n_zh.py``, the help texts, the teaching grammar, the samples),
the vocabularies of the bundled models, the HSK example sentences, the ~3,700 most common Chinese characters
(GB 2312 level 1, so that most sentences a person types also show), ASCII and Chinese punctuation. Needs
fontTools (the ``dev`` extra) and the ``hsk-sentences-audio`` package.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "resources" / "fonts" / "NotoSansCJKsc-Subset.otf"
SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
FACE = "Noto Sans CJK SC"  # the Simplified Chinese face of the collection
SOURCE_FOLDERS = ("explorer", "model")  # every non-ASCII character of their .py files is kept

ASCII = "".join(chr(c) for c in range(0x20, 0x7F))
FULL_WIDTH_PUNCTUATION = "，。？！：；“”‘’（）、…—《》〈〉「」『』【】〔〕～·"
RANGES = (
    (0x2010, 0x2027),  # general punctuation: dashes, quotes, ellipsis
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0xFF01, 0xFF5E),  # full-width forms of ASCII
)


def source_text() -> Iterable[str]:
    """The non-ASCII text of the program: interface strings, help texts, grammar, samples, comments."""
    for folder in SOURCE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield "".join(ch for ch in path.read_text(encoding="utf-8") if ord(ch) > 0x7E)


def vocabulary_text() -> Iterable[str]:
    """Every token of the bundled models' source and target vocabularies."""
    from model.data.tokenization import TextTokenizer
    from model.io.checkpoint import load_checkpoint

    for path in sorted((ROOT / "resources" / "models").glob("*.ckpt")):
        data = load_checkpoint(path)
        for key in ("src_tokenizer", "tgt_tokenizer"):
            tok = TextTokenizer.from_json(data[key])
            yield "".join(tok.display_token(i) for i in range(tok.vocab_size))


def hsk_text() -> Iterable[str]:
    """Both sides of every HSK example sentence, as the ``hsk-*`` tasks read them."""
    from model.data.hsk import load_hsk_pairs

    for split in load_hsk_pairs():
        for en, zh in split:
            yield en + zh


def common_hanzi() -> str:
    """GB 2312 level 1: the 3,755 most frequent Simplified Chinese characters."""
    chars = []
    for row in range(0xB0, 0xD8):
        for cell in range(0xA1, 0xFF):
            try:
                chars.append(bytes((row, cell)).decode("gb2312"))
            except UnicodeDecodeError:  # the unused end of row 0xD7
                pass
    return "".join(chars)


def wanted_characters() -> set[str]:
    """Every character the subset is asked to cover (those the source font lacks are left out)."""
    text = [ASCII, FULL_WIDTH_PUNCTUATION, common_hanzi(), *source_text(), *vocabulary_text(), *hsk_text()]
    text += ["".join(chr(c) for c in range(lo, hi + 1)) for lo, hi in RANGES]
    return {ch for part in text for ch in part if ch.isprintable() or ch == "\u3000"}


def _open_face(source: Path):
    from fontTools.ttLib import TTCollection, TTFont

    if source.suffix.lower() not in (".ttc", ".otc"):
        return TTFont(source, recalcTimestamp=False)
    names = [f["name"].getDebugName(1) for f in TTCollection(source, lazy=True).fonts]
    if FACE not in names:
        raise SystemExit(f"{source} has no face named {FACE!r} (it has {', '.join(map(str, names))})")
    return TTFont(source, fontNumber=names.index(FACE), recalcTimestamp=False)


def make_subset(source: Path, output: Path) -> tuple[int, int]:
    """Write the subset of ``source`` to ``output``; returns (characters, glyphs)."""
    from fontTools import subset

    font = _open_face(source)
    cmap = font.getBestCmap()
    unicodes = sorted(ord(ch) for ch in wanted_characters() if ord(ch) in cmap)
    options = subset.Options()
    options.layout_features = ["kern", "vert", "vrt2", "palt", "halt"]  # no 'locl': only the Chinese forms
    options.name_languages = ["*"]  # keep the copyright and licence records
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=unicodes)
    subsetter.subset(font)
    output.parent.mkdir(parents=True, exist_ok=True)
    font.save(output)
    return len(unicodes), len(font.getGlyphOrder())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--source", type=Path, default=SOURCE, help="Noto Sans CJK (.ttc collection or SC .otf)")
    ap.add_argument("--out", type=Path, default=OUTPUT)
    args = ap.parse_args(argv)
    chars, glyphs = make_subset(args.source, args.out)
    print(f"wrote {args.out}: {chars} characters, {glyphs} glyphs, {args.out.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
