"""Ready on first launch: the bundled model, language, presenter mode, help."""

import ast
import re
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from explorer.i18n import ZH, language  # noqa: E402
from model.session import Session  # noqa: E402
from resources import default_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _english_light():
    yield
    language.set("en")
    app = QApplication.instance()
    if app is not None:
        app.setPalette(app.style().standardPalette())


def test_the_bundled_model_is_small_and_documents_how_it_was_made():
    path = default_model()
    assert path is not None, (
        "resources/models/grammar-en-zh-small.ckpt is missing: run resources/train_default_model.sh"
    )
    assert path.stat().st_size <= 15 * 2**20
    session = Session.load(path, device="cpu")
    assert session.data_spec.task == "grammar-en-zh" and session.preset == "small"
    recorded = re.sub(r"--out \S+", '--out "$out"', " ".join(session.notes["commands"][0].split()))
    script = (ROOT / "resources" / "train_default_model.sh").read_text(encoding="utf-8").replace("\\\n", " ")
    in_script = next(" ".join(line.split()) for line in script.splitlines() if line.startswith("python -m model.train"))
    assert recorded == in_script  # the command recorded in the checkpoint is the one in the repository
    assert "grammar-en-zh (seed 0)" in session.notes["data"]


def test_the_bundled_model_translates_held_out_sentences():
    session = Session.load(default_model(), device="cpu")
    held_out = session.corpus.test[:12]  # combinations never seen in training
    for english, chinese in held_out:
        assert session.translate(english).text == chinese, english
    # and sentences typed by hand, each with a reordering
    typed = {
        "I read a book in the library yesterday.": "我昨天在图书馆看了一本书。",
        "Will she buy two red cars tomorrow?": "她明天会买两辆红色的车吗？",
        "Li Hua's cat is very small.": "李华的猫非常小。",
        "They did not drink coffee in the cafe last week.": "他们上个星期没在咖啡馆喝咖啡。",
        # the past is read from the verb, not from a time word; none is added where there was none
        "Li Hua bought an interesting book.": "李华买了一本有意思的书。",
        "Did Anna read a novel in the library?": "安娜在图书馆看了一本小说吗？",
        "I will buy a book.": "我会买一本书。",
    }
    for english, chinese in typed.items():
        assert session.translate(english).text == chinese, english


def test_first_launch_opens_the_bundled_model_with_an_attention_map(make_window, qtbot):
    window = make_window(start_default=True)
    qtbot.waitUntil(lambda: window.decoding.view is not None and window.decoding.view.position == 1, timeout=20000)
    # the sample sentence has taken its first step, with its candidates shown, and is ready to step on
    view = window.decoding.view
    assert not view.at_end and window.decoding.step_button.isEnabled() and len(window.decoding.candidates.tokens) == 10
    assert "bundled model" in window.windowTitle() and "unsaved" not in window.windowTitle()
    qtbot.mouseClick(window.decoding.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.decoding.view.at_end, timeout=20000)
    assert window.training.current.data.task == "grammar-en-zh"
    assert window.decoding.input.text() and window.decoding.view.hypotheses[0][0].endswith("？")
    a = window.attention
    assert a.source.currentData() == "decoding" and a.kind.currentData() == "cross"
    shown = a.heatmap.values
    assert shown.size and shown.shape == (len(a.heatmap.rows), len(window.decoding.view.source_tokens))
    assert (shown.max(axis=1) > 0.3).mean() > 0.5  # a meaningful map: most rows look somewhere clearly
    assert window.message_bar.showing and "Train from scratch" in [b.text() for b in window.message_bar.buttons]
    assert window.findChild(type(window.training.scratch_button), "train_from_scratch_button").isEnabled()


def test_train_from_scratch_is_one_click(make_window, qtbot):
    window = make_window(start_default=True)
    qtbot.waitUntil(lambda: window.training.current is not None and window.status.run_id == 1, timeout=20000)
    bundled_run = window.status.run_id
    form = window.training.form
    form.task_combo.setCurrentIndex(form.task_combo.findData("copy"))
    form.preset_combo.setCurrentText("tiny")
    qtbot.mouseClick(window.training.scratch_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.status.run_id > bundled_run and window.status.step > 3, timeout=20000)
    assert window.status.state == "training", window.message_bar.label.text()
    qtbot.mouseClick(window.training.stop_button, Qt.LeftButton)


