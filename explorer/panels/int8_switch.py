"""The int8 fast mode of decoding, switched on the Decoding panel: shown for a translation model opened from a
Hugging Face folder, where the decoder's weights are large enough for it to pay. Float32 is the exact default;
switched on, the note says how far the fast mode's decodings differ from float32's (the engine compares them on a
few sentences), and the sentence shown is decoded again."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QCheckBox, QLabel

from explorer.answers import Int8Changed, RunInfo
from explorer.commands import SetInt8
from explorer.engine_client import EngineClient
from explorer.i18n import N_, tr
from explorer.widgets import named

LABEL = N_("int8 (faster)")
TIP = N_(
    "Decode with 8-bit weights in the decoder's linear layers (dynamic quantisation): about twice as fast on a "
    "CPU, and close to float32 but not equal. Off: float32, exact."
)
NOTE = N_("int8: {same} of {n} check sentences decode as in float32; a chosen token's log-probability moves ≤ {d}")


class Int8Switch:
    """The check box and its note; ``decoded_again`` is called once the engine has switched."""

    def __init__(self, decoded_again: Callable[[], None]) -> None:
        self.box = named(QCheckBox(), "decode_int8_box")
        self.note = named(QLabel(), "decode_int8_note")
        self.decoded_again = decoded_again
        self.client: EngineClient | None = None
        self.last: Int8Changed | None = None
        self.pending: int | None = None  # the request out
        self.box.toggled.connect(self._toggled)
        self.show(False)

    def attach(self, client: EngineClient) -> None:
        self.client = client
        client.engine.int8_changed.connect(self._changed)
        client.engine.engine_failed.connect(self._failed)

    def retranslate(self) -> None:
        self.box.setText(tr(LABEL))
        self.box.setToolTip(tr(TIP))
        self._describe()

    def show(self, on: bool) -> None:
        self.box.setVisible(on)
        self.note.setVisible(on and self.box.isChecked())

    def on_run(self, info: RunInfo, new_model: bool) -> None:
        """A model opened from a folder that translates offers the switch; a new model starts in float32."""
        if new_model:
            self.box.blockSignals(True)
            self.box.setChecked(False)
            self.box.blockSignals(False)
            self.last = None
        self.show(info.model_origin is not None and "translate" in info.model_config.family.decoding)

    def _toggled(self, on: bool) -> None:
        if self.client is not None:
            self.box.setEnabled(False)  # until the engine has switched (and compared)
            self.pending = self.client.send(SetInt8(on))

    def _failed(self, request_id: int, _message: str) -> None:
        """Refused (the window says why): the box shows the mode the engine is still in."""
        if request_id == self.pending:
            self.pending = None
            self.box.setEnabled(True)
            self.box.blockSignals(True)
            self.box.setChecked(bool(self.last and self.last.on))
            self.box.blockSignals(False)

    def _changed(self, reply: Int8Changed) -> None:
        self.pending = None
        self.box.setEnabled(True)
        self.last = reply
        self.box.blockSignals(True)
        self.box.setChecked(reply.on)
        self.box.blockSignals(False)
        self._describe()
        self.decoded_again()

    def _describe(self) -> None:
        r = self.last
        on = r is not None and r.on and not self.box.isHidden()
        self.note.setVisible(on)
        if r is not None and r.on:
            d = f"{r.max_logprob_change:.3f}"
            self.note.setText(tr(NOTE).format(same=r.same_tokens, n=r.sentences, d=d))
