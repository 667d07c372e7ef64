"""A Decoding panel on a session's model, without an engine thread, and what Qt draws of its labels: for the tests
of the panel, its stepping page and its views."""

from __future__ import annotations

from types import SimpleNamespace

from PySide6.QtCore import Qt
from PySide6.QtGui import Qt as GuiQt  # QtGui's Qt namespace has mightBeRichText
from PySide6.QtGui import QTextDocument

from explorer.panels.decoding import DecodingPanel
from model.decoding.stepping import DecodeDriver
from model.io.snapshots import DecodeSettings

TRICKY = "<b>bold?</b> & <unk> &amp; <i>"  # what a char or BPE model can write, and a person can type


def rendered(text: str, fmt=Qt.AutoText) -> str:
    """What Qt draws for ``text`` in a label or tooltip of format ``fmt``: markup interpreted where Qt would."""
    if fmt == Qt.RichText or (fmt == Qt.AutoText and GuiQt.mightBeRichText(text)):
        doc = QTextDocument()
        doc.setHtml(text)
        return doc.toPlainText()
    return text


def visible(label) -> str:
    return rendered(label.text(), label.textFormat())


def run_info(session, pieces=None):
    """What the panel reads of a run (the engine's RunInfo carries more)."""
    tok = session.tgt_tok
    return SimpleNamespace(
        run_id=id(session),
        model_config=session.model_cfg,
        src_words=session.source_words(),
        weights_step=session.step,
        model_origin=None,
        tgt_pieces=pieces or tuple(tok.display_token(i) for i in range(tok.vocab_size)),
    )


def panel_for(qtbot, session, pieces=None) -> DecodingPanel:
    panel = DecodingPanel()
    qtbot.addWidget(panel)
    panel.on_run(run_info(session, pieces))
    return panel


def decode_to_end(session, settings: DecodeSettings):
    driver = DecodeDriver(session)
    driver.start(settings)
    return driver, driver.act("run")