def test_switching_language_changes_visible_labels(make_window, qtbot):
    window = make_window()
    assert window.training.start_button.text() == "Start"
    window.set_language("zh")
    assert window.training.start_button.text() == "开始"
    assert window.docks["training"].windowTitle() == "训练"
    assert window.file_menu.title() == "文件(&F)"
    assert window.decoding.step_button.text().startswith("单步")
    assert "注意力" in window.help_boxes["attention"].text.text()
    assert window.settings.value("language") == "zh"
    window.set_language("en")
    assert window.training.start_button.text() == "Start" and window.docks["training"].windowTitle() == "Training"


def visible_strings():
    """Every string literal the interface passes through tr() or marks with N_()."""
    found = set()
    for path in (ROOT / "explorer").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("tr", "N_") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.add(arg.value)
    return found


def family_labels():
    """The English labels the family specs give the window to translate where it shows them (names and signs,
    such as "GPT · " and "%", read the same in Chinese)."""
    from model.families.registry import FAMILIES, OPTIONS

    labels = {text for spec in (*FAMILIES.values(), *OPTIONS) for text in spec.labels.values()}
    return {text for text in labels if re.search("[a-z]{2}", text)}


def test_every_interface_string_has_a_chinese_translation():
    import torch

    from model.core.config import ModelConfig
    from model.core.transformer import Transformer
    from model.data import TASK_DESCRIPTIONS

    wanted = visible_strings() | family_labels() | set(TASK_DESCRIPTIONS.values())
    for options in ({}, {"positional": "learned", "norm": "pre"}):
        with torch.device("meta"):
            model = Transformer(ModelConfig.preset("tiny", src_vocab_size=9, tgt_vocab_size=9, **options))
        wanted |= {model.family.group_label(group) for group in model.parameter_breakdown()}
    assert len(wanted) > 200
    missing = sorted(s for s in wanted if s not in ZH)
    assert not missing, f"{len(missing)} strings have no Chinese: {missing[:10]}"
    for english, chinese in ZH.items():
        for field in ("{step}", "{n}", "{folder}", "{when}", "{h}", "{error}"):
            assert (field in english) == (field in chinese), english


def test_presenter_mode_and_auto_pause(make_window, qtbot):
    window = make_window()
    base = QApplication.font().pointSizeF()
    window.set_presenter(True)
    assert QApplication.font().pointSizeF() == pytest.approx(base * 1.4)
    assert window.training.settings_area.isHidden()
    assert window.decoding.autoplay_on_start
    form = window.training.form
    form.task_combo.setCurrentIndex(form.task_combo.findData("copy"))
    window.training.pause_at_step.setValue(15)
    qtbot.mouseClick(window.training.start_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.status.state == "paused", timeout=30000)
    assert window.status.step == 15
    # the engine publishes its state, then the auto-pause: the message may land one event later
    qtbot.waitUntil(lambda: "Paused by itself at step 15" in window.message_bar.label.text(), timeout=5000)
    window.set_presenter(False)
    assert QApplication.font().pointSizeF() == pytest.approx(base)
    assert not window.training.settings_area.isHidden()


def test_help_explains_each_panel(make_window):
    window = make_window()
    for key, box in window.help_boxes.items():
        assert box.button.text().endswith("What am I looking at?")
        box.button.setChecked(True)
        assert not box.text.isHidden() and len(box.text.text()) > 200, key
    assert "triangle" in window.help_boxes["attention"].text.text()
    assert "sine and cosine" in window.help_boxes["positional"].text.text()
    assert "log-probability" in window.help_boxes["decoding"].text.text()


def test_restoring_waits_for_its_own_load(make_window, qtbot, copy_session_factory, tmp_path):
    """An answer to another load must not delete the autosave that is being restored."""
    data = tmp_path / "data"
    data.mkdir()
    session = copy_session_factory()
    session.train_steps(3)
    session.save(data / "autosave.ckpt")
    window = make_window(start_default=True)  # the bundled model is loading while Restore is clicked
    assert window.message_bar.showing
    restore = next(b for b in window.message_bar.buttons if b.text() == "Restore")
    qtbot.mouseClick(restore, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.status.step == 3, timeout=20000)
    qtbot.waitUntil(lambda: not (data / "autosave.ckpt").exists(), timeout=5000)
    qtbot.wait(1500)  # whatever else was loading has been answered by now
    assert window.status.step == 3 and window.status.dirty  # the restored work is what is open
