"""The bundled Chinese font: it covers what the program shows, and Qt falls back to it where no installed
font has Chinese glyphs (a fontconfig sandbox with Latin fonts only stands for a fresh Linux)."""

import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from model.data.tokenization import contains_cjk
from resources import resource_path

ROOT = Path(__file__).resolve().parents[1]
LATIN_FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu-sans-fonts", "/usr/share/fonts/TTF")

# run in a fresh interpreter inside the sandbox: which characters of stdin's text get no glyph (glyph 0, the box),
# and which families draw the rest, with or without the registration
RENDER = """
import json, sys
from PySide6.QtGui import QTextLayout
from PySide6.QtWidgets import QApplication
from explorer.fonts import register_chinese_font

app = QApplication([])
family = register_chinese_font(app) if sys.argv[1] == "register" else None
boxes, used = [], {}
for ch in sorted(set(sys.stdin.read()) - set(" \\n")):
    layout = QTextLayout(ch, app.font())
    layout.beginLayout(); layout.createLine(); layout.endLayout()
    runs = layout.glyphRuns()
    if not runs or any(0 in run.glyphIndexes() for run in runs):
        boxes.append(ch)
    used[ch] = [run.rawFont().familyName() for run in runs]
print(json.dumps({"family": family, "boxes": boxes, "used": used}))
"""


def chinese(text: str) -> set[str]:
    """The characters of ``text`` a Chinese font must draw: Han, CJK and full-width punctuation."""
    return {ch for ch in text if contains_cjk(ch) and unicodedata.category(ch) != "Zs"}


def interface_text() -> str:
    from explorer.help import HELP
    from explorer.i18n import LANGUAGES
    from explorer.i18n_zh import ZH

    return "".join([*ZH.values(), *(texts["zh"] for texts in HELP.values()), *LANGUAGES.values()])


def program_text() -> str:
    """Every string and comment of the program, wherever a panel keeps its Chinese."""
    paths = sorted([*(ROOT / "explorer").rglob("*.py"), *(ROOT / "model").rglob("*.py")])
    return "".join(path.read_text(encoding="utf-8") for path in paths)


def hsk_text() -> str:
    from model.data.hsk import load_hsk_pairs

    return "".join(zh for split in load_hsk_pairs() for _, zh in split)


def grammar_text() -> str:
    from model.data.grammar import GrammarGenerator, vocabulary

    gen = GrammarGenerator(0)
    return "".join([*vocabulary()[1], *(gen.sentence().zh for _ in range(2000))])


def vocabulary_text() -> str:
    from model.data.tokenization import TextTokenizer
    from model.io.checkpoint import load_checkpoint

    pieces = []
    for path in sorted(resource_path("models").glob("*.ckpt")):
        data = load_checkpoint(path)
        for key in ("src_tokenizer", "tgt_tokenizer"):
            tok = TextTokenizer.from_json(data[key])
            pieces += [tok.display_token(i) for i in range(tok.vocab_size)]
    return "".join(pieces)


def test_the_font_and_its_licence_ship_with_the_package():
    font = resource_path("fonts/NotoSansCJKsc-Subset.otf")
    assert font.is_file() and 200_000 < font.stat().st_size < 1_600_000
    assert "SIL OPEN FONT LICENSE Version 1.1" in resource_path("fonts/OFL.txt").read_text(encoding="utf-8")
    package_data = re.search(r"^resources = \[.*\]$", (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    assert package_data and '"fonts/*"' in package_data.group()


@pytest.mark.parametrize("source", [interface_text, program_text, hsk_text, grammar_text, vocabulary_text])
def test_the_subset_covers_every_chinese_character_the_program_shows(qapp, source):
    from PySide6.QtGui import QRawFont

    font = QRawFont(str(resource_path("fonts/NotoSansCJKsc-Subset.otf")), 12)
    assert font.isValid() and font.familyName() == "Noto Sans CJK SC"
    wanted = chinese(source())
    assert len(wanted) > 20
    missing = sorted(ch for ch in wanted if not font.supportsCharacter(ord(ch)))
    assert not missing, f"{len(missing)} characters not in the subset (run resources/make_font_subset.py): {missing}"


def test_the_subset_covers_punctuation_and_common_characters(qapp):
    from PySide6.QtGui import QRawFont

    font = QRawFont(str(resource_path("fonts/NotoSansCJKsc-Subset.otf")), 12)
    wanted = (
        "".join(chr(c) for c in range(0x20, 0x7F))
        + "，。？！：；“”‘’（）、…《》【】"
        + "的一是不了人我在有他这中大来上国个到说们为"
    )
    assert [ch for ch in wanted if not font.supportsCharacter(ord(ch))] == []


def _render(tmp_path: Path, mode: str, text: str) -> dict:
    """Run :data:`RENDER` in a fontconfig sandbox holding Latin fonts only."""
    dirs = "".join(f"<dir>{d}</dir>" for d in LATIN_FONT_DIRS if Path(d).is_dir())
    if not dirs:  # with no font at all Qt has nothing to fall back from (and crashes laying out text)
        pytest.skip(f"no Latin-only font folder here ({', '.join(LATIN_FONT_DIRS)})")
    conf = tmp_path / "fonts.conf"
    conf.write_text(f'<?xml version="1.0"?><fontconfig>{dirs}<cachedir>{tmp_path / "cache"}</cachedir></fontconfig>')
    env = {**os.environ, "FONTCONFIG_FILE": str(conf), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-c", RENDER, mode], input=text, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is a fontconfig configuration")
def test_chinese_renders_only_with_the_registered_font_where_the_system_has_none(tmp_path):
    from explorer.i18n_zh import ZH

    text = "Latin " + ZH["Attention over training"] + ZH["Beam search"] + hsk_text()[:400]
    wanted = chinese(text)
    plain = _render(tmp_path, "plain", text)
    assert wanted <= set(plain["boxes"]), "the sandbox has a Chinese font: the test would prove nothing"
    registered = _render(tmp_path, "register", text)
    assert registered["family"] == "Noto Sans CJK SC"
    assert registered["boxes"] == []
    assert all(registered["used"][ch] == ["Noto Sans CJK SC"] for ch in wanted)
    assert registered["used"]["L"] == plain["used"]["L"] != ["Noto Sans CJK SC"]  # Latin keeps its font
